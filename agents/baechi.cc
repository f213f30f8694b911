// m_topo, m_etf, m_sct: Baechi's placers (see agents/baechi.h).
#include "agents/baechi.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

#include "agents/builtin.h"
#include "agents/list_schedule.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"

namespace gosim::agents {
namespace {

// Baechi's TopoUniform (placer/m_topo.py).
std::vector<int32_t> TopoPlacement(const graphs::Graph& graph, const StaticCosts& costs,
                                   double memory_fraction, bool uniform, int64_t* overflows) {
  const int32_t n = graph.num_nodes();
  const int32_t num_devices = costs.num_devices();
  double total = 0.0;
  double largest = 0.0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    total += costs.Footprint(v);
    largest = std::max(largest, costs.Footprint(v));
  }
  std::vector<double> limit(static_cast<size_t>(num_devices));
  for (int32_t d = 0; d < num_devices; ++d) {
    double l =
        costs.Capacity(d) > 0 ? costs.Capacity(d) * memory_fraction : std::numeric_limits<double>::infinity();
    if (uniform) l = std::min(l, total / num_devices + largest);
    limit[static_cast<size_t>(d)] = l;
  }
  std::vector<int32_t> placement(static_cast<size_t>(n), 0);
  int32_t device = 0;
  double used = 0.0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    const double fp = costs.Footprint(v);
    while (device < num_devices - 1 && used + fp > limit[static_cast<size_t>(device)]) {
      ++device;
      used = 0.0;
    }
    if (used + fp > limit[static_cast<size_t>(device)]) ++*overflows;
    placement[static_cast<size_t>(v)] = device;
    used += fp;
  }
  return placement;
}

// ETF, and SCT when `favorite` is non-empty (Baechi's m_etf.py / m_sct.py
// without the event loop: the pair with the earliest start is committed
// next, which yields the same choices when transfers do not contend).
ListSchedule EtfSchedule(const graphs::Graph& graph, const StaticCosts& costs, double memory_fraction,
                         const std::vector<graphs::NodeId>& favorite, const ColocationUnits* units,
                         int64_t* overflows) {
  const int32_t n = graph.num_nodes();
  const int32_t num_devices = costs.num_devices();
  const size_t nd = static_cast<size_t>(num_devices);
  ListSchedule schedule(graph, costs, memory_fraction, units);
  // A device is usable for `u` when its colocation group allows it (and, in
  // pass 0, when `u` fits there).
  auto usable = [&](graphs::NodeId u, int32_t d) { return schedule.Allowed(u, d) && schedule.Fits(u, d); };
  std::vector<int32_t> missing(static_cast<size_t>(n));
  std::vector<graphs::NodeId> ready;
  std::vector<char> is_ready(static_cast<size_t>(n), 0);
  std::vector<double> data_ready(static_cast<size_t>(n) * nd, 0.0);
  auto make_ready = [&](graphs::NodeId v) {
    ready.push_back(v);
    is_ready[static_cast<size_t>(v)] = 1;
    for (int32_t d = 0; d < num_devices; ++d)
      data_ready[static_cast<size_t>(v) * nd + d] = schedule.DataReady(v, d);
  };
  for (graphs::NodeId v = 0; v < n; ++v) {
    missing[static_cast<size_t>(v)] = graph.in_degree(v);
    if (missing[static_cast<size_t>(v)] == 0) make_ready(v);
  }
  auto start_on = [&](graphs::NodeId v, int32_t d) {
    return std::max(data_ready[static_cast<size_t>(v) * nd + d], schedule.available(d));
  };
  const bool sct = !favorite.empty();
  std::vector<graphs::NodeId> last_op(nd, -1);
  std::vector<graphs::NodeId> waiting_for(nd, -1);  // SCT: the favorite child an awake device waits for
  std::vector<double> urgent(static_cast<size_t>(n), 0.0);

  while (!ready.empty()) {
    if (sct) {
      for (graphs::NodeId u : ready) {
        double latest = -1.0;
        for (int32_t d = 0; d < num_devices; ++d) {
          if (usable(u, d)) latest = std::max(latest, start_on(u, d));
        }
        urgent[static_cast<size_t>(u)] = latest < 0 ? std::numeric_limits<double>::infinity() : latest;
      }
      for (int32_t d = 0; d < num_devices; ++d) {
        waiting_for[static_cast<size_t>(d)] = -1;
        const graphs::NodeId last = last_op[static_cast<size_t>(d)];
        if (last < 0) continue;
        const graphs::NodeId child = favorite[static_cast<size_t>(last)];
        if (child < 0 || !is_ready[static_cast<size_t>(child)] || !usable(child, d)) continue;
        const double here = start_on(child, d);
        bool earliest = true;
        for (int32_t e = 0; e < num_devices && earliest; ++e) {
          if (e != d && usable(child, e) && start_on(child, e) < here) earliest = false;
        }
        if (earliest) waiting_for[static_cast<size_t>(d)] = child;
      }
    }
    graphs::NodeId best_op = -1;
    int32_t best_device = -1;
    double best_start = std::numeric_limits<double>::infinity();
    for (int pass = 0; pass < 2 && best_op < 0; ++pass) {
      // Pass 0 honours memory; pass 1 (nothing fits anywhere) ignores it.
      for (graphs::NodeId u : ready) {
        for (int32_t d = 0; d < num_devices; ++d) {
          if (!schedule.Allowed(u, d)) continue;  // its colocation group is on another device
          if (pass == 0 && !schedule.Fits(u, d)) continue;
          const double start = start_on(u, d);
          if (sct && pass == 0) {
            const graphs::NodeId child = waiting_for[static_cast<size_t>(d)];
            if (child >= 0 && u != child && start < urgent[static_cast<size_t>(u)]) continue;
          }
          if (start < best_start || (start == best_start && u < best_op)) {
            best_start = start;
            best_op = u;
            best_device = d;
          }
        }
      }
      if (best_op < 0) ++*overflows;
    }
    schedule.Assign(best_op, best_device, best_start);
    last_op[static_cast<size_t>(best_device)] = best_op;
    is_ready[static_cast<size_t>(best_op)] = 0;
    ready.erase(std::find(ready.begin(), ready.end(), best_op));
    for (graphs::EdgeId e : graph.out_edges(best_op)) {
      const graphs::NodeId w = graph.edge(e).dst;
      if (--missing[static_cast<size_t>(w)] == 0) make_ready(w);
    }
  }
  return schedule;
}

