// The LibTorch plugin: loading it on demand.
//
// Everything that links LibTorch (the learned agents of agents/learned/, the
// hardware executor of calibration/hardware/ and the `train`, `profile` and
// `replay` commands) is reached through one shared library,
// libgosim_torch_plugin.so, built next to the gosim libraries. Programs that
// never use it (`gosim simulate`, a constructive `gosim optimize`, the Python
// simulator) never map LibTorch; its 300-odd libraries cost about a second
// of start-up.
//
// LoadTorchPlugin() opens it once per process and calls its entry point,
// which registers its agents and commands into the registries of the
// non-torch libraries. The agent registry calls it on the first use of a
// learned agent's name (agents/learned_agents.h); `gosim` calls it when the
// command line names a LibTorch command.
//
// Where: $GOSIM_TORCH_PLUGIN when set (a file path), else
// libgosim_torch_plugin.so in the folder of libgosim_core.so.
#ifndef GOSIM_CORE_PLUGIN_H_
#define GOSIM_CORE_PLUGIN_H_

#include <string>

namespace gosim {

// The plugin's entry point: `extern "C" const char* gosim_torch_plugin_init(int abi)`.
// It returns nullptr on success, else a message (static storage) saying what
// failed. `abi` is kTorchPluginAbi of the loading program; a plugin built from
// another version of the sources refuses a different value.
inline constexpr const char* kTorchPluginEntry = "gosim_torch_plugin_init";
inline constexpr int kTorchPluginAbi = 1;
using TorchPluginInit = const char* (*)(int abi);

// The environment variable that overrides the plugin's path.
inline constexpr const char* kTorchPluginVariable = "GOSIM_TORCH_PLUGIN";

// The file LoadTorchPlugin would open (not checked to exist).
std::string TorchPluginPath();

// Whether that file exists (a cheap check, for `gosim --version`; it does
// not load the plugin).
bool TorchPluginPresent();

// Loads the plugin and runs its entry point, once per process; thread-safe.
// Throws IoError, one line (the path, the loader's message, how to fix), when
// the plugin is missing, does not load, or its entry point fails; later calls
// throw the same error without trying again.
void LoadTorchPlugin();

// Whether LoadTorchPlugin has already succeeded in this process.
bool TorchPluginLoaded();

}  // namespace gosim

#endif  // GOSIM_CORE_PLUGIN_H_
