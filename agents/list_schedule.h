// A static list-scheduling state for the constructive placers (HEFT,
// Baechi's m-ETF and m-SCT): ops are assigned one at a time to a device and
// a start time, using StaticCosts' estimates (compute time per device,
// alpha-beta transfers without link contention).
//
// Memory follows Baechi's placer (placer/m_etf.py): an op needs its
// persistent bytes plus its outputs on its device when it is assigned; an
// output is released when every consumer edge has been assigned; received
// copies are not counted. `Fits` checks that against capacity times
// `memory_fraction`.
//
// Colocation: given the units (agents/colocation.h), a node whose unit
// already has a placed member may only go to that device (Allowed); the
// first member placed decides for its group. Nodes are still assigned one
// at a time in the caller's (topological) order, so groups are never
// contracted and cannot create cycles.
#ifndef GOSIM_AGENTS_LIST_SCHEDULE_H_
#define GOSIM_AGENTS_LIST_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "agents/colocation.h"
#include "agents/static_costs.h"
#include "graphs/graph.h"

namespace gosim::agents {

class ListSchedule {
 public:
  ListSchedule(const graphs::Graph& graph, const StaticCosts& costs, double memory_fraction = 1.0,
               const ColocationUnits* units = nullptr);

  // Whether `v` may go to `device`: true unless another node of its
  // colocation unit is already placed elsewhere.
  bool Allowed(graphs::NodeId v, int32_t device) const {
    if (units_ == nullptr) return true;
    const int32_t pinned = unit_device_[static_cast<size_t>(units_->unit(v))];
    return pinned < 0 || pinned == device;
  }

  // Seconds at which every input of `v` (all producers assigned) is on `device`.
  double DataReady(graphs::NodeId v, int32_t device) const;
  // Earliest start of `v` on `device`: after DataReady and after the last op
  // on the device, or (with `insertion`) in the first idle gap long enough.
  double EarliestStart(graphs::NodeId v, int32_t device, bool insertion = false) const;
  // Whether `v` fits in `device`'s memory now (always true when untracked).
  bool Fits(graphs::NodeId v, int32_t device) const;
  // Assigns `v` to `device` from `start` seconds (>= EarliestStart).
  void Assign(graphs::NodeId v, int32_t device, double start);

  bool assigned(graphs::NodeId v) const { return device_[static_cast<size_t>(v)] >= 0; }
  int32_t device(graphs::NodeId v) const { return device_[static_cast<size_t>(v)]; }
  double finish(graphs::NodeId v) const { return finish_[static_cast<size_t>(v)]; }
  // Seconds when `device` finishes its last assigned op.
  double available(int32_t device) const { return available_[static_cast<size_t>(device)]; }
  double used_memory(int32_t device) const { return used_[static_cast<size_t>(device)]; }
  double makespan() const { return makespan_; }
  // Nodes in the order they were assigned.
  const std::vector<graphs::NodeId>& order() const { return order_; }
  // Placement (device per node; -1 for unassigned nodes).
  const std::vector<int32_t>& placement() const { return device_; }

 private:
  struct Interval {
    double start;
    double end;
  };
  const graphs::Graph& graph_;
  const StaticCosts& costs_;
  const ColocationUnits* units_;
  std::vector<int32_t> unit_device_;  // per unit: the device of its placed members, or -1
  std::vector<double> limit_;
  std::vector<int32_t> device_;
  std::vector<double> finish_;
  std::vector<double> available_;
  std::vector<double> used_;
  std::vector<int32_t> pending_consumers_;
  std::vector<std::vector<Interval>> busy_;  // per device, sorted by start
  std::vector<graphs::NodeId> order_;
  double makespan_ = 0.0;
};

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_LIST_SCHEDULE_H_
