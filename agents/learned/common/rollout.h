// Batched rollouts for the learned agents: the policy runs once on the
// calling thread (torch inference stays outside the parallel loop); the
// per-sample decoding of its outputs into decisions runs in parallel
// (oneTBB), then the decisions are evaluated together through the
// simulator's batched interface (sim::Evaluator::EvaluateBatch).
//
// Determinism: sample i decodes with Rng::Derive(seed, {step, i}) only, and
// results are stored by index, so they do not depend on the thread count.
// No torch here.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_ROLLOUT_H_
#define GOSIM_AGENTS_LEARNED_COMMON_ROLLOUT_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "agents/agent.h"
#include "core/rng.h"
#include "sim/decision.h"
#include "sim/evaluator.h"

namespace gosim::agents::learned {

// Fills `out` with sample `index`'s decision, drawing only from `rng`.
// Called concurrently for different indices: must not touch torch or shared
// mutable state.
using DecodeFn = std::function<void(int32_t index, Rng& rng, sim::Decision* out)>;

struct RolloutBatch {
  std::vector<sim::Decision> decisions;
  std::vector<sim::Evaluation> evaluations;
  std::vector<double> scores;  // objective.Score of each evaluation (lower is better)
};

// Decodes `count` samples in parallel, keeps each one's colocation groups on
// one device (agents/colocation.h; decisions with fusion groups are left as
// they are) and evaluates them in one batch.
// `batch` is reused between calls (its decisions keep their storage).
void RunRollouts(const sim::Evaluator& evaluator, const Objective& objective, int32_t count, uint64_t seed,
                 uint64_t step, const DecodeFn& decode, RolloutBatch* batch);

// Runs `count` independent jobs job(i) in parallel (oneTBB) and returns
// their results by index; used by trainers whose "rollout" is a whole search
// (REGAL's BRKGA runs). Jobs must not touch torch. Under `mpirun` (a batch
// exchange, sim/batch_exchange.h) job i runs on process i % size and every
// process gets every job's best_objective, best_evaluation, evaluations and
// wall_seconds; `best`, `curve` and `extra` are filled only for the jobs this
// process ran. Evaluator batches inside a job stay in its process.
std::vector<AgentResult> RunParallel(int32_t count, const std::function<AgentResult(int32_t index)>& job);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_ROLLOUT_H_
