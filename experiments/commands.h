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
