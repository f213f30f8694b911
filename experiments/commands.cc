#include "experiments/commands.h"

#include "core/data_path.h"

namespace gosim::cli {

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

}  // namespace gosim::cli
