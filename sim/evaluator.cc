// Evaluator: an Engine plus one reusable Workspace per thread.
#include "sim/evaluator.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "core/error.h"
#include "core/log.h"
#include "sim/batch_exchange.h"
#include "sim/data_parallel.h"
#include "sim/engine.h"
#include "sim/pipeline.h"

namespace gosim::sim {

struct Evaluator::Impl {
  Impl(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
       const SimOptions& options)
      : pipeline(options.micro_batches > 1
                     ? std::optional<PipelineGraph>(BuildPipelineGraph(graph, options.micro_batches))
                     : std::nullopt),
        engine(pipeline ? pipeline->graph : graph, cluster, cost_model, options) {
    if (options.micro_batches < 1) {
      throw ConfigError("micro_batches must be >= 1, not " + std::to_string(options.micro_batches), {},
                        "1 simulates one step; more simulate a pipeline");
    }
  }

  // The decision the engine runs: `decision` itself, or its pipeline
  // expansion in this thread's buffer.
  const Decision& Engined(const Decision& decision, Schedule schedule) const {
    if (!pipeline) return decision;
    const auto n = static_cast<size_t>(pipeline->original_nodes);
    if (decision.placement.size() != n || (decision.has_priority() && decision.priority.size() != n)) {
      throw DecisionError("the decision has " + std::to_string(decision.placement.size()) +
                              " placements and " + std::to_string(decision.priority.size()) +
                              " priorities for a graph of " + std::to_string(n) + " nodes",
                          {}, "give one per node");
    }
    Decision& out = expanded.local();
    ExpandDecision(decision, *pipeline, schedule, &out);
    return out;
  }

  // Data-parallel decisions (Decision::data_parallel): per replica count,
  // the DDP step built once and its own evaluator (a process per device).
  struct DataParallelRun {
    DataParallelStep step;
    std::unique_ptr<Evaluator> evaluator;
  };
  const DataParallelRun& DataParallel(const Evaluator& outer, int32_t replicas) const {
    const std::lock_guard<std::mutex> lock(dp_mutex);
    std::unique_ptr<DataParallelRun>& run = dp_runs[replicas];
    if (run == nullptr) {
      if (outer.options().micro_batches > 1)
        throw DecisionError("a data-parallel decision cannot be simulated as a pipeline (micro_batches " +
                                std::to_string(outer.options().micro_batches) + ")",
                            {}, "simulate it with micro_batches 1");
      auto built = std::make_unique<DataParallelRun>();
      DataParallelOptions dp;
      dp.replicas = replicas;
      built->step = BuildDataParallel(outer.graph(), outer.cluster(), outer.cost_model(), dp);
      SimOptions options = outer.options();
      if (options.processes == Processes::kAuto) options.processes = Processes::kPerDevice;
      options.max_load = false;
      options.enforce_colocation = false;
      built->evaluator =
          std::make_unique<Evaluator>(built->step.graph, outer.cluster(), outer.cost_model_ptr(), options);
      run = std::move(built);
    }
    return *run;
  }

  // The step of a data-parallel decision, after checking the decision.
  const DataParallelRun& DataParallelFor(const Evaluator& outer, const Decision& decision) const {
    ValidateDecision(decision, outer.graph(), outer.cluster());
    return DataParallel(outer, decision.data_parallel);
  }

  std::optional<PipelineGraph> pipeline;
  Engine engine;
  mutable std::mutex dp_mutex;
  mutable std::map<int32_t, std::unique_ptr<DataParallelRun>> dp_runs;
  mutable tbb::enumerable_thread_specific<Decision> expanded;
  // Thread-local workspaces: a thread (TBB worker or caller) always reuses
  // its own, so evaluations allocate nothing once every workspace is warm.
  mutable tbb::enumerable_thread_specific<Workspace> workspaces;
};

Evaluator::Evaluator(const graphs::Graph& graph, const Cluster& cluster,
                     std::shared_ptr<const CostModel> cost_model, SimOptions options)
    : graph_(graph), cluster_(cluster), cost_model_(std::move(cost_model)), options_(options) {
  if (cost_model_ == nullptr)
    throw ConfigError("Evaluator needs a cost model", {}, "pass MakeCostModel(\"roofline\")");
  impl_ = std::make_unique<Impl>(graph_, cluster_, *cost_model_, options_);
  // Each distinct warning once per process (evaluators are built per cell
  // and per thread).
  static std::mutex mutex;
  static std::set<std::string> warned;
  for (const std::string& line : cost_model_->Warnings(graph_, cluster_)) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert(line).second) {
      GOSIM_LOG(Warn) << line;
    }
  }
  if (options_.enforce_colocation && !graph_.colocation_groups().empty()) {
    std::vector<graphs::NodeId> first(graph_.colocation_groups().size(), -1);
    group_head_.assign(static_cast<size_t>(graph_.num_nodes()), -1);
    for (graphs::NodeId v = 0; v < graph_.num_nodes(); ++v) {
      const int32_t group = graph_.node(v).colocation;
      if (group < 0) continue;
      graphs::NodeId& head = first[static_cast<size_t>(group)];
      if (head < 0) head = v;
      group_head_[static_cast<size_t>(v)] = head;
    }
  }
}

