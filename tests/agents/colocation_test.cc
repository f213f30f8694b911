// Colocation as a constraint of the problem (agents/colocation.h): the unit
// view, the tracker that keeps groups together, BRKGA's group decoder, and
// every registered (non-learned) agent on training graphs.
#include "agents/colocation.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/brkga/chromosome.h"
#include "agents/learned_agents.h"
#include "agents/search_tracker.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/decision.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::KeepsGroups;
using testing::MakeCluster;

// A training step in miniature: weights w1, w2 (persistent 4 KB each, their
// own colocation groups with their optimizer updates u1, u2), a forward
// chain x -> f1 -> f2 -> loss, its backward b2 -> b1, and the gradients
// feeding the updates. 10 nodes.
graphs::Graph TinyTraining() {
  graphs::GraphBuilder b("tiny_train");
  auto op = [&](const char* name, double ms, const char* group, int64_t persistent = 0) {
    graphs::NodeSpec s = testing::Op(name, ms, 4096, "", persistent);
    s.colocation = group;
    return b.AddNode(s);
  };
  const int w1 = op("w1", 0.0, "w1", 4096);
  const int w2 = op("w2", 0.0, "w2", 4096);
  const int x = op("x", 0.1, "");
  const int f1 = op("f1", 2.0, "");
  const int f2 = op("f2", 2.0, "");
  const int loss = op("loss", 0.1, "");
  const int b2 = op("b2", 2.0, "");
  const int b1 = op("b1", 2.0, "");
  const int u2 = op("u2", 0.5, "w2");
  const int u1 = op("u1", 0.5, "w1");
  for (auto [s, d] : {std::pair{x, f1},
                      {w1, f1},
                      {f1, f2},
                      {w2, f2},
                      {f2, loss},
                      {loss, b2},
                      {w2, b2},
                      {b2, b1},
                      {w1, b1},
                      {b2, u2},
                      {b1, u1},
                      {w2, u2},
                      {w1, u1}}) {
    b.AddEdge(s, d, 0);
  }
  return b.Build();
}

int32_t Id(const graphs::Graph& g, const std::string& name) {
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    if (g.node(v).name == name) return v;
  }
  FAIL("no node " << name);
  return -1;
}

TEST_CASE("ColocationUnits: one unit per group and per ungrouped node; off = one per node") {
  const graphs::Graph g = TinyTraining();
  const ColocationUnits units(g, true);
  CHECK(units.grouped());
  CHECK(units.num_nodes() == 10);
  CHECK(units.num_units() == 8);  // 2 groups of 2 + 6 single nodes
  CHECK(units.unit(Id(g, "w1")) == units.unit(Id(g, "u1")));
  CHECK(units.unit(Id(g, "w2")) == units.unit(Id(g, "u2")));
  CHECK(units.unit(Id(g, "w1")) != units.unit(Id(g, "w2")));
  const std::span<const graphs::NodeId> m = units.members(units.unit(Id(g, "w2")));
  CHECK(std::vector<graphs::NodeId>(m.begin(), m.end()) ==
        std::vector<graphs::NodeId>{Id(g, "w2"), Id(g, "u2")});
  const ColocationUnits off(g, false);
  CHECK_FALSE(off.grouped());
  CHECK(off.num_units() == 10);
}

TEST_CASE("KeepTogether moves a group to the device of its heaviest members; Expand inverts units") {
  const graphs::Graph g = TinyTraining();
  const ColocationUnits units(g, true);
  std::vector<int32_t> placement(10, 0);
  placement[static_cast<size_t>(Id(g, "w1"))] = 1;  // the weight (4 KB persistent + 0 written) on gpu1
  placement[static_cast<size_t>(Id(g, "u1"))] = 0;  // its update (4 KB written) on gpu0
  placement[static_cast<size_t>(Id(g, "f1"))] = 1;  // not grouped: stays
  CHECK(units.Splits(placement));
  // w1 outweighs u1 by its 4 KB of persistent bytes: the group goes to w1's gpu1.
  CHECK(units.KeepTogether(placement) == 1);
  CHECK(placement[static_cast<size_t>(Id(g, "u1"))] == 1);
  CHECK(placement[static_cast<size_t>(Id(g, "f1"))] == 1);
  CHECK_FALSE(units.Splits(placement));
  CHECK(units.KeepTogether(placement) == 0);

  std::vector<int32_t> per_unit(static_cast<size_t>(units.num_units()));
  for (int32_t u = 0; u < units.num_units(); ++u) per_unit[static_cast<size_t>(u)] = u % 3;
  const std::vector<int32_t> expanded = units.Expand(per_unit);
  CHECK(expanded[static_cast<size_t>(Id(g, "w2"))] == expanded[static_cast<size_t>(Id(g, "u2"))]);
  CHECK(expanded[static_cast<size_t>(Id(g, "w2"))] == units.unit(Id(g, "w2")) % 3);
}

