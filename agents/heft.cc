// heft: the critical-path list scheduler HEFT (Topcuoglu, Hariri and Wu,
// "Performance-effective and low-complexity task scheduling for
// heterogeneous computing", IEEE TPDS 2002), producing placement and
// priorities.
//
//   1. Upward rank of every op with mean compute and mean transfer costs
//      (StaticCosts); ops taken in decreasing rank (ties: node id).
//   2. Each op goes to the device with the earliest estimated finish time,
//      with insertion into idle gaps (`insertion: true`, the paper's policy).
//   3. The decision's priorities are the upward ranks (critical path first),
//      so the simulator's priority list scheduling follows HEFT's order
//      (`schedule: static`; fifo / list / dfs also accepted).
// Deviation (docs/DEVIATIONS.md): with `memory_aware: true` (default) a
// device is skipped while the op does not fit its memory under Baechi's
// accounting (agents/list_schedule.h); HEFT itself ignores memory.
#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>

#include "agents/builtin.h"
#include "agents/colocation.h"
#include "agents/list_schedule.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/static_costs.h"

namespace gosim::agents {
namespace {

class HeftAgent : public Agent {
 public:
  explicit HeftAgent(YamlMap& options) {
    insertion_ = options.Get<bool>("insertion", true);
    memory_aware_ = options.Get<bool>("memory_aware", true);
    memory_fraction_ = GetDouble(options, "memory_fraction", 1.0, 0.01, 10.0);
    finish_ = FinishOptions::Parse(options, "static", true);
    options.Finish();
  }
  std::string name() const override { return "heft"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress);
    const graphs::Graph& graph = problem.graph;
    const StaticCosts costs(problem.evaluator);
    const int32_t n = graph.num_nodes();
    const int32_t num_devices = costs.num_devices();
    const std::vector<double> rank = UpwardRanks(graph, costs);
    std::vector<graphs::NodeId> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](graphs::NodeId a, graphs::NodeId b) {
      return rank[static_cast<size_t>(a)] > rank[static_cast<size_t>(b)];
    });

    const ColocationUnits units(problem.evaluator);
    ListSchedule schedule(graph, costs, memory_fraction_, units.grouped() ? &units : nullptr);
    int64_t overflows = 0;
    for (graphs::NodeId v : order) {
      int32_t best = -1;
      double best_start = 0.0;
      double best_finish = std::numeric_limits<double>::infinity();
      for (int pass = 0; pass < 2 && best < 0; ++pass) {
        // Pass 0 honours memory; pass 1 (nothing fits) ignores it.
        for (int32_t d = 0; d < num_devices; ++d) {
          if (!schedule.Allowed(v, d)) continue;  // its colocation group is on another device
          if (pass == 0 && memory_aware_ && !schedule.Fits(v, d)) continue;
          const double start = schedule.EarliestStart(v, d, insertion_);
          const double end = start + costs.NodeTime(v, d);
          if (end < best_finish) {
            best_finish = end;
            best_start = start;
            best = d;
          }
        }
        if (best < 0) ++overflows;
      }
      schedule.Assign(v, best, best_start);
    }

    sim::Decision decision;
    decision.placement = schedule.placement();
    if (finish_.schedule == "static") {
      decision.priority = rank;
    } else {
      ApplySchedule(finish_.schedule, graph, costs, decision);
    }
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish(
        {{"estimated_makespan", schedule.makespan()}, {"memory_overflows", static_cast<double>(overflows)}});
  }

 private:
  bool insertion_ = true;
  bool memory_aware_ = true;
  double memory_fraction_ = 1.0;
  FinishOptions finish_;
};

}  // namespace

void RegisterHeftAgent(const RegisterFn& add) {
  add(
      "heft", [](YamlMap& o) { return std::make_unique<HeftAgent>(o); },
      "HEFT critical-path list scheduler: placement + upward-rank priorities (Topcuoglu et al. 2002)");
}

}  // namespace gosim::agents
