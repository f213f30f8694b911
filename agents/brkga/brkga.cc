#include "agents/brkga/brkga.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "agents/colocation.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/warm_start.h"
#include "core/rng.h"

namespace gosim::agents::brkga {

BrkgaOptions BrkgaOptions::Parse(YamlMap& options, const BrkgaOptions& defaults) {
  BrkgaOptions out;
  out.population = static_cast<int32_t>(GetInt(options, "population", defaults.population, 2, 1 << 20));
  out.elite_fraction = GetDouble(options, "elite_fraction", defaults.elite_fraction, 1e-9, 0.999);
  out.mutant_fraction = GetDouble(options, "mutant_fraction", defaults.mutant_fraction, 0.0, 0.999);
  if (out.elite_fraction + out.mutant_fraction >= 1.0) {
    options.Fail("mutant_fraction",
                 "elite_fraction + mutant_fraction must be below 1 to leave room for offspring");
  }
  out.elite_bias = GetDouble(options, "elite_bias", defaults.elite_bias, 0.5, 0.999999);
  out.evaluations = GetInt(options, "evaluations", defaults.evaluations, 1, int64_t{1} << 40);
  out.priority_genes = options.Get<bool>("priority_genes", defaults.priority_genes);
  out.transfer_genes = options.Get<bool>("transfer_genes", defaults.transfer_genes);
  out.threads = static_cast<int32_t>(GetInt(options, "threads", defaults.threads, 0, 4096));
  options.Finish();
  return out;
}

int32_t BrkgaOptions::num_elites() const {
  return std::clamp(static_cast<int32_t>(std::lround(elite_fraction * population)), 1, population - 1);
}

int32_t BrkgaOptions::num_mutants() const {
  const int32_t room = population - num_elites();
  return std::clamp(static_cast<int32_t>(std::lround(mutant_fraction * population)), 0, room);
}

ChromosomeLayout LayoutFor(const Problem& problem, const BrkgaOptions& options) {
  return ChromosomeLayout(problem.graph.num_nodes(), problem.graph.num_tensors(),
                          problem.cluster.num_devices(), options.priority_genes, options.transfer_genes,
                          std::make_shared<const ColocationUnits>(problem.evaluator));
}

namespace {

// Offspring of `elite` and `other`: gene from the elite when a 32-bit
// uniform draw falls below rho. Two genes per 64-bit draw.
void Crossover(const double* elite, const double* other, double* child, size_t size, double rho, Rng& rng) {
  const uint64_t threshold = static_cast<uint64_t>(std::ldexp(rho, 32));
  size_t g = 0;
  for (; g + 1 < size; g += 2) {
    const uint64_t r = rng.Next();
    child[g] = (r & 0xffffffffULL) < threshold ? elite[g] : other[g];
    child[g + 1] = (r >> 32) < threshold ? elite[g + 1] : other[g + 1];
  }
  if (g < size) child[g] = (rng.Next() & 0xffffffffULL) < threshold ? elite[g] : other[g];
}

}  // namespace

AgentResult RunBrkga(const Problem& problem, const BrkgaOptions& options, const GeneSampler& sampler,
                     const ProgressFn& progress, std::span<const std::vector<double>> initial) {
  SearchTracker tracker(problem, progress, options.evaluations);
  const ChromosomeLayout layout = LayoutFor(problem, options);
  const size_t length = layout.size();
  const int32_t population = options.population;
  const int32_t elites = options.num_elites();
  const int32_t mutants = options.num_mutants();
  const int32_t offspring = population - elites - mutants;

  std::vector<double> genes(static_cast<size_t>(population) * length);
  std::vector<double> next(genes.size());
  std::vector<double> score(static_cast<size_t>(population), 0.0);
  std::vector<double> next_score(score.size(), 0.0);
  std::vector<int32_t> rank(static_cast<size_t>(population));
  std::vector<sim::Decision> decisions(static_cast<size_t>(population));
  std::vector<sim::Evaluation> evaluations(static_cast<size_t>(population));

  tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
  // Builds individuals [first, first + count) of generation `generation`
  // into `pool`, decodes and evaluates them in parallel, then records them
  // in index order. `make` fills one chromosome from its own generator.
  auto produce = [&](std::vector<double>& pool, std::vector<double>& pool_score, uint64_t generation,
                     int32_t first, int32_t count, auto make) {
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<int32_t>(first, first + count),
                        [&](const tbb::blocked_range<int32_t>& r) {
                          for (int32_t i = r.begin(); i != r.end(); ++i) {
                            Rng rng = Rng::Derive(problem.seed, {generation, static_cast<uint64_t>(i)});
                            double* chromosome = pool.data() + static_cast<size_t>(i) * length;
                            make(i, rng, chromosome);
                            layout.Decode({chromosome, length}, &decisions[static_cast<size_t>(i)]);
                            evaluations[static_cast<size_t>(i)] =
                                problem.evaluator.Evaluate(decisions[static_cast<size_t>(i)]);
                          }
                        });
    });
    for (int32_t i = first; i < first + count; ++i) {
      tracker.Record(decisions[static_cast<size_t>(i)], evaluations[static_cast<size_t>(i)]);
      pool_score[static_cast<size_t>(i)] = tracker.Score(evaluations[static_cast<size_t>(i)]);
    }
  };
  for (const std::vector<double>& chromosome : initial) {
    if (chromosome.size() != length) {
      throw std::invalid_argument("BRKGA warm start: a chromosome has " + std::to_string(chromosome.size()) +
                                  " genes, the layout " + std::to_string(length));
    }
  }
  auto fresh = [&](int32_t i, Rng& rng, double* chromosome) {
    if (static_cast<size_t>(i) < initial.size()) {
      std::copy(initial[static_cast<size_t>(i)].begin(), initial[static_cast<size_t>(i)].end(), chromosome);
    } else {
      sampler.Sample(rng, {chromosome, length});
    }
  };

  const int64_t reserve = !options.rescue_owner.empty() ? RescueReserve(tracker.budget_evaluations()) : 0;
  // Generation 0: the whole population is sampled.
  int32_t alive = static_cast<int32_t>(std::min<int64_t>(population, tracker.Remaining() - reserve));
  produce(genes, score, 0, 0, alive, fresh);
  uint64_t generation = 0;
  while (!tracker.Done() && alive == population) {
    ++generation;
    std::iota(rank.begin(), rank.end(), 0);
    std::stable_sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
      return score[static_cast<size_t>(a)] < score[static_cast<size_t>(b)];
    });
    for (int32_t e = 0; e < elites; ++e) {
      const size_t from = static_cast<size_t>(rank[static_cast<size_t>(e)]);
      std::copy_n(genes.begin() + static_cast<std::ptrdiff_t>(from * length), length,
                  next.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(e) * length));
      next_score[static_cast<size_t>(e)] = score[from];
    }
    const int64_t keep = !options.rescue_owner.empty() && !tracker.best_evaluation().feasible ? reserve : 0;
    const int32_t count = static_cast<int32_t>(
        std::max<int64_t>(0, std::min<int64_t>(population - elites, tracker.Remaining() - keep)));
    if (keep > 0 && count < population - elites) break;  // the rest is the rescue's
    auto child = [&](int32_t i, Rng& rng, double* chromosome) {
      if (i >= elites + offspring) {
        sampler.Sample(rng, {chromosome, length});
        return;
      }
      const int32_t a = rank[rng.UniformInt(static_cast<uint64_t>(elites))];
      const int32_t b =
          rank[static_cast<size_t>(elites) + rng.UniformInt(static_cast<uint64_t>(population - elites))];
      Crossover(genes.data() + static_cast<size_t>(a) * length,
                genes.data() + static_cast<size_t>(b) * length, chromosome, length, options.elite_bias, rng);
    };
    produce(next, next_score, generation, elites, count, child);
    alive = elites + count;
    genes.swap(next);
    score.swap(next_score);
  }
  std::map<std::string, double> extra = {{"generations", static_cast<double>(generation + 1)},
                                         {"chromosome_length", static_cast<double>(length)}};
  if (!options.rescue_owner.empty()) {
    extra["evaluations_before_rescue"] = static_cast<double>(tracker.evaluations());
    extra["rescued"] =
        !tracker.best_evaluation().feasible && RescueInfeasible(options.rescue_owner, tracker) ? 1.0 : 0.0;
  }
  return tracker.Finish(std::move(extra));
}

}  // namespace gosim::agents::brkga
