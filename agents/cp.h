// cp: an exact time-indexed model of joint placement and scheduling that
// minimizes peak memory, for small graphs, solved with COIN-OR CBC under a
// time limit. REGAL (Paliwal et al. 2020, Sec. 5, Table 1) used CP-SAT for
// this baseline; we use a MIP (docs/DEVIATIONS.md).
//
// The model (steps t = 0 .. T-1, T = number of ops by default):
//   x[i,d,t] in {0,1}   op i runs on device d at step t (each op exactly
//                       once, at most one op per device and step, within
//                       its ASAP/ALAP window);
//   precedence          step(j) >= step(i) + 1 for every edge i -> j;
//                       no empty step before a busy one (symmetry);
//   L[k,d,t] in [0,1]   tensor k (an output of op i) is resident on d at t:
//                       L >= x[i,d,t] (allocated while i runs) and, for each
//                       consumer j of k, L >= started(i, t-1) + runs_on(j, d,
//                       at or after t) - 1 (kept on i's device, or held as a
//                       received copy on j's device, until j has run);
//   M >= persistent(d) + sum_k bytes(k) L[k,d,t]   for every d, t, and the
//                       same sum <= capacity(d);  minimize M (bytes).
// The decision: the model's placement, priorities ordering ops by step,
// re-evaluated in the simulator. The model is synchronous (common steps,
// transfers take no step, devices may idle); the simulator never idles a
// device with a ready op, so on several devices the simulated peak can exceed
// the model's (docs/DEVIATIONS.md). On one device they agree.
#ifndef GOSIM_AGENTS_CP_H_
#define GOSIM_AGENTS_CP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graphs/graph.h"
#include "sim/cluster.h"

namespace gosim::agents {

struct CpOptions {
  double time_limit = 60.0;       // seconds of branch and bound
  int32_t max_nodes = 40;         // larger graphs are refused (ConfigError)
  int32_t steps = 0;              // T; 0 = number of ops
  bool symmetry_breaking = true;  // op 0 on device 0 when all capacities are equal
};

struct CpSolution {
  bool found = false;       // a feasible solution exists in the model
  bool optimal = false;     // proven optimal
  bool infeasible = false;  // proven infeasible (does not fit in memory)
  double objective = 0.0;   // bytes, the model's peak memory of the solution
  double bound = 0.0;       // bytes, CBC's lower bound on the optimum
  double gap = 0.0;         // (objective - bound) / objective; 0 when optimal
  double seconds = 0.0;     // solver wall time
  std::vector<int32_t> placement;
  std::vector<int32_t> step;  // per op
  int32_t num_variables = 0;
  int32_t num_constraints = 0;
};

// Builds and solves the model. ConfigError when the graph has more than
// options.max_nodes ops.
CpSolution SolvePeakMemoryModel(const graphs::Graph& graph, const sim::Cluster& cluster,
                                const CpOptions& options);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_CP_H_
