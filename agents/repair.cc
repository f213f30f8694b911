#include "agents/repair.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace gosim::agents {

namespace {

// The units that move together: colocation groups (when kept) or nodes.
struct Units {
  std::vector<int32_t> unit_of;                    // node -> unit
  std::vector<std::vector<graphs::NodeId>> nodes;  // unit -> nodes
  std::vector<double> footprint;                   // unit -> bytes
};

Units BuildUnits(const graphs::Graph& graph, const StaticCosts& costs, bool keep_colocation) {
  Units units;
  const int32_t n = graph.num_nodes();
  units.unit_of.assign(static_cast<size_t>(n), -1);
  std::vector<int32_t> unit_of_group(graph.colocation_groups().size(), -1);
  for (graphs::NodeId v = 0; v < n; ++v) {
    const int32_t group = graph.node(v).colocation;
    int32_t unit = -1;
    if (keep_colocation && group >= 0) unit = unit_of_group[static_cast<size_t>(group)];
    if (unit < 0) {
      unit = static_cast<int32_t>(units.nodes.size());
      units.nodes.emplace_back();
      units.footprint.push_back(0.0);
      if (keep_colocation && group >= 0) unit_of_group[static_cast<size_t>(group)] = unit;
    }
    units.unit_of[static_cast<size_t>(v)] = unit;
    units.nodes[static_cast<size_t>(unit)].push_back(v);
    units.footprint[static_cast<size_t>(unit)] += costs.Footprint(v);
  }
  return units;
}

// The device a unit lives on: that of its first node (colocated units are
// moved whole, so after the first move they agree).
int32_t UnitDevice(const Units& units, int32_t unit, const sim::Decision& decision) {
  return decision.placement[static_cast<size_t>(units.nodes[static_cast<size_t>(unit)].front())];
}

}  // namespace

RepairResult RepairMemory(const graphs::Graph& graph, const StaticCosts& costs, sim::Decision decision,
                          const EvaluateFn& evaluate, const RepairOptions& options,
                          std::optional<sim::Evaluation> initial) {
  RepairResult result;
  sim::Evaluation evaluation;
  if (initial) {
    evaluation = *initial;
  } else {
    evaluation = evaluate(decision);
    ++result.evaluations;
  }
  const int32_t num_devices = costs.num_devices();
  if (evaluation.feasible || num_devices < 2) {
    result.feasible = evaluation.feasible;
    result.decision = std::move(decision);
    result.evaluation = evaluation;
    return result;
  }

  const Units units = BuildUnits(graph, costs, options.keep_colocation);
  const int32_t num_units = static_cast<int32_t>(units.nodes.size());
  std::vector<double> load(static_cast<size_t>(num_devices), 0.0);
  for (int32_t u = 0; u < num_units; ++u) {
    load[static_cast<size_t>(UnitDevice(units, u, decision))] += units.footprint[static_cast<size_t>(u)];
  }
  auto ratio = [&](int32_t d, double extra) {
    const double capacity = costs.Capacity(d);
    return capacity > 0 ? (load[static_cast<size_t>(d)] + extra) / capacity : 1e300;
  };
  std::vector<char> moved(static_cast<size_t>(num_units), 0);
  std::vector<char> overfull(static_cast<size_t>(num_devices), 0);

  int64_t batch = 1;
  int32_t last_oom = -1;
  std::vector<int32_t> candidates;
  while (!evaluation.feasible && result.evaluations < options.max_evaluations) {
    int32_t oom = evaluation.oom_device;
    if (oom < 0 || oom >= num_devices) {
      oom = 0;
      for (int32_t d = 1; d < num_devices; ++d) {
        if (ratio(d, 0) > ratio(oom, 0)) oom = d;
      }
    }
    overfull[static_cast<size_t>(oom)] = 1;
    batch = (oom == last_oom) ? batch * 2 : 1;
    last_oom = oom;

    candidates.clear();
    for (int32_t u = 0; u < num_units; ++u) {
      if (!moved[static_cast<size_t>(u)] && UnitDevice(units, u, decision) == oom) candidates.push_back(u);
    }
    if (candidates.empty()) break;
    std::stable_sort(candidates.begin(), candidates.end(), [&](int32_t a, int32_t b) {
      return units.footprint[static_cast<size_t>(a)] > units.footprint[static_cast<size_t>(b)];
    });
    const size_t take =
        static_cast<size_t>(std::min<int64_t>(batch, static_cast<int64_t>(candidates.size())));
    for (size_t i = 0; i < take; ++i) {
      const int32_t u = candidates[i];
      const double fp = units.footprint[static_cast<size_t>(u)];
      // Prefer devices never reported overfull; among them the emptiest.
      int32_t target = -1;
      for (int32_t d = 0; d < num_devices; ++d) {
        if (d == oom) continue;
        if (target < 0) {
          target = d;
          continue;
        }
        const bool better_class = !overfull[static_cast<size_t>(d)] && overfull[static_cast<size_t>(target)];
        const bool same_class = overfull[static_cast<size_t>(d)] == overfull[static_cast<size_t>(target)];
        if (better_class || (same_class && ratio(d, fp) < ratio(target, fp))) target = d;
      }
      for (graphs::NodeId v : units.nodes[static_cast<size_t>(u)]) {
        decision.placement[static_cast<size_t>(v)] = target;
        ++result.moved_nodes;
        if (decision.has_fusion() && decision.fusion_group[static_cast<size_t>(v)] >= 0) {
          const int32_t group = decision.fusion_group[static_cast<size_t>(v)];
          for (int32_t& g : decision.fusion_group) {
            if (g == group) g = -1;
          }
        }
      }
      load[static_cast<size_t>(oom)] -= fp;
      load[static_cast<size_t>(target)] += fp;
      moved[static_cast<size_t>(u)] = 1;
    }
    evaluation = evaluate(decision);
    ++result.evaluations;
  }
  result.feasible = evaluation.feasible;
  result.decision = std::move(decision);
  result.evaluation = evaluation;
  return result;
}

}  // namespace gosim::agents
