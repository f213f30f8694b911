// Pipelines of micro-batches (sim/pipeline.h) through the Evaluator.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "graphs/graph_builder.h"
#include "graphs/json_format.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "sim/msr.h"
#include "sim/pipeline.h"

namespace gosim::sim {
namespace {

// Three layers in a chain, 1, 2 and 3 ms on an accelerator, free transfers.
const char* kChain = R"({"maxSizePerFPGA": 1e9, "maxFPGAs": 3, "maxCPUs": 0,
  "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "isBackwardNode": 0, "size": 0},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 2, "isBackwardNode": 0, "size": 0},
    {"id": 3, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 3, "isBackwardNode": 0, "size": 0}],
  "edges": [{"sourceId": 1, "destId": 2, "cost": 0}, {"sourceId": 2, "destId": 3, "cost": 0}]})";

TEST_CASE("a streaming pipeline: fill, then one micro-batch per slowest stage; max-load per micro-batch") {
  const graphs::MsrProblem p = graphs::ReadMsrProblem(kChain, "chain.json");
  const Cluster cluster = MsrCluster(p);
  Decision d = SingleDeviceDecision(p.graph, 0);
  d.placement = {0, 1, 2};
  SimOptions options;
  options.micro_batches = 4;
  options.schedule = Schedule::kStreaming;
  options.max_load = true;
  const Evaluator evaluator(p.graph, cluster, MakeCostModel("auto"), options);
  CHECK(evaluator.simulated_graph().num_nodes() == 12);
  CHECK(evaluator.simulated_graph().node(5).name == "node2@1");  // copies in their original's order
  CHECK(evaluator.original_node(5) == 1);
  const Evaluation e = evaluator.Evaluate(d);
  // 1 + 2 + 3 ms for the first micro-batch, then 3 ms per micro-batch.
  CHECK(e.step_time == doctest::Approx(15e-3));
  CHECK(e.throughput == doctest::Approx(3.75e-3));
  CHECK(e.max_load == doctest::Approx(3e-3));  // the steady state the pipeline approaches
  const SimResult r = evaluator.Simulate(d);
  CHECK(r.micro_batches == 4);
  CHECK(r.step_time == doctest::Approx(15e-3));
  CHECK(r.max_load == doctest::Approx(3e-3));
  // One device: no overlap, 6 ms per micro-batch.
  CHECK(evaluator.Evaluate(SingleDeviceDecision(p.graph, 0)).throughput == doctest::Approx(6e-3));
  // Fusion groups and transfer priorities are expanded per micro-batch.
  Decision fused = SingleDeviceDecision(p.graph, 0);
  fused.fusion_group = {0, 0, -1};
  CHECK(evaluator.Evaluate(fused).feasible);
  Decision ordered = d;
  ordered.transfer_priority.assign(static_cast<size_t>(p.graph.num_tensors() * cluster.num_devices()), 0.5);
  CHECK(evaluator.Evaluate(ordered).step_time == doctest::Approx(15e-3));
}

// A training chain over three stages: forward 1 ms and backward 2 ms per
// stage; stages 0 and 1 keep a 1 MB activation (a zero-time node beside the
// forward) until their backward. Free transfers.
const char* kTrainingChain = R"({"maxSizePerFPGA": 1e9, "maxFPGAs": 3, "maxCPUs": 0,
  "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "isBackwardNode": 0, "size": 0},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 0, "isBackwardNode": 0, "size": 0},
    {"id": 3, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "isBackwardNode": 0, "size": 0},
    {"id": 4, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 0, "isBackwardNode": 0, "size": 0},
    {"id": 5, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "isBackwardNode": 0, "size": 0},
    {"id": 6, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 2, "isBackwardNode": 1, "size": 0},
    {"id": 7, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 2, "isBackwardNode": 1, "size": 0},
    {"id": 8, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 2, "isBackwardNode": 1, "size": 0}],
  "edges": [{"sourceId": 1, "destId": 2, "cost": 0}, {"sourceId": 1, "destId": 3, "cost": 0},
            {"sourceId": 2, "destId": 8, "cost": 1},
            {"sourceId": 3, "destId": 4, "cost": 0}, {"sourceId": 3, "destId": 5, "cost": 0},
            {"sourceId": 4, "destId": 7, "cost": 1},
            {"sourceId": 5, "destId": 6, "cost": 0}, {"sourceId": 6, "destId": 7, "cost": 0},
            {"sourceId": 7, "destId": 8, "cost": 0}]})";

