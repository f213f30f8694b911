#include "agents/learned/hrl/grouping.h"

#include <algorithm>
#include <cmath>

#include "agents/colocation.h"

namespace gosim::agents::hrl {
namespace {

float Log1p(double x) {
  return static_cast<float>(std::log1p(std::max(0.0, x)));
}

}  // namespace

std::vector<int64_t> OpTypes(const graphs::Graph& graph) {
  std::vector<int64_t> types(static_cast<size_t>(graph.num_nodes()));
  for (graphs::NodeId n = 0; n < graph.num_nodes(); ++n) types[static_cast<size_t>(n)] = graph.node(n).op;
  return types;
}

Matrix OpFeatures(const graphs::Graph& graph) {
  const int32_t n = graph.num_nodes();
  Matrix m{n, kOpFeatureCount, std::vector<float>(static_cast<size_t>(n) * kOpFeatureCount, 0.0f)};
  const double last = std::max(1, n - 1);
  constexpr int kScaled = 9;  // columns [0, kScaled) are divided by their maximum
  for (graphs::NodeId id = 0; id < n; ++id) {
    const graphs::Node& node = graph.node(id);
    int64_t out_bytes = 0;
    for (const graphs::TensorInfo& t : node.outputs) out_bytes += t.bytes;
    m.at(id, 0) = Log1p(static_cast<double>(out_bytes));
    if (!node.outputs.empty()) {
      // Shape of the first output, right-aligned in 4 slots; extra leading
      // dims are folded into the first slot.
      const std::vector<int64_t>& shape = node.outputs.front().shape;
      double dims[4] = {0, 0, 0, 0};
      const size_t rank = shape.size();
      for (size_t i = 0; i < rank; ++i) {
        const size_t slot = rank <= 4 ? 4 - rank + i : (i < rank - 3 ? 0 : i - (rank - 4));
        dims[slot] =
            dims[slot] == 0 ? static_cast<double>(shape[i]) : dims[slot] * static_cast<double>(shape[i]);
      }
      for (int i = 0; i < 4; ++i) m.at(id, 1 + i) = Log1p(dims[i]);
    }
    m.at(id, 5) = static_cast<float>(node.outputs.size());
    m.at(id, 6) = Log1p(graph.in_degree(id));
    m.at(id, 7) = Log1p(graph.out_degree(id));
    m.at(id, 8) = static_cast<float>(id / last);
    int slot = 0;
    for (graphs::EdgeId e : graph.in_edges(id)) {
      if (slot == kAdjacencySlots) break;
      m.at(id, 9 + slot++) = static_cast<float>(graph.edge(e).src / last);
    }
    for (; slot < kAdjacencySlots; ++slot) m.at(id, 9 + slot) = -1.0f;
    slot = 0;
    for (graphs::EdgeId e : graph.out_edges(id)) {
      if (slot == kAdjacencySlots) break;
      m.at(id, 9 + kAdjacencySlots + slot++) = static_cast<float>(graph.edge(e).dst / last);
    }
    for (; slot < kAdjacencySlots; ++slot) m.at(id, 9 + kAdjacencySlots + slot) = -1.0f;
  }
  for (int c = 0; c < kScaled; ++c) {
    if (c == 8) continue;  // the position is in [0, 1] already
    float top = 0.0f;
    for (int32_t r = 0; r < n; ++r) top = std::max(top, std::abs(m.at(r, c)));
    if (top > 0.0f) {
      for (int32_t r = 0; r < n; ++r) m.at(r, c) /= top;
    }
  }
  return m;
}

std::vector<int32_t> ColocationGroups(const graphs::Graph& graph, int32_t max_groups, int32_t* count) {
  return ColocationRuns(graph, max_groups, count);
}

void GroupEmbeddings(const graphs::Graph& graph, std::span<const int32_t> group_of, int32_t num_groups,
                     std::span<float> out) {
  const int64_t types = static_cast<int64_t>(graph.op_types().size());
  const int64_t width = GroupEmbeddingWidth(graph, num_groups);
  std::fill(out.begin(), out.end(), 0.0f);
  // Counts first, logs after.
  std::vector<double> bytes(static_cast<size_t>(num_groups), 0.0);
  double total_bytes = 0.0;
  for (graphs::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const int64_t g = group_of[static_cast<size_t>(id)];
    out[static_cast<size_t>(g * width + graph.node(id).op)] += 1.0f;
    for (const graphs::TensorInfo& t : graph.node(id).outputs) {
      bytes[static_cast<size_t>(g)] += static_cast<double>(t.bytes);
      total_bytes += static_cast<double>(t.bytes);
    }
  }
  for (const graphs::Edge& e : graph.edges()) {
    if (e.is_control()) continue;
    const int64_t a = group_of[static_cast<size_t>(e.src)];
    const int64_t b = group_of[static_cast<size_t>(e.dst)];
    if (a != b) out[static_cast<size_t>(a * width + types + 1 + b)] += 1.0f;
  }
  const float count_scale = 1.0f / std::max(1e-6f, Log1p(graph.num_nodes()));
  const float bytes_scale = 1.0f / std::max(1e-6f, Log1p(total_bytes));
  const float edge_scale = 1.0f / std::max(1e-6f, Log1p(graph.num_edges()));
  for (int64_t g = 0; g < num_groups; ++g) {
    float* row = out.data() + g * width;
    for (int64_t t = 0; t < types; ++t) row[t] = Log1p(row[t]) * count_scale;
    row[types] = Log1p(bytes[static_cast<size_t>(g)]) * bytes_scale;
    for (int64_t h = 0; h < num_groups; ++h) row[types + 1 + h] = Log1p(row[types + 1 + h]) * edge_scale;
  }
}

}  // namespace gosim::agents::hrl
