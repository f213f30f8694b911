#include "agents/learned/mcm/mcm.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/train.h"
#include "agents/learned/register.h"
#include "core/error.h"
#include "core/io.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"
#include "tests/learned/learned_test_util.h"
#include "tests/learned/train_util.h"

namespace gosim::agents {
namespace {

using learned::mcm::StageOrder;

graphs::Graph SmallBert() {
  return graphs::Generate("bert",
                          YAML::Load("{layers: 2, hidden: 64, heads: 2, intermediate: 128, seq_len: 16, "
                                     "vocab: 200, training: false, batch: 1}"),
                          "mcm_test");
}

sim::SimOptions Pipeline() {
  sim::SimOptions o;
  o.micro_batches = 4;
  o.schedule = sim::Schedule::kStreaming;
  return o;
}

TEST_CASE("mcm: configs/agents/mcm.yaml is accepted and gives its defaults") {
  RegisterLearnedAgents();
  YAML::Node node = LoadYamlFile("configs/agents/mcm.yaml");
  YamlMap options = YamlMap::Root(node, "configs/agents/mcm.yaml");
  CHECK(MakeAgent("mcm", options)->name() == "mcm");
  YAML::Node again = LoadYamlFile("configs/agents/mcm.yaml");
  YamlMap parsed = YamlMap::Root(again, "configs/agents/mcm.yaml");
  const learned::mcm::McmOptions o = learned::mcm::McmOptions::Parse(parsed);
  const learned::mcm::McmOptions d;
  CHECK(o.evaluations == d.evaluations);
  CHECK(o.samples_per_step == d.samples_per_step);
  CHECK(o.solver_time_limit == d.solver_time_limit);
  CHECK(o.memory_fraction == d.memory_fraction);
  CHECK(o.net.bins == d.net.bins);
}

TEST_CASE("mcm: the stage order snakes through a mesh") {
  const sim::Cluster mesh = sim::LoadCluster("mcm_4x4");
  CHECK(StageOrder(mesh) == std::vector<int32_t>{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12});
}

// Whether every edge of `graph` goes forward in the stage order.
bool Forward(const graphs::Graph& graph, const sim::Cluster& cluster, const sim::Decision& d) {
  const std::vector<int32_t> order = StageOrder(cluster);
  std::map<int32_t, int32_t> stage;
  for (size_t s = 0; s < order.size(); ++s) stage[order[s]] = static_cast<int32_t>(s);
  for (const graphs::Edge& e : graph.edges()) {
    if (stage.at(d.placement[static_cast<size_t>(e.src)]) > stage.at(d.placement[static_cast<size_t>(e.dst)]))
      return false;
  }
  return true;
}

TEST_CASE(
    "mcm: the policy's proposals, repaired by the solver, are feasible forward pipelines within the budget") {
  const graphs::Graph graph = SmallBert();
  const sim::Cluster cluster = sim::LoadCluster("mcm_4x4");
  const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel("roofline"), Pipeline());
  const Problem problem{graph,         cluster, evaluator, Objective{.kind = ObjectiveKind::kThroughput},
                        Budget{24, 0}, 1};
  auto agent = learned_testing::MakeLearned("mcm", "{samples_per_step: 8, hidden: 8, layers: 1}");
  const AgentResult r = agent->Optimize(problem, nullptr);
  CHECK(r.evaluations == 24);
  REQUIRE(r.best_evaluation.feasible);
  CHECK(Forward(graph, cluster, r.best));
  CHECK(r.extra.at("policy_steps") == 3);
  CHECK(r.extra.at("pretrained") == 0);
  CHECK(r.extra.at("repaired_share") + r.extra.at("proposal_feasible_share") > 0.99);
  CHECK(r.extra.at("stages") == 16);

  // The controls: the policy alone (invalid proposals left as they are) and
  // the solver alone from uniform proposals.
  auto alone =
      learned_testing::MakeLearned("mcm", "{solver: none, samples_per_step: 8, hidden: 8, layers: 1}");
  const AgentResult a = alone->Optimize(problem, nullptr);
  CHECK(a.extra.at("solver_calls") == 0);
  CHECK(a.extra.at("proposal_feasible_share") < 0.5);  // 16 stages at random are rarely a forward pipeline
  auto solver = learned_testing::MakeLearned("mcm", "{policy: uniform, samples_per_step: 8}");
  const AgentResult s = solver->Optimize(problem, nullptr);
  REQUIRE(s.best_evaluation.feasible);
  CHECK(Forward(graph, cluster, s.best));
  CHECK(s.extra.at("final_entropy") == 0);  // nothing learned
}

TEST_CASE("mcm training: curves, best.pt on the valid split, exact resume; the agent fine-tunes from it") {
  RegisterLearnedAgents();
  const std::string suite =
      "name: t\ngraphs:\n"
      "  - {name: a, generator: bert, params: {layers: 1, hidden: 32, heads: 2, intermediate: 64, seq_len: "
      "8, "
      "vocab: 100, training: false, batch: 1}, split: train}\n"
      "  - {name: b, generator: rnnlm, params: {layers: 1, hidden: 32, vocab: 100, seq_len: 4, training: "
      "false, "
      "batch: 1}, split: train}\n"
      "  - {name: v, generator: bert, params: {layers: 2, hidden: 32, heads: 2, intermediate: 64, seq_len: "
      "8, "
      "vocab: 100, training: false, batch: 1}, split: valid}\n";
  const std::string config =
      "agent: mcm\ncluster: mcm_4x4\nmicro_batches: 2\nsteps: 4\nvalid_every: 2\ncheckpoint_every: 2\nseed: "
      "5\n"
      "options: {samples_per_step: 4, hidden: 8, layers: 1, bins: 8}\n";
  const std::string base = (std::filesystem::temp_directory_path() / "gosim_mcm_train").string();
  const learned::TrainRequest uninterrupted =
      testing::MakeTrainRequest(base + "_a", suite, config, "mcm_config");
  learned::RunTraining(uninterrupted);
  const learned::TrainRequest resumed =
      testing::KillAndResume(testing::MakeTrainRequest(base + "_b", suite, config, "mcm_config"), 3,
                             [](const learned::TrainRequest& killed) {
                               CHECK_THROWS_AS(learned::RunTraining(killed), ConfigError);
                             });
  REQUIRE(testing::CompareCurves(uninterrupted, resumed, 4) == "");
  const std::string best = uninterrupted.run_dir + "/best.pt";
  REQUIRE(FileExists(best));

  const graphs::Graph graph = SmallBert();
  const sim::Cluster cluster = sim::LoadCluster("mcm_4x4");
  const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel("roofline"), Pipeline());
  const Problem problem{graph,        cluster, evaluator, Objective{.kind = ObjectiveKind::kThroughput},
                        Budget{8, 0}, 2};
  auto agent = learned_testing::MakeLearned("mcm", "{checkpoint: " + best + ", samples_per_step: 4}");
  const AgentResult r = agent->Optimize(problem, nullptr);
  CHECK(r.extra.at("pretrained") == 1);
  CHECK(r.best_evaluation.feasible);
  // A checkpoint of another agent is refused in one line.
  auto wrong = learned_testing::MakeLearned(
      "mcm", "{checkpoint: " + learned_testing::UntrainedRegalCheckpoint(2, "gosim_mcm_wrong") + "}");
  CHECK_THROWS_AS(wrong->Optimize(problem, nullptr), StateError);
}

}  // namespace
}  // namespace gosim::agents
