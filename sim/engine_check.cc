// Cheap structural checks of a decision, run before every simulation so that
// a malformed decision is a DecisionError rather than an out-of-bounds read.
#include <cmath>
#include <string>

#include "core/error.h"
#include "sim/engine.h"

namespace gosim::sim {

void CheckDecision(const Decision& d, const EngineModel& m, const graphs::Graph& graph, bool check_devices) {
  const auto fail = [](const std::string& what, const std::string& hint) {
    throw DecisionError(what, {}, hint);
  };
  if (static_cast<int32_t>(d.placement.size()) != m.num_nodes) {
    fail("placement has " + std::to_string(d.placement.size()) + " entries for a graph of " +
             std::to_string(m.num_nodes) + " nodes",
         "give one device per node");
  }
  for (int32_t v = 0; check_devices && v < m.num_nodes; ++v) {
    if (d.placement[v] < 0 || d.placement[v] >= m.num_devices) {
      fail("node '" + graph.node(v).name + "' is placed on device " + std::to_string(d.placement[v]) +
               " but the cluster has " + std::to_string(m.num_devices) + " devices",
           "use a device index in [0, " + std::to_string(m.num_devices) + ")");
    }
  }
  if (d.has_priority()) {
    if (static_cast<int32_t>(d.priority.size()) != m.num_nodes) {
      fail("priority has " + std::to_string(d.priority.size()) + " entries for " +
               std::to_string(m.num_nodes) + " nodes",
           "give one priority per node or none");
    }
    for (int32_t v = 0; v < m.num_nodes; ++v) {
      if (!std::isfinite(d.priority[v])) {
        fail("node '" + graph.node(v).name + "' has a non-finite priority", "priorities must be finite");
      }
    }
  }
  if (d.has_transfer_priority()) {
    if (static_cast<int64_t>(d.transfer_priority.size()) != m.NumCopies()) {
      fail("transfer_priority has " + std::to_string(d.transfer_priority.size()) +
               " entries, expected tensors x devices = " + std::to_string(m.NumCopies()),
           "index it tensor * num_devices + device, or leave it empty");
    }
    for (double p : d.transfer_priority) {
      if (!std::isfinite(p)) fail("transfer_priority has a non-finite entry", "priorities must be finite");
    }
  }
  if (d.has_fusion()) {
    if (static_cast<int32_t>(d.fusion_group.size()) != m.num_nodes) {
      fail("fusion_group has " + std::to_string(d.fusion_group.size()) + " entries for " +
               std::to_string(m.num_nodes) + " nodes",
           "give one group id (or -1) per node, or none");
    }
    for (int32_t v = 0; v < m.num_nodes; ++v) {
      if (d.fusion_group[v] < -1 || d.fusion_group[v] >= m.num_nodes) {
        fail("node '" + graph.node(v).name + "' has fusion group " + std::to_string(d.fusion_group[v]),
             "group ids are -1 (not fused) or in [0, number of nodes)");
      }
    }
  }
}

}  // namespace gosim::sim
