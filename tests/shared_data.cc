#include "tests/shared_data.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/io.h"
#include "gosim_source_dir.h"  // GOSIM_SHARED_DIR

namespace gosim::testing {
namespace {

std::atomic<bool> skipped{false};

}  // namespace

std::string SharedDataDir() {
  const char* env = std::getenv("GOSIM_SHARED_DATA");
  if (env != nullptr && *env != '\0') return std::string(env) == "none" ? std::string() : std::string(env);
  return std::string(GOSIM_SHARED_DIR) + "/data";
}

std::string SharedDataFile(const std::string& relative) {
  const std::vector<std::string> paths = SharedDataFiles({relative});
  return paths.empty() ? std::string() : paths.front();
}

std::vector<std::string> SharedDataFiles(const std::vector<std::string>& relative) {
  const std::string dir = SharedDataDir();
  std::vector<std::string> paths, missing;
  for (const std::string& r : relative) {
    if (!dir.empty() && FileExists(dir + "/" + r)) {
      paths.push_back(dir + "/" + r);
    } else {
      missing.push_back(r);
    }
  }
  if (missing.empty()) return paths;
  skipped = true;
  std::string names;
  for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
  std::printf("SKIPPED: shared data %s %s missing (%s; a public clone has no ../shared/data)\n",
              names.c_str(), missing.size() == 1 ? "is" : "are",
              dir.empty() ? "GOSIM_SHARED_DATA=none hides it" : ("not in " + dir).c_str());
  std::fflush(stdout);
  return {};
}

bool SharedDataSkipped() {
  return skipped;
}

}  // namespace gosim::testing
