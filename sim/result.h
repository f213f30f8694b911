// The full outcome of simulating one decision (Evaluator::Simulate): step
// time, feasibility and out-of-memory details, per-device and per-link
// figures, the critical path and, on request, the timeline of every kernel
// and transfer hop.
//
// Units: seconds and bytes throughout. Indices are those of the graph (nodes,
// tensors) and of the cluster (devices, links, shared resources).
#ifndef GOSIM_SIM_RESULT_H_
#define GOSIM_SIM_RESULT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graphs/graph.h"
#include "sim/options.h"

namespace gosim::sim {

class Cluster;

// One kernel on a device compute stream: a node, or a fused group (then
// `node` is the group's smallest node id).
struct OpRecord {
  graphs::NodeId node = -1;
  int32_t device = -1;
  int32_t fused_nodes = 1;  // nodes run by this kernel; 1 = not fused
  double ready = 0.0;       // all inputs were available on the device
  double start = 0.0;
  double end = 0.0;
};

// One hop of a transfer of a tensor from its producer's device to a consumer
// device. A route with several links gives one record per hop.
struct TransferRecord {
  graphs::TensorId tensor = -1;
  int32_t src_device = -1;
  int32_t dst_device = -1;
  int32_t link = -1;
  int32_t hop = 0;  // position of `link` in the route
  int64_t bytes = 0;
  double queued = 0.0;  // entered the link's queue
  double start = 0.0;
  double end = 0.0;
};

// One op dispatched by a host thread (execution eager, graph or captured).
struct HostRecord {
  graphs::NodeId node = -1;  // a task's node (a fused group's smallest); -1: a captured graph's launch
  int32_t thread = -1;       // index into SimResult::host_threads
  double start = 0.0;
  double end = 0.0;
};

// A host thread: process p's threads are consecutive.
struct HostThreadStats {
  int32_t process = 0;
  double busy_time = 0.0;    // seconds dispatching
  double utilization = 0.0;  // busy_time / step_time
};

struct DeviceStats {
  int64_t persistent_memory = 0;  // weights and optimizer state placed here
  int64_t peak_memory = 0;        // persistent + live tensors, maximum over time
  double busy_time = 0.0;         // time spent running kernels (the compute stream)
  double comm_busy_time = 0.0;    // time its communication stream ran collectives (nccl:*)
  double utilization = 0.0;       // busy_time / step_time (0 when step_time is 0)
  int32_t kernels = 0;
};

// Per link and per shared resource: what crossed it.
struct ChannelStats {
  int64_t bytes = 0;
  double busy_time = 0.0;
  double utilization = 0.0;  // busy_time / step_time
  int32_t transfers = 0;     // hops served
};

struct LiveTensor {
  graphs::TensorId tensor = -1;
  int64_t bytes = 0;      // all copies of the tensor on the device
  bool received = false;  // a copy received from another device
};

// The first allocation that exceeded a device's capacity.
struct OomInfo {
  int32_t device = -1;
  double time = 0.0;
  int64_t capacity = 0;
  int64_t in_use = 0;            // bytes live just before the allocation (persistent included)
  int64_t requested = 0;         // bytes of the allocation that failed
  int64_t persistent = 0;        // persistent bytes on the device
  graphs::NodeId node = -1;      // kernel whose outputs were allocated, or -1
  graphs::TensorId tensor = -1;  // received tensor being allocated, or -1
  std::vector<LiveTensor> live;  // the largest live tensors, by size descending (before the allocation)
};

// A colocation group found on two devices (SimOptions::enforce_colocation).
struct ColocationSplit {
  int32_t group = -1;         // index into Graph::colocation_groups()
  graphs::NodeId first = -1;  // the group's first node
  int32_t first_device = -1;  // its device
  graphs::NodeId other = -1;  // the first node of the group on another device
  int32_t other_device = -1;  // that device
};

// One link of the chain of events that determined the step time.
struct CriticalStep {
  enum class Kind : uint8_t { kOp, kTransfer, kHost };
  // Why this step started when it did: its last input arrived (kData), or it
  // waited for its device, link or shared resource to become free (kResource).
  enum class Reason : uint8_t { kStart, kData, kResource };
  Kind kind = Kind::kOp;
  Reason reason = Reason::kStart;
  int32_t id = -1;     // node (kOp, kHost; a fused group's smallest node; kHost -1: a graph launch) or tensor
  int32_t where = -1;  // device (kOp), link (kTransfer) or host thread (kHost)
  double start = 0.0;
  double end = 0.0;
};

struct CriticalPath {
  double length = 0.0;              // end of the last step - start of the first
  double compute_time = 0.0;        // sum of kernel durations on the path
  double transfer_time = 0.0;       // sum of transfer-hop durations on the path
  double host_time = 0.0;           // sum of host dispatch durations on the path
  std::vector<CriticalStep> steps;  // in time order
};

struct SimResult {
  bool feasible = true;    // false when some device exceeded its capacity or a colocation group is split
  bool completed = true;   // false when the run stopped at the first out-of-memory event
  double step_time = 0.0;  // makespan of what was simulated (seconds)
  int32_t kernels = 0;     // kernels run (fused groups count once)
  int32_t transfers = 0;   // tensor transfers (not hops)
  int64_t transferred_bytes = 0;
  std::vector<DeviceStats> devices;
  std::vector<ChannelStats> links;
  std::vector<ChannelStats> resources;
  std::optional<OomInfo> oom;
  std::optional<ColocationSplit> split;  // the first split colocation group (enforced only)
  // The host (docs/SIMULATOR.md, "The host"): how the step was driven, and
  // the busiest host thread's dispatch time (a lower bound of the step).
  Execution execution = Execution::kNone;
  Processes processes = Processes::kOne;
  double host_busy = 0.0;
  // Seconds: msr-fiddle's max-load of the decision (sim/msr.h), per micro-batch.
  double max_load = 0.0;
  // Micro-batches simulated (SimOptions::micro_batches; sim/pipeline.h):
  // step_time / micro_batches is the time per micro-batch.
  int32_t micro_batches = 1;
  // A data-parallel decision (Decision::data_parallel): its replicas, and
  // the DDP step's makespan; step_time and host_busy are then per graph
  // batch (the DDP step / replicas) while the timeline is the DDP step's.
  int32_t data_parallel = 0;
  double ddp_step_time = 0.0;
  // What priced it: the cost model's description (CostModel::Describe), as
  // the command line prints it.
  std::string cost_model;
  std::vector<HostThreadStats> host_threads;
  CriticalPath critical_path;
  // Filled when a timeline was requested; ops in start order, transfers in
  // hop start order.
  std::vector<OpRecord> ops;
  std::vector<TransferRecord> transfer_hops;
  std::vector<HostRecord> host_ops;  // in start order

  int64_t peak_memory() const;  // maximum over devices
};

// "host3" for host thread 3.
std::string HostThreadName(int32_t thread);
// "host: execution eager, one process drives every device", or that the
// host is not modelled.
std::string DescribeHostSetup(Execution execution, Processes processes);

// "producer:k" for output k of node `producer`.
std::string TensorName(const graphs::Graph& graph, graphs::TensorId tensor);

// The result as JSON (format "gosim.sim_result", version 1), with device,
// link and node names; the timeline is included when present. A non-empty
// `cost_model` (CostModel::Describe) is written as "cost_model".
std::string SimResultToJson(const SimResult& result, const graphs::Graph& graph, const Cluster& cluster,
                            const std::string& cost_model = {});
// "colocation group 'G' is split: 'a' is on gpu0 but 'b' is on gpu1".
std::string DescribeSplit(const ColocationSplit& split, const graphs::Graph& graph, const Cluster& cluster);

// A readable multi-line summary: step time, per-device memory and
// utilization, communication per link, the head of the critical path.
std::string FormatSimResult(const SimResult& result, const graphs::Graph& graph, const Cluster& cluster);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_RESULT_H_
