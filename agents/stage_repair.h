// Stage repair: the constraint solver of the multi-chip partitioner
// (docs/AGENTS.md, "mcm"; ../shared/PAPERS.md, "Multi-chip partitioning with
// RL + constraint solver": a policy emits a possibly invalid partition and a
// solver corrects it, so that valid partitions stay frequent enough to learn
// from).
//
// Given units (colocation groups, or single nodes) with memory footprints,
// the data edges between them, K stages with a memory capacity each, and a
// proposed stage per unit, find the feasible assignment nearest to the
// proposal:
//   memory     the footprints of a stage's units fit its capacity;
//   order      with `acyclic`, no edge goes from a later stage to an earlier
//              one (stage(u) <= stage(v) for every edge u -> v), so stages
//              form a pipeline whose data flow only forward;
//   distance   minimize sum_u weight(u) * |stage(u) - proposal(u)| (with
//              `acyclic`; stages are ordered) or the weight of the units
//              moved (without).
// With `acyclic` the model is written in cumulative binaries
//   y[u][c] = 1 iff stage(u) >= c  (c = 1 .. K-1),  y[u][c] >= y[u][c+1],
// in which an edge is K-1 difference rows y[u][c] <= y[v][c], the distance
// is linear (y's target is the proposal's step function) and unit u sits on
// stage c when y[u][c] - y[u][c+1] = 1 (y[u][0] = 1, y[u][K] = 0): memory
// rows sum_u bytes(u) (y[u][c] - y[u][c+1]) <= capacity(c). Without it,
// x[u][c] assignment binaries. Solved with COIN-OR CBC under a time limit
// (the paper's solver is a constraint solver too; docs/DEVIATIONS.md),
// started from a greedy feasible assignment when one is found, so a call
// that runs out of time still returns a feasible partition.
// A proposal that is feasible already is returned without calling CBC.
#ifndef GOSIM_AGENTS_STAGE_REPAIR_H_
#define GOSIM_AGENTS_STAGE_REPAIR_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace gosim::agents {

struct StageProblem {
  int32_t num_units = 0;
  int32_t num_stages = 0;
  std::vector<double> unit_bytes;                  // [unit] memory footprint, bytes
  std::vector<double> unit_weight;                 // [unit] weight of moving it (e.g. its node count)
  std::vector<double> stage_capacity;              // [stage] bytes
  std::vector<std::pair<int32_t, int32_t>> edges;  // unit u -> unit v, u != v, no duplicates
  bool acyclic = true;
  // Units in a topological order of `edges` (empty: index order), for the
  // greedy first incumbent: each unit on the earliest stage after its
  // predecessors' where it fits. CBC starts from it when it is feasible.
  std::vector<int32_t> order;
};

struct StageRepairOptions {
  double time_limit = 10.0;  // seconds of branch and bound per call
};

struct StageRepairResult {
  std::vector<int32_t> stage;  // [unit]: the repaired assignment (the proposal when none was found)
  bool found = false;          // a feasible assignment is in `stage`
  bool optimal = false;        // proven nearest
  bool proposal_feasible = false;
  bool solver_called = false;
  double distance = 0.0;  // of `stage` from the proposal, in the model's measure
  double seconds = 0.0;   // solver wall time
};

// Whether `stage` meets the memory and order constraints of `problem`.
bool StagesFeasible(const StageProblem& problem, std::span<const int32_t> stage);

// The distance of `stage` from `proposal` in the problem's measure.
double StageDistance(const StageProblem& problem, std::span<const int32_t> stage,
                     std::span<const int32_t> proposal);

// The nearest feasible assignment to `proposal` (stages in [0, K)).
// DecisionError when the sizes disagree or a stage is out of range.
StageRepairResult RepairStages(const StageProblem& problem, std::span<const int32_t> proposal,
                               const StageRepairOptions& options = {});

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_STAGE_REPAIR_H_
