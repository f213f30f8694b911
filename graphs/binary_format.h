// gosim's compact binary graph format (*.gosimgraph, optionally .gz), beside
// the native JSON of graphs/json_format.h: the same content (every node
// attribute, data and control edges, in the same order) in a layout that
// loads with about a quarter of the CPU time: 0.25 s for the 92.8k-node GNMT
// of configs/suites/xl.yaml, against 1.05 s as JSON (docs/BENCHMARKS.md). Layout in
// docs/FORMATS.md, "Graph: binary".
//
// The reader checks the magic bytes, the version, the payload length and
// its CRC-32, then every count and index against the bytes left; a
// truncated or corrupt file is one GraphError (file, byte offset, what,
// how to fix), never a crash. The graph itself is validated as every loaded
// graph is (graphs/graph_builder.h: names, sizes, cycles).
#ifndef GOSIM_GRAPHS_BINARY_FORMAT_H_
#define GOSIM_GRAPHS_BINARY_FORMAT_H_

#include <string>
#include <string_view>

#include "graphs/graph.h"

namespace gosim::graphs {

// The first 8 bytes of every binary graph, and the version written. Version 2
// adds a flags byte per output (bit 0: TensorInfo::alias); version-1 files
// are read as before (no aliases).
inline constexpr std::string_view kBinaryGraphMagic = "GOSIMGRB";
inline constexpr uint32_t kBinaryGraphVersion = 2;

// Whether `data` starts with kBinaryGraphMagic.
bool IsBinaryGraph(std::string_view data);

// `source` names the input in errors.
Graph ReadGraphBinary(std::string_view data, const std::string& source);
// `version` 1 is for readers older than aliases (a graph with an alias is a
// GraphError then).
std::string WriteGraphBinary(const Graph& graph, uint32_t version = kBinaryGraphVersion);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_BINARY_FORMAT_H_
