// The one interface for every optimizer: baselines, search, learned agents.
//
// An Agent receives a Problem (a graph, a cluster, the simulator's Evaluator,
// an objective, a budget and a seed) and returns the best decision it found
// with its best-so-far curve. Agents are registered by name (MakeAgent) and
// built from validated YAML options, so experiments can name them.
//
// Budgets count simulator evaluations (Evaluator::evaluations() deltas) and
// wall time; an agent stops when either is spent. Objectives are minimized;
// memory capacity is always a hard constraint (infeasible decisions score
// worse than every feasible one).
#ifndef GOSIM_AGENTS_AGENT_H_
#define GOSIM_AGENTS_AGENT_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/yaml.h"
#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/decision.h"
#include "sim/evaluator.h"

namespace gosim::agents {

// kMaxLoad: msr-fiddle's max-load (sim/msr.h), the time per sample of a
// pipeline in steady state under their model; the Evaluator must compute it
// (SimOptions::max_load).
// kThroughput: seconds per micro-batch of the pipeline the Evaluator
// simulates (SimOptions::micro_batches; sim/pipeline.h), from the engine.
enum class ObjectiveKind { kStepTime, kPeakMemory, kWeighted, kMaxLoad, kThroughput };

struct Objective {
  ObjectiveKind kind = ObjectiveKind::kStepTime;
  // kWeighted: step_time / reference_step_time + memory_weight * peak / capacity.
  double memory_weight = 0.5;
  // Seconds; the step time that counts as 1.0 in kWeighted (> 0).
  double reference_step_time = 1.0;

  // Lower is better. Infeasible evaluations score kInfeasibleBase + their
  // step time, so any feasible decision beats any infeasible one while
  // infeasible ones still rank among themselves (useful for search).
  // kStepTime scores seconds, kPeakMemory bytes; `capacity` in kWeighted is
  // the smallest device memory of `cluster`.
  double Score(const sim::Evaluation& evaluation, const sim::Cluster& cluster) const;
  static constexpr double kInfeasibleBase = 1e12;
  std::string ToString() const;
};
// "step_time", "peak_memory", "weighted", "max_load", "throughput"; ConfigError otherwise.
ObjectiveKind ParseObjectiveKind(const std::string& text, const Location& where = {});

struct Budget {
  // Simulator evaluations; 0 = the agent's own default (iterative agents:
  // their `evaluations` option; one-shot baselines use what they need).
  int64_t evaluations = 0;
  double wall_seconds = 0;  // 0 = unlimited
};

// One point of a best-so-far curve.
struct CurvePoint {
  int64_t evaluations = 0;
  double wall_seconds = 0.0;
  double best_objective = std::numeric_limits<double>::infinity();
};

struct Problem {
  const graphs::Graph& graph;
  const sim::Cluster& cluster;
  const sim::Evaluator& evaluator;
  Objective objective;
  Budget budget;
  uint64_t seed = 0;
};

struct AgentResult {
  sim::Decision best;
  sim::Evaluation best_evaluation;
  double best_objective = std::numeric_limits<double>::infinity();
  std::vector<CurvePoint> curve;
  int64_t evaluations = 0;
  double wall_seconds = 0.0;
  // Agent-specific figures, e.g. {"bound": ..., "gap": ...} for exact solvers.
  std::map<std::string, double> extra;
};

// Called now and then with progress (evaluations used, best objective).
using ProgressFn = std::function<void(int64_t evaluations, double best_objective)>;

class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::string name() const = 0;
  virtual AgentResult Optimize(const Problem& problem, const ProgressFn& progress = {}) = 0;
};

// Builds agent `name` from its YAML options (validated: unknown keys are
// ConfigErrors with did-you-mean); unknown names list the valid ones. A
// learned agent's name loads the LibTorch plugin first (agents/learned_agents.h);
// IoError when it cannot. Thread-safe.
std::unique_ptr<Agent> MakeAgent(const std::string& name, YamlMap& options);
// Sorted; includes the learned agents whether or not the plugin is loaded.
std::vector<std::string> AgentNames();

// Reads an agent's options from `options` and calls options.Finish().
using AgentFactory = std::function<std::unique_ptr<Agent>(YamlMap& options)>;
// Adds (or replaces) an agent; the built-in agents are registered on first
// use of the registry. Modules outside gosim_agents (the LibTorch plugin)
// call this; thread-safe.
void RegisterAgent(const std::string& name, AgentFactory factory, std::string description);
// One line describing agent `name` (its paper); ConfigError when unknown.
std::string AgentDescription(const std::string& name);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_AGENT_H_
