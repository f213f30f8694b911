// A data-parallel training step (PyTorch DistributedDataParallel) built from
// one rank's training graph: N replicas, one per device, each run by its own
// process (SimOptions::processes per_device), whose gradients are averaged
// by bucketed all-reduces overlapped with the backward pass
// (docs/SIMULATOR.md, "Data parallelism").
//
// Per rank the step is the graph as given (the model at the per-rank
// batch), with DDP's work added where DDP does it:
//   - per parameter, as its gradient is produced: `aten::mul` writing the
//     gradient divided by the world size into its bucket (DDP's mul_out;
//     reads and writes the gradient's bytes);
//   - per bucket (parameters in the order their gradients are produced,
//     filled up to `bucket_bytes`; the first bucket up to
//     `first_bucket_bytes`, as DDP's defaults of 25 MiB and 1 MiB), once
//     every rank has filled it: an all-reduce `nccl:all_reduce` on each
//     rank's communication stream, beside its compute stream;
//   - per parameter, after its bucket's all-reduce: `aten::copy_` of the
//     averaged gradient back (copy_bucket_to_grad), before its update.
// The all-reduce's time is NCCL's ring algorithm over the cluster's links
// (2 (N - 1) steps of latency + bytes / (N x bandwidth), the slowest ring
// link's figures as the cost model prices them, CostModel::LinkCostOf),
// recorded as the node's measured time for every device kind: the `auto`
// and `measured` cost models use it; the others would price it as a
// kernel, so building with them is an error.
#ifndef GOSIM_SIM_DATA_PARALLEL_H_
#define GOSIM_SIM_DATA_PARALLEL_H_

#include <cstdint>
#include <vector>

#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"

namespace gosim::sim {

struct DataParallelOptions {
  int32_t replicas = 0;                           // 0: every device of the cluster
  int64_t bucket_bytes = int64_t{25} << 20;       // DDP's bucket_cap_mb = 25
  int64_t first_bucket_bytes = int64_t{1} << 20;  // DDP's first bucket, 1 MiB
};

struct DataParallelStep {
  graphs::Graph graph;
  Decision decision;  // rank k on device k
  int32_t replicas = 0;
  std::vector<int64_t> bucket_bytes;       // per bucket
  std::vector<double> all_reduce_seconds;  // per bucket, the ring time
};

// Builds the step. ConfigError when the graph has no update phase with
// gradients (not a training step with an optimizer), when the cluster has
// fewer devices than replicas, or when the cost model ignores measured
// times (roofline, calibrated).
DataParallelStep BuildDataParallel(const graphs::Graph& rank_graph, const Cluster& cluster,
                                   const CostModel& cost_model, const DataParallelOptions& options = {});

}  // namespace gosim::sim

#endif  // GOSIM_SIM_DATA_PARALLEL_H_
