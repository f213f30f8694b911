// The experiment YAML: what `gosim run` reads (schema in docs/EXPERIMENTS.md).
//
// An experiment is a grid: graphs x clusters x agents x seeds, each cell one
// optimization run under a budget. Reading follows parse, then validate, then
// build: LoadExperiment applies the command-line overrides to the YAML tree,
// reads every key through YamlMap (unknown keys are ConfigErrors with a
// did-you-mean and the line), then checks what can be checked without running
// anything: cluster files load, the suite loads, agent names exist and their
// options are accepted by the agent, labels are unique, the reference agent
// exists, and no graph of a train or valid split is a test graph of any
// suite in configs/suites (experiments/splits.h). Graphs are materialized
// later, one at a time, by the runner.
#ifndef GOSIM_EXPERIMENTS_EXPERIMENT_CONFIG_H_
#define GOSIM_EXPERIMENTS_EXPERIMENT_CONFIG_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "core/error.h"
#include "experiments/graph_source.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/options.h"

namespace gosim::experiments {

// One agent column of the grid.
struct AgentSpec {
  std::string name;             // registry name (agents::AgentNames())
  std::string label;            // unique within the experiment; defaults to `name`
  YAML::Node options;           // the agent's options (a mapping), inline or read from a file
  std::string options_file;     // where `options` was read, for messages
  std::string options_path;     // its YAML path in that file ("" for the root of an options file)
  agents::Budget budget;        // the experiment's budget unless the entry overrides it
  std::vector<uint64_t> seeds;  // the experiment's seeds unless the entry overrides them
  Location where;               // the entry in the experiment file, for messages
};

struct ExperimentConfig {
  std::string name;                 // names the run folder and the results
  std::string source;               // the experiment file ("" when parsed from text)
  std::string suite;                // suite file, "" when the graphs are listed inline
  std::vector<std::string> splits;  // keep only suite entries of these splits; empty = all
  std::vector<GraphEntry> graphs;   // after the split filter, in file order
  // "name (where it is a test entry)" of every test graph among `graphs`
  // (experiments/splits.h); running them needs RunOptions::final.
  std::vector<std::string> test_graphs;
  // Train or valid graphs of the same model family as a test graph (the
  // content check, experiments/splits.h): said in every table's header.
  std::vector<std::string> near_duplicates;
  std::vector<std::string> clusters;  // preset names or paths, as written
  std::string cost_model = sim::kDefaultCostModel;
  YAML::Node cost_model_options;  // a mapping (may be empty)
  sim::SimOptions sim;
  agents::Objective objective;
  std::vector<AgentSpec> agents;
  std::vector<uint64_t> seeds{0};
  agents::Budget budget;        // default for every agent; 0 = each agent's own default
  std::string reference;        // label of the agent the summary compares against
  std::string note;             // printed under the summary table (`note:`), e.g. what labels mean
  std::string output;           // run folder; default runs/<name>
  bool parallel_cells = false;  // run independent cells concurrently (results identical)
  // "full" or "quick" (`mode:`): quick runs are pipeline checks at toy sizes
  // and budgets; the mode is part of every cell's identity and quick tables
  // say so in their header.
  std::string mode = "full";
  YAML::Node resolved;  // the whole YAML after overrides (copied to the run folder)
};

// The largest budget a cell or `gosim optimize` accepts: 10^10 simulator
// evaluations (hours even at a microsecond each, weeks on a real graph) and
// 10^7 s of wall clock (about 116 days). Larger values are typing mistakes;
// they are refused rather than clamped.
inline constexpr int64_t kMaxBudgetEvaluations = 10'000'000'000;
inline constexpr double kMaxBudgetWallSeconds = 1e7;
// A ConfigError at `where` unless 0 <= evaluations <= kMaxBudgetEvaluations
// and 0 <= wall_seconds <= kMaxBudgetWallSeconds (finite).
void CheckBudget(const agents::Budget& budget, const Location& where);
// `text` as a number of evaluations for a budget: a plain decimal integer in
// [0, kMaxBudgetEvaluations], else a ConfigError at `where`.
int64_t ParseBudgetEvaluations(const std::string& text, const Location& where);

// Reads `path`, applies `overrides` ("a.b[1].c=value", values parsed as
// YAML) in order, then parses and validates. Every problem is a ConfigError
// with file, line and YAML path. Overrides that do not name the run folder
// (`output=DIR`) send the run to a sub-folder of the default one keyed by
// the resolved configuration, OverrideFolder(), so that a run with other
// settings never shares results.jsonl with the plain one.
// With `quick`, the experiment's `quick:` list of overrides comes first (its
// quick mode; a ConfigError when it has none).
ExperimentConfig LoadExperiment(const std::string& path, const std::vector<std::string>& overrides = {},
                                bool quick = false);

// "with-<8 hex digits>": the digest of the resolved configuration, `output`
// left out (a sub-folder name of the default run folder).
std::string OverrideFolder(const YAML::Node& resolved);

// Parses and validates an already-loaded tree; `source` names it in errors.
ExperimentConfig ParseExperiment(const YAML::Node& root, const std::string& source);

// Reads simulator options (`sim:` mapping); unknown keys are ConfigErrors.
sim::SimOptions ParseSimOptions(YamlMap& map);
// `step_time`, `peak_memory`, `weighted`, or {kind: ..., memory_weight: ...}.
agents::Objective ParseObjective(const YAML::Node& node, const std::string& file, const std::string& path);

// "step_time", "peak_memory" or "weighted".
const char* ObjectiveKindName(agents::ObjectiveKind kind);

// Human-readable unit and value of a cell's objective for tables: step time
// in ms, peak memory in GiB, the weighted score as is.
struct DisplayMetric {
  const char* unit;
  double value;
};
DisplayMetric ObjectiveDisplay(const agents::Objective& objective, double step_time_s,
                               double peak_memory_bytes, double score);

// sim::LoadCluster, with a missing preset or file reported at `where` (the
// entry in the experiment file) instead of at the bare name.
sim::Cluster LoadClusterAt(const std::string& preset_or_path, const Location& where);
// The same, and `from-graph`: the machine the graph's file brings (an
// msr-fiddle problem: sim::MsrCluster); ConfigError at `where` for a graph
// whose file brings none.
inline constexpr const char* kClusterFromGraph = "from-graph";
sim::Cluster LoadClusterFor(const std::string& preset_or_path, const graphs::Graph& graph,
                            const Location& where);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_EXPERIMENT_CONFIG_H_
