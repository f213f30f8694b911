// Helpers for reading agent options from YAML with range checks, and the
// post-processing steps several agents share (a schedule for a placement,
// the optional memory repair).
#ifndef GOSIM_AGENTS_OPTIONS_UTIL_H_
#define GOSIM_AGENTS_OPTIONS_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agents/search_tracker.h"
#include "agents/static_costs.h"
#include "core/yaml.h"
#include "sim/decision.h"

namespace gosim::agents {

// `key` as one of `choices` (ConfigError with did-you-mean otherwise).
std::string GetChoice(YamlMap& options, const std::string& key, const std::string& fallback,
                      const std::vector<std::string>& choices);
// `key` as an integer in [lo, hi].
int64_t GetInt(YamlMap& options, const std::string& key, int64_t fallback, int64_t lo, int64_t hi);
// `key` as a number in [lo, hi].
double GetDouble(YamlMap& options, const std::string& key, double fallback, double lo, double hi);

// How a placement-only baseline orders ops on a device.
//   "fifo": no priorities (the simulator's FIFO by ready time, TensorFlow's
//           executor semantics, what the papers' baselines ran with);
//   "list": upward-rank priorities for the chosen placement (critical path
//           first, HEFT's rank);
//   "dfs":  depth-first topological order (REGAL's GP+DFS).
extern const std::vector<std::string> kScheduleChoices;
void ApplySchedule(const std::string& schedule, const graphs::Graph& graph, const StaticCosts& costs,
                   sim::Decision& decision);

// The options every constructive baseline accepts: `schedule` (above) and
// `repair` (run agents/repair.h when the result runs out of memory, with at
// most `repair_evaluations` extra evaluations).
struct FinishOptions {
  std::string schedule = "fifo";
  bool repair = false;
  int64_t repair_evaluations = 64;

  // Reads the three keys; `default_schedule` is the agent's own default.
  // With `allow_static`, `schedule` also accepts "static": the order the
  // agent's own planner chose (list schedulers).
  static FinishOptions Parse(YamlMap& options, const std::string& default_schedule = "fifo",
                             bool allow_static = false);
};

// The device indices of `cluster` an agent may use: all but those named in
// `exclude` (an agent's `exclude_devices` option). ConfigError, naming
// `agent`, for an unknown name or when no device is left.
std::vector<int32_t> KeptDevices(const std::string& agent, const sim::Cluster& cluster,
                                 const std::vector<std::string>& exclude);

// Evaluates `decision` through `tracker` and, when it is infeasible and
// options.repair is set, repairs it (agents/repair.h).
void EvaluateAndMaybeRepair(SearchTracker& tracker, const sim::Decision& decision,
                            const FinishOptions& options);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_OPTIONS_UTIL_H_
