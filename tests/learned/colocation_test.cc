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
#include "tests/learned/learned_test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using learned_testing::MakeLearned;
using learned_testing::UntrainedRegalCheckpoint;
using testing::Fixture;
using testing::KeepsGroups;
using testing::MakeCluster;

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
      {"regal", "{checkpoint: " + UntrainedRegalCheckpoint(2, "gosim_coloc_regal") + ", population: 6}"},
  };
  for (const auto& [name, yaml] : agents) {
    CAPTURE(name);
    CAPTURE(yaml);
    const AgentResult r = MakeLearned(name, yaml)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 12, 2));
    CHECK(r.evaluations <= 12);  // the budget (tests/learned/budget_test.cc checks the count itself)
    CHECK(KeepsGroups(f.graph, r.best.placement));
    CHECK_FALSE(f.evaluator->FindSplit(r.best.placement).has_value());
    CHECK(r.best_evaluation.feasible);
  }
}

}  // namespace
}  // namespace gosim::agents
