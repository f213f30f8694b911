// The data-parallel step (sim/data_parallel.h): replicas, buckets, the ring
// all-reduce's time and its overlap with the backward pass.
#include <doctest/doctest.h>

#include "core/error.h"
#include "graphs/graph_builder.h"
#include "sim/cost_model.h"
#include "sim/data_parallel.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

// A two-parameter training step: x -> f1 (w1) -> f2 (w2) -> loss; backward
// g2 (w2's gradient, 1000 B) then g1 (w1's, 3000 B); updates u1, u2.
graphs::Graph TwoLayerStep() {
  graphs::GraphBuilder b("two_layer");
  const auto node = [&](const std::string& name, const std::string& op, double flops, int64_t out,
                        graphs::Phase phase, const std::string& coloc = "", int64_t persistent = 0) {
    graphs::NodeSpec s;
    s.name = name;
    s.op = op;
    s.flops = flops;
    s.bytes_read = flops > 0.0 ? 8 : 0;
    s.outputs.push_back(graphs::TensorInfo{out, {}, graphs::DType::kFloat32});
    s.phase = phase;
    s.colocation = coloc;
    s.persistent_bytes = persistent;
    b.AddNode(std::move(s));
  };
  using graphs::Phase;
  node("x", "Input", 0, 400, Phase::kForward);
  node("w1", "Parameter", 0, 3000, Phase::kForward, "w1", 3000);
  node("w2", "Parameter", 0, 1000, Phase::kForward, "w2", 1000);
  node("f1", "aten::mm", 2, 400, Phase::kForward);
  node("f2", "aten::mm", 2, 400, Phase::kForward);
  node("g2", "aten::mm", 2, 1000, Phase::kBackward);
  node("g1", "aten::mm", 2, 3000, Phase::kBackward);
  node("u2", "aten::add_", 1, 1000, Phase::kUpdate, "w2");
  node("u1", "aten::add_", 1, 3000, Phase::kUpdate, "w1");
  b.AddEdge("x", "f1", 0);
  b.AddEdge("w1", "f1", 0);
  b.AddEdge("f1", "f2", 0);
  b.AddEdge("w2", "f2", 0);
  b.AddEdge("f2", "g2", 0);
  b.AddEdge("g2", "g1", 0);
  b.AddEdge("w2", "u2", 0);
  b.AddEdge("g2", "u2", 0);
  b.AddEdge("w1", "u1", 0);
  b.AddEdge("g1", "u1", 0);
  return b.Build();
}

TEST_CASE("data parallel: replicas, buckets and the ring all-reduce") {
  const graphs::Graph g = TwoLayerStep();
  // 2 devices, 100 B/s links with 0.5 s latency.
  const Cluster cluster = testing::MeshCluster(2, 100.0, 0.5);
  const auto cost = MakeCostModel("measured");
  DataParallelOptions o;
  o.first_bucket_bytes = 500;  // g2's 1000 B fill the first bucket; g1 opens the second
  o.bucket_bytes = 10000;
  const DataParallelStep step = BuildDataParallel(g, cluster, *cost, o);
  CHECK(step.replicas == 2);
  REQUIRE(step.bucket_bytes.size() == 2);
  CHECK(step.bucket_bytes[0] == 1000);
  CHECK(step.bucket_bytes[1] == 3000);
  // Ring: 2 (N - 1) steps of latency + bytes / (N x bandwidth):
  //   2 x (0.5 + 1000 / 200) = 11 s; 2 x (0.5 + 3000 / 200) = 31 s.
  CHECK(step.all_reduce_seconds[0] == 11.0);
  CHECK(step.all_reduce_seconds[1] == 31.0);
  // 9 nodes per rank, and per rank 2 x (into_bucket + from_bucket) + 2 x (ready + all_reduce).
  CHECK(step.graph.num_nodes() == 2 * (9 + 4 + 4));
  const auto ar = step.graph.FindNode("rank1/ddp/bucket1/all_reduce");
  REQUIRE(ar.has_value());
  CHECK(step.decision.placement[static_cast<size_t>(*ar)] == 1);
  CHECK(step.graph.op_type_name_of(*ar) == "nccl:all_reduce");
  // Each rank's copy keeps its own colocation groups.
  CHECK(step.graph.colocation_groups().size() == 4);

  // The all-reduces run on each device's communication stream: 11 + 31 s
  // there, none of it on the compute stream.
  const Evaluator ev(step.graph, cluster, cost);
  const SimResult r = ev.Simulate(step.decision);
  CHECK(r.feasible);
  CHECK(r.devices[0].comm_busy_time == 42.0);
  CHECK(r.devices[1].comm_busy_time == 42.0);
  CHECK(r.step_time > 42.0);
}

TEST_CASE("data parallel: the first bucket's all-reduce overlaps the rest of the backward pass") {
  // g1 is long (2000 s): bucket 0's all-reduce (11 s, w2's gradient) runs
  // while g1 computes, so the step is shorter than computing, then
  // all-reducing, sequentially.
  graphs::Graph g = TwoLayerStep();
  graphs::GraphBuilder b("slow_g1");
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const graphs::Node& n = g.node(v);
    graphs::NodeSpec s;
    s.name = n.name;
    s.op = g.op_type_name(n.op);
    s.flops = n.name == "g1" ? 2000 : n.flops;
    s.bytes_read = n.bytes_read;
    s.outputs = n.outputs;
    s.phase = n.phase;
    s.colocation = n.colocation >= 0 ? g.colocation_groups()[static_cast<size_t>(n.colocation)] : "";
    s.persistent_bytes = n.persistent_bytes;
    b.AddNode(std::move(s));
  }
  for (const graphs::Edge& e : g.edges()) b.AddEdge(g.node(e.src).name, g.node(e.dst).name, e.output_index);
  g = b.Build();
  const Cluster cluster = testing::MeshCluster(2, 100.0, 0.5);
  const auto cost = MakeCostModel("measured");
  DataParallelOptions o;
  o.first_bucket_bytes = 500;
  o.bucket_bytes = 10000;
  const DataParallelStep step = BuildDataParallel(g, cluster, *cost, o);
  const Evaluator ev(step.graph, cluster, cost);
  const SimResult r = ev.Simulate(step.decision, true);
  double g1_end = 0.0, ar0_start = -1.0;
  for (const OpRecord& op : r.ops) {
    const std::string& name = step.graph.node(op.node).name;
    if (name == "rank0/g1") g1_end = op.end;
    if (name == "rank0/ddp/bucket0/all_reduce") ar0_start = op.start;
  }
  CHECK(ar0_start >= 0.0);
  CHECK(ar0_start < g1_end);  // overlapped with g1
}

