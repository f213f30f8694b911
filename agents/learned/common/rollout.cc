#include "agents/learned/common/rollout.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "agents/colocation.h"
#include "sim/batch_exchange.h"

namespace gosim::agents::learned {

void RunRollouts(const sim::Evaluator& evaluator, const Objective& objective, int32_t count, uint64_t seed,
                 uint64_t step, const DecodeFn& decode, RolloutBatch* batch) {
  batch->decisions.resize(static_cast<size_t>(count));
  batch->evaluations.resize(static_cast<size_t>(count));
  batch->scores.resize(static_cast<size_t>(count));
  const ColocationUnits units(evaluator);
  tbb::parallel_for(tbb::blocked_range<int32_t>(0, count), [&](const tbb::blocked_range<int32_t>& r) {
    for (int32_t i = r.begin(); i != r.end(); ++i) {
      Rng rng = Rng::Derive(seed, {step, static_cast<uint64_t>(i)});
      sim::Decision& d = batch->decisions[static_cast<size_t>(i)];
      decode(i, rng, &d);
      // The environment keeps colocation groups together: a policy that
      // splits one is scored on the decision the simulator accepts.
      if (d.placement.size() == static_cast<size_t>(units.num_nodes()) && !d.has_fusion())
        units.KeepTogether(d.placement);
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
  const sim::BatchExchange* exchange = sim::ActiveBatchExchange();
  // The jobs are whole searches: their own batches stay in this process.
  const sim::LocalBatches local;
  if (exchange == nullptr) {
    tbb::parallel_for(tbb::blocked_range<int32_t>(0, count), [&](const tbb::blocked_range<int32_t>& r) {
      for (int32_t i = r.begin(); i != r.end(); ++i) results[static_cast<size_t>(i)] = job(i);
    });
    return results;
  }
  // Processes in lockstep: this one runs its share of the jobs, then every
  // process gets every job's figures.
  struct Figures {
    double best_objective;
    sim::Evaluation best_evaluation;
    int64_t evaluations;
    double wall_seconds;
  };
  static_assert(std::is_trivially_copyable_v<Figures>);
  const std::vector<size_t> owned = sim::OwnedIndices(*exchange, static_cast<size_t>(count));
  tbb::parallel_for(tbb::blocked_range<size_t>(0, owned.size()), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t k = r.begin(); k != r.end(); ++k) results[owned[k]] = job(static_cast<int32_t>(owned[k]));
  });
  std::string mine;
  for (size_t i : owned) {
    const AgentResult& a = results[i];
    const Figures f{a.best_objective, a.best_evaluation, a.evaluations, a.wall_seconds};
    mine.append(reinterpret_cast<const char*>(&f), sizeof(f));
  }
  const std::string all = sim::GatherByIndex(*exchange, mine, static_cast<size_t>(count), sizeof(Figures));
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
    Figures f;
    std::memcpy(&f, all.data() + i * sizeof(Figures), sizeof(Figures));
    results[i].best_objective = f.best_objective;
    results[i].best_evaluation = f.best_evaluation;
    results[i].evaluations = f.evaluations;
    results[i].wall_seconds = f.wall_seconds;
  }
  return results;
}

}  // namespace gosim::agents::learned
