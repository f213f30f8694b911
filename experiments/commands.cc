#include "experiments/commands.h"

#include <cstring>
#include <map>
#include "core/data_path.h"

#include "core/allocator.h"
#include "core/error.h"

namespace gosim::cli {

namespace {

std::map<std::string, AddCommandFn>& TorchAdders() {
  static std::map<std::string, AddCommandFn> adders;
  return adders;
}

char** program_arguments = nullptr;

}  // namespace

std::vector<Command>& Commands() {
  static std::vector<Command> commands;
  return commands;
}

CLI::Option* InputFile(CLI::Option* option) {
  return option->transform(CLI::Validator(
                               [](std::string& value) {
                                 value = ResolveDataPath(value);
                                 return std::string();
                               },
                               "", "data path"),
                           "data path");
}

void AddShapeOptions(CLI::App* cmd, ShapeArgs* args) {
  cmd->add_option("--dim", args->dims,
                  "ONNX graphs: the size of a symbolic dimension, NAME=N (repeatable; e.g. --dim batch=32)");
  cmd->add_option("--input-shape", args->input_shapes,
                  "ONNX graphs: the whole shape of a graph input, INPUT=AxBx... (repeatable)");
}

const std::vector<TorchCommand>& TorchCommands() {
  static const std::vector<TorchCommand> commands = {
      {"train", "Train a learned agent (REGAL, HRL, GO) from a YAML config"},
      {"profile", "Run a graph for real with LibTorch and record a profiler trace"},
      {"replay", "Execute decisions on real devices and compare with the simulator"},
  };
  return commands;
}

const char* TorchCommandDescription(const std::string& name) {
  for (const TorchCommand& command : TorchCommands()) {
    if (name == command.name) return command.description;
  }
  return "";
}

bool IsTorchCommand(const std::string& name) {
  for (const TorchCommand& command : TorchCommands()) {
    if (name == command.name) return true;
  }
  return false;
}

void RegisterTorchCommand(const std::string& name, AddCommandFn add) {
  TorchAdders()[name] = add;
}

void AddTorchCommands(CLI::App& root) {
  for (const TorchCommand& command : TorchCommands()) {
    const auto it = TorchAdders().find(command.name);
    if (it != TorchAdders().end()) {
      it->second(root);
      continue;
    }
    CLI::App* placeholder =
        root.add_subcommand(command.name, std::string(command.description) + " (LibTorch)");
    placeholder->allow_extras();
    const std::string name = command.name;
    Commands().push_back({placeholder, [name]() -> int {
                            throw ConfigError(
                                "the LibTorch command '" + name + "' was not loaded", Location{},
                                "give the command name before its options: gosim " + name + " ...");
                          }});
  }
}

std::string CommandName(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "--log-level") == 0) {
      ++i;  // its value
      continue;
    }
    if (arg[0] == '-') continue;
    return arg;
  }
  return "";
}

void SetProgramArguments(char** argv) {
  program_arguments = argv;
}

void PrepareForLibTorch() {
  if (program_arguments != nullptr) TuneAllocator(program_arguments);  // may start the program again
}

}  // namespace gosim::cli