TEST_CASE("data parallel: refusals") {
  const graphs::Graph g = TwoLayerStep();
  const Cluster cluster = testing::MeshCluster(2, 100.0, 0.5);
  DataParallelOptions o;
  o.replicas = 3;
  CHECK_THROWS_WITH_AS(BuildDataParallel(g, cluster, *MakeCostModel("measured"), o),
                       doctest::Contains("needs as many devices"), ConfigError);
  CHECK_THROWS_WITH_AS(BuildDataParallel(g, cluster, *MakeCostModel("roofline")),
                       doctest::Contains("ignores"), ConfigError);
  const graphs::Graph inference = testing::MakeGraph({{"a", 1, {8}}, {"b", 1, {8}, {"a"}}});
  CHECK_THROWS_WITH_AS(BuildDataParallel(inference, cluster, *MakeCostModel("measured")),
                       doctest::Contains("no parameter update"), ConfigError);
}

TEST_CASE("data parallel: a decision the Evaluator simulates, per graph batch") {
  const graphs::Graph g = TwoLayerStep();
  const Cluster cluster = testing::MeshCluster(2, 100.0, 0.5);
  const auto cost = MakeCostModel("measured");
  const DataParallelStep step = BuildDataParallel(g, cluster, *cost);
  const Evaluator ddp(step.graph, cluster, cost, [] {
    SimOptions o;
    o.processes = Processes::kPerDevice;
    return o;
  }());
  const Evaluation whole = ddp.Evaluate(step.decision);

  // The graph's own evaluator runs the same DDP step and reports it per
  // graph batch: 2 replicas did 2 batches.
  const Evaluator ev(g, cluster, cost);
  const Decision dp = DataParallelDecision(g, 2);
  const Evaluation e = ev.Evaluate(dp);
  CHECK(e.feasible);
  CHECK(e.step_time == whole.step_time / 2);
  CHECK(e.peak_memory == whole.peak_memory);
  std::vector<int64_t> peaks(2);
  CHECK(ev.Evaluate(dp, peaks).step_time == e.step_time);
  CHECK(peaks[1] > 0);
  Evaluation batch[2];
  const Decision both[2] = {dp, SingleDeviceDecision(g)};
  ev.EvaluateBatch(both, batch);
  CHECK(batch[0].step_time == e.step_time);
  CHECK(batch[1].step_time == ev.Evaluate(SingleDeviceDecision(g)).step_time);
  CHECK(ev.evaluations() == 5);
  const SimResult r = ev.Simulate(dp);
  CHECK(r.data_parallel == 2);
  CHECK(r.ddp_step_time == whole.step_time);
  CHECK(r.step_time == e.step_time);
  CHECK(r.devices[1].comm_busy_time > 0.0);

  // A decision file says "data_parallel": N and no placement.
  const std::string text = DecisionToJson(dp, g, cluster);
  CHECK(text.find("\"data_parallel\": 2") != std::string::npos);
  CHECK(text.find("placement") == std::string::npos);
  const Decision back = ParseDecisionJson(text, "dp.json", g, cluster);
  CHECK(back.data_parallel == 2);
  CHECK(back.placement == dp.placement);

  // Refusals: replicas outside 2..devices, a placement off device 0,
  // priorities; in files, one error line each.
  Decision three = DataParallelDecision(g, 3);
  CHECK_THROWS_WITH_AS(ev.Evaluate(three), doctest::Contains("data_parallel is 3"), DecisionError);
  Decision moved = dp;
  moved.placement[3] = 1;
  CHECK_THROWS_WITH_AS(ev.Evaluate(moved), doctest::Contains("every node on device 0"), DecisionError);
  Decision prioritized = dp;
  prioritized.priority.assign(static_cast<size_t>(g.num_nodes()), 1.0);
  CHECK_THROWS_WITH_AS(ev.Evaluate(prioritized), doctest::Contains("no priorities"), DecisionError);
  const std::string bad = R"({"format": "gosim.decision", "version": 1, "data_parallel": 9})";
  CHECK_THROWS_WITH_AS(ParseDecisionJson(bad, "bad.json", g, cluster),
                       doctest::Contains("from 2 to 2 (the cluster's devices), not 9"), DecisionError);
  const std::string none = R"({"format": "gosim.decision", "version": 1})";
  CHECK_THROWS_WITH_AS(ParseDecisionJson(none, "none.json", g, cluster),
                       doctest::Contains("\"data_parallel\": N"), DecisionError);
  // A cost model without measured times cannot price the all-reduces.
  const Evaluator roofline(g, cluster, MakeCostModel("roofline"));
  CHECK_THROWS_AS(roofline.Evaluate(dp), ConfigError);
}

}  // namespace
}  // namespace gosim::sim
