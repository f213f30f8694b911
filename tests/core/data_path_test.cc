#include "core/data_path.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace gosim {
namespace {

namespace fs = std::filesystem;

// Runs the test body in a fresh empty working directory and restores the old one.
struct InEmptyDirectory {
  fs::path old = fs::current_path();
  fs::path dir = fs::temp_directory_path() / "gosim_data_path_test";
  InEmptyDirectory() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::current_path(dir);
  }
  ~InEmptyDirectory() {
    fs::current_path(old);
    fs::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("ResolveDataPath: the working directory first, then $GOSIM_HOME, then the source tree") {
  InEmptyDirectory scope;
  unsetenv("GOSIM_HOME");
  // Not here: found in the source tree gosim was built from.
  const std::string preset = ResolveDataPath("configs/clusters/k80x2.yaml");
  CHECK(preset != "configs/clusters/k80x2.yaml");
  CHECK(fs::path(preset).is_absolute());
  CHECK(fs::is_regular_file(preset));
  // Found nowhere: unchanged, so that the caller's error names it.
  CHECK(ResolveDataPath("configs/clusters/no_such_cluster.yaml") == "configs/clusters/no_such_cluster.yaml");
  CHECK(ResolveDataPath("") == "");
  // $GOSIM_HOME comes before the source tree.
  fs::create_directories(scope.dir / "home/configs/clusters");
  std::ofstream(scope.dir / "home/configs/clusters/k80x2.yaml") << "name: k80x2\n";
  setenv("GOSIM_HOME", (scope.dir / "home").c_str(), 1);
  CHECK(fs::path(ResolveDataPath("configs/clusters/k80x2.yaml")) ==
        scope.dir / "home/configs/clusters/k80x2.yaml");
  // A file in the working directory wins over both.
  fs::create_directories("configs/clusters");
  std::ofstream("configs/clusters/k80x2.yaml") << "name: k80x2\n";
  CHECK(ResolveDataPath("configs/clusters/k80x2.yaml") == "configs/clusters/k80x2.yaml");
  unsetenv("GOSIM_HOME");
}

}  // namespace gosim
