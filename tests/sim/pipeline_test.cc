// Pipelines of micro-batches (sim/pipeline.h) through the Evaluator.
#include <doctest/doctest.h>

#include <memory>
#include <string>

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

}  // namespace
}  // namespace gosim::sim
