// gosim: the one command-line program. See README.md for a tour.
//
// Every error surfaces here: a gosim::Error is printed as one line
// ("gosim: <kind>: <file:line>: <what> (<how to fix>)") and the exit code is
// 1; a command-line usage error exits with 2.
//
// The program does not link LibTorch. When the command line names a command
// of the LibTorch plugin (train, profile, replay), main restarts the program
// with the allocator settings LibTorch needs (core/allocator.h) and loads the
// plugin before defining the commands; other commands load it only if they
// meet a learned agent (agents/learned_agents.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/plugin.h"
#include "experiments/commands.h"
#include "experiments/mpi.h"
#include "experiments/usage_error.h"

int main(int argc, char** argv) {
  gosim::cli::SetProgramArguments(argv);
  if (gosim::cli::IsTorchCommand(gosim::cli::CommandName(argc, argv))) {
    gosim::cli::PrepareForLibTorch();  // may start the program again
    try {
      gosim::LoadTorchPlugin();
    } catch (const gosim::Error& e) {
      std::fprintf(stderr, "gosim: %s: %s\n", e.kind(), e.what());
      return 1;
    }
  }
  CLI::App app{"gosim: learned optimization of ML computation graphs on a simulated multi-GPU machine"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return gosim::cli::VersionLine(); },
      "Print the version, git commit, build type and whether the LibTorch plugin is there");
  std::string log_level;
  app.add_option("--log-level", log_level, "debug, info, warn, error or off (default info)");
  gosim::cli::AddGraphsCommand(app);
  gosim::cli::AddSimulateCommand(app);
  gosim::cli::AddRunCommand(app);
  gosim::cli::AddOptimizeCommand(app);
  gosim::cli::AddCalibrateCommand(app);
  gosim::cli::AddTorchCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a usage error is one line, exit 2
    // (CLI11's own printer adds a second line and uses codes above 100).
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "gosim: usage error: %s\n",
                 gosim::cli::UsageErrorText(app, e, std::vector<std::string>(argv + 1, argv + argc)).c_str());
    return 2;
  }
  // Under mpirun an error on one process would leave the others waiting
  // for it: it ends them all.
  auto fail = [] {
    const gosim::experiments::Communicator* world = gosim::experiments::Communicator::Started();
    if (world != nullptr && world->distributed()) world->Abort(1);
    return 1;
  };
  try {
    if (!log_level.empty()) gosim::SetLogLevel(gosim::ParseLogLevel(log_level));
    for (const auto& command : gosim::cli::Commands()) {
      if (command.app->parsed()) return command.run();
    }
    std::fprintf(stderr, "gosim: no command given; see gosim --help\n");
    return 2;
  } catch (const gosim::Error& e) {
    std::fprintf(stderr, "gosim: %s: %s\n", e.kind(), e.what());
    return fail();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gosim: out of memory\n");
    return fail();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gosim: internal error: %s (please report this)\n",
                 gosim::EscapeControl(e.what()).c_str());
    return fail();
  }
}
