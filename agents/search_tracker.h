// SearchTracker: the bookkeeping every search agent shares.
//
// It evaluates decisions through the problem's Evaluator (or records
// evaluations an agent made itself), counts them, keeps the best decision
// and its evaluation, appends best-so-far curve points (on every improvement
// and at the end), checks the budget (evaluations and wall time) and calls
// the progress callback. Evaluations are counted by the tracker itself, not
// from Evaluator::evaluations(), so agents sharing one Evaluator across
// threads or cells still count only their own.
//
// Colocation: Evaluate and EvaluateBatch keep every colocation group on one
// device (ColocationUnits::KeepTogether) before they simulate, so a decision
// the tracker evaluates never splits a group; decisions an agent evaluated
// itself (Record) are recorded as they are (the simulator marks a split one
// infeasible). Finish reports the nodes moved as extra
// "colocation_moved_nodes" when there were any.
//
// Not thread-safe: call it from the agent's own thread. Batches are recorded
// in index order, so the best decision and the curve do not depend on the
// number of worker threads.
#ifndef GOSIM_AGENTS_SEARCH_TRACKER_H_
#define GOSIM_AGENTS_SEARCH_TRACKER_H_

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/colocation.h"

namespace gosim::agents {

class SearchTracker {
 public:
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

  // The evaluation budget is problem.budget.evaluations when > 0, else
  // `default_evaluations` when > 0, else unlimited; the wall-time budget is
  // problem.budget.wall_seconds (0 = unlimited). The clock starts here.
  SearchTracker(const Problem& problem, const ProgressFn& progress, int64_t default_evaluations = 0);

  // Evaluates `decision` (one evaluation), its colocation groups kept
  // together, and records it.
  sim::Evaluation Evaluate(const sim::Decision& decision);
  // Evaluates the batch in parallel (Evaluator::EvaluateBatch), colocation
  // groups kept together, and records every element in index order. `out`
  // has the size of `decisions`.
  void EvaluateBatch(std::span<const sim::Decision> decisions, std::span<sim::Evaluation> out);
  // Records an evaluation the agent made itself. Returns true when it
  // improved the best objective.
  bool Record(const sim::Decision& decision, const sim::Evaluation& evaluation);

  // Charges `count` evaluations made outside the tracker (e.g. by the
  // one-shot agents of a warm start) to the budget.
  void Charge(int64_t count) { evaluations_ += count; }

  // The problem's objective of `evaluation` (lower is better).
  double Score(const sim::Evaluation& evaluation) const;

  // True when the evaluation budget or the wall-time budget is spent.
  bool Done() const;
  // Evaluations left (kUnlimited when unlimited); 0 once the wall time is up.
  int64_t Remaining() const;
  int64_t budget_evaluations() const { return budget_evaluations_; }
  int64_t evaluations() const { return evaluations_; }
  // Seconds since construction.
  double ElapsedSeconds() const;

  bool has_best() const { return has_best_; }
  const sim::Decision& best() const { return best_; }
  const sim::Evaluation& best_evaluation() const { return best_evaluation_; }
  double best_objective() const { return best_objective_; }
  const Problem& problem() const { return problem_; }
  // The units the problem's simulator keeps together.
  const ColocationUnits& units() const { return units_; }

  // Appends the final curve point and returns the result. `extra` goes to
  // AgentResult::extra. Call once, at the end.
  AgentResult Finish(std::map<std::string, double> extra = {});

 private:
  bool NeedsKeeping(const sim::Decision& decision) const;
  static void DissolveSplitFusion(sim::Decision& decision);
  void AddCurvePoint();
  void MaybeReport(bool force);

  const Problem& problem_;
  ColocationUnits units_;
  int64_t colocation_moved_nodes_ = 0;
  ProgressFn progress_;
  int64_t budget_evaluations_;
  double budget_seconds_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_report_;
  int64_t evaluations_ = 0;
  bool has_best_ = false;
  sim::Decision best_;
  sim::Evaluation best_evaluation_;
  double best_objective_ = std::numeric_limits<double>::infinity();
  std::vector<CurvePoint> curve_;
};

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_SEARCH_TRACKER_H_
