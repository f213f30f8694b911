#include "agents/learned/common/rollout.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace gosim::agents::learned {

void RunRollouts(const sim::Evaluator& evaluator, const Objective& objective, int32_t count, uint64_t seed,
                 uint64_t step, const DecodeFn& decode, RolloutBatch* batch) {
  batch->decisions.resize(static_cast<size_t>(count));
  batch->evaluations.resize(static_cast<size_t>(count));
  batch->scores.resize(static_cast<size_t>(count));
  tbb::parallel_for(tbb::blocked_range<int32_t>(0, count), [&](const tbb::blocked_range<int32_t>& r) {
    for (int32_t i = r.begin(); i != r.end(); ++i) {
      Rng rng = Rng::Derive(seed, {step, static_cast<uint64_t>(i)});
      decode(i, rng, &batch->decisions[static_cast<size_t>(i)]);
    }
  });
  evaluator.EvaluateBatch(batch->decisions, batch->evaluations);
  for (int32_t i = 0; i < count; ++i) {
    batch->scores[static_cast<size_t>(i)] =
        objective.Score(batch->evaluations[static_cast<size_t>(i)], evaluator.cluster());
  }
}

std::vector<AgentResult> RunParallel(int32_t count, const std::function<AgentResult(int32_t index)>& job) {
  std::vector<AgentResult> results(static_cast<size_t>(count));
  tbb::parallel_for(tbb::blocked_range<int32_t>(0, count), [&](const tbb::blocked_range<int32_t>& r) {
    for (int32_t i = r.begin(); i != r.end(); ++i) results[static_cast<size_t>(i)] = job(i);
  });
  return results;
}

}  // namespace gosim::agents::learned
