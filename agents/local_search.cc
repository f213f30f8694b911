// local_search and simulated_annealing: single-op moves on a decision.
//
// Both work on placement plus op priorities (`priorities: true`, default):
// a move either sends one op to another device or gives one op a new
// uniform priority (probability `device_move_fraction` for the former). A
// device move takes the op's whole colocation group along
// (agents/colocation.h), so decisions never split a group.
//
// local_search  REGAL's "Local search" baseline (Paliwal et al. 2020,
//   Sec. 5): start from a solution and apply single-op device / priority
//   changes while they improve. Each step samples `neighbours` moves from
//   the current solution, evaluates them in parallel and takes the best one
//   if it improves (steepest descent over a sampled neighbourhood); after
//   `patience` evaluations without improvement the search restarts from a
//   fresh random solution. The best solution over all restarts is returned.
//   `warm_start` (default [single_device, m_etf], as brkga; [] when `init`
//   is given, so `init: random` is REGAL's cold baseline) names one-shot
//   agents (e.g. single_device, m_etf, human_expert) whose decisions are
//   evaluated first (charged to the budget; agents/warm_start.h says what
//   happens when all are out of memory); the first descent then starts from
//   the best of them, with the priorities of its own FIFO schedule (one more
//   evaluation): the equal-budget "local search from the best heuristic"
//   control. `warm_start: []` starts from `init` (default random).
//   `units: runs` moves runs of colocation groups instead of single groups
//   (ColocationRuns, HRL's locality-prior groups, at most `max_runs`; 0 =
//   min(256, 20 x devices)): HRL's decision space without its network.
// simulated_annealing  the baseline of the multi-chip partitioning paper
//   (PAPERS.md): one move at a time, accepted with probability
//   exp(-relative increase / T), T decaying geometrically from
//   `initial_temperature` to `final_temperature` over the budget.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "agents/builtin.h"
#include "agents/colocation.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/warm_start.h"
#include "core/rng.h"

namespace gosim::agents {
namespace {

struct MoveOptions {
  bool priorities = true;
  double device_move_fraction = 0.5;
  std::string init = "random";

