// The one interface through which optimizers see the simulator.
//
// An Evaluator binds a graph, a cluster, a cost model and simulator options;
// it precomputes per-(node, device) costs once and then evaluates decisions
// quickly. Evaluate() is thread-safe (each thread reuses its own workspace,
// so there is no heap allocation per evaluation after warm-up), and
// EvaluateBatch() spreads a batch over oneTBB workers. Results depend only on
// the inputs, never on the number of threads.
#ifndef GOSIM_SIM_EVALUATOR_H_
#define GOSIM_SIM_EVALUATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/options.h"
#include "sim/result.h"

namespace gosim::sim {

// The summary an optimizer needs from one simulation.
struct Evaluation {
  bool feasible = true;      // false when some device ran out of memory or a colocation group is split
  double step_time = 0.0;    // seconds; SimOptions::infeasible_step_time when infeasible
  double peak_memory = 0.0;  // bytes, max over devices of the peak (0 for a split decision not simulated)
  int32_t oom_device = -1;   // first device that ran out of memory, or -1
  int32_t split_group = -1;  // first colocation group found on two devices (enforced only), or -1
  double host_busy = 0.0;    // seconds the busiest host thread dispatched (0 without a host)
  double max_load = -1.0;    // seconds, msr-fiddle's max-load (sim/msr.h); -1 unless SimOptions::max_load
  double throughput = 0.0;  // seconds per micro-batch: step_time / SimOptions::micro_batches (sim/pipeline.h)
};

struct Workspace;  // sim/engine.h

class Evaluator {
 public:
  Evaluator(const graphs::Graph& graph, const Cluster& cluster, std::shared_ptr<const CostModel> cost_model,
            SimOptions options = {});
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const graphs::Graph& graph() const { return graph_; }
  // The graph the engine runs: graph(), or its pipeline of
  // SimOptions::micro_batches copies (sim/pipeline.h). Simulate()'s results
  // (ops, timelines) index its nodes; format them with it.
  const graphs::Graph& simulated_graph() const;
  // The node of graph() that node `simulated` of simulated_graph() copies.
  graphs::NodeId original_node(graphs::NodeId simulated) const;
  const Cluster& cluster() const { return cluster_; }
  const CostModel& cost_model() const { return *cost_model_; }
  const std::shared_ptr<const CostModel>& cost_model_ptr() const { return cost_model_; }
  const SimOptions& options() const { return options_; }
  // What SimOptions::execution and ::processes resolved to (kAuto: the
  // cluster's host settings, else eager where the cost model prices every
  // device's host, else none; docs/SIMULATOR.md, "The host").
  Execution execution() const;
  Processes processes() const;
  // CostModel::Describe of this graph and cluster (computed once), and the
  // host line ("host: execution eager, one process drives every device").
  const std::string& cost_model_description() const;
  std::string host_description() const;

  // Simulates one decision. Thread-safe. A data-parallel decision
  // (Decision::data_parallel = N) simulates the DDP step of N replicas
  // (sim/data_parallel.h; the step is built on first use and kept), and
  // reports step_time and host_busy per graph batch: the DDP step / N. The decision should be valid (see
  // ValidateDecision); cheap structural problems (sizes, device indices,
  // non-finite priorities, fusion across devices or non-convex fusion groups)
  // are DecisionErrors, never crashes or hangs. With
  // SimOptions::enforce_colocation a decision that splits a colocation group
  // is infeasible (split_group set); it is not simulated when
  // infeasible_step_time > 0 (its step time is that constant anyway).
  Evaluation Evaluate(const Decision& decision) const;
  // The same, and writes each device's peak memory (bytes) into
  // `device_peak`, which must hold cluster().num_devices() values.
  Evaluation Evaluate(const Decision& decision, std::span<int64_t> device_peak) const;
  // Simulates every decision of `decisions` in parallel into `out` (same size).
  void EvaluateBatch(std::span<const Decision> decisions, std::span<Evaluation> out) const;
  // The same with per-device peaks: `device_peaks` holds num_devices values
  // per decision (decision i at [i * num_devices, (i + 1) * num_devices)).
  // Always runs in this process (no BatchExchange sharing).
  void EvaluateBatch(std::span<const Decision> decisions, std::span<Evaluation> out,
                     std::span<int64_t> device_peaks) const;
  // The full result (per-device and per-link figures, critical path and,
  // when `timeline` is true, every op and transfer with its times). A split
  // colocation group (enforced) is simulated anyway and reported in
  // SimResult::split, with feasible false.
  SimResult Simulate(const Decision& decision, bool timeline = false) const;

  // Builds the DDP step of `replicas` (Decision::data_parallel) now, without
  // simulating it: the ConfigError of a graph or cost model that cannot run
  // data-parallel (no parameter update, no measured times) comes before any
  // evaluation is counted. Thread-safe; later evaluations reuse the step.
  void PrepareDataParallel(int32_t replicas) const;
  // Number of simulations run so far (Evaluate, EvaluateBatch, Simulate).
  int64_t evaluations() const { return evaluations_.load(std::memory_order_relaxed); }

  // The first colocation group `placement` splits (two of its nodes on
  // different devices), or nullopt; always nullopt when colocation is not
  // enforced or the placement does not have one entry per node. O(nodes).
  std::optional<ColocationSplit> FindSplit(const std::vector<int32_t>& placement) const;

 private:
  struct Impl;
  Evaluation EvaluateOne(const Decision& decision, Workspace& workspace) const;
  Evaluation Run(const Decision& decision, Workspace& workspace) const;
  // A data-parallel decision (Decision::data_parallel): the DDP step of its
  // replicas, per graph batch; peaks written when `device_peak` is not empty.
  Evaluation RunDataParallel(const Decision& decision, std::span<int64_t> device_peak) const;
  const graphs::Graph& graph_;
  const Cluster& cluster_;
  std::shared_ptr<const CostModel> cost_model_;
  SimOptions options_;
  std::unique_ptr<Impl> impl_;
  // Per node: the first node of its colocation group, or -1 (no group, or
  // colocation not enforced).
  std::vector<graphs::NodeId> group_head_;
  mutable std::atomic<int64_t> evaluations_{0};
  mutable std::once_flag describe_once_;
  mutable std::string description_;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_EVALUATOR_H_
