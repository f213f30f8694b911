#include "agents/learned/common/features.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>

#include "graphs/op_class.h"

namespace gosim::agents::learned {

namespace {

// Columns standardized per graph (magnitudes); the others are already in [0, 1].
constexpr int kStandardized[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15};

float Log1p(double x) {
  return static_cast<float>(std::log1p(std::max(0.0, x)));
}

// FNV-1a of the scope without its last component (the node's enclosing
// block), mapped to [0, 1): nodes of one block share a value.
float ScopeBucket(const std::string& scope) {
  std::string_view s(scope);
  const size_t slash = s.rfind('/');
  s = slash == std::string_view::npos ? std::string_view() : s.substr(0, slash);
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return static_cast<float>(static_cast<double>(h % 1024) / 1024.0);
}

}  // namespace

const std::vector<std::string>& FeatureNames() {
  static const std::vector<std::string> names = {"log_flops",        "log_bytes_read", "log_bytes_written",
                                                 "log_output_bytes", "num_outputs",    "log_max_output",
                                                 "max_output_rank",  "log_persistent", "log_in_degree",
                                                 "log_out_degree",   "log_bytes_in",   "log_bytes_out",
                                                 "topo_position",    "depth",          "height",
                                                 "scope_depth",      "scope_bucket",   "phase_forward",
                                                 "phase_backward",   "phase_update"};
  return names;
}

NodeFeatures ComputeNodeFeatures(const graphs::Graph& graph) {
  const int32_t n = graph.num_nodes();
  NodeFeatures out;
  out.num_nodes = n;
  out.values.assign(static_cast<size_t>(n) * kNumNodeFeatures, 0.0f);
  out.op_class.resize(static_cast<size_t>(n));

  // Longest path from the sources (depth) and to the sinks (height); node
  // ids are a topological order.
  std::vector<int32_t> depth(static_cast<size_t>(n), 0), height(static_cast<size_t>(n), 0);
  for (graphs::NodeId v = 0; v < n; ++v) {
    for (graphs::EdgeId e : graph.in_edges(v)) {
      depth[v] = std::max(depth[v], depth[graph.edge(e).src] + 1);
    }
  }
  for (graphs::NodeId v = n - 1; v >= 0; --v) {
    for (graphs::EdgeId e : graph.out_edges(v)) {
      height[v] = std::max(height[v], height[graph.edge(e).dst] + 1);
    }
  }
  const int32_t max_depth = n == 0 ? 0 : *std::max_element(depth.begin(), depth.end());
  const int32_t max_height = n == 0 ? 0 : *std::max_element(height.begin(), height.end());

  for (graphs::NodeId v = 0; v < n; ++v) {
    const graphs::Node& node = graph.node(v);
    float* row = out.values.data() + static_cast<size_t>(v) * kNumNodeFeatures;
    out.op_class[v] = static_cast<int64_t>(graphs::ClassifyOp(graph.op_type_name(node.op)));
    double output_bytes = 0.0, max_elements = 0.0;
    size_t max_rank = 0;
    int64_t max_bytes = -1;
    for (const graphs::TensorInfo& t : node.outputs) {
      output_bytes += static_cast<double>(t.bytes);
      if (t.bytes > max_bytes) {
        max_bytes = t.bytes;
        double elements = 1.0;
        for (int64_t d : t.shape) elements *= static_cast<double>(std::max<int64_t>(d, 1));
        max_elements = t.shape.empty() ? 0.0 : elements;
        max_rank = t.shape.size();
      }
    }
    double bytes_in = 0.0, bytes_out = 0.0;
    for (graphs::EdgeId e : graph.in_edges(v)) bytes_in += static_cast<double>(graph.edge(e).bytes);
    for (graphs::EdgeId e : graph.out_edges(v)) bytes_out += static_cast<double>(graph.edge(e).bytes);
    row[0] = Log1p(node.flops);
    row[1] = Log1p(static_cast<double>(node.bytes_read));
    row[2] = Log1p(static_cast<double>(node.bytes_written));
    row[3] = Log1p(output_bytes);
    row[4] = static_cast<float>(node.outputs.size());
    row[5] = Log1p(max_elements);
    row[6] = static_cast<float>(max_rank);
    row[7] = Log1p(static_cast<double>(node.persistent_bytes));
    row[8] = Log1p(graph.in_degree(v));
    row[9] = Log1p(graph.out_degree(v));
    row[10] = Log1p(bytes_in);
    row[11] = Log1p(bytes_out);
    row[12] = n > 1 ? static_cast<float>(v) / static_cast<float>(n - 1) : 0.0f;
    row[13] = max_depth > 0 ? static_cast<float>(depth[v]) / static_cast<float>(max_depth) : 0.0f;
    row[14] = max_height > 0 ? static_cast<float>(height[v]) / static_cast<float>(max_height) : 0.0f;
    row[15] = node.scope.empty()
                  ? 0.0f
                  : static_cast<float>(1 + std::count(node.scope.begin(), node.scope.end(), '/'));
    row[16] = ScopeBucket(node.scope);
    row[17 + static_cast<int>(node.phase)] = 1.0f;

    // Edges: one per (src, dst) pair; in_edges are sorted by src.
    graphs::NodeId last = -1;
    for (graphs::EdgeId e : graph.in_edges(v)) {
      const graphs::NodeId src = graph.edge(e).src;
      if (src == last) continue;
      last = src;
      out.edge_src.push_back(src);
      out.edge_dst.push_back(v);
    }
  }

  // Per-graph standardization of the magnitude columns.
  if (n > 0) {
    for (int c : kStandardized) {
      double mean = 0.0, sq = 0.0;
      for (int32_t v = 0; v < n; ++v) mean += out.values[static_cast<size_t>(v) * kNumNodeFeatures + c];
      mean /= n;
      for (int32_t v = 0; v < n; ++v) {
        const double d = out.values[static_cast<size_t>(v) * kNumNodeFeatures + c] - mean;
        sq += d * d;
      }
      const double std = std::sqrt(sq / n);
      for (int32_t v = 0; v < n; ++v) {
        float& x = out.values[static_cast<size_t>(v) * kNumNodeFeatures + c];
        x = std > 1e-6 ? static_cast<float>((x - mean) / std) : 0.0f;
      }
    }
  }
  return out;
}

}  // namespace gosim::agents::learned