class BaechiAgent : public Agent {
 public:
  enum class Method { kTopo, kEtf, kSct };

  BaechiAgent(std::string name, Method method, YamlMap& options) : name_(std::move(name)), method_(method) {
    memory_fraction_ = GetDouble(options, "memory_fraction", 1.0, 0.01, 10.0);
    if (method_ == Method::kTopo) uniform_ = options.Get<bool>("uniform", true);
    if (method_ == Method::kSct) {
      threshold_ = GetDouble(options, "threshold", 0.5, 0.0, 1.0);
      lp_time_limit_ = GetDouble(options, "lp_time_limit", 60.0, 0.0, 1e6);
    }
    finish_ = FinishOptions::Parse(options, "fifo", method_ != Method::kTopo);
    options.Finish();
  }
  std::string name() const override { return name_; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress);
    const graphs::Graph& graph = problem.graph;
    const StaticCosts costs(problem.evaluator);
    std::map<std::string, double> extra;
    int64_t overflows = 0;
    sim::Decision decision;
    if (method_ == Method::kTopo) {
      decision.placement = TopoPlacement(graph, costs, memory_fraction_, uniform_, &overflows);
      ApplySchedule(finish_.schedule, graph, costs, decision);
    } else {
      std::vector<graphs::NodeId> favorite;
      if (method_ == Method::kSct) {
        FavoriteChildren fc = SolveFavoriteChildren(graph, costs, threshold_, lp_time_limit_);
        extra["lp_solved"] = fc.solved ? 1.0 : 0.0;
        extra["lp_makespan"] = fc.lp_makespan;
        int64_t count = 0;
        for (graphs::NodeId c : fc.favorite) count += c >= 0;
        extra["favorite_children"] = static_cast<double>(count);
        favorite = std::move(fc.favorite);
      }
      const ColocationUnits units(problem.evaluator);
      const ListSchedule schedule = EtfSchedule(graph, costs, memory_fraction_, favorite,
                                                units.grouped() ? &units : nullptr, &overflows);
      extra["estimated_makespan"] = schedule.makespan();
      decision.placement = schedule.placement();
      if (finish_.schedule == "static") {
        decision.priority = PrioritiesFromOrder(schedule.order(), graph.num_nodes());
      } else {
        ApplySchedule(finish_.schedule, graph, costs, decision);
      }
    }
    extra["memory_overflows"] = static_cast<double>(overflows);
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish(std::move(extra));
  }

 private:
  std::string name_;
  Method method_;
  double memory_fraction_ = 1.0;
  bool uniform_ = true;
  double threshold_ = 0.5;
  double lp_time_limit_ = 60.0;
  FinishOptions finish_;
};

}  // namespace

void RegisterBaechiAgents(const RegisterFn& add) {
  using M = BaechiAgent::Method;
  add(
      "m_topo", [](YamlMap& o) { return std::make_unique<BaechiAgent>("m_topo", M::kTopo, o); },
      "Baechi m-TOPO: topological order filling devices up to a uniform memory share (Jeon et al. 2020)");
  add(
      "m_etf", [](YamlMap& o) { return std::make_unique<BaechiAgent>("m_etf", M::kEtf, o); },
      "Baechi m-ETF: memory-constrained earliest-task-first list scheduling (Jeon et al. 2020)");
  add(
      "m_sct", [](YamlMap& o) { return std::make_unique<BaechiAgent>("m_sct", M::kSct, o); },
      "Baechi m-SCT: ETF with LP favorite children, small communication time (Jeon et al. 2020)");
}

}  // namespace gosim::agents
