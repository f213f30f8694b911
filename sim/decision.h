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

  bool has_priority() const { return !priority.empty(); }
  bool has_transfer_priority() const { return !transfer_priority.empty(); }
  bool has_fusion() const { return !fusion_group.empty(); }
};

// Everything on device `device`, FIFO, no fusion.
Decision SingleDeviceDecision(const graphs::Graph& graph, int32_t device = 0);

// Throws DecisionError when the decision does not fit the graph and cluster:
// wrong sizes, a device index out of range, fusion across devices or a
// non-convex fusion group, non-finite priorities. When `check_colocation` is
// true, nodes of one colocation group on different devices are an error.
void ValidateDecision(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                      bool check_colocation = false);

// JSON I/O keyed by node name; `source` names the file in errors.
Decision ParseDecisionJson(const std::string& text, const std::string& source, const graphs::Graph& graph,
                           const Cluster& cluster);
std::string DecisionToJson(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster);
Decision LoadDecision(const std::string& path, const graphs::Graph& graph, const Cluster& cluster);
void SaveDecision(const std::string& path, const Decision& decision, const graphs::Graph& graph,
                  const Cluster& cluster);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_DECISION_H_
