// Memory repair: turns a decision that runs out of device memory into a
// nearby feasible one.
//
// The multi-chip partitioning paper (see ../shared/PAPERS.md) lets an RL
// policy emit possibly invalid partitions that a constraint solver corrects,
// so that valid solutions stay frequent. Here the correction is greedy and
// simulator-checked: while the simulator reports an out-of-memory device,
// move its largest memory consumers (persistent plus output bytes; a
// colocation group moves as one unit) to the device with the lowest
// estimated memory use relative to its capacity, and re-evaluate. Moves start
// one unit at a time and double while the same device stays overfull, so a
// slightly overfull device costs few moves and a badly overfull one few
// evaluations. Priorities and transfer priorities are kept; fusion groups
// that would be split are dissolved. Deterministic.
#ifndef GOSIM_AGENTS_REPAIR_H_
#define GOSIM_AGENTS_REPAIR_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "agents/static_costs.h"
#include "sim/decision.h"
#include "sim/evaluator.h"

namespace gosim::agents {

struct RepairOptions {
  // Simulator evaluations the repair may use (the first one included).
  int64_t max_evaluations = 64;
  // Move colocation groups as one unit.
  bool keep_colocation = true;
};

struct RepairResult {
  sim::Decision decision;
  sim::Evaluation evaluation;  // of `decision`
  bool feasible = false;
  int32_t moved_nodes = 0;
  int64_t evaluations = 0;
};

using EvaluateFn = std::function<sim::Evaluation(const sim::Decision&)>;

// Repairs `decision` (valid for the graph and cluster of `costs`). `evaluate`
// runs the simulator (and may count the budget); `initial`, when given, is
// the evaluation of `decision` and saves one call. Returns the decision
// unchanged when it is feasible already or when no move is possible.
RepairResult RepairMemory(const graphs::Graph& graph, const StaticCosts& costs, sim::Decision decision,
                          const EvaluateFn& evaluate, const RepairOptions& options = {},
                          std::optional<sim::Evaluation> initial = std::nullopt);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_REPAIR_H_
