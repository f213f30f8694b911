// Static cost estimates for the constructive baselines (HEFT, Baechi's
// placers, partitioners): per-(node, device) compute time from the
// evaluator's cost model, per-node memory footprint, and an alpha-beta
// transfer time between devices along the cluster's routes. These are the
// estimates the algorithms plan with; the simulator remains the judge.
//
// Also graph orders the baselines share: a depth-first topological order
// (REGAL's DFS schedule) and upward ranks (HEFT's critical-path priority).
#ifndef GOSIM_AGENTS_STATIC_COSTS_H_
#define GOSIM_AGENTS_STATIC_COSTS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/evaluator.h"

namespace gosim::agents {

class StaticCosts {
 public:
  explicit StaticCosts(const sim::Evaluator& evaluator);

  int32_t num_nodes() const { return num_nodes_; }
  int32_t num_devices() const { return num_devices_; }
  // Seconds to run `node` on `device` (cost model, launch overhead included).
  double NodeTime(graphs::NodeId node, int32_t device) const {
    return node_time_[static_cast<size_t>(node) * num_devices_ + device];
  }
  // Mean of NodeTime over the devices, seconds.
  double MeanNodeTime(graphs::NodeId node) const { return mean_time_[static_cast<size_t>(node)]; }
  // Bytes of the node's outputs (all of them).
  double OutputBytes(graphs::NodeId node) const { return output_bytes_[static_cast<size_t>(node)]; }
  // Persistent bytes plus output bytes: what Baechi counts per op.
  double Footprint(graphs::NodeId node) const {
    return static_cast<double>(graph_.node(node).persistent_bytes) + OutputBytes(node);
  }
  // Memory capacity of `device`, bytes.
  double Capacity(int32_t device) const { return capacity_[static_cast<size_t>(device)]; }
  // Seconds to move `bytes` from device `src` to `dst` along the cluster's
  // route, hop after hop (store-and-forward), each hop latency + bytes over
  // the narrowest of its link and shared resources; 0 when src == dst.
  // Contention with other transfers is not estimated.
  double CommTime(double bytes, int32_t src, int32_t dst) const {
    if (src == dst) return 0.0;
    const size_t k = static_cast<size_t>(src) * num_devices_ + dst;
    return latency_[k] + bytes * seconds_per_byte_[k];
  }
  // CommTime averaged over ordered pairs of distinct devices (0 with one device).
  double MeanCommTime(double bytes) const { return mean_latency_ + bytes * mean_seconds_per_byte_; }

 private:
  const graphs::Graph& graph_;
  int32_t num_nodes_;
  int32_t num_devices_;
  std::vector<double> node_time_;
  std::vector<double> mean_time_;
  std::vector<double> output_bytes_;
  std::vector<double> capacity_;
  std::vector<double> latency_;
  std::vector<double> seconds_per_byte_;
  double mean_latency_ = 0.0;
  double mean_seconds_per_byte_ = 0.0;
};

// A depth-first topological order: a ready node's successors that become
// ready are taken next (LIFO ready list), lowest node id first among
// siblings. Keeps few tensors live at once (REGAL's DFS schedule).
std::vector<graphs::NodeId> DfsTopologicalOrder(const graphs::Graph& graph);

// Upward rank (HEFT, Topcuoglu et al. 2002): rank(i) = w(i) + max over
// successors j of (c(i, j) + rank(j)), seconds. With `placement` empty, w is
// the mean node time and c the mean transfer time of the edge's bytes; with
// a placement, w is the time on the chosen device and c the transfer time
// between the two chosen devices.
std::vector<double> UpwardRanks(const graphs::Graph& graph, const StaticCosts& costs,
                                std::span<const int32_t> placement = {});

// Priorities (higher runs first) that follow `order`: the first node gets
// order.size(), the last 1.
std::vector<double> PrioritiesFromOrder(std::span<const graphs::NodeId> order, int32_t num_nodes);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_STATIC_COSTS_H_
