// `gosim --version`: the build's identity (cmake/GosimVersion.cmake writes
// gosim_version.h at every build) and whether the LibTorch plugin is there.
#include <string>

#include "core/plugin.h"
#include "experiments/commands.h"
#include "gosim_version.h"

namespace gosim::cli {

std::string VersionLine() {
  std::string line = std::string("gosim ") + GOSIM_VERSION + " (git " + GOSIM_GIT_COMMIT + ", " +
                     GOSIM_BUILD_TYPE + " build); LibTorch plugin: ";
  line += TorchPluginPresent() ? "available" : "not available";
  line += " (" + TorchPluginPath() + ")";
  return line;
}

}  // namespace gosim::cli
