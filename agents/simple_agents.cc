// single_device, round_robin and random_search.
//
// single_device: every op on one device, the "Single GPU" baseline of
//   ColocRL (Mirhoseini et al. 2017, Sec. 4) and HRL (2018, Table 1).
// round_robin: ops dealt to devices in turn, over the topological order
//   (`unit: op`) or over layers (`unit: layer`, the first `layer_depth`
//   components of the scope path, in order of first appearance). A common
//   naive placement; no paper's exact recipe.
// random_search: uniform random decisions (placement, and op and transfer
//   priorities in the same space the BRKGA decoder spans), the baseline of
//   the multi-chip partitioning paper (PAPERS.md) at equal budget. By default
//   the decisions of single_device and m_etf are its first samples
//   (`warm_start`, charged to the budget); `warm_start: []` is the paper's
//   cold random search.
// data_parallel: PyTorch DDP over `replicas` devices (default all), each
//   running the whole graph at its own batch, gradients all-reduced in
//   25 MiB buckets overlapped with backward (Decision::data_parallel,
//   sim/data_parallel.h): what users run. One evaluation; its step time is
//   per graph batch (the DDP step / replicas), comparable with placements.
#include <memory>
#include <unordered_map>

#include "agents/builtin.h"
#include "agents/colocation.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/warm_start.h"
#include "core/rng.h"
#include "core/strings.h"
#include "sim/decision.h"

namespace gosim::agents {
namespace {

class SingleDeviceAgent : public Agent {
 public:
  explicit SingleDeviceAgent(YamlMap& options) {
    device_ = static_cast<int32_t>(GetInt(options, "device", 0, 0, 1 << 20));
    finish_ = FinishOptions::Parse(options);
    options.Finish();
  }
  std::string name() const override { return "single_device"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    if (device_ >= problem.cluster.num_devices()) {
      throw ConfigError("single_device: device " + std::to_string(device_) + " does not exist in cluster '" +
                            problem.cluster.name() + "'",
                        {}, "use a device index below " + std::to_string(problem.cluster.num_devices()));
    }
    SearchTracker tracker(problem, progress);
    sim::Decision decision = sim::SingleDeviceDecision(problem.graph, device_);
    if (finish_.schedule != "fifo")
      ApplySchedule(finish_.schedule, problem.graph, StaticCosts(problem.evaluator), decision);
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish();
  }

 private:
  int32_t device_ = 0;
  FinishOptions finish_;
};

class DataParallelAgent : public Agent {
 public:
  explicit DataParallelAgent(YamlMap& options) {
    replicas_ = static_cast<int32_t>(GetInt(options, "replicas", 0, 0, 1 << 20));
    options.Finish();
  }
  std::string name() const override { return "data_parallel"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    const int32_t devices = problem.cluster.num_devices();
    const int32_t replicas = replicas_ > 0 ? replicas_ : devices;
    if (replicas < 2 || replicas > devices) {
      throw ConfigError("data_parallel: " + std::to_string(replicas) + " replicas on cluster '" +
                            problem.cluster.name() + "' of " + std::to_string(devices) + " devices",
                        {}, "data parallelism needs 2 to " + std::to_string(devices) + " replicas");
    }
    if (problem.evaluator.options().micro_batches > 1) {
      throw ConfigError("data_parallel: the objective simulates a pipeline (micro_batches " +
                            std::to_string(problem.evaluator.options().micro_batches) + "); DDP is not one",
                        {}, "use the step_time objective");
    }
    problem.evaluator.PrepareDataParallel(replicas);  // refusals before anything is counted
    SearchTracker tracker(problem, progress);
    tracker.Evaluate(sim::DataParallelDecision(problem.graph, replicas));
    return tracker.Finish();
  }

 private:
  int32_t replicas_ = 0;  // 0: every device
};

class RoundRobinAgent : public Agent {
 public:
  explicit RoundRobinAgent(YamlMap& options) {
    unit_ = GetChoice(options, "unit", "op", {"op", "layer"});
    layer_depth_ = static_cast<int32_t>(GetInt(options, "layer_depth", 2, 1, 64));
    finish_ = FinishOptions::Parse(options);
    options.Finish();
  }
  std::string name() const override { return "round_robin"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress);
    const graphs::Graph& graph = problem.graph;
    const int32_t num_devices = problem.cluster.num_devices();
    sim::Decision decision;
    decision.placement.resize(static_cast<size_t>(graph.num_nodes()));
    if (unit_ == "op") {
      for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v)
        decision.placement[static_cast<size_t>(v)] = v % num_devices;
    } else {
      std::unordered_map<std::string, int32_t> layer_index;
      for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
        const std::string& scope = graph.node(v).scope;
        if (scope.empty()) {
          // Unscoped ops follow their first producer (or go to device 0).
          int32_t device = 0;
          for (graphs::EdgeId e : graph.in_edges(v)) {
            device = decision.placement[static_cast<size_t>(graph.edge(e).src)];
            break;
          }
          decision.placement[static_cast<size_t>(v)] = device;
          continue;
        }
        std::vector<std::string> parts = Split(scope, '/');
        if (static_cast<int32_t>(parts.size()) > layer_depth_)
          parts.resize(static_cast<size_t>(layer_depth_));
        const std::string key = Join(parts, "/");
        auto [it, inserted] = layer_index.emplace(key, static_cast<int32_t>(layer_index.size()));
        decision.placement[static_cast<size_t>(v)] = it->second % num_devices;
      }
    }
    if (finish_.schedule != "fifo")
      ApplySchedule(finish_.schedule, graph, StaticCosts(problem.evaluator), decision);
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish({{"layers", unit_ == "layer" ? 1.0 : 0.0}});
  }

 private:
  std::string unit_;
  int32_t layer_depth_ = 2;
  FinishOptions finish_;
};

