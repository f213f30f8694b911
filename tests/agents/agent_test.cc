#include "agents/agent.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "agents/learned_agents.h"
#include "agents/search_tracker.h"
#include "core/error.h"
#include "core/io.h"
#include "core/plugin.h"
#include "sim/decision.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;

sim::Cluster TwoDevices() {
  return MakeCluster(2, 1000);
}

TEST_CASE("Objective scores feasible and infeasible evaluations") {
  const sim::Cluster cluster = TwoDevices();
  sim::Evaluation ok{true, 0.25, 600.0, -1};
  sim::Evaluation oom{false, 100.0, 1200.0, 1};
  Objective step;
  CHECK(step.Score(ok, cluster) == 0.25);
  Objective memory;
  memory.kind = ObjectiveKind::kPeakMemory;
  CHECK(memory.Score(ok, cluster) == 600.0);
  Objective weighted;
  weighted.kind = ObjectiveKind::kWeighted;
  weighted.memory_weight = 0.5;
  weighted.reference_step_time = 0.5;
  CHECK(weighted.Score(ok, cluster) == doctest::Approx(0.25 / 0.5 + 0.5 * 600.0 / 1000.0));
  CHECK(step.Score(oom, cluster) == Objective::kInfeasibleBase + 100.0);
  CHECK(memory.Score(oom, cluster) > memory.Score(ok, cluster));
  CHECK(weighted.ToString().find("weighted") == 0);
}

TEST_CASE("ParseObjectiveKind accepts the three names and suggests on typos") {
  CHECK(ParseObjectiveKind("step_time") == ObjectiveKind::kStepTime);
  CHECK(ParseObjectiveKind("peak_memory") == ObjectiveKind::kPeakMemory);
  CHECK(ParseObjectiveKind("weighted") == ObjectiveKind::kWeighted);
  try {
    ParseObjectiveKind("step_tme", Location("x.yaml", 3, 5));
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("step_time") != std::string::npos);
    CHECK(e.where().line == 3);
  }
}

TEST_CASE("Every issue-8 baseline is registered") {
  const std::vector<std::string> names = AgentNames();
  for (const char* expected : {"single_device", "round_robin", "human_expert", "scotch", "mincut", "metis",
                               "m_topo", "m_etf", "m_sct", "heft", "local_search", "gp_dfs", "brkga",
                               "tuned_brkga", "cp", "random_search", "simulated_annealing"}) {
    CHECK_MESSAGE(std::find(names.begin(), names.end(), expected) != names.end(), expected);
    CHECK_FALSE(AgentDescription(expected).empty());
  }
}

TEST_CASE("MakeAgent rejects unknown names and unknown options") {
  try {
    testing::Make("brkgaa");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("brkga") != std::string::npos);
  }
  try {
    testing::Make("brkga", "{populaton: 10}");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("population") != std::string::npos);
  }
  CHECK_THROWS_AS(testing::Make("brkga", "{elite_bias: 0.2}"), ConfigError);
  CHECK_THROWS_AS(testing::Make("heft", "{schedule: lifo}"), ConfigError);
  CHECK_THROWS_AS(testing::Make("brkga", "{elite_fraction: 0.6, mutant_fraction: 0.5}"), ConfigError);
}

TEST_CASE("The learned agents are valid names without loading LibTorch") {
  const std::vector<std::string> names = AgentNames();
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (std::string_view learned : kLearnedAgentNames) {
    CHECK_MESSAGE(std::find(names.begin(), names.end(), learned) != names.end(), learned);
  }
  CHECK(IsLearnedAgent("go"));
  CHECK_FALSE(IsLearnedAgent("brkga"));
  testing::Make("brkga");
  // An unknown name's error lists them too, before the plugin is loaded.
  try {
    testing::Make("regall");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("unknown agent 'regall'. Did you mean 'regal'?") != std::string::npos);
    for (std::string_view learned : kLearnedAgentNames) {
      CHECK_MESSAGE(what.find(", " + std::string(learned)) != std::string::npos, what);
    }
    CHECK(what.find('\n') == std::string::npos);
  }
  CHECK_FALSE(TorchPluginLoaded());
}

// The learned agents' defaults are checked by their own tests (tests/learned/),
// which link LibTorch.
TEST_CASE("Every built-in agent has a defaults file in configs/agents that it accepts") {
  for (const std::string& name : AgentNames()) {
    if (IsLearnedAgent(name)) continue;
    const std::string path = "configs/agents/" + name + ".yaml";
    REQUIRE_MESSAGE(FileExists(path), path);
    YamlMap options = YamlMap::Root(LoadYamlFile(path), path);
    CHECK(MakeAgent(name, options)->name() == name);
  }
}

TEST_CASE("SearchTracker counts, keeps the best, stops at the budget and records the curve") {
  Fixture f(testing::IndependentChains(2, 3), MakeCluster(2));
  Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 3);
  int64_t reported = 0;
  SearchTracker tracker(problem, [&](int64_t evaluations, double) { reported = evaluations; });
  CHECK(tracker.Remaining() == 3);
  sim::Decision one = sim::SingleDeviceDecision(f.graph, 0);
  sim::Decision split = one;
  for (int v = 3; v < 6; ++v) split.placement[static_cast<size_t>(v)] = 1;
  tracker.Evaluate(one);
  CHECK(tracker.best_objective() == doctest::Approx(6e-3));
  tracker.Evaluate(split);
  CHECK(tracker.best_objective() == doctest::Approx(3e-3));
  tracker.Evaluate(one);
  CHECK(tracker.Done());
  CHECK(tracker.best().placement == split.placement);
  AgentResult result = tracker.Finish({{"x", 1.0}});
  CHECK(result.evaluations == 3);
  CHECK(reported == 3);
  CHECK(result.extra.at("x") == 1.0);
  // Points on the two improvements and at the end.
  REQUIRE(result.curve.size() == 3);
  CHECK(result.curve[0].evaluations == 1);
  CHECK(result.curve[1].evaluations == 2);
  CHECK(result.curve[2].evaluations == 3);
  CHECK(result.curve[2].best_objective == doctest::Approx(3e-3));
}

TEST_CASE("SearchTracker uses the agent default when the problem sets no evaluation budget") {
  Fixture f(testing::IndependentChains(1, 2), MakeCluster(1));
  Problem problem = f.MakeProblem();
  SearchTracker limited(problem, {}, 7);
  CHECK(limited.Remaining() == 7);
  SearchTracker unlimited(problem, {});
  CHECK(unlimited.Remaining() == SearchTracker::kUnlimited);
  CHECK_THROWS_AS(unlimited.Finish(), Error);
}

}  // namespace
}  // namespace gosim::agents
