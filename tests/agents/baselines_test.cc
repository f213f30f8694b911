// Every baseline returns a valid decision, and finds the known optimum on
// golden problems.
#include <doctest/doctest.h>

#include <cmath>

#include "agents/agent.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::Make;
using testing::MakeCluster;

const char* const kExpertRules = "{rules: tests/agents/data/chains_expert.yaml}";

// Agents and the options they get in these tests (budget-limited searches).
struct Case {
  const char* name;
  std::string options;
};
std::vector<Case> AllCases() {
  return {{"single_device", "{}"},
          {"round_robin", "{}"},
          {"round_robin", "{unit: layer, layer_depth: 1}"},
          {"scotch", "{}"},
          {"mincut", "{}"},
          {"metis", "{}"},
          {"metis", "{balance: both, schedule: list}"},
          {"gp_dfs", "{}"},
          {"m_topo", "{}"},
          {"m_etf", "{}"},
          {"m_etf", "{schedule: static}"},
          {"m_sct", "{}"},
          {"m_sct", "{schedule: static}"},
          {"heft", "{}"},
          {"heft", "{insertion: false, schedule: fifo}"},
          {"local_search", "{evaluations: 200}"},
          {"simulated_annealing", "{evaluations: 200}"},
          {"random_search", "{evaluations: 200}"},
          {"brkga", "{evaluations: 200, population: 20}"},
          {"brkga_5k", "{evaluations: 200, population: 20}"},
          {"random_search", "{evaluations: 200, warm_start: []}"},
          {"tuned_brkga", "{evaluations: 200}"}};
}

void CheckResult(const AgentResult& result, const Problem& problem) {
  CHECK_NOTHROW(sim::ValidateDecision(result.best, problem.graph, problem.cluster));
  CHECK(result.evaluations >= 1);
  REQUIRE_FALSE(result.curve.empty());
  for (size_t i = 1; i < result.curve.size(); ++i) {
    CHECK(result.curve[i].best_objective <= result.curve[i - 1].best_objective);
    CHECK(result.curve[i].evaluations >= result.curve[i - 1].evaluations);
  }
  CHECK(result.curve.back().best_objective == result.best_objective);
  // The reported objective is the simulator's for the reported decision.
  const sim::Evaluation again = problem.evaluator.Evaluate(result.best);
  CHECK(problem.objective.Score(again, problem.cluster) == doctest::Approx(result.best_objective));
}

TEST_CASE("Every baseline returns a valid decision on a random layered graph") {
  Fixture f(testing::RandomLayeredGraph(6, 4, 7), MakeCluster(3, int64_t{1} << 30, 1e10, 5e-6));
  for (ObjectiveKind kind : {ObjectiveKind::kStepTime, ObjectiveKind::kPeakMemory}) {
    for (const Case& c : AllCases()) {
      CAPTURE(c.name);
      CAPTURE(c.options);
      const Problem problem = f.MakeProblem(kind);
      AgentResult result = Make(c.name, c.options)->Optimize(problem);
      CheckResult(result, problem);
      CHECK(result.evaluations <= 200);
    }
  }
}

TEST_CASE("human_expert applies its rules; cp solves the small graph") {
  Fixture f(testing::IndependentChains(2, 3), MakeCluster(2));
  const Problem problem = f.MakeProblem(ObjectiveKind::kPeakMemory);
  AgentResult expert = Make("human_expert", kExpertRules)->Optimize(problem);
  CheckResult(expert, problem);
  CHECK(expert.best.placement == std::vector<int32_t>{0, 0, 0, 1, 1, 1});
  AgentResult cp = Make("cp", "{time_limit: 30}")->Optimize(problem);
  CheckResult(cp, problem);
}

// Two independent chains of three 1 ms ops whose tensors take 1 ms to cross
// devices: the optimum puts one chain on each device, 3 ms.
TEST_CASE("Golden: two independent equal chains on two devices take one chain's time") {
  Fixture f(testing::IndependentChains(2, 3, 10'000'000), MakeCluster(2, int64_t{1} << 34, 1e10, 0.0));
  const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 0, 3);
  const double one_chain = 3e-3;
  for (const Case& c : std::vector<Case>{{"round_robin", "{unit: layer, layer_depth: 1}"},
                                         {"human_expert", kExpertRules},
                                         {"scotch", "{}"},
                                         {"mincut", "{}"},
                                         {"metis", "{}"},
                                         {"gp_dfs", "{}"},
                                         {"m_etf", "{}"},
                                         {"m_sct", "{}"},
                                         {"heft", "{}"},
                                         {"local_search", "{evaluations: 500}"},
                                         {"simulated_annealing", "{evaluations: 500}"},
                                         {"random_search", "{evaluations: 500}"},
                                         {"brkga", "{evaluations: 500, population: 20}"},
                                         {"tuned_brkga", "{evaluations: 500}"}}) {
    CAPTURE(c.name);
    AgentResult result = Make(c.name, c.options)->Optimize(problem);
    CheckResult(result, problem);
    CHECK(result.best_evaluation.feasible);
    CHECK(result.best_objective == doctest::Approx(one_chain).epsilon(1e-9));
    CHECK(result.best.placement[0] != result.best.placement[3]);
  }
  AgentResult single = Make("single_device", "{device: 1}")->Optimize(problem);
  CHECK(single.best_objective == doctest::Approx(6e-3).epsilon(1e-9));
  CHECK(single.best.placement == std::vector<int32_t>(6, 1));
}

