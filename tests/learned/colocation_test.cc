// The learned agents (GO, REGAL, HRL, ColocRL) keep every colocation group
// on one device: a tiny budget each on a generated NMT training graph.
#include <filesystem>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/regal/regal.h"
#include "agents/learned/register.h"
#include "core/io.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "tests/agents/test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::KeepsGroups;
using testing::MakeCluster;

std::unique_ptr<Agent> MakeLearned(const std::string& name, const std::string& yaml) {
  RegisterLearnedAgents();
  YAML::Node node = LoadYamlString(yaml, "test");
  YamlMap options = YamlMap::Root(node, "test");
  return MakeAgent(name, options);
}

// An untrained REGAL policy for `devices` devices, saved as a checkpoint.
std::string UntrainedRegalCheckpoint(int32_t devices) {
  const std::string dir = (std::filesystem::temp_directory_path() / "gosim_coloc_regal").string();
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

TEST_CASE("Every learned agent keeps each colocation group on one device (NMT training graph)") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  REQUIRE(nmt.colocation_groups().size() > 4);
  Fixture f(nmt, MakeCluster(2));
  // GO's paper setting (a fresh network, a placement per node), small.
  const std::string go_model =
      "preset: paper, torch_threads: 0, model: {gnn_hidden: 8, model: 8, attention_heads: 2, layers: 1";
  const std::vector<std::pair<std::string, std::string>> agents = {
      {"go", "{" + go_model + "}}"},
      {"go", "{" + go_model + ", colocate: false}}"},  // the policy may split; the tracker keeps groups
      {"hrl", "{samples_per_step: 4}"},                // a learned grouping may cut through groups
      {"colocrl", "{samples_per_step: 4}"},
      {"regal", "{checkpoint: " + UntrainedRegalCheckpoint(2) + ", population: 6}"},
  };
  for (const auto& [name, yaml] : agents) {
    CAPTURE(name);
    CAPTURE(yaml);
    const AgentResult r = MakeLearned(name, yaml)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 12, 2));
    CHECK(r.evaluations <= 13);
    CHECK(KeepsGroups(f.graph, r.best.placement));
    CHECK_FALSE(f.evaluator->FindSplit(r.best.placement).has_value());
    CHECK(r.best_evaluation.feasible);
  }
}

}  // namespace
}  // namespace gosim::agents