  static MoveOptions Parse(YamlMap& options) {
    MoveOptions out;
    out.priorities = options.Get<bool>("priorities", true);
    out.device_move_fraction = GetDouble(options, "device_move_fraction", 0.5, 0.0, 1.0);
    out.init = GetChoice(options, "init", "random", {"random", "single_device", "round_robin"});
    return out;
  }
};

sim::Decision InitialDecision(const MoveOptions& options, const Problem& problem, Rng& rng) {
  const int32_t n = problem.graph.num_nodes();
  const int32_t num_devices = problem.cluster.num_devices();
  sim::Decision d;
  d.placement.resize(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    int32_t device = 0;
    if (options.init == "random")
      device = static_cast<int32_t>(rng.UniformInt(static_cast<uint64_t>(num_devices)));
    if (options.init == "round_robin") device = v % num_devices;
    d.placement[static_cast<size_t>(v)] = device;
  }
  ColocationUnits(problem.evaluator).KeepTogether(d.placement);
  if (options.priorities) {
    d.priority.resize(static_cast<size_t>(n));
    for (double& p : d.priority) p = rng.Uniform();
  }
  return d;
}

// Applies one random move to `d`; false when no move exists (one device and
// no priorities).
bool RandomMove(const MoveOptions& options, const ColocationUnits& units, int32_t num_devices, Rng& rng,
                sim::Decision& d) {
  const int32_t n = static_cast<int32_t>(d.placement.size());
  if (n == 0) return false;
  const bool can_place = num_devices > 1;
  const bool can_prioritize = options.priorities && !d.priority.empty();
  if (!can_place && !can_prioritize) return false;
  bool device_move = can_place;
  if (can_place && can_prioritize) device_move = rng.Bernoulli(options.device_move_fraction);
  const size_t v = static_cast<size_t>(rng.UniformInt(static_cast<uint64_t>(n)));
  if (device_move) {
    const int32_t shift = 1 + static_cast<int32_t>(rng.UniformInt(static_cast<uint64_t>(num_devices - 1)));
    const int32_t device = (d.placement[v] + shift) % num_devices;
    for (graphs::NodeId w : units.members(units.unit(static_cast<graphs::NodeId>(v))))
      d.placement[static_cast<size_t>(w)] = device;
  } else {
    d.priority[v] = rng.Uniform();
  }
  return true;
}

class LocalSearchAgent : public Agent {
 public:
  explicit LocalSearchAgent(YamlMap& options) {
    evaluations_ = GetInt(options, "evaluations", 5000, 1, int64_t{1} << 40);
    neighbours_ = static_cast<int32_t>(GetInt(options, "neighbours", 16, 1, 1 << 16));
    patience_ = GetInt(options, "patience", 0, 0, int64_t{1} << 40);
    moves_ = MoveOptions::Parse(options);
    // An explicit `init` is the start asked for: cold unless warm_start says otherwise.
    warm_start_ = ParseWarmStart(options, "local_search",
                                 options.Has("init") ? std::vector<std::string>{} : DefaultWarmStart());
    runs_ = GetChoice(options, "units", "colocation", {"colocation", "runs"}) == "runs";
    max_runs_ = static_cast<int32_t>(GetInt(options, "max_runs", 0, 0, 4096));
    options.Finish();
  }
  std::string name() const override { return "local_search"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress, evaluations_);
    const int32_t num_devices = problem.cluster.num_devices();
    // `units: runs`: a move takes a whole run of colocation groups
    // (ColocationRuns, HRL's locality-prior groups; max_runs 0 = HRL's
    // min(256, 20 x devices)), and every start places whole runs.
    std::optional<ColocationUnits> runs;
    int32_t run_count = 0;
    if (runs_) {
      const int32_t cap = max_runs_ > 0 ? max_runs_ : std::min(256, 20 * num_devices);
      runs.emplace(problem.graph, ColocationRuns(problem.graph, cap, &run_count));
    }
    const ColocationUnits& units = runs ? *runs : tracker.units();
    // Warm start: the seeds' decisions are its first samples (charged), and
    // the first descent starts from the best of them.
    sim::Decision warm;
    bool has_warm = false;
    std::optional<double> explicit_score;  // the warm decision's own score when it differs from the seed's
    int64_t warm_evaluations = 0;
    if (!warm_start_.empty()) {
      const WarmStartResult seeds = RunWarmStart(name(), warm_start_, problem, tracker.Remaining());
      RecordWarmStart(seeds, tracker);
      warm_evaluations = seeds.evaluations;
      if (tracker.has_best()) {
        warm = tracker.best();
        has_warm = true;
        if (moves_.priorities && !warm.has_priority() && tracker.Remaining() > 1) {
          // Priority moves need priorities: those of the seed's own FIFO
          // schedule, so the descent starts from the seed's exact score.
          MakeOrderExplicit(problem, &warm);
          tracker.Charge(1);
          ++warm_evaluations;
          if (!OrderExplicitIsExact(problem) && tracker.Remaining() > 0) {
            // A pipeline: the explicit order is only the first micro-batch's,
            // so the descent starts from its own score, not the seed's.
            explicit_score = tracker.Score(tracker.Evaluate(warm));
            ++warm_evaluations;
          }
        }
      }
    }
    // Default patience: about one sampled move per op (with `units: runs`,
    // per run) and device.
    const int64_t movable = runs ? int64_t{run_count} : int64_t{problem.graph.num_nodes()};
    const int64_t patience = patience_ > 0 ? patience_ : std::max<int64_t>(64, movable * num_devices);
    uint64_t step = 0;
    int64_t restarts = 0;
    std::vector<sim::Decision> candidates;
    std::vector<sim::Evaluation> results;
    while (!tracker.Done()) {
      Rng init_rng = Rng::Derive(problem.seed, {0x6c73ULL, static_cast<uint64_t>(restarts)});
      const MoveOptions init =
          restarts == 0 ? moves_ : MoveOptions{moves_.priorities, moves_.device_move_fraction, "random"};
      sim::Decision current;
      double current_score = 0.0;
      if (restarts == 0 && has_warm) {
        current = warm;
        current_score = explicit_score ? *explicit_score : tracker.best_objective();
      } else {
        current = InitialDecision(init, problem, init_rng);
        if (runs) runs->KeepTogether(current.placement);
        current_score = tracker.Score(tracker.Evaluate(current));
      }
      int64_t stale = 0;
      while (!tracker.Done() && stale < patience) {
        const int64_t count = std::min<int64_t>(neighbours_, tracker.Remaining());
        candidates.assign(static_cast<size_t>(count), current);
        results.resize(static_cast<size_t>(count));
        bool moved = false;
        for (int64_t i = 0; i < count; ++i) {
          Rng rng = Rng::Derive(problem.seed, {0x6c6d6f7665ULL, step, static_cast<uint64_t>(i)});
          moved |= RandomMove(moves_, units, num_devices, rng, candidates[static_cast<size_t>(i)]);
        }
        ++step;
        if (!moved) break;
        tracker.EvaluateBatch(candidates, results);
        int64_t best = -1;
        double best_score = current_score;
        for (int64_t i = 0; i < count; ++i) {
          const double s = tracker.Score(results[static_cast<size_t>(i)]);
          if (s < best_score) {
            best_score = s;
            best = i;
          }
        }
        if (best >= 0) {
          current = std::move(candidates[static_cast<size_t>(best)]);
          current_score = best_score;
          stale = 0;
        } else {
          stale += count;
        }
      }
      if (num_devices < 2 && !moves_.priorities) break;
      ++restarts;
    }
    std::map<std::string, double> extra = {{"restarts", static_cast<double>(restarts)}};
    if (!warm_start_.empty()) extra["warm_start_evaluations"] = static_cast<double>(warm_evaluations);
    if (runs) extra["runs"] = static_cast<double>(run_count);
    return tracker.Finish(std::move(extra));
  }

