// Graph partitioning (Scotch, METIS), Baechi's favorite-child LP, the static
// cost tables and orders.
#include "agents/partition.h"

#include <doctest/doctest.h>

#include "agents/baechi.h"
#include "agents/list_schedule.h"
#include "agents/static_costs.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;
using testing::Op;

// Two 4-op cliques (heavy edges inside) joined by one light edge.
graphs::Graph TwoClusters() {
  graphs::GraphBuilder b("two_clusters");
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 4; ++i)
      b.AddNode(Op("c" + std::to_string(c) + "_" + std::to_string(i), 1, 1'000'000));
  }
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 4; ++i) {
      for (int j = i + 1; j < 4; ++j) b.AddEdge(4 * c + i, 4 * c + j, 0);
    }
  }
  b.AddControlEdge(3, 4);
  return b.Build();
}

TEST_CASE("BuildPartitionGraph merges edges per pair, symmetrically, with integer weights") {
  graphs::GraphBuilder b("g");
  const int a = b.AddNode(Op("a", 1, 100));
  const int c = b.AddNode(Op("c", 3, 100));
  b.AddEdge(a, c, 0);
  b.AddControlEdge(a, c);
  const graphs::Graph g = b.Build();
  const PartitionGraph pg = BuildPartitionGraph(g, {{1.0, 3.0}});
  CHECK(pg.num_vertices == 2);
  CHECK(pg.xadj == std::vector<int32_t>{0, 1, 2});
  CHECK(pg.adjncy == std::vector<int32_t>{1, 0});
  CHECK(pg.adjwgt[0] == pg.adjwgt[1]);
  CHECK(pg.adjwgt[0] > 1);
  REQUIRE(pg.vwgt.size() == 2);
  CHECK(static_cast<double>(pg.vwgt[1] - 1) == doctest::Approx(3.0 * (pg.vwgt[0] - 1)).epsilon(1e-6));
}

TEST_CASE("Scotch and METIS cut the light edge between two clusters") {
  const graphs::Graph g = TwoClusters();
  const PartitionGraph pg = BuildPartitionGraph(g, {std::vector<double>(8, 1.0)});
  auto check = [](const std::vector<int32_t>& p) {
    REQUIRE(p.size() == 8);
    for (int i = 1; i < 4; ++i) {
      CHECK(p[i] == p[0]);
      CHECK(p[4 + i] == p[4]);
    }
    CHECK(p[0] != p[4]);
  };
  check(ScotchMap(pg, {1e12, 1e12}, 0.05, 1));
  check(ScotchPartition(pg, 2, 0.05, 1));
  check(MetisKway(pg, 2, {0.5f, 0.5f}, 30, 1));
  // Same seed, same answer.
  CHECK(MetisKway(pg, 2, {0.5f, 0.5f}, 30, 1) == MetisKway(pg, 2, {0.5f, 0.5f}, 30, 1));
  CHECK(ScotchMap(pg, {1e12, 1e12}, 0.05, 9) == ScotchMap(pg, {1e12, 1e12}, 0.05, 9));
  // One part, and fewer vertices than parts, need no library.
  CHECK(MetisKway(pg, 1, {1.0f}, 30, 1) == std::vector<int32_t>(8, 0));
}

TEST_CASE("StaticCosts: node times from the cost model, alpha-beta transfers") {
  Fixture f(testing::IndependentChains(1, 2, 1000, 50), MakeCluster(2, 4096, 1e9, 2e-6));
  const StaticCosts costs(*f.evaluator);
  CHECK(costs.NodeTime(0, 1) == doctest::Approx(1e-3));
  CHECK(costs.MeanNodeTime(1) == doctest::Approx(1e-3));
  CHECK(costs.Footprint(0) == 1050.0);
  CHECK(costs.Capacity(1) == 4096.0);
  CHECK(costs.CommTime(1e6, 0, 1) == doctest::Approx(2e-6 + 1e-3));
  CHECK(costs.CommTime(1e6, 1, 1) == 0.0);
  CHECK(costs.MeanCommTime(1e6) == doctest::Approx(2e-6 + 1e-3));
}

TEST_CASE("DFS order goes deep first; upward ranks follow the critical path") {
  // a -> {b, c}; b -> d; c -> e (node ids in insertion order).
  graphs::GraphBuilder b("tree");
  const int a = b.AddNode(Op("a", 1));
  const int x = b.AddNode(Op("b", 1));
  const int c = b.AddNode(Op("c", 5));
  const int d = b.AddNode(Op("d", 1));
  const int e = b.AddNode(Op("e", 1));
  b.AddEdge(a, x, 0);
  b.AddEdge(a, c, 0);
  b.AddEdge(x, d, 0);
  b.AddEdge(c, e, 0);
  Fixture f(b.Build(), MakeCluster(1));
  CHECK(DfsTopologicalOrder(f.graph) == std::vector<graphs::NodeId>{0, 1, 3, 2, 4});
  const StaticCosts costs(*f.evaluator);
  const std::vector<double> rank = UpwardRanks(f.graph, costs);
  CHECK(rank[0] == doctest::Approx(7e-3));
  CHECK(rank[2] == doctest::Approx(6e-3));
  CHECK(rank[1] == doctest::Approx(2e-3));
  CHECK(PrioritiesFromOrder(std::vector<graphs::NodeId>{2, 0, 1}, 3) == std::vector<double>{2, 1, 3});
}

TEST_CASE("ListSchedule: insertion into idle gaps and Baechi's memory accounting") {
  Fixture f(testing::IndependentChains(1, 3, 100, 10), MakeCluster(1, 250));
  const StaticCosts costs(*f.evaluator);
  ListSchedule s(f.graph, costs);
  CHECK(s.Fits(0, 0));
  s.Assign(0, 0, 5e-3);  // leaves [0, 5 ms) idle
  CHECK(s.EarliestStart(1, 0, false) == doctest::Approx(6e-3));
  CHECK(s.used_memory(0) == 110.0);
  s.Assign(1, 0, 6e-3);  // node 0's output is released (its only consumer is placed)
  CHECK(s.used_memory(0) == 120.0);
  CHECK(s.Fits(2, 0));
  s.Assign(2, 0, 7e-3);  // a sink: its output is released at once
  CHECK(s.used_memory(0) == 30.0);
  CHECK(s.makespan() == doctest::Approx(8e-3));
  CHECK(s.order() == std::vector<graphs::NodeId>{0, 1, 2});

  Fixture two(testing::IndependentChains(2, 1), MakeCluster(1));
  const StaticCosts two_costs(*two.evaluator);
  ListSchedule gaps(two.graph, two_costs);
  gaps.Assign(0, 0, 5e-3);
  CHECK(gaps.EarliestStart(1, 0, true) == 0.0);  // fits in [0, 5 ms)
  CHECK(gaps.EarliestStart(1, 0, false) == doctest::Approx(6e-3));
}

TEST_CASE("Favorite-child LP marks chain edges favorite and solves to the chain length") {
  Fixture f(testing::IndependentChains(1, 4, 10'000'000), MakeCluster(2, int64_t{1} << 34, 1e10));
  const StaticCosts costs(*f.evaluator);
  const FavoriteChildren fc = SolveFavoriteChildren(f.graph, costs);
  REQUIRE(fc.solved);
  CHECK(fc.status == "optimal");
  CHECK(fc.lp_makespan == doctest::Approx(4e-3));
  CHECK(fc.favorite == std::vector<graphs::NodeId>{1, 2, 3, -1});
}

}  // namespace
}  // namespace gosim::agents
