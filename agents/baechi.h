// Baechi's memory-constrained placers (Jeon et al., "Baechi: Fast Device
// Placement of Machine Learning Graphs", SoCC 2020; reference code
// github.com/beomyeol/baechi, placer/m_topo.py, m_etf.py, m_sct.py).
//
//   m_topo  ops in topological order fill device 0, then 1, ... up to a
//           per-device limit of min(capacity, total / devices + largest op)
//           (Baechi's TopoUniform).
//   m_etf   Earliest Task First list scheduling (Hwang et al. 1989): the
//           ready (op, device) pair with the earliest start goes first, ties
//           by topological order; a device is eligible only while the op
//           fits its memory (agents/list_schedule.h).
//   m_sct   Small Communication Time (Hanen and Munier 1995): an LP
//           relaxation (solved with COIN-OR CLP) picks at most one favorite
//           child per op and one favorite parent per op; then ETF where a
//           device whose last op's favorite child is ready, and would start
//           earliest there, waits for that child unless another op is
//           urgent (every device would start it no earlier).
//
// The LP is exposed for tests.
#ifndef GOSIM_AGENTS_BAECHI_H_
#define GOSIM_AGENTS_BAECHI_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agents/static_costs.h"
#include "graphs/graph.h"

namespace gosim::agents {

struct FavoriteChildren {
  std::vector<graphs::NodeId> favorite;  // per node: its favorite child, or -1
  double lp_makespan = 0.0;              // seconds, the LP relaxation's optimum
  bool solved = false;                   // false: LP failed or timed out (no favorites)
  std::string status;                    // CLP's status in words
};

// Solves Baechi's favorite-child LP over the data edges:
//   min w  s.t.  s_j >= s_i + p_i + c_ij x_ij   (edge i -> j),
//                sum_j x_ij >= outdeg(i) - 1,  sum_i x_ij >= indeg(j) - 1,
//                s_i + p_i <= w,  0 <= x <= 1,  s >= 0,
// with p the mean op time and c the mean transfer time; edges with
// x < threshold become favorite edges (conflicts resolved in edge order as
// Baechi does). `time_limit` in seconds (<= 0: none).
FavoriteChildren SolveFavoriteChildren(const graphs::Graph& graph, const StaticCosts& costs,
                                       double threshold = 0.5, double time_limit = 60.0);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_BAECHI_H_