 private:
  int64_t evaluations_ = 5000;
  int32_t neighbours_ = 16;
  int64_t patience_ = 0;
  MoveOptions moves_;
  // `warm_start`: one-shot agents whose best decision the first descent
  // starts from ([]: start from `init`, REGAL's baseline; absent: the
  // default warm start unless `init` is given).
  std::vector<WarmStartAgent> warm_start_;
  bool runs_ = false;     // `units: runs`
  int32_t max_runs_ = 0;  // `max_runs` (0: min(256, 20 x devices))
};

class SimulatedAnnealingAgent : public Agent {
 public:
  explicit SimulatedAnnealingAgent(YamlMap& options) {
    evaluations_ = GetInt(options, "evaluations", 5000, 1, int64_t{1} << 40);
    initial_temperature_ = GetDouble(options, "initial_temperature", 0.05, 1e-12, 1e6);
    final_temperature_ = GetDouble(options, "final_temperature", 1e-4, 1e-12, 1e6);
    moves_ = MoveOptions::Parse(options);
    options.Finish();
  }
  std::string name() const override { return "simulated_annealing"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress, evaluations_);
    const int32_t num_devices = problem.cluster.num_devices();
    Rng rng = Rng::Derive(problem.seed, {0x5341ULL});
    sim::Decision current = InitialDecision(moves_, problem, rng);
    double current_score = tracker.Score(tracker.Evaluate(current));
    // The schedule spans the evaluation budget (or `evaluations` when the
    // budget is wall time only).
    const double horizon = static_cast<double>(tracker.budget_evaluations() == SearchTracker::kUnlimited
                                                   ? evaluations_
                                                   : tracker.budget_evaluations());
    const double ratio = final_temperature_ / initial_temperature_;
    int64_t accepted = 0;
    sim::Decision candidate;
    while (!tracker.Done()) {
      candidate = current;
      if (!RandomMove(moves_, tracker.units(), num_devices, rng, candidate)) break;
      const double score = tracker.Score(tracker.Evaluate(candidate));
      const double progress_fraction = std::min(1.0, static_cast<double>(tracker.evaluations()) / horizon);
      const double temperature = initial_temperature_ * std::pow(ratio, progress_fraction);
      const double relative = (score - current_score) / std::max(std::abs(current_score), 1e-300);
      if (relative <= 0 || rng.Uniform() < std::exp(-relative / temperature)) {
        std::swap(current, candidate);
        current_score = score;
        ++accepted;
      }
    }
    return tracker.Finish({{"accepted_moves", static_cast<double>(accepted)}});
  }

 private:
  int64_t evaluations_ = 5000;
  double initial_temperature_ = 0.05;
  double final_temperature_ = 1e-4;
  MoveOptions moves_;
};

}  // namespace

void RegisterLocalSearchAgents(const RegisterFn& add) {
  add(
      "local_search", [](YamlMap& o) { return std::make_unique<LocalSearchAgent>(o); },
      "greedy single-op device/priority moves with restarts (REGAL 'Local search')");
  add(
      "simulated_annealing", [](YamlMap& o) { return std::make_unique<SimulatedAnnealingAgent>(o); },
      "simulated annealing over single-op device/priority moves");
}

}  // namespace gosim::agents
