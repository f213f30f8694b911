// Registration of the `gosim` subcommands.
//
// Each subcommand is a pair of functions in its own cmd_*.cc file: one adds
// its options to a CLI11 subcommand, the other runs it. main() calls every
// Add*Command() so the linker keeps them all.
//
// The LibTorch commands (train, profile, replay) live in the LibTorch plugin
// (core/plugin.h, experiments/torch_plugin.cc): main() loads it only when the
// command line names one of them; otherwise AddTorchCommands() adds
// placeholders so that `gosim --help` lists them without loading LibTorch.
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

// The help of `--option key=value` (simulate, optimize): the simulator
// options experiments::ParseSimOptions reads.
inline constexpr const char* kSimOptionHelp =
    "A simulator option key=value (repeatable): track_memory, infeasible_step_time, stop_at_oom, "
    "reuse_transfers, oom_live_tensors, enforce_colocation, execution (auto|none|eager|graph|captured), "
    "processes (auto|one|per_device), host_threads, launch_queue, max_load, micro_batches (a pipeline of M), "
    "schedule (gpipe|1f1b|streaming)";

void AddGraphsCommand(CLI::App& root);
void AddSimulateCommand(CLI::App& root);
void AddRunCommand(CLI::App& root);
void AddOptimizeCommand(CLI::App& root);
void AddCalibrateCommand(CLI::App& root);
// In the LibTorch plugin: cmd_train.cc, cmd_profile.cc, cmd_replay.cc.
void AddTrainCommand(CLI::App& root);
void AddProfileCommand(CLI::App& root);
void AddReplayCommand(CLI::App& root);

// The commands of the LibTorch plugin, with their one-line descriptions.
struct TorchCommand {
  const char* name;
  const char* description;
};
const std::vector<TorchCommand>& TorchCommands();
// The description of TorchCommands() entry `name` ("" when none).
const char* TorchCommandDescription(const std::string& name);
bool IsTorchCommand(const std::string& name);

// Called by the plugin's entry point: `add` defines command `name`.
using AddCommandFn = void (*)(CLI::App& root);
void RegisterTorchCommand(const std::string& name, AddCommandFn add);
// Adds every LibTorch command: the plugin's definition when it registered
// one, else a placeholder (listed by --help; running it says to put the
// command first on the command line).
void AddTorchCommands(CLI::App& root);

// The subcommand `argv` names: its first word that is neither an option of
// the program itself (--log-level LEVEL, --version, --help) nor an option's
// value; "" when there is none.
std::string CommandName(int argc, char** argv);

// One line for `gosim --version`: version, git commit (with "-dirty" when
// tracked files had changes), build type, and whether the LibTorch plugin
// is there (checked without loading it). In the program (version.cc).
std::string VersionLine();

// Main's arguments, kept for PrepareForLibTorch.
void SetProgramArguments(char** argv);
// Called by a command as soon as it knows that this run will use LibTorch (a
// learned agent, train, profile, replay): restarts the program once with the
// allocator settings of core/allocator.h, which LibTorch's many short-lived
// tensors need. Other runs skip the restart (about 2 ms, plus loading the
// program's libraries again).
void PrepareForLibTorch();

}  // namespace gosim::cli

#endif  // GOSIM_EXPERIMENTS_COMMANDS_H_
