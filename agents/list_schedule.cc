#include "agents/list_schedule.h"

#include <algorithm>
#include <cassert>

namespace gosim::agents {

ListSchedule::ListSchedule(const graphs::Graph& graph, const StaticCosts& costs, double memory_fraction,
                           const ColocationUnits* units)
    : graph_(graph), costs_(costs), units_(units) {
  if (units_ != nullptr) unit_device_.assign(static_cast<size_t>(units_->num_units()), -1);
  const size_t n = static_cast<size_t>(graph.num_nodes());
  const size_t d = static_cast<size_t>(costs.num_devices());
  limit_.resize(d);
  for (size_t i = 0; i < d; ++i) limit_[i] = costs.Capacity(static_cast<int32_t>(i)) * memory_fraction;
  device_.assign(n, -1);
  finish_.assign(n, 0.0);
  available_.assign(d, 0.0);
  used_.assign(d, 0.0);
  busy_.resize(d);
  pending_consumers_.assign(n, 0);
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    for (graphs::EdgeId e : graph.out_edges(v)) {
      if (!graph.edge(e).is_control()) ++pending_consumers_[static_cast<size_t>(v)];
    }
  }
}

double ListSchedule::DataReady(graphs::NodeId v, int32_t device) const {
  double ready = 0.0;
  for (graphs::EdgeId e : graph_.in_edges(v)) {
    const graphs::Edge& edge = graph_.edge(e);
    const size_t src = static_cast<size_t>(edge.src);
    assert(device_[src] >= 0);
    double t = finish_[src];
    if (!edge.is_control()) t += costs_.CommTime(static_cast<double>(edge.bytes), device_[src], device);
    ready = std::max(ready, t);
  }
  return ready;
}

double ListSchedule::EarliestStart(graphs::NodeId v, int32_t device, bool insertion) const {
  const double ready = DataReady(v, device);
  if (!insertion) return std::max(ready, available_[static_cast<size_t>(device)]);
  const double duration = costs_.NodeTime(v, device);
  const std::vector<Interval>& busy = busy_[static_cast<size_t>(device)];
  // Intervals ending at or before `ready` cannot constrain the start.
  auto it = std::upper_bound(busy.begin(), busy.end(), ready,
                             [](double t, const Interval& interval) { return t < interval.end; });
  double candidate = ready;
  for (; it != busy.end(); ++it) {
    if (candidate + duration <= it->start) return candidate;
    candidate = std::max(candidate, it->end);
  }
  return candidate;
}

bool ListSchedule::Fits(graphs::NodeId v, int32_t device) const {
  const double limit = limit_[static_cast<size_t>(device)];
  if (limit <= 0) return true;  // capacity unknown: memory not tracked
  return used_[static_cast<size_t>(device)] + costs_.Footprint(v) <= limit;
}

void ListSchedule::Assign(graphs::NodeId v, int32_t device, double start) {
  const size_t i = static_cast<size_t>(v);
  assert(device_[i] < 0);
  const double end = start + costs_.NodeTime(v, device);
  device_[i] = device;
  if (units_ != nullptr) {
    int32_t& pinned = unit_device_[static_cast<size_t>(units_->unit(v))];
    assert(pinned < 0 || pinned == device);
    pinned = device;
  }
  finish_[i] = end;
  order_.push_back(v);
  makespan_ = std::max(makespan_, end);
  std::vector<Interval>& busy = busy_[static_cast<size_t>(device)];
  const Interval interval{start, end};
  busy.insert(std::upper_bound(busy.begin(), busy.end(), interval,
                               [](const Interval& a, const Interval& b) { return a.start < b.start; }),
              interval);
  available_[static_cast<size_t>(device)] = std::max(available_[static_cast<size_t>(device)], end);

  used_[static_cast<size_t>(device)] += costs_.Footprint(v);
  if (pending_consumers_[i] == 0) used_[static_cast<size_t>(device)] -= costs_.OutputBytes(v);
  for (graphs::EdgeId e : graph_.in_edges(v)) {
    const graphs::Edge& edge = graph_.edge(e);
    if (edge.is_control()) continue;
    const size_t src = static_cast<size_t>(edge.src);
    if (--pending_consumers_[src] == 0)
      used_[static_cast<size_t>(device_[src])] -= costs_.OutputBytes(edge.src);
  }
}

}  // namespace gosim::agents
