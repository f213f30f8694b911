// Pipelines: M micro-batches of a graph in flight over one placement, which
// the engine simulates as one graph of M copies (docs/SIMULATOR.md,
// "Pipelines"; SimOptions::micro_batches and ::schedule).
//
// Copy k of a forward or backward node is "<name>@k" and depends on copy k
// of its inputs; weights (persistent bytes) are held once, by copy 0; an
// update node runs once, after the copies of every input (gradients summed
// over the micro-batches); a weight read (a node without inputs, FLOPs or
// measured times that holds persistent bytes) runs once, first, and every micro-batch's consumers
// read its one output (RunsOnce). Every copy takes its original's device. A
// device serves its ready kernels by micro-batch:
//   streaming  micro-batch 0 first, then 1, ... (inference);
//   gpipe      every forward, micro-batch 0 first, then every backward, the
//              last micro-batch first, then the updates (GPipe);
//   1f1b       per stage (OneFOneBStages), W warm-up forwards, then one
//              backward, one forward, ...: forward k >= W of a stage waits
//              for backward k - W there (a counted gate, Decision::gate),
//              so at most W micro-batches are in flight on it;
// then by the decision's own priority. The time per micro-batch (the
// throughput objective) is the step of the M micro-batches over M: fill and
// drain included, as a training step of GPipe sees them.
#ifndef GOSIM_SIM_PIPELINE_H_
#define GOSIM_SIM_PIPELINE_H_

#include <cstdint>
#include <vector>

#include "graphs/graph.h"
#include "sim/decision.h"
#include "sim/options.h"

namespace gosim::sim {

struct PipelineGraph {
  graphs::Graph graph;
  int32_t micro_batches = 1;
  int32_t original_nodes = 0;          // nodes of the graph it copies
  int32_t original_tensors = 0;        // tensors of the graph it copies
  std::vector<graphs::NodeId> origin;  // [node of `graph`] the original node
  std::vector<int32_t> micro_batch;    // [node of `graph`] its micro-batch; -1 for a node that RunsOnce
  std::vector<int32_t> origin_tensor;  // [tensor of `graph`] the original tensor it copies
};

// Whether node `v` has one node in the pipeline graph (micro-batch -1): an
// update, or a weight read.
bool RunsOnce(const graphs::Graph& graph, graphs::NodeId v);

// `micro_batches` >= 2; ConfigError above 4096 or when the copies would
// pass 2^31 nodes.
PipelineGraph BuildPipelineGraph(const graphs::Graph& graph, int32_t micro_batches);

// 1F1B's stages: the devices that run forward nodes, ordered by their first
// forward node in the original graph's order; stage s of p keeps at most
// p - s micro-batches in flight (PipeDream-Flush / Megatron-LM's 1F1B).
struct OneFOneB {
  int32_t stages = 0;
  std::vector<int32_t> in_flight;       // [device] W: p - stage; 1 on a device without forward nodes
  std::vector<int64_t> backward_nodes;  // [device] backward nodes of one micro-batch placed there
  bool any_backward = false;
};
OneFOneB OneFOneBStages(const Decision& decision, const PipelineGraph& pipeline);

// The decision for the pipeline graph: each copy on its original's device,
// priorities by `schedule` then by the decision's own; transfer priorities
// the same way (a copy's tensors take their original's); fusion groups per
// micro-batch (copy k of a group is a group of its own).
void ExpandDecision(const Decision& decision, const PipelineGraph& pipeline, Schedule schedule,
                    Decision* out);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_PIPELINE_H_