TEST_CASE("local_search with units: runs moves HRL's prior groups, whole runs of colocation groups") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  int32_t count = 0;
  const std::vector<int32_t> runs = ColocationRuns(nmt, 12, &count);
  CHECK(count == 12);
  const ColocationUnits run_units(nmt, runs);
  CHECK(run_units.num_units() == 12);
  CHECK(run_units.grouped());
  // Every colocation group lies in one run.
  const ColocationUnits groups(nmt, true);
  for (int32_t u = 0; u < groups.num_units(); ++u) {
    const std::span<const graphs::NodeId> members = groups.members(u);
    for (const graphs::NodeId v : members)
      CHECK(runs[static_cast<size_t>(v)] == runs[static_cast<size_t>(members[0])]);
  }
  CHECK_THROWS_AS(ColocationUnits(nmt, std::vector<int32_t>(3, 0)), std::invalid_argument);

  Fixture f(nmt, MakeCluster(4));
  const AgentResult r = testing::Make("local_search", "{units: runs, max_runs: 12, priorities: false}")
                            ->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 200, 3));
  CHECK(r.evaluations == 200);
  CHECK(r.extra.at("runs") == 12.0);
  CHECK(r.best_objective < Objective::kInfeasibleBase);
  for (graphs::NodeId v = 0; v < nmt.num_nodes(); ++v) {
    const graphs::NodeId first = run_units.members(runs[static_cast<size_t>(v)]).front();
    CHECK(r.best.placement[static_cast<size_t>(v)] == r.best.placement[static_cast<size_t>(first)]);
  }
  // max_runs 0: HRL's min(256, 20 x devices) = 80 runs on 4 devices (fewer when the graph has fewer groups).
  Fixture g(nmt, MakeCluster(4));
  const AgentResult hrl_cap = testing::Make("local_search", "{units: runs, priorities: false}")
                                  ->Optimize(g.MakeProblem(ObjectiveKind::kStepTime, 50, 3));
  ColocationRuns(nmt, 80, &count);
  CHECK(hrl_cap.extra.at("runs") == static_cast<double>(count));
  CHECK_THROWS_AS(testing::Make("local_search", "{units: layers}"), ConfigError);
}

TEST_CASE("SearchTracker evaluates split decisions with their groups kept together") {
  Fixture f(TinyTraining(), MakeCluster(2));
  const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 10);
  SearchTracker tracker(problem, {});
  sim::Decision d = sim::SingleDeviceDecision(f.graph);
  d.placement[static_cast<size_t>(Id(f.graph, "u2"))] = 1;
  const sim::Evaluation e = tracker.Evaluate(d);
  CHECK(e.feasible);
  CHECK(e.split_group == -1);
  CHECK(KeepsGroups(f.graph, tracker.best().placement));
  std::vector<sim::Decision> batch(2, d);
  std::vector<sim::Evaluation> out(2);
  tracker.EvaluateBatch(batch, out);
  CHECK(out[0].feasible);
  const AgentResult r = tracker.Finish();
  CHECK(r.evaluations == 3);
  CHECK(r.extra.at("colocation_moved_nodes") == 3.0);
  // The simulator itself rejects the split decision.
  CHECK_FALSE(f.evaluator->Evaluate(d).feasible);
}

