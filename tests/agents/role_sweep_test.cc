// Tests of the role_sweep agent (agents/role_sweep.cc) and of the scope and
// role groups it shares with GO (agents/roles.h).
#include <string>

#include "agents/agent.h"
#include "agents/roles.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "tests/agents/test_util.h"

#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;
using testing::Op;

// x -> layer1/a -> layer2/a -> y and x -> layer1/b -> layer2/b -> y; a and b
// ops 10 ms, x and y 1 ms. One GPU: 42 ms. Role "layer/a" (both a ops, one
// in each layer's scope group) on the other GPU overlaps the two chains:
// 22 ms. Moving it back, or role "layer/b" too, is worse.
graphs::Graph TwoLayers() {
  graphs::GraphBuilder b("two_layers");
  const int x = b.AddNode(Op("x", 1.0));
  const int a1 = b.AddNode(Op("layer1/a/mm", 10.0, 4, "layer1/a"));
  const int b1 = b.AddNode(Op("layer1/b/mm", 10.0, 4, "layer1/b"));
  const int a2 = b.AddNode(Op("layer2/a/mm", 10.0, 4, "layer2/a"));
  const int b2 = b.AddNode(Op("layer2/b/mm", 10.0, 4, "layer2/b"));
  const int y = b.AddNode(Op("y", 1.0));
  b.AddEdge(x, a1, 0);
  b.AddEdge(x, b1, 0);
  b.AddEdge(a1, a2, 0);
  b.AddEdge(b1, b2, 0);
  b.AddEdge(a2, y, 0);
  b.AddEdge(b2, y, 0);
  return b.Build();
}

TEST_CASE("roles: scope groups per layer, one role per op kind across the layers") {
  const graphs::Graph g = TwoLayers();
  const NodePartition groups = MakeScopeGroups(g);
  CHECK(groups.count == 3);  // the unscoped x and y, layer1, layer2 (numbered by first node)
  CHECK(groups.id == std::vector<int64_t>{0, 1, 1, 2, 2, 0});
  const NodePartition roles = MakeRoleGroups(g, groups, RoleKey::kScope);
  CHECK(roles.count == 2);
  CHECK(roles.id == std::vector<int64_t>{-1, 0, 1, 0, 1, -1});
  CHECK(roles.first == std::vector<int64_t>{1, 2});
  // Keyed by name the same here ("layer/a/mm"); without groups (every node
  // its own) too.
  CHECK(MakeRoleGroups(g, groups, RoleKey::kName).id == roles.id);
  CHECK(MakeRoleGroups(g, NodePartition{}, RoleKey::kScope).id == roles.id);
}

TEST_CASE(
    "role_sweep: finds the one role move that helps, stops at the local optimum, counts every evaluation") {
  Fixture f(TwoLayers(), MakeCluster(2));
  const int64_t before = f.evaluator->evaluations();
  const AgentResult r = testing::Make("role_sweep", "{roles_by: scope}")
                            ->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 100, 1));
  CHECK(r.extra.at("start_objective") == doctest::Approx(0.042).epsilon(1e-6));
  CHECK(r.best_objective == doctest::Approx(0.022).epsilon(1e-6));
  // Role a moved to gpu1 as a whole; b, x and y stay on gpu0.
  CHECK(r.best.placement == std::vector<int32_t>{0, 1, 0, 1, 0, 0});
  // single_device (1), round 1: a -> gpu1, b -> gpu1 (2), round 2 from the
  // better decision: a -> gpu0, b -> gpu1 (2), neither improves: stop.
  CHECK(r.extra.at("rounds") == 2);
  CHECK(r.extra.at("moves") == 4);
  CHECK(r.extra.at("local_optimum") == 1);
  CHECK(r.evaluations == 5);
  CHECK(f.evaluator->evaluations() - before == 5);
}

TEST_CASE("role_sweep: stays within the budget exactly, the warm start counted") {
  Fixture f(TwoLayers(), MakeCluster(2));
  for (const int64_t budget : {1, 2, 3, 4}) {
    CAPTURE(budget);
    const int64_t before = f.evaluator->evaluations();
    const AgentResult r =
        testing::Make("role_sweep")->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, budget, 1));
    CHECK(r.evaluations == budget);
    CHECK(f.evaluator->evaluations() - before == budget);
    CHECK(r.extra.at("moves") == budget - 1);
    // The first move (role a to gpu1) is the improving one.
    CHECK(r.best_objective == doctest::Approx(budget == 1 ? 0.042 : 0.022).epsilon(1e-6));
  }
  // A warm start of two agents costs two evaluations.
  const AgentResult two = testing::Make("role_sweep", "{warm_start: [single_device, round_robin]}")
                              ->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 3, 1));
  CHECK(two.evaluations == 3);
  CHECK(two.extra.at("moves") == 1);
}

TEST_CASE("role_sweep: keeps colocation groups on one device on a training graph; bad options refused") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  REQUIRE(nmt.colocation_groups().size() > 4);
  Fixture f(nmt, MakeCluster(4));
  const NodePartition roles = MakeRoleGroups(nmt, MakeScopeGroups(nmt), RoleKey::kName);
  REQUIRE(roles.count > 2);
  for (const char* by : {"scope", "name"}) {
    CAPTURE(by);
    const int64_t before = f.evaluator->evaluations();
    const AgentResult r = testing::Make("role_sweep", std::string("{roles_by: ") + by + "}")
                              ->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 40, 2));
    CHECK(r.evaluations <= 40);
    CHECK(f.evaluator->evaluations() - before == r.evaluations);
    CHECK(r.extra.at("moves") == r.evaluations - 1);
    CHECK(testing::KeepsGroups(f.graph, r.best.placement));
    CHECK_FALSE(f.evaluator->FindSplit(r.best.placement).has_value());
    CHECK(r.best_evaluation.feasible);
  }
  CHECK_THROWS_AS(testing::Make("role_sweep", "{warm_start: []}"), ConfigError);
  CHECK_THROWS_AS(testing::Make("role_sweep", "{roles_by: names}"), ConfigError);
  CHECK_THROWS_AS(testing::Make("role_sweep", "{warm_start: [brkga]}"), ConfigError);  // a search agent
}

}  // namespace
}  // namespace gosim::agents
