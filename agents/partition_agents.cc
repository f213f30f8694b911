// scotch, mincut, metis and gp_dfs: placement by graph partitioning,
// followed by a schedule.
//
// scotch  ColocRL (Mirhoseini et al. 2017, Sec. 4 "Scotch") and HRL (2018,
//         Table 1): the Scotch static mapper with the op cost as vertex
//         weight, the bytes between ops as edge weight, and the devices as a
//         complete architecture graph weighted by their compute capacity
//         (SCOTCH_graphMap onto SCOTCH_archCmpltw).
// mincut  ColocRL/HRL "MinCut": in the papers the same Scotch optimizer with
//         the CPU removed from the devices. Most of our clusters hold GPUs
//         only, where that would repeat `scotch`; `mincut` runs Scotch's
//         k-way partitioner instead (SCOTCH_graphPart: minimum edge cut,
//         equal-load parts within `balance`), which ignores device speeds
//         (docs/DEVIATIONS.md). The papers' exact MinCut on a cluster with a
//         CPU device is `scotch` with `exclude_devices: [cpu0]`.
//
// Every one takes `exclude_devices` (device names): the partition uses the
// other devices only.
// metis   METIS_PartGraphKway, minimum edge cut with a balance constraint per
//         vertex weight (`balance: time | memory | both`), target part
//         weights proportional to device speed (time) or capacity (memory).
// gp_dfs  REGAL's "GP+DFS" baseline (Paliwal et al. 2020, Sec. 5): graph
//         partitioning (METIS, balanced on memory footprint by default) for
//         the placement and a depth-first topological order as the schedule.
#include <algorithm>
#include <memory>

#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/partition.h"
#include "agents/search_tracker.h"
#include "agents/static_costs.h"

namespace gosim::agents {
namespace {

std::vector<double> VertexWeight(const std::string& kind, const graphs::Graph& graph,
                                 const StaticCosts& costs) {
  std::vector<double> w(static_cast<size_t>(graph.num_nodes()));
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    if (kind == "time") {
      w[static_cast<size_t>(v)] = costs.MeanNodeTime(v);
    } else if (kind == "flops") {
      w[static_cast<size_t>(v)] = graph.node(v).flops;
    } else {
      w[static_cast<size_t>(v)] = costs.Footprint(v);
    }
  }
  return w;
}

// Fractions proportional to `values` (equal when they are all zero).
std::vector<double> Fractions(const std::vector<double>& values) {
  double total = 0.0;
  for (double v : values) total += std::max(0.0, v);
  std::vector<double> out(values.size(), values.empty() ? 0.0 : 1.0 / static_cast<double>(values.size()));
  if (total > 0) {
    for (size_t i = 0; i < values.size(); ++i) out[i] = std::max(0.0, values[i]) / total;
  }
  return out;
}

class PartitionAgent : public Agent {
 public:
  enum class Method { kScotchMap, kScotchPart, kMetis };

