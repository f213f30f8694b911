// A GraphSAGE-style message-passing network (Hamilton et al. 2017) over a
// directed edge index, shared by the learned agents (REGAL now, GO later).
//
// Input: GraphTensors (common/features.h turned into tensors). The network
// embeds each node's op class (an embedding table) and its float features
// (a linear layer), then runs `layers` rounds of
//   h_v <- normalize(relu(W_self h_v + W_in mean_{u->v} h_u + W_out mean_{v->w} h_w))
// where the means over predecessors and successors are computed with
// index_add_ over the edge index (nodes without neighbours get 0). Keeping
// the two directions apart lets a layer tell producers from consumers, which
// matters for placement and scheduling. The output is [nodes x hidden].
#ifndef GOSIM_AGENTS_LEARNED_COMMON_GNN_H_
#define GOSIM_AGENTS_LEARNED_COMMON_GNN_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agents/learned/common/features.h"

namespace gosim::agents::learned {

// Each node's neighbours in one direction, in edge order (compressed rows):
// node v's are nbr[ptr[v] .. ptr[v + 1]). int64 CPU tensors [n + 1], [E].
struct Adjacency {
  torch::Tensor ptr;
  torch::Tensor nbr;
};

// A graph's features as tensors, built once per graph and reused.
struct GraphTensors {
  torch::Tensor features;  // float32 [n x (kNumNodeFeatures + extra features)]
  torch::Tensor op_class;  // int64 [n]
  torch::Tensor edge_src;  // int64 [E]
  torch::Tensor edge_dst;  // int64 [E]
  torch::Tensor inv_in;    // float32 [n x 1]: 1 / max(1, in-degree)
  torch::Tensor inv_out;   // float32 [n x 1]: 1 / max(1, out-degree)
  Adjacency in;            // each node's predecessors (edge_src of its in-edges)
  Adjacency out;           // each node's successors (edge_dst of its out-edges)
  int64_t num_nodes = 0;
};

GraphTensors ToTensors(const NodeFeatures& features, torch::Device device = torch::kCPU);

struct GnnOptions {
  int64_t hidden = 64;        // width of the node embeddings
  int64_t layers = 3;         // message-passing rounds
  int64_t op_embedding = 16;  // op-class embedding width
  bool normalize = true;      // L2-normalize embeddings after each layer (GraphSAGE)
  // Agent-specific float features appended to the common ones (columns
  // kNumNodeFeatures.. of GraphTensors::features); 0 = none.
  int64_t extra_features = 0;

  // "hidden=64,layers=3,op_embedding=16,normalize=1,...": stored in
  // checkpoints so that a checkpoint of another shape is refused with a clear
  // error. ",extra=K" is appended only when K > 0 (older signatures stay valid).
  std::string Signature() const;
  bool operator==(const GnnOptions&) const = default;
};

class GraphSageImpl : public torch::nn::Module {
 public:
  explicit GraphSageImpl(const GnnOptions& options);
  // [n x hidden] node embeddings. `parallel_linear`: the linear layers by
  // ParallelLinear (parallel_linear.h), their rows split over torch's
  // threads, equal up to rounding (GO on long graphs).
  torch::Tensor forward(const GraphTensors& graph, bool parallel_linear = false);
  const GnnOptions& options() const { return options_; }

 private:
  GnnOptions options_;
  torch::nn::Embedding op_embedding_{nullptr};
  torch::nn::Linear input_{nullptr};
  std::vector<torch::nn::Linear> self_;
  std::vector<torch::nn::Linear> from_in_;
  std::vector<torch::nn::Linear> from_out_;
};
TORCH_MODULE(GraphSage);

// Mean of `values` rows over the neighbours: out[dst] = sum values[src] *
// inv[dst] for every edge src -> dst. `values` is [n x h].
torch::Tensor MeanAggregate(const torch::Tensor& values, const torch::Tensor& src, const torch::Tensor& dst,
                            const torch::Tensor& inv_degree);

// The same mean over `neighbours` (GraphTensors::in for the edges' src ->
// dst, ::out for dst -> src), `transposed` the other direction, computed
// row by row with the rows split over torch's threads; the gradient runs over
// `transposed`. Each row sums its neighbours in edge order from zero, as the
// index_add above does, so the numbers are the same bit for bit
// (tests/learned/common_test.cc); index_add runs on one thread and its
// gradient writes and adds a zero tensor per call. CPU tensors only.
torch::Tensor MeanAggregate(const torch::Tensor& values, const Adjacency& neighbours,
                            const Adjacency& transposed, const torch::Tensor& inv_degree);

// The adjacency of each node's predecessors (by_dst) or successors from the
// edge lists, in edge order.
Adjacency MakeAdjacency(const std::vector<int64_t>& edge_src, const std::vector<int64_t>& edge_dst,
                        int64_t num_nodes, bool by_dst);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_GNN_H_
