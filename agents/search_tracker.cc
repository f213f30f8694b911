#include "agents/search_tracker.h"

#include <algorithm>

#include "core/error.h"

namespace gosim::agents {

namespace {
// Progress callbacks at most this often (seconds), plus on improvements.
constexpr double kReportInterval = 0.1;
}  // namespace

SearchTracker::SearchTracker(const Problem& problem, const ProgressFn& progress, int64_t default_evaluations)
    : problem_(problem),
      progress_(progress),
      budget_evaluations_(problem.budget.evaluations > 0 ? problem.budget.evaluations
                          : default_evaluations > 0      ? default_evaluations
                                                         : kUnlimited),
      budget_seconds_(problem.budget.wall_seconds),
      start_(std::chrono::steady_clock::now()),
      last_report_(start_) {}

double SearchTracker::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double SearchTracker::Score(const sim::Evaluation& evaluation) const {
  return problem_.objective.Score(evaluation, problem_.cluster);
}

bool SearchTracker::Done() const {
  return Remaining() <= 0;
}

int64_t SearchTracker::Remaining() const {
  if (budget_seconds_ > 0 && ElapsedSeconds() >= budget_seconds_) return 0;
  if (budget_evaluations_ == kUnlimited) return kUnlimited;
  return std::max<int64_t>(0, budget_evaluations_ - evaluations_);
}

sim::Evaluation SearchTracker::Evaluate(const sim::Decision& decision) {
  sim::Evaluation evaluation = problem_.evaluator.Evaluate(decision);
  Record(decision, evaluation);
  return evaluation;
}

void SearchTracker::EvaluateBatch(std::span<const sim::Decision> decisions, std::span<sim::Evaluation> out) {
  if (decisions.size() != out.size()) {
    throw Error("SearchTracker::EvaluateBatch: " + std::to_string(decisions.size()) + " decisions but " +
                std::to_string(out.size()) + " result slots");
  }
  problem_.evaluator.EvaluateBatch(decisions, out);
  for (size_t i = 0; i < decisions.size(); ++i) Record(decisions[i], out[i]);
}

bool SearchTracker::Record(const sim::Decision& decision, const sim::Evaluation& evaluation) {
  ++evaluations_;
  const double score = Score(evaluation);
  const bool improved = !has_best_ || score < best_objective_;
  if (improved) {
    has_best_ = true;
    best_ = decision;
    best_evaluation_ = evaluation;
    best_objective_ = score;
    AddCurvePoint();
  }
  MaybeReport(improved);
  return improved;
}

void SearchTracker::AddCurvePoint() {
  CurvePoint point;
  point.evaluations = evaluations_;
  point.wall_seconds = ElapsedSeconds();
  point.best_objective = best_objective_;
  curve_.push_back(point);
}

void SearchTracker::MaybeReport(bool force) {
  if (!progress_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && std::chrono::duration<double>(now - last_report_).count() < kReportInterval) return;
  last_report_ = now;
  progress_(evaluations_, best_objective_);
}

AgentResult SearchTracker::Finish(std::map<std::string, double> extra) {
  AgentResult result;
  if (!has_best_) {
    throw Error("agent finished without evaluating any decision", {},
                "give the agent a budget of at least one evaluation");
  }
  AddCurvePoint();
  if (progress_) progress_(evaluations_, best_objective_);
  result.best = best_;
  result.best_evaluation = best_evaluation_;
  result.best_objective = best_objective_;
  result.curve = curve_;
  result.evaluations = evaluations_;
  result.wall_seconds = curve_.back().wall_seconds;
  result.extra = std::move(extra);
  return result;
}

}  // namespace gosim::agents
