// Inputs of the HRL and ColocRL policies that do not need LibTorch: the
// per-op features of HRL's grouper, the colocation groups of ColocRL and the
// per-group embeddings both placers read.
//
// HRL (Mirhoseini et al. 2018, Sec. 2): the Grouper reads, per operation,
// its type, its output shapes and its adjacency; the Placer reads, per group,
// "the count of each operation type in the group, the summed output sizes of
// the group's operations and the adjacency of the group to the other groups".
// ColocRL (Mirhoseini et al. 2017, Sec. 3) reads the same three kinds of
// information per colocation group. All values here are normalized per graph
// so that graphs of any size give inputs of order one.
#ifndef GOSIM_AGENTS_LEARNED_HRL_GROUPING_H_
#define GOSIM_AGENTS_LEARNED_HRL_GROUPING_H_

#include <cstdint>
#include <span>
#include <vector>

#include "graphs/graph.h"

namespace gosim::agents::hrl {

// Row-major [rows x cols] matrix of floats.
struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> values;

  float& at(int64_t r, int64_t c) { return values[static_cast<size_t>(r * cols + c)]; }
  float at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

// Per-op numeric features of HRL's grouper (the op type goes separately, to
// a learned embedding): log total output bytes; the first output's shape
// (4 dims, leading dims folded into the first, log scale); the number of
// outputs; log in- and out-degree; the op's topological position; and the
// adjacency as the topological positions (in [0, 1]) of up to
// kAdjacencySlots producers and consumers, -1 where there are fewer. The
// reference code fed neighbour indices; positions are their normalized form.
// Columns other than positions are divided by their maximum over the graph.
inline constexpr int kAdjacencySlots = 3;
inline constexpr int kOpFeatureCount = 9 + 2 * kAdjacencySlots;
Matrix OpFeatures(const graphs::Graph& graph);

// Op type id per node (the graph's interned ids).
std::vector<int64_t> OpTypes(const graphs::Graph& graph);

// ColocRL's groups (ColocRL Sec. 3), capped at `max_groups` consecutive
// runs: agents::ColocationRuns (agents/colocation.h), which the network-free
// control `local_search` with `units: runs` moves too.
std::vector<int32_t> ColocationGroups(const graphs::Graph& graph, int32_t max_groups, int32_t* count);

// Width of a group embedding: op-type counts, summed output size, and the
// group's row of the group-to-group adjacency matrix.
inline int64_t GroupEmbeddingWidth(const graphs::Graph& graph, int32_t num_groups) {
  return static_cast<int64_t>(graph.op_types().size()) + 1 + num_groups;
}

// Writes the embeddings of `num_groups` groups (group id per node in
// `group_of`) into `out`, row-major [num_groups x GroupEmbeddingWidth]:
// log(1 + count of each op type) / log(1 + nodes); log(1 + summed output
// bytes) / log(1 + all output bytes); log(1 + data edges from the group to
// each other group) / log(1 + edges). Empty groups get all zeros.
void GroupEmbeddings(const graphs::Graph& graph, std::span<const int32_t> group_of, int32_t num_groups,
                     std::span<float> out);

}  // namespace gosim::agents::hrl

#endif  // GOSIM_AGENTS_LEARNED_HRL_GROUPING_H_
