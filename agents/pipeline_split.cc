// pipeline: the placement of pipeline parallelism as users run it (GPipe's
// partitioner, torchgpipe's "balance by time"): the forward pass cut into
// contiguous stages, in topological order, one stage per accelerator,
// minimizing the slowest stage's time, a stage's time being its forward
// ops' and the backward ops of their scopes' (a backward op belongs to the
// forward ops of its module scope, as exporters and generators label it),
// under each device's memory for the weights and optimizer state its stage
// reads (`memory_fraction` of it). The rest follows:
//   - a backward op runs on the stage of its scope's first forward op, else
//     on the stage of its first placed producer;
//   - update ops and other ops on the stage of their first placed producer;
//   - sources (parameters, inputs, constants) on the stage of their first
//     consumer; colocation groups (a weight with its optimizer state and
//     update) stay whole (agents/colocation.h).
// Run the decision as a pipeline with `micro_batches` (and `schedule:
// gpipe | 1f1b`) to score its throughput, or as one step. One evaluation.
//
// The cut: binary search on the slowest stage's time with a greedy pass
// (a stage takes ops in order until the next would pass the bound or its
// memory), the bound found when the pass needs at most `stages` stages.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "agents/agent.h"
#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/static_costs.h"
#include "core/error.h"

namespace gosim::agents {
namespace {

// Kahn's topological order, the smallest node id first among ready nodes
// (node ids follow execution order in exported and generated graphs).
std::vector<graphs::NodeId> SmallestFirstOrder(const graphs::Graph& graph) {
  const int32_t n = graph.num_nodes();
  std::vector<int32_t> pending(static_cast<size_t>(n));
  std::priority_queue<graphs::NodeId, std::vector<graphs::NodeId>, std::greater<>> ready;
  for (graphs::NodeId v = 0; v < n; ++v) {
    pending[static_cast<size_t>(v)] = static_cast<int32_t>(graph.in_edges(v).size());
    if (pending[static_cast<size_t>(v)] == 0) ready.push(v);
  }
  std::vector<graphs::NodeId> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const graphs::NodeId v = ready.top();
    ready.pop();
    order.push_back(v);
    for (const graphs::EdgeId e : graph.out_edges(v)) {
      const graphs::NodeId w = graph.edge(e).dst;
      if (--pending[static_cast<size_t>(w)] == 0) ready.push(w);
    }
  }
  return order;
}

class PipelineAgent : public Agent {
 public:
  explicit PipelineAgent(YamlMap& options) {
    stages_ = static_cast<int32_t>(GetInt(options, "stages", 0, 0, 1 << 20));
    memory_fraction_ = GetDouble(options, "memory_fraction", 0.8, 0.01, 1.0);
    finish_ = FinishOptions::Parse(options);
    options.Finish();
  }
  std::string name() const override { return "pipeline"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    const graphs::Graph& g = problem.graph;
    const int32_t n = g.num_nodes();
    // The stages' devices: the accelerators in index order (every device
    // when there is none), at most `stages` of them.
    std::vector<int32_t> devices;
    for (int32_t d = 0; d < problem.cluster.num_devices(); ++d) {
      if (problem.cluster.device(d).role == sim::DeviceRole::kAccelerator) devices.push_back(d);
    }
    if (devices.empty()) {
      for (int32_t d = 0; d < problem.cluster.num_devices(); ++d) devices.push_back(d);
    }
    if (stages_ > 0) {
      if (stages_ > static_cast<int32_t>(devices.size())) {
        throw ConfigError("pipeline: " + std::to_string(stages_) + " stages but cluster '" +
                              problem.cluster.name() + "' has " + std::to_string(devices.size()) +
                              " accelerators",
                          {}, "give stages: " + std::to_string(devices.size()) + " or fewer (0: all)");
      }
      devices.resize(static_cast<size_t>(stages_));
    }
    const auto k = static_cast<int32_t>(devices.size());
    SearchTracker tracker(problem, progress);
    const StaticCosts costs(problem.evaluator);

    // What each op weighs: forward ops their own time plus an equal share of
    // their scope's backward time; the bytes of the weights (with their
    // colocation groups: optimizer state) a forward op is the first to read.
    auto is_source = [&](graphs::NodeId v) { return g.in_edges(v).empty(); };
    std::unordered_map<std::string, double> backward_time;
    std::unordered_map<std::string, int32_t> forward_count;
    for (graphs::NodeId v = 0; v < n; ++v) {
      const graphs::Node& node = g.node(v);
      if (node.phase == graphs::Phase::kBackward) backward_time[node.scope] += costs.MeanNodeTime(v);
      if (node.phase == graphs::Phase::kForward && !is_source(v)) ++forward_count[node.scope];
    }
    std::vector<int64_t> group_bytes(g.colocation_groups().size(), 0);
    for (graphs::NodeId v = 0; v < n; ++v) {
      if (g.node(v).colocation >= 0)
        group_bytes[static_cast<size_t>(g.node(v).colocation)] += g.node(v).persistent_bytes;
    }
    const std::vector<graphs::NodeId> topo = SmallestFirstOrder(g);
    std::vector<graphs::NodeId> order;  // forward ops, not sources
    std::vector<double> cost;
    std::vector<double> bytes;
    std::vector<uint8_t> claimed_group(group_bytes.size(), 0);
    std::vector<uint8_t> claimed(static_cast<size_t>(n), 0);
    for (const graphs::NodeId v : topo) {
      const graphs::Node& node = g.node(v);
      if (node.phase != graphs::Phase::kForward || is_source(v)) continue;
      double c = costs.MeanNodeTime(v);
      if (const auto it = backward_time.find(node.scope); it != backward_time.end())
        c += it->second / forward_count[node.scope];
      double b = static_cast<double>(node.persistent_bytes);
      for (const graphs::EdgeId e : g.in_edges(v)) {
        const graphs::NodeId p = g.edge(e).src;
        if (!is_source(p) || claimed[static_cast<size_t>(p)]) continue;
        claimed[static_cast<size_t>(p)] = 1;
        const int32_t group = g.node(p).colocation;
        if (group < 0) {
          b += static_cast<double>(g.node(p).persistent_bytes);
        } else if (!claimed_group[static_cast<size_t>(group)]) {
          claimed_group[static_cast<size_t>(group)] = 1;
          b += static_cast<double>(group_bytes[static_cast<size_t>(group)]);
        }
      }
      order.push_back(v);
      cost.push_back(c);
      bytes.push_back(b);
    }

    // The cut.
    double capacity = std::numeric_limits<double>::infinity();
    for (const int32_t d : devices) capacity = std::min(capacity, costs.Capacity(d) * memory_fraction_);
    std::vector<int32_t> stage_of(order.size(), 0);
    auto pass = [&](double bound, bool assign) {
      int32_t stage = 0;
      double time = 0.0, mem = 0.0;
      for (size_t i = 0; i < order.size(); ++i) {
        if ((time > 0.0 && time + cost[i] > bound) || (mem > 0.0 && mem + bytes[i] > capacity)) {
          ++stage;
          time = 0.0;
          mem = 0.0;
        }
        time += cost[i];
        mem += bytes[i];
        if (assign) stage_of[i] = std::min(stage, k - 1);
      }
      return stage + 1;
    };
    double lo = 0.0, hi = 0.0;
    for (const double c : cost) {
      lo = std::max(lo, c);
      hi += c;
    }
    double bound = hi;
    if (pass(hi, false) <= k) {
      for (int iter = 0; iter < 60 && hi - lo > 1e-12 * hi; ++iter) {
        const double mid = 0.5 * (lo + hi);
        if (pass(mid, false) <= k) {
          hi = mid;
        } else {
          lo = mid;
        }
      }
      bound = hi;
    }
    // Memory alone needs more than k stages: the last stage takes the rest
    // (the simulation then reports the device out of memory).
    const int32_t used = std::min(pass(bound, true), k);

    // Every op's stage.
    std::vector<int32_t> stage(static_cast<size_t>(n), -1);
    std::unordered_map<std::string, int32_t> scope_stage;
    for (size_t i = 0; i < order.size(); ++i) {
      stage[static_cast<size_t>(order[i])] = stage_of[i];
      scope_stage.emplace(g.node(order[i]).scope, stage_of[i]);
    }
    auto first_producer_stage = [&](graphs::NodeId v) {
      for (const graphs::EdgeId e : g.in_edges(v)) {
        const int32_t s = stage[static_cast<size_t>(g.edge(e).src)];
        if (s >= 0) return s;
      }
      return -1;
    };
    for (const graphs::NodeId v : topo) {
      if (stage[static_cast<size_t>(v)] >= 0 || is_source(v)) continue;
      int32_t s = -1;
      if (g.node(v).phase == graphs::Phase::kBackward) {
        if (const auto it = scope_stage.find(g.node(v).scope); it != scope_stage.end()) s = it->second;
      }
      if (s < 0) s = first_producer_stage(v);
      stage[static_cast<size_t>(v)] = std::max(s, 0);
    }
    for (graphs::NodeId v = 0; v < n; ++v) {
      if (!is_source(v)) continue;
      int32_t s = -1;
      for (const graphs::EdgeId e : g.out_edges(v)) {
        const int32_t c = stage[static_cast<size_t>(g.edge(e).dst)];
        if (c >= 0 && (s < 0 || c < s)) s = c;
      }
      stage[static_cast<size_t>(v)] = std::max(s, 0);
    }
    sim::Decision decision;
    decision.placement.resize(static_cast<size_t>(n));
    for (graphs::NodeId v = 0; v < n; ++v)
      decision.placement[static_cast<size_t>(v)] =
          devices[static_cast<size_t>(stage[static_cast<size_t>(v)])];
    if (finish_.schedule != "fifo") ApplySchedule(finish_.schedule, g, costs, decision);
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish({{"stages", static_cast<double>(used)}, {"stage_time_bound_s", bound}});
  }

 private:
  int32_t stages_ = 0;
  double memory_fraction_ = 0.8;
  FinishOptions finish_;
};

}  // namespace

void RegisterPipelineAgent(const RegisterFn& add) {
  add(
      "pipeline", [](YamlMap& o) { return std::make_unique<PipelineAgent>(o); },
      "pipeline parallelism as users run it: contiguous stages of the forward pass, one per accelerator, "
      "balanced by forward + backward time under memory (GPipe's partitioner)");
}

}  // namespace gosim::agents
