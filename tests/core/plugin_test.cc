// The LibTorch plugin loader (core/plugin.h): where it looks, and a missing
// plugin reported as one IoError, once per process. The core tests never load
// the real plugin (tests/experiments/torch_plugin_test.sh does, through gosim).
#include "core/plugin.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"

namespace gosim {
namespace {

TEST_CASE("TorchPluginPath: next to libgosim_core.so unless GOSIM_TORCH_PLUGIN names a file") {
  unsetenv(kTorchPluginVariable);
  const std::filesystem::path path = TorchPluginPath();
  CHECK(path.filename() == "libgosim_torch_plugin.so");
  CHECK(std::filesystem::is_regular_file(path.parent_path() / "libgosim_core.so"));
  setenv(kTorchPluginVariable, "/elsewhere/plugin.so", 1);
  CHECK(TorchPluginPath() == "/elsewhere/plugin.so");
  CHECK_FALSE(TorchPluginPresent());
  unsetenv(kTorchPluginVariable);
}

TEST_CASE(
    "LoadTorchPlugin: a missing plugin is one IoError naming the file and the fix, and is not retried") {
  const std::string missing = std::filesystem::temp_directory_path().string() + "/gosim_no_such_plugin.so";
  setenv(kTorchPluginVariable, missing.c_str(), 1);
  std::string first;
  try {
    LoadTorchPlugin();
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    first = e.what();
    CHECK(e.where().file == missing);
    CHECK(first.find("is not there") != std::string::npos);
    CHECK(first.find(kTorchPluginVariable) != std::string::npos);
    CHECK(first.find('\n') == std::string::npos);
  }
  CHECK_FALSE(TorchPluginLoaded());
  // The outcome of the one attempt stands, whatever the variable says now.
  unsetenv(kTorchPluginVariable);
  try {
    LoadTorchPlugin();
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()) == first);
  }
}

}  // namespace
}  // namespace gosim