Execution Evaluator::execution() const {
  return impl_->engine.host().execution;
}
Processes Evaluator::processes() const {
  return impl_->engine.host().processes;
}

const std::string& Evaluator::cost_model_description() const {
  std::call_once(describe_once_, [&] { description_ = cost_model_->Describe(graph_, cluster_); });
  return description_;
}

std::string Evaluator::host_description() const {
  return DescribeHostSetup(execution(), processes());
}

std::optional<ColocationSplit> Evaluator::FindSplit(const std::vector<int32_t>& placement) const {
  if (group_head_.empty() || placement.size() != group_head_.size()) return std::nullopt;
  for (size_t v = 0; v < group_head_.size(); ++v) {
    const graphs::NodeId head = group_head_[v];
    if (head < 0 || placement[v] == placement[static_cast<size_t>(head)]) continue;
    const auto node = static_cast<graphs::NodeId>(v);
    return ColocationSplit{graph_.node(node).colocation, head, placement[static_cast<size_t>(head)], node,
                           placement[v]};
  }
  return std::nullopt;
}

void Evaluator::PrepareDataParallel(int32_t replicas) const {
  impl_->DataParallel(*this, replicas);
}

Evaluation Evaluator::RunDataParallel(const Decision& decision, std::span<int64_t> device_peak) const {
  const Impl::DataParallelRun& run = impl_->DataParallelFor(*this, decision);
  Evaluation out = device_peak.empty() ? run.evaluator->Evaluate(run.step.decision)
                                       : run.evaluator->Evaluate(run.step.decision, device_peak);
  // N replicas do N graph batches: the figures per graph batch.
  const double replicas = static_cast<double>(decision.data_parallel);
  if (out.feasible || options_.infeasible_step_time <= 0.0) out.step_time /= replicas;
  out.host_busy /= replicas;
  out.throughput = out.step_time;
  out.max_load = -1.0;
  return out;
}

Evaluation Evaluator::Run(const Decision& decision, Workspace& workspace) const {
  if (decision.is_data_parallel()) [[unlikely]]
    return RunDataParallel(decision, {});
  Evaluation out = impl_->engine.Evaluate(impl_->Engined(decision, options_.schedule), workspace);
  const double micro_batches = static_cast<double>(std::max(options_.micro_batches, 1));
  out.throughput = out.step_time / micro_batches;
  if (out.max_load > 0.0) out.max_load /= micro_batches;
  return out;
}

const graphs::Graph& Evaluator::simulated_graph() const {
  return impl_->pipeline ? impl_->pipeline->graph : graph_;
}

graphs::NodeId Evaluator::original_node(graphs::NodeId simulated) const {
  return impl_->pipeline ? impl_->pipeline->origin[static_cast<size_t>(simulated)] : simulated;
}

Evaluation Evaluator::EvaluateOne(const Decision& decision, Workspace& workspace) const {
  // Simulated even when split, so that malformed decisions still throw and
  // search can rank split decisions by their simulated step time when
  // infeasible_step_time <= 0.
  Evaluation out = Run(decision, workspace);
  if (const std::optional<ColocationSplit> split = FindSplit(decision.placement)) {
    out.feasible = false;
    out.split_group = split->group;
    if (options_.infeasible_step_time > 0.0) out.step_time = options_.infeasible_step_time;
  }
  return out;
}

Evaluator::~Evaluator() = default;

Evaluation Evaluator::Evaluate(const Decision& decision) const {
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  return EvaluateOne(decision, impl_->workspaces.local());
}

Evaluation Evaluator::Evaluate(const Decision& decision, std::span<int64_t> device_peak) const {
  const size_t devices = static_cast<size_t>(cluster_.num_devices());
  if (device_peak.size() != devices) {
    throw DecisionError("Evaluate got room for " + std::to_string(device_peak.size()) +
                            " device peaks but the cluster has " + std::to_string(devices) + " devices",
                        {}, "pass a span of cluster().num_devices() values");
  }
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  if (decision.is_data_parallel()) return RunDataParallel(decision, device_peak);
  Workspace& ws = impl_->workspaces.local();
  const Evaluation evaluation = Run(decision, ws);
  std::copy(ws.peak.begin(), ws.peak.end(), device_peak.begin());
  return evaluation;
}

