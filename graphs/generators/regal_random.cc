// REGAL-style random computation graphs (Paliwal et al. 2020, synthetic
// dataset): layered random DAGs kept in TensorFlow CostGraphDef terms, i.e.
// per node a compute cost, output tensor sizes and persistent memory.
//
// Construction, all from Rng(seed):
//   - the node count is `nodes`, or uniform in [min_nodes, max_nodes];
//   - nodes are laid out in layers whose widths are log-normal
//     (median width_median, log-space sigma width_sigma), at least 1;
//   - every node after the first layer reads one output of a random node of
//     the previous layer, plus each node of the `lookback` layers before it
//     with probability edge_prob, up to max_fan_in inputs; a node with
//     several outputs (probability multi_output_prob) has 2;
//   - a control edge from a random earlier node with probability
//     control_edge_prob;
//   - compute cost (seconds, a measured time on device kind "any", as the
//     CostGraphDef importer records compute_cost) and output sizes (bytes,
//     multiples of 4) are log-normal; FLOPs = cost * reference_flops, so
//     roofline cost models see the same relative costs;
//   - a node holds persistent memory (weights) with probability
//     weight_prob, log-normal in size;
//   - op types are drawn from a small TensorFlow vocabulary.
// augment_index > 0 re-draws the tensor sizes of this graph (REGAL's
// augmentation; AugmentTensorSizes with sigma augment_sigma).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "graphs/generators/models.h"

