// The BRKGA agents, uniform sampling (Paliwal et al. 2020, Sec. 5, Table 1):
//   brkga        the user-facing search: generation 0 seeded with the
//                decisions of single_device and m_etf (`warm_start`, charged
//                to the budget), so it never ends worse than they are;
//   brkga_5k     REGAL's "BRKGA 5K" baseline: cold, uniform random keys;
//   tuned_brkga  REGAL's "Tuned BRKGA": cold, grid-searched defaults (see
//                docs/AGENTS.md for how they were chosen).
// They differ only in their default options.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agents/brkga/brkga.h"
#include "agents/builtin.h"
#include "agents/search_tracker.h"
#include "agents/warm_start.h"
#include "core/error.h"
#include "core/log.h"
#include "sim/result.h"

namespace gosim::agents {
namespace {

class BrkgaAgent : public Agent {
 public:
  BrkgaAgent(std::string name, YamlMap& options, const brkga::BrkgaOptions& defaults,
             const std::vector<std::string>& default_warm_start)
      : name_(std::move(name)),
        warm_start_(ParseWarmStart(options, name_, default_warm_start)),
        options_(brkga::BrkgaOptions::Parse(options, defaults)) {}
  std::string name() const override { return name_; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    if (warm_start_.empty()) return brkga::RunBrkga(problem, options_, brkga::UniformSampler(), progress);
    // Warm start: each named one-shot agent's decision, encoded, joins
    // generation 0. Their evaluations are charged to this agent's budget.
    const brkga::ChromosomeLayout layout = brkga::LayoutFor(problem, options_);
    const int64_t budget = problem.budget.evaluations > 0 ? problem.budget.evaluations : options_.evaluations;
    const auto start = std::chrono::steady_clock::now();
    WarmStartResult warm = RunWarmStart(name_, warm_start_, problem, budget);
    std::vector<std::vector<double>> initial;   // exact encodings of the seeds
    std::vector<std::vector<double>> variants;  // FIFO seeds in topological order
    int64_t used = warm.evaluations;
    for (const WarmStartSeed& seed : warm.seeds) {
      // A copy: the seed's own decision stays the one its evaluation scored
      // (in a pipeline the explicit order need not reproduce the FIFO
      // schedule, so the seed may be returned below as it was evaluated).
      sim::Decision decision = seed.result.best;
      if (layout.priority_genes() && !decision.has_priority() && used + 1 < budget) {
        // Two seeds from a FIFO decision: its exact order, and the same
        // placement in topological order (a different schedule, which gives
        // the first generations more to recombine).
        variants.emplace_back(layout.size());
        layout.Encode(decision, variants.back());
        MakeOrderExplicit(problem, &decision);
        ++used;
      }
      initial.emplace_back(layout.size());
      layout.Encode(decision, initial.back());
    }
    if (used >= budget) {
      // The seeds spent the whole budget: the best of them is the result.
      SearchTracker tracker(problem, progress, budget);
      tracker.Charge(used - static_cast<int64_t>(warm.seeds.size()));
      for (const WarmStartSeed& seed : warm.seeds)
        tracker.Record(seed.result.best, seed.result.best_evaluation);
      return tracker.Finish({{"warm_start_evaluations", static_cast<double>(used)},
                             {"warm_start_seeds", static_cast<double>(warm.seeds.size())},
                             {"generations", 0.0}});
    }
    // Exact seeds first (they survive the smallest budgets), at most a population.
    initial.insert(initial.end(), variants.begin(), variants.end());
    if (initial.size() > static_cast<size_t>(options_.population)) initial.resize(options_.population);
    Problem rest = problem;
    rest.budget.evaluations = budget - used;
    AgentResult result = brkga::RunBrkga(rest, options_, brkga::UniformSampler(), progress, initial);
    // A seed that generation 0 had no budget left to re-evaluate (or one
    // cut off by the population size) still counts: it was simulated and
    // charged above.
    const WarmStartSeed* best_seed = nullptr;
    double best_score = result.best_objective;
    for (const WarmStartSeed& seed : warm.seeds) {
      const double score = problem.objective.Score(seed.result.best_evaluation, problem.cluster);
      if (score < best_score) {
        best_score = score;
        best_seed = &seed;
      }
    }
    if (best_seed) {
      result.best = best_seed->result.best;
      result.best_evaluation = best_seed->result.best_evaluation;
      result.best_objective = best_score;
      for (CurvePoint& point : result.curve)
        point.best_objective = std::min(point.best_objective, result.best_objective);
    }
    // The seeds' evaluations and time count as this agent's: the curve
    // starts after them, and the totals include them.
    const double total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double warm_seconds = total_seconds - result.wall_seconds;
    for (CurvePoint& point : result.curve) {
      point.evaluations += used;
      point.wall_seconds += std::max(0.0, warm_seconds);
    }
    result.evaluations += used;
    result.wall_seconds += std::max(0.0, warm_seconds);
    result.extra["warm_start_evaluations"] = static_cast<double>(used);
    result.extra["warm_start_seeds"] = static_cast<double>(warm.seeds.size());
    return result;
  }

 private:
  std::string name_;
  // `warm_start`: one-shot agents (and their options) whose decisions seed the initial
  // population; [] is REGAL's uniform initialization.
  std::vector<WarmStartAgent> warm_start_;
  brkga::BrkgaOptions options_;
};

// Defaults of `tuned_brkga`, from the grid search recorded in docs/AGENTS.md.
brkga::BrkgaOptions TunedDefaults() {
  brkga::BrkgaOptions o;
  o.population = 50;
  o.elite_fraction = 0.3;
  o.mutant_fraction = 0.1;
  o.elite_bias = 0.6;
  return o;
}

}  // namespace

void RegisterBrkgaAgents(const RegisterFn& add) {
  add(
      "brkga",
      [](YamlMap& o) {
        return std::make_unique<BrkgaAgent>("brkga", o, brkga::BrkgaOptions{}, DefaultWarmStart());
      },
      "BRKGA over REGAL's chromosome, 5,000 evaluations, first generation seeded with single_device and "
      "m_etf");
  add(
      "brkga_5k",
      [](YamlMap& o) {
        return std::make_unique<BrkgaAgent>("brkga_5k", o, brkga::BrkgaOptions{}, std::vector<std::string>{});
      },
      "REGAL's 'BRKGA 5K': BRKGA with uniform random keys from the start (cold), 5,000 evaluations");
  add(
      "tuned_brkga",
      [](YamlMap& o) {
        return std::make_unique<BrkgaAgent>("tuned_brkga", o, TunedDefaults(), std::vector<std::string>{});
      },
      "REGAL's 'Tuned BRKGA': grid-searched hyper-parameters, cold start like brkga_5k");
}

}  // namespace gosim::agents
