// The one line `gosim` prints for a command-line usage error.
#ifndef GOSIM_EXPERIMENTS_USAGE_ERROR_H_
#define GOSIM_EXPERIMENTS_USAGE_ERROR_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gosim::cli {

// The text after "gosim: usage error: " for `error`, raised while `app` (the
// root) parsed `args` (argv without the program name): a first word that is
// no command is named with the valid ones ("unknown command 'bogus' (valid:
// graphs, simulate, ...; see gosim --help)"); any other error is CLI11's
// message and the --help of the command it concerns. Control characters are
// escaped: one line.
std::string UsageErrorText(const CLI::App& app, const CLI::ParseError& error,
                           const std::vector<std::string>& args);

}  // namespace gosim::cli

#endif  // GOSIM_EXPERIMENTS_USAGE_ERROR_H_
