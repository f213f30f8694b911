// The comparison table at the end of a run: agent x graph for each cluster,
// the objective averaged over seeds (step time in ms, peak memory in GiB, or
// the weighted score) with its 95% t-interval, and its difference from the
// reference agent in percent, (agent / reference - 1) x 100: negative is
// better, since every objective is minimized. "better" / "worse" only where
// a paired bootstrap over the seeds says so (stats.h); speedups over graphs
// are aggregated by geometric mean; a reference slower than single_device is
// flagged. Only the cells of the current grid count; results of cells that
// other configurations left in the same folder are not summarized. The
// header names the code versions of the cells, and a quick-mode run says
// "quick mode: pipeline check, not a result".
#ifndef GOSIM_EXPERIMENTS_SUMMARY_H_
#define GOSIM_EXPERIMENTS_SUMMARY_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiments/cells.h"
#include "experiments/experiment_config.h"
#include "experiments/results.h"
#include "experiments/stats.h"

namespace gosim::experiments {

// The header line of every quick-mode table (here and in analysis/tables.py).
inline constexpr const char* kQuickModeNote = "quick mode: pipeline check, not a result";

// One (cluster, graph, agent) entry, aggregated over the agent's seeds.
struct SummaryEntry {
  std::string cluster;
  std::string graph;
  std::string label;
  std::string agent;
  int seeds = 0;                           // cells of the grid
  int finished = 0;                        // of which in results.jsonl
  int feasible = 0;                        // of which feasible
  double value = 0.0;                      // mean display value over the feasible finished cells
  double value_stddev = 0.0;               // population standard deviation of the same
  const char* unit = "";                   // "ms", "GiB" or "" (weighted score)
  std::optional<double> vs_reference_pct;  // when both this and the reference have a value
  double mean_evaluations = 0.0;
  // Evaluations that produced the agent's checkpoint (experiments/pretrain.h):
  // the largest over the finished cells, -1 when one of them is unknown.
  int64_t pretrain_evaluations = 0;
  double mean_wall_seconds = 0.0;
  std::vector<double> seed_values;         // display values of the feasible finished seeds, by seed
  std::vector<uint64_t> seed_ids;          // their seeds
  std::optional<Interval> interval;        // 95% t-interval of `value` (2+ feasible seeds)
  std::optional<PairedComparison> paired;  // against the reference (stats.h), when both have values
  // The reference (e.g. the human expert) is slower than the single_device
  // agent on this graph: percentages against it overstate every gain.
  bool reference_slower_than_single_device = false;
};

struct Summary {
  std::string experiment;
  std::string mode = "full";  // "quick": the header says it is a pipeline check
  // Code version -> finished cells of the grid it produced (several when
  // `--reuse-other-code` copied cells of another build).
  std::map<std::string, int> code_versions;
  // Execution the engine resolved to ("none", "eager", ...; "" for lines
  // written before the field) -> finished cells: the header says whether
  // the host was modelled (docs/SIMULATOR.md, "The host").
  std::map<std::string, int> executions;
  int test_graphs = 0;                       // graphs of the grid that are test graphs (experiments/splits.h)
  int64_t final_runs = 0;                    // lines of the run folder's final_runs.jsonl
  std::vector<std::string> near_duplicates;  // ExperimentConfig::near_duplicates
  std::string reference;                     // label
  std::string objective;                     // "step_time", ...
  std::string cost_model;                    // the simulator's cost model, named in every table header
  std::vector<SummaryEntry> entries;         // cluster-major, then graph, then agent (config order)

  // One table per cluster: a row per agent, a column per graph, then the
  // geometric-mean speedup against the reference, the mean evaluations
  // per cell, the pre-training evaluations ("evals (pre-train)") and the
  // seeds per graph; each cell "12.34 ±0.21 (-5.1%, better)",
  // "infeasible", or "-" when not finished. Over 12 graphs, a row per agent
  // instead: graphs finished, infeasible ones, the geometric-mean speedup,
  // on how many graphs it is better / worse / neither by the paired
  // bootstrap, evaluations, pre-training evaluations, seeds.
  std::string ToMarkdown() const;
  // The same entries in long form, one row each, with every field.
  std::string ToCsv() const;
};

Summary Summarize(const ExperimentConfig& config, const std::vector<Cell>& cells, const ResultsLog& results);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_SUMMARY_H_
