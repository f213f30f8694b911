#include "graphs/stats.h"

#include <algorithm>
#include <vector>

namespace gosim::graphs {

GraphStats ComputeStats(const Graph& graph) {
  GraphStats s;
  s.name = graph.name();
  s.nodes = graph.num_nodes();
  s.edges = graph.num_edges();
  for (const Edge& e : graph.edges()) s.control_edges += e.is_control() ? 1 : 0;
  const int32_t variable_op = graph.FindOpType("Variable");
  std::vector<int64_t> op_counts(graph.op_types().size(), 0);
  // Node ids are a topological order, so one pass gives every level.
  std::vector<int64_t> level(static_cast<size_t>(graph.num_nodes()), 1);
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    const Node& node = graph.node(n);
    s.flops += node.flops;
    s.persistent_bytes += node.persistent_bytes;
    (node.phase == Phase::kUpdate ? s.optimizer_bytes : s.weight_bytes) += node.persistent_bytes;
    ++op_counts[static_cast<size_t>(node.op)];
    switch (node.phase) {
      case Phase::kForward:
        ++s.forward_nodes;
        if (node.op != variable_op) {
          for (const TensorInfo& t : node.outputs) s.activation_bytes += t.bytes;
        }
        break;
      case Phase::kBackward:
        ++s.backward_nodes;
        break;
      case Phase::kUpdate:
        ++s.update_nodes;
        break;
    }
    int64_t l = 1;
    for (EdgeId e : graph.in_edges(n)) l = std::max(l, level[static_cast<size_t>(graph.edge(e).src)] + 1);
    level[static_cast<size_t>(n)] = l;
    s.depth = std::max(s.depth, l);
  }
  std::vector<int64_t> per_level(static_cast<size_t>(s.depth) + 1, 0);
  for (int64_t l : level) s.width = std::max(s.width, ++per_level[static_cast<size_t>(l)]);
  for (size_t op = 0; op < op_counts.size(); ++op) {
    if (op_counts[op] > 0) s.op_histogram[graph.op_type_name(static_cast<int32_t>(op))] = op_counts[op];
  }
  return s;
}

}  // namespace gosim::graphs