class RandomSearchAgent : public Agent {
 public:
  explicit RandomSearchAgent(YamlMap& options) {
    evaluations_ = GetInt(options, "evaluations", 5000, 1, int64_t{1} << 40);
    priorities_ = options.Get<bool>("priorities", true);
    transfer_priorities_ = options.Get<bool>("transfer_priorities", true);
    batch_ = static_cast<int32_t>(GetInt(options, "batch", 64, 1, 1 << 20));
    warm_start_ = ParseWarmStart(options, "random_search", DefaultWarmStart());
    options.Finish();
  }
  std::string name() const override { return "random_search"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress, evaluations_);
    if (!warm_start_.empty()) {
      // The seeds' decisions count as samples; their evaluations are charged.
      const WarmStartResult warm = RunWarmStart(name(), warm_start_, problem, tracker.Remaining());
      RecordWarmStart(warm, tracker);
    }
    const int32_t n = problem.graph.num_nodes();
    const int32_t num_devices = problem.cluster.num_devices();
    const size_t transfer_slots = static_cast<size_t>(problem.graph.num_tensors()) * num_devices;
    const ColocationUnits& units = tracker.units();  // one device drawn per colocation unit
    std::vector<sim::Decision> decisions;
    std::vector<sim::Evaluation> evaluations;
    uint64_t sample = 0;
    while (!tracker.Done()) {
      const int64_t count = std::min<int64_t>(batch_, tracker.Remaining());
      decisions.resize(static_cast<size_t>(count));
      evaluations.resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i, ++sample) {
        Rng rng = Rng::Derive(problem.seed, {0x72616e64ULL, sample});
        sim::Decision& d = decisions[static_cast<size_t>(i)];
        d.placement.resize(static_cast<size_t>(n));
        if (units.grouped()) {
          for (int32_t u = 0; u < units.num_units(); ++u) {
            const auto device = static_cast<int32_t>(rng.UniformInt(static_cast<uint64_t>(num_devices)));
            for (graphs::NodeId v : units.members(u)) d.placement[static_cast<size_t>(v)] = device;
          }
        } else {
          for (int32_t& p : d.placement)
            p = static_cast<int32_t>(rng.UniformInt(static_cast<uint64_t>(num_devices)));
        }
        if (priorities_) {
          d.priority.resize(static_cast<size_t>(n));
          for (double& p : d.priority) p = rng.Uniform();
        }
        if (transfer_priorities_ && num_devices > 1) {
          d.transfer_priority.resize(transfer_slots);
          for (double& p : d.transfer_priority) p = rng.Uniform();
        }
      }
      tracker.EvaluateBatch(decisions, evaluations);
    }
    return tracker.Finish();
  }

 private:
  int64_t evaluations_ = 5000;
  bool priorities_ = true;
  bool transfer_priorities_ = true;
  int32_t batch_ = 64;
  std::vector<WarmStartAgent> warm_start_;
};

}  // namespace

void RegisterSimpleAgents(const RegisterFn& add) {
  add(
      "single_device", [](YamlMap& o) { return std::make_unique<SingleDeviceAgent>(o); },
      "every op on one device (ColocRL/HRL 'Single GPU')");
  add(
      "data_parallel", [](YamlMap& o) { return std::make_unique<DataParallelAgent>(o); },
      "PyTorch DDP: the whole graph on each device, bucketed all-reduces (what users run)");
  add(
      "round_robin", [](YamlMap& o) { return std::make_unique<RoundRobinAgent>(o); },
      "ops or layers dealt to devices in turn");
  add(
      "random_search", [](YamlMap& o) { return std::make_unique<RandomSearchAgent>(o); },
      "uniform random placement and priorities at a fixed budget");
}

}  // namespace gosim::agents
