// Registration of the `gosim` subcommands.
//
// Each subcommand is a pair of functions in its own cmd_*.cc file: one adds
// its options to a CLI11 subcommand, the other runs it. main() calls every
// Add*Command() so the linker keeps them all.
#ifndef GOSIM_EXPERIMENTS_COMMANDS_H_
#define GOSIM_EXPERIMENTS_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace gosim::cli {

// What main() needs to dispatch a parsed subcommand.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  // The command may run LibTorch: main() restarts it with the allocator
  // settings first (core/allocator.h).
  bool tune_allocator = false;
};

// Every Add*Command appends here; main() runs the one whose subcommand parsed.
std::vector<Command>& Commands();

// Marks `option` as naming files to read: each value is looked up like every
// data path (core/data_path.h: the working directory, then $GOSIM_HOME, then
// the source tree gosim was built from), so `gosim CMD configs/...` or
// `--graph graphs/data/...` works from any folder. Values that name no file
// anywhere (a preset name, `gen:...`) pass unchanged. Returns `option`.
CLI::Option* InputFile(CLI::Option* option);

// `--dim NAME=N` and `--input-shape INPUT=AxBx...` (repeatable), the sizes of
// an ONNX graph's symbolic dimensions (experiments::ParseShapeArguments),
// added to every command that loads a graph file.
struct ShapeArgs {
  std::vector<std::string> dims;
  std::vector<std::string> input_shapes;
};
void AddShapeOptions(CLI::App* cmd, ShapeArgs* args);

void AddGraphsCommand(CLI::App& root);
void AddSimulateCommand(CLI::App& root);
void AddRunCommand(CLI::App& root);
void AddOptimizeCommand(CLI::App& root);
void AddCalibrateCommand(CLI::App& root);
// cmd_train.cc; compiled and called only when built with LibTorch.
void AddTrainCommand(CLI::App& root);
// cmd_profile.cc, cmd_replay.cc (calibration/hardware/); only with LibTorch.
void AddProfileCommand(CLI::App& root);
void AddReplayCommand(CLI::App& root);

}  // namespace gosim::cli

#endif  // GOSIM_EXPERIMENTS_COMMANDS_H_
