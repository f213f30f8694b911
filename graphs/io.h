// Reading and writing graph files, whatever their format.
//
// LoadGraph picks the reader from the file name:
//   *.json, *.json.gz              gosim's native JSON (graphs/json_format.h)
//   *.pbtxt, *.costgraph, *.txt    TensorFlow CostGraphDef text protobuf, the
//   (optionally .gz)               format of the REGAL synthetic dataset
//   *.onnx                         ONNX model (graphs/onnx_format.h)
//   *.gosimgraph, *.gosimgraph.gz  gosim's binary format (graphs/binary_format.h),
//                                  the fastest to load
// Every reader throws GraphError (file, line/byte offset, what, how to fix)
// on malformed, truncated or inconsistent input; never crashes or hangs.
#ifndef GOSIM_GRAPHS_IO_H_
#define GOSIM_GRAPHS_IO_H_

#include <string>

#include "graphs/graph.h"
#include "graphs/onnx_format.h"

namespace gosim::graphs {

enum class GraphFormat { kJson, kCostGraph, kOnnx, kBinary };

// The format implied by `path`'s extension; GraphError for unknown ones.
GraphFormat FormatFromPath(const std::string& path);

// Reads a graph file; a file without nodes is a GraphError.
// `shapes` binds an ONNX model's symbolic dimensions (graphs/onnx_format.h);
// given for another format it is an error, not ignored.
Graph LoadGraph(const std::string& path, const OnnxShapes& shapes = {});
// Writes native JSON, or the binary format for *.gosimgraph; gzip'd when
// `path` ends in ".gz"; atomic.
void SaveGraph(const Graph& graph, const std::string& path);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_IO_H_
