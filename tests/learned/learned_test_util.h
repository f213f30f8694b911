// Helpers shared by the learned agents' tests (budget_test.cc,
// colocation_test.cc, hrl_test.cc).
#ifndef GOSIM_TESTS_LEARNED_LEARNED_TEST_UTIL_H_
#define GOSIM_TESTS_LEARNED_LEARNED_TEST_UTIL_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "agents/agent.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/regal/regal.h"
#include "agents/learned/register.h"
#include "core/yaml.h"

namespace gosim::agents::learned_testing {

// The registered agent `name` (learned agents included) built from the YAML
// options `yaml`.
inline std::unique_ptr<Agent> MakeLearned(const std::string& name, const std::string& yaml) {
  RegisterLearnedAgents();
  YAML::Node node = LoadYamlString(yaml, "test");
  YamlMap options = YamlMap::Root(node, "test");
  return MakeAgent(name, options);
}

// An untrained, small REGAL policy for `devices` devices, saved as a
// checkpoint under the temporary folder `folder`; returns its path.
inline std::string UntrainedRegalCheckpoint(int32_t devices, const std::string& folder) {
  const std::string dir = (std::filesystem::temp_directory_path() / folder).string();
  std::filesystem::create_directories(dir);
  learned::RegalPolicyOptions options;
  options.num_devices = devices;
  options.gnn.hidden = 8;
  options.gnn.layers = 1;
  options.gnn.op_embedding = 4;
  learned::RegalPolicy policy(options);
  const std::string path = dir + "/untrained_" + std::to_string(devices) + ".pt";
  learned::SaveCheckpoint(path, learned::kRegalCheckpoint, options.Signature(), *policy, nullptr,
                          learned::TrainingState{});
  return path;
}

}  // namespace gosim::agents::learned_testing

#endif  // GOSIM_TESTS_LEARNED_LEARNED_TEST_UTIL_H_
