#include "agents/cp.h"

#include <doctest/doctest.h>

#include "core/error.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;
using testing::Op;

// a(100 B) -> b(10 B) -> c(1 B): while b runs, a and b are resident: 110 B.
graphs::Graph SmallChain() {
  graphs::GraphBuilder b("tiny_chain");
  const int a = b.AddNode(Op("a", 1, 100));
  const int m = b.AddNode(Op("b", 1, 10));
  const int c = b.AddNode(Op("c", 1, 1));
  b.AddEdge(a, m, 0);
  b.AddEdge(m, c, 0);
  return b.Build();
}

// Two branches x1(1000) -> x2(1), y1(1000) -> y2(1), joined by z(1). On one
// device the best order finishes a branch before starting the other:
// x1, x2, y1, y2, z peaks at y1 + y2 + x2 = 1002 B (running x1 and y1 back
// to back would hold 2000 B).
graphs::Graph TwoBranches() {
  graphs::GraphBuilder b("branches");
  const int x1 = b.AddNode(Op("x1", 1, 1000));
  const int y1 = b.AddNode(Op("y1", 1, 1000));
  const int x2 = b.AddNode(Op("x2", 1, 1));
  const int y2 = b.AddNode(Op("y2", 1, 1));
  const int z = b.AddNode(Op("z", 1, 1));
  b.AddEdge(x1, x2, 0);
  b.AddEdge(y1, y2, 0);
  b.AddEdge(x2, z, 0);
  b.AddEdge(y2, z, 0);
  return b.Build();
}

TEST_CASE("cp proves the optimum of a tiny chain with gap 0") {
  Fixture f(SmallChain(), MakeCluster(1));
  const CpSolution s = SolvePeakMemoryModel(f.graph, f.cluster, CpOptions{});
  REQUIRE(s.found);
  CHECK(s.optimal);
  CHECK(s.gap == 0.0);
  CHECK(s.objective == doctest::Approx(110.0));
  CHECK(s.bound == doctest::Approx(110.0));
  CHECK(s.step == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("cp finds the memory-optimal order and the simulator agrees") {
  Fixture f(TwoBranches(), MakeCluster(1));
  const Problem problem = f.MakeProblem(ObjectiveKind::kPeakMemory);
  AgentResult r = testing::Make("cp", "{time_limit: 60}")->Optimize(problem);
  CHECK(r.extra.at("optimal") == 1.0);
  CHECK(r.extra.at("gap") == 0.0);
  CHECK(r.extra.at("model_objective") == doctest::Approx(1002.0));
  CHECK(r.extra.at("bound") == doctest::Approx(1002.0));
  CHECK(r.best_evaluation.feasible);
  CHECK(r.best_evaluation.peak_memory == doctest::Approx(1002.0));
}

TEST_CASE("cp splits a graph that only fits when split, and proves it optimal") {
  // p1 (800 B weights, 10 B out) -> p2 (800 B weights, 10 B out), 1000 B
  // devices: one op per device; device 1 holds 800 + the received 10 B + 10 B.
  graphs::GraphBuilder b("split");
  const int p1 = b.AddNode(Op("p1", 1, 10, "", 800));
  const int p2 = b.AddNode(Op("p2", 1, 10, "", 800));
  b.AddEdge(p1, p2, 0);
  Fixture f(b.Build(), MakeCluster(2, 1000));
  const Problem problem = f.MakeProblem(ObjectiveKind::kPeakMemory);
  AgentResult r = testing::Make("cp")->Optimize(problem);
  CHECK(r.extra.at("optimal") == 1.0);
  CHECK(r.extra.at("gap") == 0.0);
  CHECK(r.extra.at("model_objective") == doctest::Approx(820.0));
  CHECK(r.best.placement[0] != r.best.placement[1]);
  CHECK(r.best_evaluation.feasible);
  CHECK(r.best_evaluation.peak_memory == doctest::Approx(820.0));
}

TEST_CASE("cp reports infeasibility and refuses large graphs") {
  graphs::GraphBuilder b("too_big");
  b.AddNode(Op("w", 1, 10, "", 5000));
  Fixture f(b.Build(), MakeCluster(2, 1000));
  const CpSolution s = SolvePeakMemoryModel(f.graph, f.cluster, CpOptions{});
  CHECK_FALSE(s.found);
  CHECK(s.infeasible);
  Fixture big(testing::RandomLayeredGraph(10, 5, 1), MakeCluster(2));
  CHECK_THROWS_AS(SolvePeakMemoryModel(big.graph, big.cluster, CpOptions{}), ConfigError);
}

}  // namespace
}  // namespace gosim::agents
