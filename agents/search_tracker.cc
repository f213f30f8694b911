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
      units_(problem.evaluator),
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

bool SearchTracker::NeedsKeeping(const sim::Decision& decision) const {
  return decision.placement.size() == static_cast<size_t>(units_.num_nodes()) &&
         units_.Splits(decision.placement);
}

sim::Evaluation SearchTracker::Evaluate(const sim::Decision& decision) {
  if (NeedsKeeping(decision)) {
    sim::Decision kept = decision;
    colocation_moved_nodes_ += units_.KeepTogether(kept.placement);
    DissolveSplitFusion(kept);
    sim::Evaluation evaluation = problem_.evaluator.Evaluate(kept);
    Record(kept, evaluation);
    return evaluation;
  }
  sim::Evaluation evaluation = problem_.evaluator.Evaluate(decision);
  Record(decision, evaluation);
  return evaluation;
}

void SearchTracker::EvaluateBatch(std::span<const sim::Decision> decisions, std::span<sim::Evaluation> out) {
  if (decisions.size() != out.size()) {
    throw Error("SearchTracker::EvaluateBatch: " + std::to_string(decisions.size()) + " decisions but " +
                std::to_string(out.size()) + " result slots");
  }
  bool any = false;
  for (const sim::Decision& d : decisions) any = any || NeedsKeeping(d);
  if (!any) {
    problem_.evaluator.EvaluateBatch(decisions, out);
    for (size_t i = 0; i < decisions.size(); ++i) Record(decisions[i], out[i]);
    return;
  }
  std::vector<sim::Decision> kept(decisions.begin(), decisions.end());
  for (sim::Decision& d : kept) {
    if (!NeedsKeeping(d)) continue;
    colocation_moved_nodes_ += units_.KeepTogether(d.placement);
    DissolveSplitFusion(d);
  }
  problem_.evaluator.EvaluateBatch(kept, out);
  for (size_t i = 0; i < kept.size(); ++i) Record(kept[i], out[i]);
}

void SearchTracker::DissolveSplitFusion(sim::Decision& decision) {
  // A fusion group whose nodes no longer share a device is dissolved (as
  // memory repair does); the others are kept.
  if (!decision.has_fusion()) return;
  std::vector<int32_t> device_of_group;
  std::vector<bool> split;
  for (size_t v = 0; v < decision.fusion_group.size(); ++v) {
    const int32_t g = decision.fusion_group[v];
    if (g < 0) continue;
    if (static_cast<size_t>(g) >= device_of_group.size()) {
      device_of_group.resize(static_cast<size_t>(g) + 1, -1);
      split.resize(static_cast<size_t>(g) + 1, false);
    }
    int32_t& d = device_of_group[static_cast<size_t>(g)];
    if (d < 0) d = decision.placement[v];
    if (d != decision.placement[v]) split[static_cast<size_t>(g)] = true;
  }
  for (int32_t& g : decision.fusion_group) {
    if (g >= 0 && split[static_cast<size_t>(g)]) g = -1;
  }
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
  if (colocation_moved_nodes_ > 0)
    result.extra["colocation_moved_nodes"] = static_cast<double>(colocation_moved_nodes_);
  return result;
}

}  // namespace gosim::agents