  PartitionAgent(std::string name, Method method, YamlMap& options, const std::string& default_schedule,
                 const std::string& default_balance)
      : name_(std::move(name)), method_(method) {
    const std::vector<std::string> weights = {"time", "flops", "memory"};
    if (method_ == Method::kMetis) {
      balance_ = GetChoice(options, "balance", default_balance, {"time", "memory", "both"});
      ufactor_ = static_cast<int32_t>(GetInt(options, "ufactor", 30, 1, 10000));
    } else {
      vertex_weight_ = GetChoice(options, "vertex_weight", "time", weights);
      imbalance_ = GetDouble(options, "imbalance", 0.05, 0.0, 1.0);
    }
    exclude_ = options.Get<std::vector<std::string>>("exclude_devices", {});
    finish_ = FinishOptions::Parse(options, default_schedule);
    options.Finish();
  }
  std::string name() const override { return name_; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress);
    const graphs::Graph& graph = problem.graph;
    const StaticCosts costs(problem.evaluator);
    const std::vector<int32_t> kept = KeptDevices(name_, problem.cluster, exclude_);
    // Partition colocation units, not nodes (agents/colocation.h).
    const ColocationUnits units(problem.evaluator);
    const ColocationUnits* by_unit = units.grouped() ? &units : nullptr;
    const auto num_devices = static_cast<int32_t>(kept.size());
    std::vector<double> speeds;
    for (int32_t d : kept) speeds.push_back(problem.cluster.device(d).peak_flops_fp32);
    sim::Decision decision;
    switch (method_) {
      case Method::kScotchMap: {
        const PartitionGraph pg =
            BuildPartitionGraph(graph, {VertexWeight(vertex_weight_, graph, costs)}, by_unit);
        decision.placement = ScotchMap(pg, speeds, imbalance_, problem.seed);
        break;
      }
      case Method::kScotchPart: {
        const PartitionGraph pg =
            BuildPartitionGraph(graph, {VertexWeight(vertex_weight_, graph, costs)}, by_unit);
        decision.placement = ScotchPartition(pg, num_devices, imbalance_, problem.seed);
        break;
      }
      case Method::kMetis: {
        std::vector<std::vector<double>> weights;
        std::vector<std::vector<double>> fractions;
        if (balance_ == "time" || balance_ == "both") {
          weights.push_back(VertexWeight("time", graph, costs));
          fractions.push_back(Fractions(speeds));
        }
        if (balance_ == "memory" || balance_ == "both") {
          weights.push_back(VertexWeight("memory", graph, costs));
          std::vector<double> capacity;
          for (int32_t d : kept) capacity.push_back(costs.Capacity(d));
          fractions.push_back(Fractions(capacity));
        }
        const PartitionGraph pg = BuildPartitionGraph(graph, weights, by_unit);
        std::vector<float> target(static_cast<size_t>(num_devices) * weights.size());
        for (int32_t d = 0; d < num_devices; ++d) {
          for (size_t c = 0; c < weights.size(); ++c) {
            target[static_cast<size_t>(d) * weights.size() + c] =
                static_cast<float>(fractions[c][static_cast<size_t>(d)]);
          }
        }
        decision.placement = MetisKway(pg, num_devices, target, ufactor_, problem.seed);
        break;
      }
    }
    if (by_unit != nullptr) decision.placement = units.Expand(decision.placement);  // unit -> node
    for (int32_t& d : decision.placement) d = kept[static_cast<size_t>(d)];         // part -> device
    ApplySchedule(finish_.schedule, graph, costs, decision);
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish();
  }

 private:
  std::string name_;
  Method method_;
  std::string vertex_weight_ = "time";
  double imbalance_ = 0.05;
  std::string balance_ = "time";
  int32_t ufactor_ = 30;
  std::vector<std::string> exclude_;
  FinishOptions finish_;
};

}  // namespace

void RegisterPartitionAgents(const RegisterFn& add) {
  using M = PartitionAgent::Method;
  add(
      "scotch",
      [](YamlMap& o) { return std::make_unique<PartitionAgent>("scotch", M::kScotchMap, o, "fifo", "time"); },
      "Scotch static mapping onto the devices (ColocRL/HRL 'Scotch')");
  add(
      "mincut",
      [](YamlMap& o) {
        return std::make_unique<PartitionAgent>("mincut", M::kScotchPart, o, "fifo", "time");
      },
      "Scotch k-way minimum-cut partitioning with balanced load (ColocRL/HRL 'MinCut')");
  add(
      "metis",
      [](YamlMap& o) { return std::make_unique<PartitionAgent>("metis", M::kMetis, o, "fifo", "time"); },
      "METIS k-way partitioning, balanced on op time");
  add(
      "gp_dfs",
      [](YamlMap& o) { return std::make_unique<PartitionAgent>("gp_dfs", M::kMetis, o, "dfs", "memory"); },
      "graph partitioning (METIS) + depth-first schedule (REGAL 'GP+DFS')");
}

}  // namespace gosim::agents
