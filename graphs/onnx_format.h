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
//
// Symbolic dimensions (an exporter's dynamic batch, `dim_param: "batch"`)
// are bound by OnnxShapes before shape inference: by name (every dimension
// of that name in the model), or by giving a graph input its whole shape.
// A graph input left with a dimension of unknown size is an error (its FLOPs
// and bytes would silently count as 0); nodes whose output shapes stay
// unknown after inference (custom domains, data-dependent shapes) are named
// in one warning line.
#ifndef GOSIM_GRAPHS_ONNX_FORMAT_H_
#define GOSIM_GRAPHS_ONNX_FORMAT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graphs/graph.h"

namespace gosim::graphs {

// False when gosim was built without libonnx (then ReadOnnx throws).
bool OnnxSupported();

// Sizes for an ONNX model's symbolic dimensions (`--dim NAME=N`,
// `--input-shape INPUT=AxBxC`, a suite entry's `dims` / `input_shapes`).
struct OnnxShapes {
  std::map<std::string, int64_t> dims;                       // dim_param name -> size (> 0)
  std::map<std::string, std::vector<int64_t>> input_shapes;  // graph input -> its whole shape
  bool empty() const { return dims.empty() && input_shapes.empty(); }
};

// Parses a serialized ModelProto. `source` names the file in errors and
// becomes Graph::source(); `name` is the graph's name (the ONNX graph's name,
// else "onnx", when empty). Throws GraphError on malformed input, when shape
// inference fails, when `shapes` names a dimension or input the model does
// not have or contradicts a fixed size, and when a graph input keeps a
// dimension of unknown size.
Graph ReadOnnx(std::string_view bytes, const std::string& source = {}, const std::string& name = {},
               const OnnxShapes& shapes = {});

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_ONNX_FORMAT_H_
