// Graph partitioning with Scotch and METIS for the partition baselines.
//
// The computation graph is turned into the undirected weighted graph the
// partitioners take: one vertex per op with one or more weights (op time,
// FLOPs, memory footprint), one edge per pair of ops joined by a data or
// control edge, weighted by the bytes that flow between them (control edges
// weigh 1). Weights are scaled to integers (at least 1) whose sums fit the
// libraries' 32-bit indices. Results depend only on the inputs and the seed.
#ifndef GOSIM_AGENTS_PARTITION_H_
#define GOSIM_AGENTS_PARTITION_H_

#include <cstdint>
#include <vector>

#include "agents/colocation.h"
#include "graphs/graph.h"

namespace gosim::agents {

// Undirected CSR graph with integer weights (0-based).
struct PartitionGraph {
  int32_t num_vertices = 0;
  int32_t num_constraints = 1;
  std::vector<int32_t> xadj;    // num_vertices + 1 offsets into adjncy
  std::vector<int32_t> adjncy;  // neighbours, each undirected edge twice
  std::vector<int32_t> adjwgt;  // edge weights (>= 1), parallel to adjncy
  std::vector<int32_t> vwgt;    // num_vertices * num_constraints weights (>= 1)
};

// Builds the partition graph. `vertex_weights` holds one vector of
// num_nodes() doubles per constraint (>= 0); edge weights are the bytes
// between two ops (summed over their edges, both directions). With `units`,
// one vertex per colocation unit (ColocationUnits numbering; weights and
// bytes summed over its members, edges inside a unit dropped): the result
// is a part per unit (expand it with ColocationUnits::Expand). An undirected
// graph, so contracting units cannot create the cycles a DAG would get.
PartitionGraph BuildPartitionGraph(const graphs::Graph& graph,
                                   const std::vector<std::vector<double>>& vertex_weights,
                                   const ColocationUnits* units = nullptr);

// Scotch static mapping (SCOTCH_graphMap) onto a complete architecture graph
// whose vertex weights are `device_speed` (relative compute capacities, > 0):
// ColocRL/HRL's "Scotch" baseline. Uses the first vertex weight only.
// `balance` is Scotch's load imbalance ratio. Throws Error on a Scotch failure.
std::vector<int32_t> ScotchMap(const PartitionGraph& graph, const std::vector<double>& device_speed,
                               double balance, uint64_t seed);
// Scotch k-way graph partitioning (SCOTCH_graphPart): minimal edge cut with
// parts of equal load within `balance`. Uses the first vertex weight only.
std::vector<int32_t> ScotchPartition(const PartitionGraph& graph, int32_t parts, double balance,
                                     uint64_t seed);
// METIS_PartGraphKway: minimal edge cut subject to one balance constraint per
// vertex weight; `target_fractions` holds parts * num_constraints fractions
// (each constraint's column sums to 1); `ufactor` is METIS's allowed
// imbalance in thousandths (30 = 3%).
std::vector<int32_t> MetisKway(const PartitionGraph& graph, int32_t parts,
                               const std::vector<float>& target_fractions, int32_t ufactor, uint64_t seed);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_PARTITION_H_