TEST_CASE(
    "1F1B: GPipe's step on equal stages, at most p - s micro-batches in flight on stage s, less memory") {
  const graphs::MsrProblem p = graphs::ReadMsrProblem(kTrainingChain, "train_chain.json");
  const Cluster cluster = MsrCluster(p);
  Decision d = SingleDeviceDecision(p.graph, 0);
  d.placement = {0, 0, 1, 1, 2, 2, 1, 0};  // stage s: forward s (and its activation) and backward s
  const int32_t M = 8, stages = 3;
  auto run = [&](Schedule schedule) {
    SimOptions options;
    options.micro_batches = M;
    options.schedule = schedule;
    const Evaluator evaluator(p.graph, cluster, MakeCostModel("auto"), options);
    return evaluator.Simulate(d, /*timeline=*/true);
  };
  const SimResult gpipe = run(Schedule::kGPipe);
  const SimResult one = run(Schedule::k1F1B);
  // Equal stages: both take (M + p - 1) (f + b).
  CHECK(gpipe.step_time == doctest::Approx((M + stages - 1) * 3e-3));
  CHECK(one.step_time == doctest::Approx((M + stages - 1) * 3e-3));
  // Stage 0 holds every micro-batch's activation under GPipe, at most 3 under 1F1B.
  const int64_t act = p.graph.node(1).outputs[0].bytes;
  CHECK(act > 0);
  CHECK(gpipe.devices[0].peak_memory >= M * act);
  CHECK(one.devices[0].peak_memory <= stages * act + act);
  CHECK(one.devices[0].peak_memory < gpipe.devices[0].peak_memory);
  // The in-flight bound, read off the timeline: forward k >= W of stage s
  // starts after backward k - W there ends; the stage runs 1F1B's order.
  const PipelineGraph pg = BuildPipelineGraph(p.graph, M);
  const OneFOneB info = OneFOneBStages(d, pg);
  CHECK(info.stages == 3);
  CHECK(info.in_flight == std::vector<int32_t>{3, 2, 1});
  std::map<std::pair<int32_t, int32_t>, std::pair<double, double>> fwd, bwd;  // (device, k) -> (start, end)
  std::map<int32_t, std::vector<std::pair<double, std::string>>> order;
  for (const OpRecord& op : one.ops) {
    if (op.end == op.start) continue;  // the activations' zero-time nodes
    const auto v = static_cast<size_t>(op.node);
    const int32_t k = pg.micro_batch[v];
    const bool backward = pg.graph.node(op.node).phase == graphs::Phase::kBackward;
    (backward ? bwd : fwd)[{op.device, k}] = {op.start, op.end};
    order[op.device].emplace_back(op.start, (backward ? "B" : "F") + std::to_string(k));
  }
  for (int32_t dev = 0; dev < stages; ++dev) {
    const int32_t w = info.in_flight[static_cast<size_t>(dev)];
    for (int32_t k = w; k < M; ++k) CHECK(fwd[{dev, k}].first >= bwd[{dev, k - w}].second - 1e-12);
  }
  std::string stage0;
  for (const auto& [start, name] : order[0]) stage0 += name + " ";
  CHECK(stage0 == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7 ");
  std::string stage2;
  for (const auto& [start, name] : order[2]) stage2 += name + " ";
  CHECK(stage2 == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 ");
  // Inference graphs have nothing to gate: 1F1B is the streaming order.
  const graphs::MsrProblem inf = graphs::ReadMsrProblem(kChain, "chain.json");
  Decision di = SingleDeviceDecision(inf.graph, 0);
  di.placement = {0, 1, 2};
  SimOptions options;
  options.micro_batches = 4;
  options.schedule = Schedule::k1F1B;
  const Evaluator evaluator(inf.graph, MsrCluster(inf), MakeCostModel("auto"), options);
  CHECK(evaluator.Evaluate(di).step_time == doctest::Approx(15e-3));
}

TEST_CASE("a pipeline graph: weights once, an update once after every micro-batch's gradient") {
  graphs::GraphBuilder b("train");
  graphs::NodeSpec fwd;
  fwd.name = "fwd";
  fwd.op = "mm";
  fwd.flops = 1e9;
  fwd.persistent_bytes = 1000;
  fwd.outputs = {graphs::TensorInfo{64, {}, graphs::DType::kFloat32}};
  fwd.colocation = "w";
  graphs::NodeSpec bwd = fwd;
  bwd.name = "bwd";
  bwd.phase = graphs::Phase::kBackward;
  bwd.persistent_bytes = 0;
  graphs::NodeSpec upd = bwd;
  upd.name = "upd";
  upd.phase = graphs::Phase::kUpdate;
  b.AddNode(fwd);
  b.AddNode(bwd);
  b.AddNode(upd);
  b.AddEdge(0, 1, 0);
  b.AddEdge(1, 2, 0);
  const graphs::Graph g = b.Build();
  const PipelineGraph p = BuildPipelineGraph(g, 3);
  REQUIRE(p.graph.num_nodes() == 7);  // fwd x3, bwd x3, upd
  CHECK(p.graph.node(0).persistent_bytes == 1000);
  CHECK(p.graph.node(1).persistent_bytes == 0);
  const graphs::NodeId update = *p.graph.FindNode("upd");
  CHECK(p.graph.in_degree(update) == 3);
  CHECK(p.micro_batch[static_cast<size_t>(update)] == -1);
  CHECK(p.graph.colocation_groups().size() == 1);  // every copy in the weight's group
  // GPipe: forwards first in micro-batch order, then backwards from the last.
  Decision d = SingleDeviceDecision(g, 0);
  Decision out;
  ExpandDecision(d, p, Schedule::kGPipe, &out);
  CHECK(out.priority[0] > out.priority[2]);  // fwd@0 before fwd@2
  CHECK(out.priority[2] > out.priority[static_cast<size_t>(*p.graph.FindNode("bwd@2"))]);
  CHECK(out.priority[static_cast<size_t>(*p.graph.FindNode("bwd@2"))] >
        out.priority[static_cast<size_t>(*p.graph.FindNode("bwd@0"))]);
  CHECK(out.priority[static_cast<size_t>(update)] <
        out.priority[static_cast<size_t>(*p.graph.FindNode("bwd@0"))]);
  CHECK_THROWS_AS(BuildPipelineGraph(g, 1), ConfigError);
}

TEST_CASE("a pipeline graph: a weight read runs once, first, and every micro-batch reads its output") {
  graphs::GraphBuilder b("infer");
  graphs::NodeSpec x;
  x.name = "x";
  x.op = "placeholder";
  x.outputs = {graphs::TensorInfo{64, {}, graphs::DType::kFloat32}};
  graphs::NodeSpec w = x;
  w.name = "w";
  w.op = "variable";
  w.persistent_bytes = 4096;
  w.outputs = {graphs::TensorInfo{4096, {}, graphs::DType::kFloat32}};
  graphs::NodeSpec mm = x;
  mm.name = "mm";
  mm.op = "mm";
  mm.flops = 1e6;
  b.AddNode(x);
  b.AddNode(w);
  b.AddNode(mm);
  b.AddEdge(0, 2, 0);
  b.AddEdge(1, 2, 0);
  const graphs::Graph g = b.Build();
  CHECK_FALSE(RunsOnce(g, 0));  // an input: one per micro-batch
  CHECK(RunsOnce(g, 1));
  CHECK_FALSE(RunsOnce(g, 2));
  const PipelineGraph p = BuildPipelineGraph(g, 4);
  REQUIRE(p.graph.num_nodes() == 9);  // x x4, w, mm x4
  const graphs::NodeId read = *p.graph.FindNode("w");
  CHECK(p.micro_batch[static_cast<size_t>(read)] == -1);
  CHECK(p.graph.out_degree(read) == 4);
  CHECK(p.graph.node(read).persistent_bytes == 4096);
  Decision d = SingleDeviceDecision(g, 0);
  Decision out;
  for (const Schedule s : {Schedule::kStreaming, Schedule::kGPipe, Schedule::k1F1B}) {
    ExpandDecision(d, p, s, &out);
    for (graphs::NodeId v = 0; v < p.graph.num_nodes(); ++v) {
      if (v != read) CHECK(out.priority[static_cast<size_t>(read)] > out.priority[static_cast<size_t>(v)]);
    }
  }
  // Held once: one step of 4 micro-batches needs the weight's bytes twice
  // (persistent and its read), not five times.
  SimOptions options;
  options.micro_batches = 4;
  const sim::Cluster cluster = LoadCluster("mcm_4x4");
  const Evaluator evaluator(g, cluster, MakeCostModel("roofline"), options);
  const SimResult r = evaluator.Simulate(d);
  CHECK(r.feasible);
  CHECK(r.devices[0].peak_memory < 3 * 4096);
}

}  // namespace
}  // namespace gosim::sim