TEST_CASE("Golden: m_topo fills devices up to total/devices + largest op") {
  // Six equal ops of 1000 persistent bytes (+4 output bytes): the limit is
  // 3 * 1004 + 1004, so device 0 takes four ops.
  Fixture f(testing::IndependentChains(2, 3, 4, 1000), MakeCluster(2));
  const Problem problem = f.MakeProblem();
  AgentResult result = Make("m_topo")->Optimize(problem);
  CHECK(result.best.placement == std::vector<int32_t>{0, 0, 0, 0, 1, 1});
  CHECK(result.extra.at("memory_overflows") == 0.0);
}

// Six ops of 300 persistent bytes on devices of 1000 bytes: only a split fits.
TEST_CASE("Golden: a graph that only fits in memory when split") {
  Fixture f(testing::IndependentChains(2, 3, 4, 300), MakeCluster(2, 1000));
  const Problem problem = f.MakeProblem(ObjectiveKind::kPeakMemory);
  AgentResult single = Make("single_device")->Optimize(problem);
  CHECK_FALSE(single.best_evaluation.feasible);
  for (const Case& c : std::vector<Case>{{"single_device", "{repair: true}"},
                                         {"m_topo", "{}"},
                                         {"m_etf", "{}"},
                                         {"m_sct", "{}"},
                                         {"heft", "{}"},
                                         {"gp_dfs", "{}"},
                                         {"metis", "{balance: memory}"},
                                         {"brkga", "{evaluations: 300, population: 20}"},
                                         {"random_search", "{evaluations: 300}"},
                                         {"local_search", "{evaluations: 300}"},
                                         {"cp", "{}"}}) {
    CAPTURE(c.name);
    AgentResult result = Make(c.name, c.options)->Optimize(problem);
    CheckResult(result, problem);
    CHECK(result.best_evaluation.feasible);
    int on_zero = 0;
    for (int32_t d : result.best.placement) on_zero += d == 0;
    CHECK(on_zero == 3);
  }
}

TEST_CASE(
    "exclude_devices: the partitioners never use an excluded device; naming an unknown one is an error") {
  Fixture f(testing::RandomLayeredGraph(6, 5, 3), MakeCluster(3, int64_t{1} << 34, 1e10, 5e-6));
  const Problem problem = f.MakeProblem();
  for (const char* name : {"scotch", "mincut", "metis", "gp_dfs", "human_expert"}) {
    CAPTURE(name);
    const AgentResult all =
        Make(name,
             std::string(name) == "human_expert" ? "{rules: tests/agents/data/layers_expert.yaml}" : "{}")
            ->Optimize(problem);
    CheckResult(all, problem);
    const std::string rules =
        std::string(name) == "human_expert" ? "rules: tests/agents/data/layers_expert.yaml, " : "";
    const AgentResult two = Make(name, "{" + rules + "exclude_devices: [gpu1]}")->Optimize(problem);
    CheckResult(two, problem);
    for (int32_t d : two.best.placement) CHECK(d != 1);
    const AgentResult one = Make(name, "{" + rules + "exclude_devices: [gpu0, gpu2]}")->Optimize(problem);
    CHECK(one.best.placement == std::vector<int32_t>(one.best.placement.size(), 1));
    CHECK_THROWS_AS(Make(name, "{" + rules + "exclude_devices: [cpu9]}")->Optimize(problem), ConfigError);
    CHECK_THROWS_AS(Make(name, "{" + rules + "exclude_devices: [gpu0, gpu1, gpu2]}")->Optimize(problem),
                    ConfigError);
  }
}

TEST_CASE("data_parallel: one evaluation of the DDP step, per graph batch; refusals before any") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  const sim::Cluster cluster = MakeCluster(4);
  const auto cost = sim::MakeCostModel("auto");
  const sim::Evaluator ev(nmt, cluster, cost);
  Problem problem{nmt, cluster, ev, Objective{}, Budget{}, 1};
  const AgentResult r = Make("data_parallel")->Optimize(problem);
  CHECK(r.evaluations == 1);
  CHECK(ev.evaluations() == 1);
  CHECK(r.best.data_parallel == 4);
  CHECK(r.best_evaluation.feasible);
  const sim::Evaluator direct(nmt, cluster, cost);
  CHECK(r.best_evaluation.step_time == direct.Evaluate(sim::DataParallelDecision(nmt, 4)).step_time);
  CHECK(Make("data_parallel", "{replicas: 2}")->Optimize(problem).best.data_parallel == 2);

  // An inference graph, too many replicas: one ConfigError, nothing simulated.
  const graphs::Graph inference =
      graphs::Generate("nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100}"), "test");
  const sim::Evaluator inf(inference, cluster, cost);
  Problem inf_problem{inference, cluster, inf, Objective{}, Budget{}, 1};
  CHECK_THROWS_WITH_AS(Make("data_parallel")->Optimize(inf_problem), doctest::Contains("no parameter update"),
                       ConfigError);
  CHECK(inf.evaluations() == 0);
  CHECK_THROWS_WITH_AS(Make("data_parallel", "{replicas: 5}")->Optimize(problem),
                       doctest::Contains("needs 2 to 4 replicas"), ConfigError);
}

TEST_CASE("Deterministic agents give the same result twice; seeded searches depend on the seed only") {
  Fixture f(testing::RandomLayeredGraph(5, 4, 11), MakeCluster(2, int64_t{1} << 30, 1e10, 5e-6));
  for (const Case& c : AllCases()) {
    CAPTURE(c.name);
    const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 0, 42);
    AgentResult a = Make(c.name, c.options)->Optimize(problem);
    AgentResult b = Make(c.name, c.options)->Optimize(problem);
    CHECK(a.best.placement == b.best.placement);
    CHECK(a.best.priority == b.best.priority);
    CHECK(a.best_objective == b.best_objective);
    CHECK(a.evaluations == b.evaluations);
  }
}

}  // namespace
}  // namespace gosim::agents