TEST_CASE("BRKGA's decoder places whole colocation groups by their summed affinities") {
  const graphs::Graph g = TinyTraining();
  const auto units = std::make_shared<const ColocationUnits>(g, true);
  const brkga::ChromosomeLayout layout(g.num_nodes(), g.num_tensors(), 2, false, false, units);
  std::vector<double> genes(layout.size(), 0.5);
  const int32_t w1 = Id(g, "w1"), u1 = Id(g, "u1");
  // w1 leans to gpu0 by 0.1, u1 to gpu1 by 0.3: the group goes to gpu1.
  genes[layout.placement_gene(w1, 0)] = 0.6;
  genes[layout.placement_gene(w1, 1)] = 0.5;
  genes[layout.placement_gene(u1, 0)] = 0.2;
  genes[layout.placement_gene(u1, 1)] = 0.5;
  sim::Decision d;
  layout.Decode(genes, &d);
  CHECK(d.placement[static_cast<size_t>(w1)] == 1);
  CHECK(d.placement[static_cast<size_t>(u1)] == 1);
  // Without units the same genes split the group.
  const brkga::ChromosomeLayout plain(g.num_nodes(), g.num_tensors(), 2, false, false);
  plain.Decode(genes, &d);
  CHECK(d.placement[static_cast<size_t>(w1)] == 0);
  CHECK(d.placement[static_cast<size_t>(u1)] == 1);
}

// Options that keep each agent quick on the test graphs.
std::string QuickOptions(const std::string& name) {
  if (name == "brkga" || name == "brkga_5k" || name == "tuned_brkga") return "{population: 10}";
  if (name == "cp") return "{time_limit: 5}";
  if (name == "m_sct") return "{lp_time_limit: 5}";
  return "{}";
}

void CheckEveryAgentKeepsGroups(const graphs::Graph& graph, int devices,
                                const std::set<std::string>& may_refuse) {
  Fixture f(graph, MakeCluster(devices));
  REQUIRE(ColocationUnits(*f.evaluator).grouped());
  const std::vector<std::string> names = AgentNames();
  CHECK(names.size() >= 17);
  for (const std::string& name : names) {
    // The learned agents (a LibTorch plugin) have their own check in
    // tests/learned/colocation_test.cc.
    if (IsLearnedAgent(name)) continue;
    CAPTURE(name);
    std::unique_ptr<Agent> agent = testing::Make(name, QuickOptions(name));
    AgentResult r;
    try {
      r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 40, 3));
    } catch (const ConfigError& e) {
      CHECK_MESSAGE(may_refuse.count(name) == 1, e.what());
      continue;
    }
    CHECK(KeepsGroups(f.graph, r.best.placement));
    CHECK_FALSE(f.evaluator->FindSplit(r.best.placement).has_value());
    CHECK(r.best_evaluation.split_group == -1);
    CHECK(r.best_evaluation.feasible);
  }
}

TEST_CASE("Every registered agent keeps each colocation group on one device (tiny training graph)") {
  // human_expert has no rules for this graph; it must say so, not place everything on gpu0.
  // pipeline_dp refuses backward nodes that share no group with a forward node.
  // data_parallel refuses cost models without measured times (its all-reduces are).
  CheckEveryAgentKeepsGroups(TinyTraining(), 2, {"human_expert", "pipeline_dp", "ilp", "data_parallel"});
}

TEST_CASE("Every registered agent keeps each colocation group on one device (NMT training graph)") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  REQUIRE(nmt.colocation_groups().size() > 4);
  // cp refuses graphs over max_nodes (40), data_parallel the tests' FLOP cost model.
  CheckEveryAgentKeepsGroups(nmt, 4, {"cp", "pipeline_dp", "ilp", "data_parallel"});
}

TEST_CASE("With enforcement off, agents see one unit per node and the simulator accepts splits") {
  sim::SimOptions off;
  off.enforce_colocation = false;
  Fixture f(TinyTraining(), MakeCluster(2), off);
  CHECK_FALSE(ColocationUnits(*f.evaluator).grouped());
  sim::Decision d = sim::SingleDeviceDecision(f.graph);
  d.placement[static_cast<size_t>(Id(f.graph, "u2"))] = 1;
  const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 10);
  SearchTracker tracker(problem, {});
  CHECK(tracker.Evaluate(d).feasible);
  CHECK(tracker.best().placement[static_cast<size_t>(Id(f.graph, "u2"))] == 1);
}

}  // namespace
}  // namespace gosim::agents
