// Node features of a computation graph for the learned agents (REGAL, HRL,
// later GO), and their LibTorch form.
//
// Every node gets one row of kNumNodeFeatures floats plus an op-class index
// (graphs/op_class.h, kNumOpClasses values) meant for an embedding table, so
// that graphs from any source (TensorFlow, aten, ONNX, generators) share one
// vocabulary. The float features are (in column order, see FeatureNames()):
//   log FLOPs, log bytes read, log bytes written, log output bytes (sum),
//   number of outputs, log elements of the largest output, rank of the
//   largest output, log persistent bytes, log in-degree, log out-degree,
//   log bytes in (sum over data in-edges), log bytes out (data out-edges),
//   topological position (id / (n - 1)), depth from the sources / max depth,
//   height to the sinks / max height, scope depth ('/' count), a hashed
//   scope bucket in [0, 1), phase one-hot (forward, backward, update).
// The magnitude features (every "log" one, degrees and scope depth) are
// standardized per graph (zero mean, unit variance over the graph's nodes;
// a constant column becomes 0) so that graph size and units do not dominate;
// positions, the scope bucket and the one-hots stay in [0, 1].
//
// ComputeNodeFeatures does not use torch; ToTensors converts to tensors
// (float32 features, int64 indices) on a given device.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_FEATURES_H_
#define GOSIM_AGENTS_LEARNED_COMMON_FEATURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graphs/graph.h"

namespace gosim::agents::learned {

inline constexpr int kNumNodeFeatures = 20;

// Column names of the float features, kNumNodeFeatures of them.
const std::vector<std::string>& FeatureNames();

struct NodeFeatures {
  int32_t num_nodes = 0;
  std::vector<float> values;      // [num_nodes x kNumNodeFeatures], row-major
  std::vector<int64_t> op_class;  // [num_nodes], in [0, graphs::kNumOpClasses)
  // Directed edges (data and control, duplicates of one (src, dst) pair
  // merged), src -> dst in the graph's topological order.
  std::vector<int64_t> edge_src;
  std::vector<int64_t> edge_dst;
};

// Features of every node of `graph`. Deterministic; O(nodes + edges).
NodeFeatures ComputeNodeFeatures(const graphs::Graph& graph);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_FEATURES_H_
