#include "agents/repair.h"

#include <doctest/doctest.h>

#include "sim/decision.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;

TEST_CASE("RepairMemory moves the largest consumers off the overfull device") {
  // Six ops of 300 B weights on 1000 B devices: three must leave device 0.
  Fixture f(testing::IndependentChains(2, 3, 4, 300), MakeCluster(2, 1000));
  const StaticCosts costs(*f.evaluator);
  int64_t calls = 0;
  auto evaluate = [&](const sim::Decision& d) {
    ++calls;
    return f.evaluator->Evaluate(d);
  };
  RepairResult r = RepairMemory(f.graph, costs, sim::SingleDeviceDecision(f.graph, 0), evaluate);
  CHECK(r.feasible);
  CHECK(r.evaluation.feasible);
  CHECK(r.moved_nodes == 3);  // 1, then 2 more (batch doubling)
  CHECK(r.evaluations == 3);
  CHECK(calls == 3);
  CHECK(r.decision.placement == std::vector<int32_t>{1, 1, 1, 0, 0, 0});
  CHECK_NOTHROW(sim::ValidateDecision(r.decision, f.graph, f.cluster));
}

TEST_CASE("RepairMemory prefers the heaviest op and leaves feasible decisions alone") {
  graphs::GraphBuilder b("heavy");
  const int small = b.AddNode(testing::Op("small", 1, 4, "", 100));
  const int heavy = b.AddNode(testing::Op("heavy", 1, 4, "", 700));
  const int tail = b.AddNode(testing::Op("tail", 1, 4, "", 100));
  b.AddEdge(small, heavy, 0);
  b.AddEdge(heavy, tail, 0);
  Fixture f(b.Build(), MakeCluster(2, 800));
  const StaticCosts costs(*f.evaluator);
  auto evaluate = [&](const sim::Decision& d) { return f.evaluator->Evaluate(d); };
  RepairResult r = RepairMemory(f.graph, costs, sim::SingleDeviceDecision(f.graph, 0), evaluate);
  CHECK(r.feasible);
  CHECK(r.moved_nodes == 1);
  CHECK(r.decision.placement == std::vector<int32_t>{0, 1, 0});

  RepairResult unchanged = RepairMemory(f.graph, costs, r.decision, evaluate);
  CHECK(unchanged.feasible);
  CHECK(unchanged.moved_nodes == 0);
  CHECK(unchanged.evaluations == 1);
  CHECK(unchanged.decision.placement == r.decision.placement);
}

TEST_CASE("RepairMemory gives up within its evaluation budget when nothing can fit") {
  graphs::GraphBuilder b("hopeless");
  b.AddNode(testing::Op("w", 1, 4, "", 5000));
  Fixture f(b.Build(), MakeCluster(2, 1000));
  const StaticCosts costs(*f.evaluator);
  RepairOptions options;
  options.max_evaluations = 4;
  RepairResult r = RepairMemory(
      f.graph, costs, sim::SingleDeviceDecision(f.graph, 0),
      [&](const sim::Decision& d) { return f.evaluator->Evaluate(d); }, options);
  CHECK_FALSE(r.feasible);
  CHECK(r.evaluations <= 4);
}

}  // namespace
}  // namespace gosim::agents
