// `gosim graphs list|stats|export`.
#include "experiments/commands.h"

namespace gosim::cli {

void AddGraphsCommand(CLI::App& root) {
  CLI::App* graphs = root.add_subcommand("graphs", "List, inspect and export graphs and suites");
  graphs->require_subcommand(1);
}

}  // namespace gosim::cli