void Evaluator::EvaluateBatch(std::span<const Decision> decisions, std::span<Evaluation> out,
                              std::span<int64_t> device_peaks) const {
  const size_t devices = static_cast<size_t>(cluster_.num_devices());
  if (decisions.size() != out.size() || device_peaks.size() != decisions.size() * devices) {
    throw DecisionError("EvaluateBatch got " + std::to_string(decisions.size()) + " decisions, " +
                            std::to_string(out.size()) + " result slots and " +
                            std::to_string(device_peaks.size()) + " device-peak slots",
                        {}, "pass one result and num_devices peak slots per decision");
  }
  evaluations_.fetch_add(static_cast<int64_t>(decisions.size()), std::memory_order_relaxed);
  // One thread simulates each decision whole, as in the overload above.
  tbb::parallel_for(tbb::blocked_range<size_t>(0, decisions.size()),
                    [&](const tbb::blocked_range<size_t>& range) {
                      Workspace& ws = impl_->workspaces.local();
                      for (size_t i = range.begin(); i != range.end(); ++i) {
                        const std::span<int64_t> peaks = device_peaks.subspan(i * devices, devices);
                        if (decisions[i].is_data_parallel()) {
                          out[i] = RunDataParallel(decisions[i], peaks);
                          continue;
                        }
                        out[i] = Run(decisions[i], ws);
                        std::copy(ws.peak.begin(), ws.peak.end(), peaks.begin());
                      }
                    });
}

void Evaluator::EvaluateBatch(std::span<const Decision> decisions, std::span<Evaluation> out) const {
  if (decisions.size() != out.size()) {
    throw DecisionError("EvaluateBatch got " + std::to_string(decisions.size()) + " decisions but " +
                            std::to_string(out.size()) + " result slots",
                        {}, "pass an output span of the same size");
  }
  evaluations_.fetch_add(static_cast<int64_t>(decisions.size()), std::memory_order_relaxed);
  if (const BatchExchange* exchange = ActiveBatchExchange()) {
    // This process's share (i % size == rank), then everyone's results
    // (Evaluation is trivially copyable: sent as its bytes).
    static_assert(std::is_trivially_copyable_v<Evaluation>);
    const std::vector<size_t> owned = OwnedIndices(*exchange, decisions.size());
    std::vector<Evaluation> local(owned.size());
    tbb::parallel_for(tbb::blocked_range<size_t>(0, owned.size()),
                      [&](const tbb::blocked_range<size_t>& range) {
                        Workspace& ws = impl_->workspaces.local();
                        for (size_t k = range.begin(); k != range.end(); ++k)
                          local[k] = EvaluateOne(decisions[owned[k]], ws);
                      });
    const std::string all = GatherByIndex(
        *exchange,
        std::string(reinterpret_cast<const char*>(local.data()), local.size() * sizeof(Evaluation)),
        decisions.size(), sizeof(Evaluation));
    std::memcpy(out.data(), all.data(), all.size());
    return;
  }
  // Each decision is simulated whole by one thread, so results cannot depend
  // on how the range is split.
  tbb::parallel_for(tbb::blocked_range<size_t>(0, decisions.size()),
                    [&](const tbb::blocked_range<size_t>& range) {
                      Workspace& ws = impl_->workspaces.local();
                      for (size_t i = range.begin(); i != range.end(); ++i)
                        out[i] = EvaluateOne(decisions[i], ws);
                    });
}

SimResult Evaluator::Simulate(const Decision& decision, bool timeline) const {
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  if (decision.is_data_parallel()) {
    const Impl::DataParallelRun& run = impl_->DataParallelFor(*this, decision);
    SimResult result = run.evaluator->Simulate(run.step.decision, false);
    // Node and tensor ids would be the DDP graph's, not graph()'s: left out
    // (gosim simulate --data-parallel N shows that graph's timeline).
    (void)timeline;
    result.critical_path.steps.clear();
    if (result.oom) {
      result.oom->node = -1;
      result.oom->tensor = -1;
      result.oom->live.clear();
    }
    result.data_parallel = decision.data_parallel;
    result.ddp_step_time = result.step_time;
    const double replicas = static_cast<double>(decision.data_parallel);
    result.step_time /= replicas;
    result.host_busy /= replicas;
    result.max_load = 0.0;
    return result;
  }
  SimResult result = impl_->engine.Simulate(impl_->Engined(decision, options_.schedule), timeline,
                                            impl_->workspaces.local());
  result.micro_batches = std::max(options_.micro_batches, 1);
  result.max_load /= static_cast<double>(result.micro_batches);
  result.cost_model = cost_model_description();
  result.split = FindSplit(decision.placement);
  if (result.split) result.feasible = false;
  return result;
}

}  // namespace gosim::sim
