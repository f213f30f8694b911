// A biased random-key genetic algorithm (BRKGA; Gonçalves and Resende,
// "Biased random-key genetic algorithms for combinatorial optimization",
// J. Heuristics 2011) over REGAL's chromosome (chromosome.h), evaluated in
// the simulator. Our own engine; no library is vendored.
//
// Each generation keeps the `elite_fraction` best individuals, adds
// `mutant_fraction` fresh chromosomes from the GeneSampler, and fills the
// rest with offspring of one random elite and one random non-elite parent,
// each gene taken from the elite with probability `elite_bias` (rho).
// Elites are not re-evaluated; every new individual costs one simulator
// evaluation. The search stops when the budget (SearchTracker) is spent; a
// last generation may be partial.
//
// Determinism: individual i of generation g draws only from
// Rng::Derive(seed, {g, i}); decoding and evaluation run in parallel (oneTBB)
// but results are ranked by (objective, index) and recorded in index order,
// so the outcome does not depend on the number of threads.
#ifndef GOSIM_AGENTS_BRKGA_BRKGA_H_
#define GOSIM_AGENTS_BRKGA_BRKGA_H_

#include <cstdint>
#include <span>
#include <vector>

#include "agents/agent.h"
#include "agents/brkga/chromosome.h"
#include "agents/brkga/sampler.h"
#include "core/yaml.h"

namespace gosim::agents::brkga {

struct BrkgaOptions {
  int32_t population = 100;
  double elite_fraction = 0.2;   // (0, 1): elites kept per generation
  double mutant_fraction = 0.2;  // [0, 1): fresh chromosomes per generation
  double elite_bias = 0.7;       // rho in [0.5, 1): offspring gene from the elite parent
  int64_t evaluations = 5000;    // used when the problem's budget sets no evaluation count
  bool priority_genes = true;    // search op priorities (else FIFO scheduling)
  bool transfer_genes = true;    // search transfer priorities (else FIFO transfers)
  int32_t threads = 0;           // worker threads; 0 = oneTBB's default
  // Not an option of the brkga agent: REGAL sets it to its name
  // (agents/warm_start.h, RescueInfeasible). Non-empty: without a feasible
  // decision, the generations stop with RescueReserve(budget) evaluations
  // left, which RescueInfeasible spends.
  std::string rescue_owner;

  // Reads every key (defaults from `defaults`) and checks ranges; calls
  // options.Finish(). ConfigError on a bad value.
  static BrkgaOptions Parse(YamlMap& options, const BrkgaOptions& defaults);
  // Elites and mutants per generation (at least 1 elite; elites + mutants
  // leave at least one offspring when the population allows it).
  int32_t num_elites() const;
  int32_t num_mutants() const;
};

// Runs BRKGA on `problem`, fresh chromosomes drawn from `sampler`.
// `initial` chromosomes (each of LayoutFor(...).size() genes; at most the
// population) take the first places of generation 0 instead of sampled
// ones: a warm start. AgentResult::extra holds "generations" (and, with
// a rescue_owner, "rescued" and "evaluations_before_rescue").
AgentResult RunBrkga(const Problem& problem, const BrkgaOptions& options, const GeneSampler& sampler,
                     const ProgressFn& progress = {}, std::span<const std::vector<double>> initial = {});

// The layout RunBrkga uses for `problem` (so a learned sampler can size its
// Beta parameters).
ChromosomeLayout LayoutFor(const Problem& problem, const BrkgaOptions& options);

}  // namespace gosim::agents::brkga

#endif  // GOSIM_AGENTS_BRKGA_BRKGA_H_
