// The files of a run folder (docs/EXPERIMENTS.md lists them):
//
//   results.jsonl          one JSON line per finished cell, the source of truth
//   curves.csv             best-so-far curves of every cell in results.jsonl
//   decisions/<cell>.json  the best decision of each cell (sim::SaveDecision)
//   config.yaml            the resolved experiment (after overrides)
//   summary.md, summary.csv
//
// A cell counts as finished when its line is in results.jsonl. The line is
// appended (and fsync'd) only after the decision file has been written
// atomically, so a crash leaves either a finished cell with all its files or
// an unfinished one that the next run repeats. A crash while appending can
// leave a torn last line; ResultsLog::Open detects it, logs a warning and
// cuts it off (atomically) before anything else is appended.
#ifndef GOSIM_EXPERIMENTS_RESULTS_H_
#define GOSIM_EXPERIMENTS_RESULTS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/agent.h"

namespace gosim::experiments {

// What results.jsonl holds for one finished cell.
struct CellRecord {
  std::string cell;  // cell id (16 hex digits)
  std::string experiment;
  std::string graph;  // graph entry name
  int64_t nodes = 0;
  int64_t edges = 0;
  std::string cluster;  // as written in the experiment
  int32_t devices = 0;
  std::string agent;  // registry name
  std::string label;
  uint64_t seed = 0;
  agents::Budget budget;
  std::string objective;        // "step_time", "peak_memory", "weighted"
  double best_objective = 0.0;  // the agent's score of its best decision (lower is better)
  bool feasible = false;        // of the best decision, re-simulated by the runner
  double step_time = 0.0;       // seconds (the simulator's value, also when infeasible)
  double peak_memory = 0.0;     // bytes, max over devices
  int32_t oom_device = -1;
  // The host (docs/SIMULATOR.md, "The host") in the final re-simulation:
  // the busiest host thread's dispatch time (-1: not recorded, lines
  // written before the field), the execution it resolved to, and the cost
  // model's description as the command line prints it.
  double host_busy = -1.0;
  std::string execution;
  std::string cost_model;
  int64_t evaluations = 0;  // as reported by the agent
  int64_t simulations = 0;  // simulator calls counted by the evaluator, final re-simulation excluded
  // Evaluations that produced the checkpoint the agent starts from
  // (experiments/pretrain.h; 0: none, -1: unknown or not recorded).
  int64_t pretrain_evaluations = -1;
  std::string pretrain_source;  // where pretrain_evaluations comes from
  double wall_seconds = 0.0;    // the agent's Optimize() call
  std::map<std::string, double> extra;
  std::vector<agents::CurvePoint> curve;
  std::string decision;     // path relative to the run folder
  std::string finished_at;  // UTC, ISO 8601
  nlohmann::json identity;  // what the cell id hashes
  // The run folder this result was copied from (`gosim run --reuse`);
  // empty: run here.
  std::string reused_from;

  // Keys in a fixed, readable order (format, cell, experiment, graph, ...).
  nlohmann::ordered_json ToJson() const;
  // Throws StateError naming `where` on missing or mistyped fields.
  static CellRecord FromJson(const nlohmann::json& json, const std::string& where);
};

// Keeps the points where the best objective changes, plus the first and the
// last point, so a curve stays small whatever the agent reported.
std::vector<agents::CurvePoint> CompressCurve(const std::vector<agents::CurvePoint>& curve);

// results.jsonl of one run folder, opened for resuming.
class ResultsLog {
 public:
  // Reads `path` when it exists. A last line without its newline that does
  // not parse is a torn write: it is dropped (the file is rewritten without
  // it, unless `repair` is false). Any other unreadable line is a StateError
  // with its line number.
  explicit ResultsLog(std::string path, bool repair = true);

  const std::vector<CellRecord>& records() const { return records_; }
  bool Has(const std::string& cell_id) const { return index_.count(cell_id) > 0; }
  // The record of `cell_id`; nullptr when the cell has not finished.
  const CellRecord* Find(const std::string& cell_id) const;
  // True when Open() found and cut off a torn last line.
  bool repaired_torn_line() const { return repaired_torn_line_; }

  // Appends one line (AppendLine: single write + fsync). A record of a cell
  // already present replaces it in memory; the file keeps both, and readers
  // take the last one.
  void Append(const CellRecord& record);

 private:
  void Index(CellRecord record);

  std::string path_;
  std::vector<CellRecord> records_;
  std::map<std::string, size_t> index_;
  bool repaired_torn_line_ = false;
};

// curves.csv text: header `cell,graph,cluster,label,seed,evaluations,wall_seconds,best_objective`
// and one row per curve point of every record, in record order.
std::string CurvesCsv(const std::vector<CellRecord>& records);

// The current UTC time as "2024-05-01T12:34:56Z".
std::string UtcNow();

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_RESULTS_H_
