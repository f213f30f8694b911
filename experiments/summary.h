// The comparison table at the end of a run: agent x graph for each cluster,
// the objective averaged over seeds (step time in ms, peak memory in GiB, or
// the weighted score) and its difference from the reference agent in percent,
// (agent / reference - 1) x 100: negative is better, since every objective is
// minimized. Only the cells of the current grid count; results of cells that
// other configurations left in the same folder are not summarized.
#ifndef GOSIM_EXPERIMENTS_SUMMARY_H_
#define GOSIM_EXPERIMENTS_SUMMARY_H_

#include <optional>
#include <string>
#include <vector>

#include "experiments/cells.h"
#include "experiments/experiment_config.h"
#include "experiments/results.h"

namespace gosim::experiments {

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
  double mean_wall_seconds = 0.0;
};

struct Summary {
  std::string experiment;
  std::string reference;              // label
  std::string objective;              // "step_time", ...
  std::string cost_model;             // the simulator's cost model, named in every table header
  std::vector<SummaryEntry> entries;  // cluster-major, then graph, then agent (config order)

  // One table per cluster: a row per agent, a column per graph; each cell
  // "12.34 ms (-5.1%)", "infeasible", or "-" when not finished. Over 12
  // graphs, a row per agent instead: graphs finished, infeasible ones, the
  // mean % against the reference and on how many graphs it is better / worse.
  std::string ToMarkdown() const;
  // The same entries in long form, one row each, with every field.
  std::string ToCsv() const;
};

Summary Summarize(const ExperimentConfig& config, const std::vector<Cell>& cells, const ResultsLog& results);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_SUMMARY_H_
