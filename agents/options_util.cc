#include "agents/options_util.h"

#include <algorithm>
#include <sstream>

#include "agents/repair.h"
#include "core/strings.h"

namespace gosim::agents {

std::string GetChoice(YamlMap& options, const std::string& key, const std::string& fallback,
                      const std::vector<std::string>& choices) {
  const std::string value = options.Get<std::string>(key, fallback);
  for (const std::string& choice : choices) {
    if (choice == value) return value;
  }
  options.Fail(key, "unknown value '" + value + "' for '" + key + "'." + DidYouMean(value, choices),
               "valid values are: " + Join(choices, ", "));
}

int64_t GetInt(YamlMap& options, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  const int64_t value = options.Get<int64_t>(key, fallback);
  if (value < lo || value > hi) {
    std::ostringstream range;
    range << "use an integer in [" << lo << ", " << hi << "]";
    options.Fail(key, "'" + key + "' = " + std::to_string(value) + " is out of range", range.str());
  }
  return value;
}

double GetDouble(YamlMap& options, const std::string& key, double fallback, double lo, double hi) {
  const double value = options.Get<double>(key, fallback);
  if (!(value >= lo && value <= hi)) {
    std::ostringstream message;
    std::ostringstream range;
    message << "'" << key << "' = " << value << " is out of range";
    range << "use a number in [" << lo << ", " << hi << "]";
    options.Fail(key, message.str(), range.str());
  }
  return value;
}

const std::vector<std::string> kScheduleChoices = {"fifo", "list", "dfs"};

void ApplySchedule(const std::string& schedule, const graphs::Graph& graph, const StaticCosts& costs,
                   sim::Decision& decision) {
  if (schedule == "fifo") {
    decision.priority.clear();
  } else if (schedule == "list") {
    decision.priority = UpwardRanks(graph, costs, decision.placement);
  } else if (schedule == "dfs") {
    decision.priority = PrioritiesFromOrder(DfsTopologicalOrder(graph), graph.num_nodes());
  } else {
    throw ConfigError("unknown schedule '" + schedule + "'", {},
                      "valid values are: " + Join(kScheduleChoices, ", "));
  }
}

FinishOptions FinishOptions::Parse(YamlMap& options, const std::string& default_schedule, bool allow_static) {
  FinishOptions out;
  std::vector<std::string> choices = kScheduleChoices;
  if (allow_static) choices.push_back("static");
  out.schedule = GetChoice(options, "schedule", default_schedule, choices);
  out.repair = options.Get<bool>("repair", false);
  out.repair_evaluations = GetInt(options, "repair_evaluations", out.repair_evaluations, 1, 1'000'000);
  return out;
}

void EvaluateAndMaybeRepair(SearchTracker& tracker, const sim::Decision& proposed,
                            const FinishOptions& options) {
  sim::Decision decision = proposed;
  if (decision.placement.size() == static_cast<size_t>(tracker.units().num_nodes()))
    tracker.units().KeepTogether(decision.placement);  // what the tracker evaluates; repair starts there
  const sim::Evaluation evaluation = tracker.Evaluate(decision);
  if (evaluation.feasible || !options.repair) return;
  const Problem& problem = tracker.problem();
  const StaticCosts costs(problem.evaluator);
  RepairOptions repair;
  repair.keep_colocation = problem.evaluator.options().enforce_colocation;
  repair.max_evaluations = std::min<int64_t>(options.repair_evaluations, tracker.Remaining());
  if (repair.max_evaluations <= 0) return;
  RepairMemory(
      problem.graph, costs, decision, [&](const sim::Decision& d) { return tracker.Evaluate(d); }, repair,
      evaluation);
}

std::vector<int32_t> KeptDevices(const std::string& agent, const sim::Cluster& cluster,
                                 const std::vector<std::string>& exclude) {
  for (const std::string& name : exclude) {
    if (cluster.FindDevice(name) < 0) {
      throw ConfigError(agent + ": exclude_devices names '" + name + "', which cluster '" + cluster.name() +
                            "' does not have",
                        {}, "list device names of the cluster (gosim simulate prints them)");
    }
  }
  std::vector<int32_t> kept;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (std::find(exclude.begin(), exclude.end(), cluster.device(d).name) == exclude.end()) kept.push_back(d);
  }
  if (kept.empty()) {
    throw ConfigError(agent + ": exclude_devices leaves no device of cluster '" + cluster.name() + "'", {},
                      "keep at least one device");
  }
  return kept;
}

}  // namespace gosim::agents
