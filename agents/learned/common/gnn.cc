#include "agents/learned/common/gnn.h"

#include "agents/learned/common/parallel_linear.h"
#include "graphs/op_class.h"

namespace gosim::agents::learned {

GraphTensors ToTensors(const NodeFeatures& features, torch::Device device) {
  GraphTensors g;
  const int64_t n = features.num_nodes;
  g.num_nodes = n;
  g.features =
      torch::from_blob(const_cast<float*>(features.values.data()), {n, kNumNodeFeatures}, torch::kFloat32)
          .clone()
          .to(device);
  g.op_class =
      torch::from_blob(const_cast<int64_t*>(features.op_class.data()), {n}, torch::kInt64).clone().to(device);
  const int64_t e = static_cast<int64_t>(features.edge_src.size());
  g.edge_src =
      torch::from_blob(const_cast<int64_t*>(features.edge_src.data()), {e}, torch::kInt64).clone().to(device);
  g.edge_dst =
      torch::from_blob(const_cast<int64_t*>(features.edge_dst.data()), {e}, torch::kInt64).clone().to(device);
  const torch::Tensor ones = torch::ones({e}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  const torch::Tensor zeros = torch::zeros({n}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  g.inv_in = (1.0 / zeros.index_add(0, g.edge_dst, ones).clamp_min(1.0)).unsqueeze(1);
  g.inv_out = (1.0 / zeros.index_add(0, g.edge_src, ones).clamp_min(1.0)).unsqueeze(1);
  g.in = MakeAdjacency(features.edge_src, features.edge_dst, n, /*by_dst=*/true);
  g.out = MakeAdjacency(features.edge_src, features.edge_dst, n, /*by_dst=*/false);
  return g;
}

std::string GnnOptions::Signature() const {
  return "hidden=" + std::to_string(hidden) + ",layers=" + std::to_string(layers) +
         ",op_embedding=" + std::to_string(op_embedding) + ",normalize=" + std::to_string(normalize ? 1 : 0) +
         ",features=" + std::to_string(kNumNodeFeatures) +
         ",op_classes=" + std::to_string(graphs::kNumOpClasses) +
         (extra_features > 0 ? ",extra=" + std::to_string(extra_features) : std::string());
}

torch::Tensor MeanAggregate(const torch::Tensor& values, const torch::Tensor& src, const torch::Tensor& dst,
                            const torch::Tensor& inv_degree) {
  return torch::zeros_like(values).index_add(0, dst, values.index_select(0, src)) * inv_degree;
}

GraphSageImpl::GraphSageImpl(const GnnOptions& options) : options_(options) {
  op_embedding_ =
      register_module("op_embedding", torch::nn::Embedding(graphs::kNumOpClasses, options.op_embedding));
  input_ = register_module(
      "input",
      torch::nn::Linear(kNumNodeFeatures + options.extra_features + options.op_embedding, options.hidden));
  for (int64_t l = 0; l < options.layers; ++l) {
    const std::string k = std::to_string(l);
    self_.push_back(register_module("self" + k, torch::nn::Linear(options.hidden, options.hidden)));
    from_in_.push_back(register_module(
        "in" + k, torch::nn::Linear(torch::nn::LinearOptions(options.hidden, options.hidden).bias(false))));
    from_out_.push_back(register_module(
        "out" + k, torch::nn::Linear(torch::nn::LinearOptions(options.hidden, options.hidden).bias(false))));
  }
}

torch::Tensor GraphSageImpl::forward(const GraphTensors& graph, bool parallel_linear) {
  auto linear = [parallel_linear](torch::nn::Linear& layer, const torch::Tensor& in) {
    return RunLinear(layer, in, parallel_linear);
  };
  torch::Tensor h =
      torch::relu(linear(input_, torch::cat({graph.features, op_embedding_(graph.op_class)}, 1)));
  for (size_t l = 0; l < self_.size(); ++l) {
    // Row by row over the adjacency on the CPU (the same numbers, on
    // torch's threads), index_add elsewhere.
    const bool cpu = h.device().is_cpu() && graph.in.ptr.defined();
    const torch::Tensor in = cpu ? MeanAggregate(h, graph.in, graph.out, graph.inv_in)
                                 : MeanAggregate(h, graph.edge_src, graph.edge_dst, graph.inv_in);
    const torch::Tensor out = cpu ? MeanAggregate(h, graph.out, graph.in, graph.inv_out)
                                  : MeanAggregate(h, graph.edge_dst, graph.edge_src, graph.inv_out);
    h = torch::relu(linear(self_[l], h) + linear(from_in_[l], in) + linear(from_out_[l], out));
    if (options_.normalize)
      h = torch::nn::functional::normalize(h, torch::nn::functional::NormalizeFuncOptions().dim(1));
  }
  return h;
}

}  // namespace gosim::agents::learned
