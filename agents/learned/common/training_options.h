// The simulator options of the evaluators a learned agent builds for its
// own training graphs (pre-training suites), which the problem's Evaluator
// does not cover: max-load is computed when it is the objective.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_TRAINING_OPTIONS_H_
#define GOSIM_AGENTS_LEARNED_COMMON_TRAINING_OPTIONS_H_

#include "agents/agent.h"
#include "sim/options.h"

namespace gosim::agents::learned {

inline sim::SimOptions TrainingSimOptions(ObjectiveKind objective) {
  sim::SimOptions options;
  options.max_load = objective == ObjectiveKind::kMaxLoad;
  return options;
}

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_TRAINING_OPTIONS_H_
