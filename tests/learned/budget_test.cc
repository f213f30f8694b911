// One budget for the learned agents too: every simulation GO (zero-shot
// pass, role sweep, PPO), REGAL (its policy-driven BRKGA), HRL and ColocRL
// make is one they report, never more than the budget. Each run gets a fresh
// Evaluator, whose own counter sees every simulation
// (tests/agents/budget_test.cc does the same for the other agents).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/regal/regal.h"
#include "agents/learned/register.h"
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
using testing::MakeCluster;

TEST_CASE("Every learned agent reports exactly the simulator evaluations it made, within its budget") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  // A small fresh network, and the built-in default (the committed go.pt).
  const std::string go_model =
      "checkpoint: '', model: {gnn_hidden: 8, model: 8, attention_heads: 2, layers: 1}";
  const std::vector<std::pair<std::string, std::string>> agents = {
      {"go", "{" + go_model + ", ppo: {samples: 4}}"},
      {"go", "{" + go_model + ", ppo: {samples: 4}, role_sweep: 4}"},  // zero-shot, sweep, then PPO
      {"go", "{ppo: {samples: 4}}"},
      {"hrl", "{samples_per_step: 4}"},
      {"colocrl", "{samples_per_step: 4}"},
      {"regal", "{checkpoint: " + UntrainedRegalCheckpoint(2, "gosim_budget_regal") + ", population: 6}"},
  };
  for (const auto& [name, yaml] : agents) {
    for (const int64_t budget : {1, 3, 10}) {
      CAPTURE(name);
      CAPTURE(yaml);
      CAPTURE(budget);
      Fixture f(nmt, MakeCluster(2));
      const AgentResult r =
          MakeLearned(name, yaml)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, budget, 2));
      CHECK(f.evaluator->evaluations() == r.evaluations);
      CHECK(r.evaluations >= 1);
      CHECK(r.evaluations <= budget);
      if (yaml.find("role_sweep") != std::string::npos && budget == 10)
        CHECK(r.extra.at("role_sweep_evaluations") > 0);  // the sweep ran and was counted
    }
  }
}

}  // namespace
}  // namespace gosim::agents
