#include "graphs/io.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "graphs/binary_format.h"
#include "graphs/costgraph_format.h"
#include "graphs/json_format.h"
#include "graphs/onnx_format.h"

namespace gosim::graphs {
namespace {

std::string WithoutGz(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (EndsWith(lower, ".gz")) lower.resize(lower.size() - 3);
  return lower;
}

// "dir/graph_abc.pbtxt.gz" -> "graph_abc".
std::string GraphNameFromPath(const std::string& path) {
  std::string file = std::filesystem::path(path).filename().string();
  if (EndsWith(file, ".gz")) file.resize(file.size() - 3);
  const size_t dot = file.rfind('.');
  if (dot != std::string::npos && dot > 0) file.resize(dot);
  return file;
}

}  // namespace

GraphFormat FormatFromPath(const std::string& path) {
  const std::string p = WithoutGz(path);
  if (EndsWith(p, ".json")) return GraphFormat::kJson;
  if (EndsWith(p, ".pbtxt") || EndsWith(p, ".costgraph") || EndsWith(p, ".txt"))
    return GraphFormat::kCostGraph;
  if (EndsWith(p, ".onnx")) return GraphFormat::kOnnx;
  if (EndsWith(p, ".gosimgraph")) return GraphFormat::kBinary;
  throw GraphError(
      "unknown graph file type", Location(path),
      "graph files end in .json, .gosimgraph, .pbtxt, .costgraph or .txt (each optionally .gz), or "
      ".onnx");
}

Graph LoadGraph(const std::string& path, const OnnxShapes& shapes) {
  const GraphFormat format = FormatFromPath(path);
  if (format != GraphFormat::kOnnx && !shapes.empty()) {
    throw GraphError("dimension sizes (--dim, --input-shape, dims, input_shapes) apply only to ONNX models",
                     Location(path), "drop them for this graph file");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw IoError("is a folder, not a graph file", Location(path), "give the path of a graph file");
  }
  const std::string data = ReadFile(path);
  Graph graph = [&] {
    switch (format) {
      case GraphFormat::kJson:
        return ReadGraphJson(data, path);
      case GraphFormat::kCostGraph:
        return ReadCostGraphText(data, path, GraphNameFromPath(path));
      case GraphFormat::kOnnx:
        return ReadOnnx(data, path, GraphNameFromPath(path), shapes);
      case GraphFormat::kBinary:
        return ReadGraphBinary(data, path);
    }
    throw GraphError("unknown graph format", Location(path));
  }();
  // An empty graph would simulate to a step time of 0 and let every agent
  // "optimize" it; it is almost always a wrong or truncated file.
  if (graph.num_nodes() == 0) {
    throw GraphError(
        "the graph has no nodes", Location(path),
        "the file is empty or truncated, or its nodes are missing; a graph needs at least one node");
  }
  return graph;
}

void SaveGraph(const Graph& graph, const std::string& path) {
  const GraphFormat format = FormatFromPath(path);
  if (format == GraphFormat::kBinary) {
    WriteFileAtomic(path, WriteGraphBinary(graph));
    return;
  }
  if (format != GraphFormat::kJson) {
    throw GraphError("gosim writes graphs only as native JSON or its binary format", Location(path),
                     "give a path ending in .json or .gosimgraph (optionally .gz)");
  }
  WriteFileAtomic(path, WriteGraphJson(graph));
}

}  // namespace gosim::graphs
