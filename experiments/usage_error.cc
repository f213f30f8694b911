#include "experiments/usage_error.h"

#include <algorithm>

#include "core/error.h"
#include "core/strings.h"

namespace gosim::cli {

std::string UsageErrorText(const CLI::App& app, const CLI::ParseError& error,
                           const std::vector<std::string>& args) {
  const auto parsed = app.get_subcommands();
  if (parsed.empty()) {
    // No command parsed: the first word that is not an option (or the value
    // of a root option such as --log-level) was meant as one.
    std::vector<std::string> valid;
    for (const CLI::App* sub :
         app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); })) {
      valid.push_back(sub->get_name());
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& word = args[i];
      if (word.empty() || word[0] == '-') {
        const CLI::Option* option = word.rfind("--", 0) == 0 && word.find('=') == std::string::npos
                                        ? app.get_option_no_throw(word)
                                        : nullptr;
        if (option != nullptr && option->get_type_size() > 0) ++i;  // skip its value
        continue;
      }
      if (std::find(valid.begin(), valid.end(), word) != valid.end()) break;  // a command after all
      return EscapeControl("unknown command '" + word + "' (valid: " + Join(valid, ", ") +
                           "; see gosim --help)");
    }
  }
  std::string command = "gosim";
  for (const CLI::App* sub : parsed) command += " " + sub->get_name();
  return EscapeControl(std::string(error.what()) + " (see " + command + " --help)");
}

}  // namespace gosim::cli
