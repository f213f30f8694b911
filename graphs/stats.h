// Summary statistics of a graph, as `gosim graphs stats` prints them.
#ifndef GOSIM_GRAPHS_STATS_H_
#define GOSIM_GRAPHS_STATS_H_

#include <cstdint>
#include <map>
#include <string>

#include "graphs/graph.h"

namespace gosim::graphs {

struct GraphStats {
  std::string name;
  int64_t nodes = 0;
  int64_t edges = 0;  // data and control edges
  int64_t control_edges = 0;
  double flops = 0.0;  // sum over nodes, FLOPs
  // Persistent bytes of forward and backward nodes: weights and moving
  // statistics (batch norm), what a model's "parameters" usually mean.
  int64_t weight_bytes = 0;
  // Persistent bytes of update nodes: optimizer state (momentum, Adam's two
  // moments), 0 for inference graphs.
  int64_t optimizer_bytes = 0;
  // weight_bytes + optimizer_bytes: every byte resident all step.
  int64_t persistent_bytes = 0;
  // Sum of the output bytes of forward-phase nodes, except `Variable` nodes
  // (whose outputs alias their persistent weights).
  int64_t activation_bytes = 0;
  int64_t depth = 0;  // nodes on the longest path (0 for an empty graph)
  int64_t width = 0;  // most nodes at one depth level (level = longest path from a source)
  int64_t forward_nodes = 0;
  int64_t backward_nodes = 0;
  int64_t update_nodes = 0;
  std::map<std::string, int64_t> op_histogram;  // op type -> node count
};

// O(nodes + edges).
GraphStats ComputeStats(const Graph& graph);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_STATS_H_
