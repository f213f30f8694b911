// A decision: what an optimizer chooses for one graph on one cluster.
//
//   placement            device index per node (required)
//   priority             scheduling priority per node (optional; empty =
//                        FIFO by ready time). Higher values run first; ties
//                        are broken by ready time, then node id.
//   transfer_priority    priority per (tensor, destination device), indexed
//                        tensor * num_devices + device (optional; REGAL's
//                        tensor genes). Orders transfers waiting for the
//                        same link; higher first; empty = FIFO.
//   fusion_group         group id per node, -1 = not fused (optional; empty
//                        = no fusion). Nodes of one group must be on one
//                        device and form a connected, convex set; the group
//                        runs as one kernel.
//
// On disk a decision is JSON keyed by node name (see docs/FORMATS.md):
//   {"format": "gosim.decision", "version": 1, "graph": "...", "cluster": "...",
//    "placement": {"node": "gpu0" | 0, ...},
//    "priority": {"node": 0.7, ...}, "fusion": [["a", "b"], ...]}
#ifndef GOSIM_SIM_DECISION_H_
#define GOSIM_SIM_DECISION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graphs/graph.h"

namespace gosim::sim {

class Cluster;

struct Decision {
  std::vector<int32_t> placement;
  std::vector<double> priority;
  std::vector<double> transfer_priority;
  std::vector<int32_t> fusion_group;
  // Counted gates (a pipeline's 1F1B schedule, sim/pipeline.h): node v may
  // start only once counter gate[v] has reached gate_need[v]; each node u
  // with gate_signal[u] >= 0 adds one to that counter when it finishes.
  // Empty: no gates. Not in decision files: the pipeline expansion sets them.
  std::vector<int32_t> gate;         // [node] a counter, or -1
  std::vector<int32_t> gate_need;    // [node]
  std::vector<int32_t> gate_signal;  // [node] a counter, or -1
  // Data parallelism (docs/SIMULATOR.md, "Data parallelism"): > 1 runs the
  // whole graph as `data_parallel` DDP replicas on devices 0..N-1, one
  // process each, gradients all-reduced in buckets (sim/data_parallel.h);
  // the placement is then every node on device 0 (the replica), without
  // priorities or fusion. Each replica runs the graph's own batch, so the
  // step does N times the graph's work: the Evaluator reports the DDP step
  // time divided by N (seconds per graph batch, comparable with a placement
  // of the graph). 0: a placement.
  int32_t data_parallel = 0;

  bool has_priority() const { return !priority.empty(); }
  bool has_gates() const { return !gate.empty(); }
  bool has_transfer_priority() const { return !transfer_priority.empty(); }
  bool has_fusion() const { return !fusion_group.empty(); }
  bool is_data_parallel() const { return data_parallel > 0; }
};

// N data-parallel replicas of `graph` (Decision::data_parallel).
Decision DataParallelDecision(const graphs::Graph& graph, int32_t replicas);

// Everything on device `device`, FIFO, no fusion.
Decision SingleDeviceDecision(const graphs::Graph& graph, int32_t device = 0);

// Throws DecisionError when the decision does not fit the graph and cluster:
// wrong sizes, a device index out of range, fusion across devices or a
// non-convex fusion group, non-finite priorities. When `check_colocation` is
// true, nodes of one colocation group on different devices are an error.
void ValidateDecision(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                      bool check_colocation = false);

// What made a decision, written to its file's "metadata" beside the graph's
// digest. Unknown fields stay empty / negative and are left out.
struct DecisionInfo {
  std::string agent;         // e.g. "brkga"
  int64_t seed = -1;         // the agent's seed
  int64_t budget = -1;       // evaluations allowed
  int64_t evaluations = -1;  // evaluations made
  std::string objective;     // e.g. "step_time"
};

// 16 hex digits identifying a graph's structure: its node names and op types
// in order and its edges (FNV-1a, then Mix64). Costs, sizes and the graph's
// name do not enter it, so a re-export with other measured costs keeps it.
std::string GraphDigest(const graphs::Graph& graph);

// JSON I/O keyed by node name; `source` names the file in errors. A file
// whose metadata.graph_digest differs from `graph`'s is read (its node names
// all matched) with one warning line: it was made for a graph with the same
// node names but other ops or edges.
Decision ParseDecisionJson(const std::string& text, const std::string& source, const graphs::Graph& graph,
                           const Cluster& cluster);
std::string DecisionToJson(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                           const DecisionInfo& info = {});
Decision LoadDecision(const std::string& path, const graphs::Graph& graph, const Cluster& cluster);
void SaveDecision(const std::string& path, const Decision& decision, const graphs::Graph& graph,
                  const Cluster& cluster, const DecisionInfo& info = {});

}  // namespace gosim::sim

#endif  // GOSIM_SIM_DECISION_H_
