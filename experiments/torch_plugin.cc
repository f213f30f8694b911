// The LibTorch plugin's entry point (core/plugin.h). The plugin,
// libgosim_torch_plugin.so, holds the `train`, `profile` and `replay`
// commands and links the learned agents (gosim::learned) and the hardware
// executor (gosim::hardware), and through them LibTorch. Loading it
// registers them into the registries of the non-torch libraries.
#include <exception>
#include <string>

#include "agents/learned/register.h"
#include "core/plugin.h"
#include "experiments/commands.h"

extern "C" __attribute__((visibility("default"))) const char* gosim_torch_plugin_init(int abi) {
  static std::string failure;
  if (abi != gosim::kTorchPluginAbi) {
    failure = "it was built for another version of gosim (plugin interface " +
              std::to_string(gosim::kTorchPluginAbi) + ", program " + std::to_string(abi) + ")";
    return failure.c_str();
  }
  try {
    gosim::agents::RegisterLearnedAgents();
    gosim::cli::RegisterTorchCommand("train", gosim::cli::AddTrainCommand);
    gosim::cli::RegisterTorchCommand("profile", gosim::cli::AddProfileCommand);
    gosim::cli::RegisterTorchCommand("replay", gosim::cli::AddReplayCommand);
  } catch (const std::exception& e) {
    failure = e.what();
    return failure.c_str();
  }
  return nullptr;
}
