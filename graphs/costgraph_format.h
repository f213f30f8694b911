// TensorFlow CostGraphDef text protobuf: the format of the REGAL synthetic
// dataset (docs/FORMATS.md, "Graph: TensorFlow CostGraphDef").
//
// The text holds `node { ... }` entries at top level (a CostGraphDef message)
// or wrapped as `cost_graph { node { ... } }` (the cost_graph field of a
// RunMetadata). Mapping to the gosim graph:
//   input_info {preceding_node, preceding_port} -> data edge from output
//                                                  `preceding_port` of the node
//                                                  whose id is preceding_node
//   control_input                               -> control edge
//   output_info {size, shape, dtype}            -> output tensor (bytes, shape
//                                                  when fully known, dtype)
//   compute_cost (microseconds)                 -> measured time on kind "any"
//   persistent_memory_size                      -> persistent_bytes
//   bytes_read = sum of the sizes of the inputs read, bytes_written = sum of
//   the output sizes, FLOPs unknown (0). Op type: "NoOp" for _SOURCE and
//   _SINK, "CostGraphNode" for every other node (the format has no op types).
// Ignored: device, temporary_memory_size, alias_input_port (proto3 reads an
// absent field as 0, "aliases input 0", so files that omit it, as REGAL's
// do, could not be told from aliases; outputs are never aliases), is_final,
// compute_time, memory_time, inaccurate, the deprecated memory fields and the
// aggregated costs. Empty or repeated node names are made unique: an empty
// name becomes "node_<id>", a repeated one "<name>_<id>" (the first keeps its
// name).
#ifndef GOSIM_GRAPHS_COSTGRAPH_FORMAT_H_
#define GOSIM_GRAPHS_COSTGRAPH_FORMAT_H_

#include <string>
#include <string_view>

#include "graphs/graph.h"

namespace gosim::graphs {

// Parses CostGraphDef text. `source` names the file in errors and becomes
// Graph::source(); `name` is the graph's name ("costgraph" when empty).
// Throws GraphError (with line:column for syntax errors and the node's line
// for semantic ones) on malformed or inconsistent input.
Graph ReadCostGraphText(std::string_view text, const std::string& source = {}, const std::string& name = {});

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_COSTGRAPH_FORMAT_H_
