// ONNX model import (docs/FORMATS.md, "Graph: ONNX").
//
// Each ONNX node of the main graph becomes a gosim node named node.name, or
// "<op_type>_<index>" when empty (a repeated name gets "_<index>" appended).
// Data edges follow value names; graph inputs and initializers are not nodes.
// Shapes come from the model (inputs, outputs, value_info) and ONNX shape
// inference; output bytes = elements * element size; FLOPs follow
// graphs/op_costs.h; bytes_read = bytes of the inputs read (for Gather: the
// indices and the gathered rows), bytes_written = bytes of the outputs. An
// initializer is resident all step: its bytes count as persistent_bytes of
// the first node that reads it. Subgraphs (If, Loop, Scan bodies) are not
// expanded: such nodes are one op each.
#ifndef GOSIM_GRAPHS_ONNX_FORMAT_H_
#define GOSIM_GRAPHS_ONNX_FORMAT_H_

#include <string>
#include <string_view>

#include "graphs/graph.h"

namespace gosim::graphs {

// False when gosim was built without libonnx (then ReadOnnx throws).
bool OnnxSupported();

// Parses a serialized ModelProto. `source` names the file in errors and
// becomes Graph::source(); `name` is the graph's name (the ONNX graph's name,
// else "onnx", when empty). Throws GraphError on malformed input or when
// shape inference fails.
Graph ReadOnnx(std::string_view bytes, const std::string& source = {}, const std::string& name = {});

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_ONNX_FORMAT_H_
