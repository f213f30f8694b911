// msr-fiddle's placement problems in the simulator (docs/FORMATS.md,
// "msr-fiddle workloads"; Tarnawski et al., "Efficient Algorithms for Device
// Placement of DNN Graph Operators", NeurIPS 2020, Section 3):
//   - the machine a problem file brings (`--cluster from-graph`);
//   - their device splits (the human experts' files) as decisions;
//   - their max-load objective, the time per sample of a pipeline in steady
//     state under their model, for any graph and cluster.
#ifndef GOSIM_SIM_MSR_H_
#define GOSIM_SIM_MSR_H_

#include <span>
#include <string>
#include <vector>

#include "graphs/graph.h"
#include "graphs/json_format.h"
#include "sim/cluster.h"
#include "sim/decision.h"

namespace gosim::sim {

struct EngineModel;

// The problem's machine: maxFPGAs accelerators acc0.. (kind
// "msr_accelerator", which takes the graph's "any" times; memory
// maxSizePerFPGA) and maxCPUs CPU cores cpu0.. (kind "cpu"); every device
// reaches the others through the host (CPU DRAM), accelerators over links of
// graphs::kMsrTransferBandwidth and no latency, so that moving a node's
// output up or down takes the file's `cost`. The host is not modelled
// (execution none): their latencies are per-layer GPU times.
Cluster MsrCluster(const graphs::MsrProblem& problem);

// Reads msr-fiddle's split file ({"fpgas": [{"nodes": [ids]}], "cpus":
// [...]}) for `graph`, which must have been read from its msr-fiddle file
// (the ids are that file's). The i-th entry of `fpgas` is the i-th
// accelerator of `cluster`, of `cpus` its i-th CPU device. Nodes the split
// leaves out take the device of their colocation group (a forward-only split
// of a training graph, as their tools do); any left then is an error.
// DecisionError with the file and JSON path on anything malformed.
Decision ParseMsrSplit(const std::string& text, const std::string& source, const graphs::Graph& graph,
                       const Cluster& cluster);

// The max-load of a placement: the largest device load, where an
// accelerator's load is the time of its nodes plus, for each of its nodes
// whose output some other device reads, the time to send that output up to
// the host, plus, for each output it reads from another device, the time to
// bring it down; a CPU device's load is the time of its nodes alone (the
// host is its memory). A device without a link to the host pays the direct
// route's time instead, on both ends. Node times and link times are the
// engine's (the cost model's), so that on the machine of MsrCluster this is
// exactly msr-fiddle's max-load.
class MaxLoadModel {
 public:
  MaxLoadModel(const EngineModel& model, const Cluster& cluster);
  // Seconds. `loads`, when not empty, receives each device's load.
  double Evaluate(std::span<const int32_t> placement, std::span<double> loads = {}) const;

 private:
  double RouteTime(int32_t src, int32_t dst, int64_t bytes) const;

  const EngineModel& model_;
  std::vector<bool> cpu_;           // [device] pays no communication
  std::vector<int32_t> up_, down_;  // [device] link to / from the host, or -1
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_MSR_H_
