#include "core/data_path.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "gosim_source_dir.h"  // GOSIM_SOURCE_DIR

namespace gosim {
namespace {

bool Exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

}  // namespace

std::string ResolveDataPath(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || Exists(path) || fs::path(path).is_absolute()) return path;
  const char* const roots[] = {std::getenv("GOSIM_HOME"), GOSIM_SOURCE_DIR};
  for (const char* root : roots) {
    if (root == nullptr || *root == '\0') continue;
    const fs::path candidate = fs::path(root) / path;
    if (Exists(candidate)) return candidate.lexically_normal().string();
  }
  return path;
}

}  // namespace gosim
