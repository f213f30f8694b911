#include "experiments/commands.h"

namespace gosim::cli {

std::vector<Command>& Commands() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace gosim::cli
