// The committed checkpoints of configs/checkpoints/ (the defaults of
// configs/agents/go.yaml and regal.yaml): each is small, of this build's
// network version, and its agent gives a feasible decision that keeps every
// colocation group on one device, zero-shot and with a small budget.
#include <filesystem>
#include <string>

#include "agents/agent.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/register.h"
#include "core/data_path.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "tests/agents/test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

// The agent of configs/agents/NAME.yaml, as an experiment's `options:` reads it.
std::unique_ptr<Agent> MakeFromAgentConfig(const std::string& name) {
  RegisterLearnedAgents();
  const std::string file = ResolveDataPath("configs/agents/" + name + ".yaml");
  YAML::Node node = LoadYamlFile(file);
  YamlMap options = YamlMap::Root(node, file);
  return MakeAgent(name, options);
}

TEST_CASE("committed checkpoints: small, this build's network version, feasible decisions on 4 GPUs") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 4, hidden: 256, vocab: 1000, training: true}"), "test");
  REQUIRE(nmt.colocation_groups().size() > 4);
  testing::Fixture f(nmt, sim::LoadCluster("p100x4_pcie"));
  const struct {
    const char* agent;
    learned::CheckpointKind kind;
  } cases[] = {{"go", learned::kGoCheckpoint}, {"regal", learned::kRegalCheckpoint}};
  for (const auto& c : cases) {
    CAPTURE(c.agent);
    const std::string path = ResolveDataPath(std::string("configs/checkpoints/") + c.agent + ".pt");
    REQUIRE(std::filesystem::exists(path));
    CHECK(std::filesystem::file_size(path) < 2u * 1024 * 1024);
    CHECK_FALSE(learned::ReadCheckpointSignature(path, c.kind).empty());
    // The other agent's file is refused.
    const learned::CheckpointKind other =
        c.kind.agent == learned::kGoCheckpoint.agent ? learned::kRegalCheckpoint : learned::kGoCheckpoint;
    CHECK_THROWS_AS(learned::ReadCheckpointSignature(path, other), StateError);
    for (const int64_t budget : {1, 20}) {
      CAPTURE(budget);
      const AgentResult r =
          MakeFromAgentConfig(c.agent)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, budget, 3));
      CHECK(r.evaluations >= 1);
      CHECK(r.evaluations <= budget);
      CHECK(r.best_evaluation.feasible);
      CHECK_FALSE(f.evaluator->FindSplit(r.best.placement).has_value());
      CHECK(r.best.placement.size() == static_cast<size_t>(nmt.num_nodes()));
    }
  }
}

}  // namespace
}  // namespace gosim::agents