namespace gosim::graphs::gen {
namespace {

constexpr std::array<const char*, 12> kOpTypes{"MatMul",   "Conv2D",  "Add",     "Mul",
                                               "Relu",     "BiasAdd", "Sum",     "Tanh",
                                               "ConcatV2", "Slice",   "Reshape", "Transpose"};

int64_t RoundBytes(double bytes) {
  return std::max<int64_t>(4, 4 * std::llround(bytes / 4.0));
}

Graph RegalRandom(GeneratorParams& p) {
  const uint64_t seed = p.Seed();
  const int64_t fixed_nodes = p.Int("nodes", 0, 0, 1'000'000);
  const int64_t min_nodes = p.Int("min_nodes", 50, 2, 1'000'000);
  const int64_t max_nodes = p.Int("max_nodes", std::max<int64_t>(250, min_nodes), min_nodes, 1'000'000);
  const double width_median = p.Double("width_median", 6.0, 1.0, 1e5);
  const double width_sigma = p.Double("width_sigma", 0.5, 0.0, 5.0);
  const double edge_prob = p.Double("edge_prob", 0.1, 0.0, 1.0);
  const int lookback = static_cast<int>(p.Int("lookback", 2, 1, 1000));
  const int max_fan_in = static_cast<int>(p.Int("max_fan_in", 6, 1, 1000));
  const double multi_output_prob = p.Double("multi_output_prob", 0.05, 0.0, 1.0);
  const double control_prob = p.Double("control_edge_prob", 0.02, 0.0, 1.0);
  const double cost_median = p.Double("cost_median_us", 20.0, 1e-3, 1e9);
  const double cost_sigma = p.Double("cost_sigma", 1.0, 0.0, 5.0);
  const double size_median = p.Double("size_median_bytes", 262144.0, 4.0, 1e13);
  const double size_sigma = p.Double("size_sigma", 1.5, 0.0, 5.0);
  const double weight_prob = p.Double("weight_prob", 0.3, 0.0, 1.0);
  const double weight_median = p.Double("weight_median_bytes", 1048576.0, 4.0, 1e13);
  const double weight_sigma = p.Double("weight_sigma", 1.5, 0.0, 5.0);
  const double reference_flops = p.Double("reference_flops", 1e13, 0.0, 1e18);
  const int64_t augment_index = p.Int("augment_index", 0, 0, INT64_MAX);
  const double augment_sigma = p.Double("augment_sigma", 0.5, 0.0, 5.0);
  const std::string name = p.Name("regal_random_s" + std::to_string(seed));
  p.Finish();

  Rng rng = Rng::Derive(seed, {0x72656761ULL /* "rega" */});
  const int64_t n = fixed_nodes > 0 ? fixed_nodes : rng.UniformInt(min_nodes, max_nodes);
  // Layers.
  std::vector<int64_t> layer_start{0};
  while (layer_start.back() < n) {
    const int64_t width =
        std::max<int64_t>(1, std::llround(rng.LogNormal(std::log(width_median), width_sigma)));
    layer_start.push_back(std::min(n, layer_start.back() + width));
  }
  const int64_t layers = static_cast<int64_t>(layer_start.size()) - 1;

  GraphBuilder builder(name);
  std::vector<int32_t> outputs_of(static_cast<size_t>(n));
  for (int64_t layer = 0; layer < layers; ++layer) {
    for (int64_t v = layer_start[static_cast<size_t>(layer)]; v < layer_start[static_cast<size_t>(layer) + 1];
         ++v) {
      NodeSpec s;
      s.name = "node_" + std::to_string(v);
      s.op = kOpTypes[rng.UniformInt(kOpTypes.size())];
      s.scope = "layer_" + std::to_string(layer);
      const double cost_s = rng.LogNormal(std::log(cost_median), cost_sigma) * 1e-6;
      s.measured.push_back(MeasuredTime{"any", cost_s});
      s.flops = cost_s * reference_flops;
      const int outputs = rng.Bernoulli(multi_output_prob) ? 2 : 1;
      for (int k = 0; k < outputs; ++k) {
        const int64_t bytes = RoundBytes(rng.LogNormal(std::log(size_median), size_sigma));
        s.outputs.push_back(TensorInfo{bytes, {bytes / 4}, DType::kFloat32});
        s.bytes_written += bytes;
      }
      if (rng.Bernoulli(weight_prob))
        s.persistent_bytes = RoundBytes(rng.LogNormal(std::log(weight_median), weight_sigma));
      outputs_of[static_cast<size_t>(v)] = outputs;
      const int32_t id = builder.AddNode(std::move(s));
      if (layer == 0) continue;
      // Inputs: one from the previous layer, more from the lookback window.
      std::vector<std::pair<int32_t, int32_t>> inputs;
      const int64_t prev_begin = layer_start[static_cast<size_t>(layer) - 1];
      const int64_t prev_end = layer_start[static_cast<size_t>(layer)];
      const int32_t first = static_cast<int32_t>(rng.UniformInt(prev_begin, prev_end - 1));
      inputs.emplace_back(first,
                          static_cast<int32_t>(rng.UniformInt(outputs_of[static_cast<size_t>(first)])));
      const int64_t window_begin = layer_start[static_cast<size_t>(std::max<int64_t>(0, layer - lookback))];
      for (int64_t u = window_begin; u < prev_end && static_cast<int>(inputs.size()) < max_fan_in; ++u) {
        if (u == first || !rng.Bernoulli(edge_prob)) continue;
        inputs.emplace_back(static_cast<int32_t>(u),
                            static_cast<int32_t>(rng.UniformInt(outputs_of[static_cast<size_t>(u)])));
      }
      int64_t read = 0;
      for (const auto& [src, out] : inputs) {
        builder.AddEdge(src, id, out);
        read += builder.node(src).outputs[static_cast<size_t>(out)].bytes;
      }
      builder.mutable_node(id).bytes_read = read;
      if (rng.Bernoulli(control_prob)) {
        const int32_t u = static_cast<int32_t>(rng.UniformInt(0, prev_end - 1));
        bool is_input = false;
        for (const auto& in : inputs) is_input = is_input || in.first == u;
        if (!is_input) builder.AddControlEdge(u, id);
      }
    }
  }
  Graph g = builder.Build();
  if (augment_index > 0) g = AugmentTensorSizes(g, seed, augment_index, augment_sigma, name);
  return g;
}

}  // namespace

void RegisterRegalGenerator(GeneratorRegistry& registry) {
  registry.Register(
      "regal_random", RegalRandom,
      "REGAL-style layered random DAG with log-normal compute costs, tensor sizes and weights "
      "(CostGraphDef-like); params seed, nodes or min_nodes/max_nodes, width_median, width_sigma, "
      "edge_prob, lookback, max_fan_in, multi_output_prob, control_edge_prob, cost_median_us, "
      "cost_sigma, size_median_bytes, size_sigma, weight_prob, weight_median_bytes, weight_sigma, "
      "reference_flops, augment_index, augment_sigma");
}

}  // namespace gosim::graphs::gen
