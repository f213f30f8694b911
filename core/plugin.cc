#include "core/plugin.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "core/error.h"

namespace gosim {

namespace {

constexpr const char* kPluginFile = "libgosim_torch_plugin.so";

struct LoadResult {
  bool ok = false;
  std::string path;
  std::string message;
  std::string hint;
};

std::atomic<bool> loaded{false};

LoadResult Load() {
  LoadResult result;
  result.path = TorchPluginPath();
  const char* variable = std::getenv(kTorchPluginVariable);
  const bool overridden = variable != nullptr && *variable != '\0';
  const std::string rebuild =
      overridden ? std::string("set ") + kTorchPluginVariable + " to the path of " + kPluginFile
                 : std::string(
                       "build it with GOSIM_WITH_TORCH=ON and libtorch-dev installed: cmake --build build "
                       "--target gosim_torch_plugin; or set ") +
                       kTorchPluginVariable + " to its path";
  std::error_code error;
  if (!std::filesystem::is_regular_file(result.path, error)) {
    result.message =
        "the LibTorch plugin, needed for the learned agents and the train, profile and replay "
        "commands, is not there";
    result.hint = rebuild;
    return result;
  }
  // Never closed: the agents and commands it registered live as long as the process.
  // An absolute path: dlopen searches the library folders for a name without a slash.
  const std::string absolute = std::filesystem::absolute(result.path, error).string();
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    result.message =
        std::string("cannot load the LibTorch plugin: ") + (why != nullptr ? why : "unknown reason");
    result.hint =
        "check that libtorch-dev is installed and that the plugin was built with these libraries; " + rebuild;
    return result;
  }
  auto init = reinterpret_cast<TorchPluginInit>(dlsym(handle, kTorchPluginEntry));
  if (init == nullptr) {
    result.message = std::string("not a gosim LibTorch plugin (no ") + kTorchPluginEntry + ")";
    result.hint = rebuild;
    return result;
  }
  if (const char* failure = init(kTorchPluginAbi); failure != nullptr) {
    result.message = std::string("the LibTorch plugin failed to start: ") + failure;
    result.hint = "rebuild it from the same sources as this program";
    return result;
  }
  result.ok = true;
  return result;
}

}  // namespace

std::string TorchPluginPath() {
  if (const char* path = std::getenv(kTorchPluginVariable); path != nullptr && *path != '\0') return path;
  // The folder of the library that holds this function (libgosim_core.so).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&TorchPluginPath), &info) != 0 && info.dli_fname != nullptr) {
    return (std::filesystem::path(info.dli_fname).parent_path() / kPluginFile).string();
  }
  return kPluginFile;  // dlopen's own search (LD_LIBRARY_PATH, the cache)
}

bool TorchPluginPresent() {
  std::error_code error;
  return std::filesystem::is_regular_file(TorchPluginPath(), error);
}

void LoadTorchPlugin() {
  // A function-local static: one attempt per process, other threads wait for it.
  static const LoadResult result = [] {
    LoadResult r = Load();
    loaded.store(r.ok, std::memory_order_release);
    return r;
  }();
  if (!result.ok) throw IoError(result.message, Location{result.path}, result.hint);
}

bool TorchPluginLoaded() {
  return loaded.load(std::memory_order_acquire);
}

}  // namespace gosim
