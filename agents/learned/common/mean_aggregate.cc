// MeanAggregate over compressed rows (gnn.h): the rows split over torch's
// threads, each summed in edge order from zero so that the numbers equal
// index_add's bit for bit. Compiled with -fopenmp (at::parallel_for is
// OpenMP pragmas in LibTorch's headers) and -ffp-contract=off (a fused
// multiply-add in the gradient would round otherwise than torch's product
// and sum); agents/learned/CMakeLists.txt.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "agents/learned/common/gnn.h"
#include "core/error.h"

namespace gosim::agents::learned {

namespace {

// Rows below which the sum stays on one thread.
constexpr int64_t kGrain = 256;

// out[v] = (sum over j in nbr[ptr[v] .. ptr[v + 1]) of values[j], times
// term_scale[j] if given) times row_scale[v] if given, the sum in list order
// from zero. values, out: [rows x width].
void SumRows(const float* values, int64_t width, const int64_t* ptr, const int64_t* nbr,
             const float* term_scale, const float* row_scale, int64_t rows, float* out) {
  at::parallel_for(0, rows, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      float* o = out + v * width;
      std::fill(o, o + width, 0.0F);
      for (int64_t e = ptr[v]; e < ptr[v + 1]; ++e) {
        const int64_t j = nbr[e];
        const float* x = values + j * width;
        if (term_scale != nullptr) {
          const float s = term_scale[j];
          for (int64_t c = 0; c < width; ++c) o[c] += x[c] * s;
        } else {
          for (int64_t c = 0; c < width; ++c) o[c] += x[c];
        }
      }
      if (row_scale != nullptr) {
        const float s = row_scale[v];
        for (int64_t c = 0; c < width; ++c) o[c] *= s;
      }
    }
  });
}

void Check(const torch::Tensor& values, const Adjacency& neighbours, const Adjacency& transposed,
           const torch::Tensor& inv_degree) {
  auto fail = [](const std::string& what) {
    throw ConfigError("MeanAggregate: " + what, {}, "build the adjacency with ToTensors for these values");
  };
  if (values.dim() != 2 || values.scalar_type() != torch::kFloat || !values.device().is_cpu())
    fail("values must be a float32 CPU tensor [n x h]");
  const int64_t n = values.size(0);
  for (const Adjacency* a : {&neighbours, &transposed}) {
    if (!a->ptr.defined() || a->ptr.scalar_type() != torch::kInt64 || a->ptr.dim() != 1 ||
        a->ptr.size(0) != n + 1 || !a->ptr.device().is_cpu() || !a->nbr.defined() ||
        a->nbr.scalar_type() != torch::kInt64 || a->nbr.dim() != 1 || !a->nbr.device().is_cpu())
      fail("an adjacency of " + std::to_string(n) + " nodes needs int64 CPU tensors ptr [n + 1] and nbr [E]");
    // Rows that start at 0, never shrink and end at E, and neighbours that
    // are nodes: the kernels read no memory outside the tensors.
    const torch::Tensor ptr = a->ptr.contiguous(), nbr = a->nbr.contiguous();
    const int64_t* p = ptr.data_ptr<int64_t>();
    bool ordered = p[0] == 0 && p[n] == nbr.numel();
    for (int64_t v = 0; v < n && ordered; ++v) ordered = p[v] <= p[v + 1];
    if (!ordered) fail("ptr must rise from 0 to the number of edges");
    const int64_t* q = nbr.data_ptr<int64_t>();
    for (int64_t e = 0; e < nbr.numel(); ++e)
      if (q[e] < 0 || q[e] >= n) fail("neighbour " + std::to_string(q[e]) + " is not one of the n nodes");
  }
  if (neighbours.nbr.numel() != transposed.nbr.numel()) fail("the two directions have different edge counts");
  if (inv_degree.scalar_type() != torch::kFloat || !inv_degree.device().is_cpu() || inv_degree.numel() != n)
    fail("inv_degree must be a float32 CPU tensor of n numbers");
}

class MeanAggregateFunction : public torch::autograd::Function<MeanAggregateFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& values_in,
                               const torch::Tensor& ptr, const torch::Tensor& nbr,
                               const torch::Tensor& transposed_ptr, const torch::Tensor& transposed_nbr,
                               const torch::Tensor& inv_degree_in) {
    const torch::Tensor values = values_in.contiguous(), inv_degree = inv_degree_in.contiguous();
    const torch::Tensor p = ptr.contiguous(), q = nbr.contiguous();
    torch::Tensor out = torch::empty_like(values);
    SumRows(values.data_ptr<float>(), values.size(1), p.data_ptr<int64_t>(), q.data_ptr<int64_t>(), nullptr,
            inv_degree.data_ptr<float>(), values.size(0), out.data_ptr<float>());
    ctx->save_for_backward({transposed_ptr.contiguous(), transposed_nbr.contiguous(), inv_degree});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor g = grads[0].contiguous();
    // dvalues[u] = the sum over u's neighbours w in the other direction of
    // g[w] inv_degree[w], in edge order: index_add's gradient, index_select,
    // then index_add of the product.
    torch::Tensor dvalues = torch::empty_like(g);
    SumRows(g.data_ptr<float>(), g.size(1), saved[0].data_ptr<int64_t>(), saved[1].data_ptr<int64_t>(),
            saved[2].data_ptr<float>(), nullptr, g.size(0), dvalues.data_ptr<float>());
    return {dvalues, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor MeanAggregate(const torch::Tensor& values, const Adjacency& neighbours,
                            const Adjacency& transposed, const torch::Tensor& inv_degree) {
  Check(values, neighbours, transposed, inv_degree);
  return MeanAggregateFunction::apply(values, neighbours.ptr, neighbours.nbr, transposed.ptr, transposed.nbr,
                                      inv_degree);
}

Adjacency MakeAdjacency(const std::vector<int64_t>& edge_src, const std::vector<int64_t>& edge_dst,
                        int64_t num_nodes, bool by_dst) {
  const std::vector<int64_t>& key = by_dst ? edge_dst : edge_src;
  const std::vector<int64_t>& other = by_dst ? edge_src : edge_dst;
  if (edge_src.size() != edge_dst.size()) {
    throw StateError("MakeAdjacency: " + std::to_string(edge_src.size()) + " edge sources but " +
                         std::to_string(edge_dst.size()) + " destinations",
                     {}, "build the edge lists with ComputeNodeFeatures");
  }
  const auto n = static_cast<size_t>(num_nodes);
  std::vector<int64_t> ptr(n + 1, 0);
  for (size_t e = 0; e < key.size(); ++e) {
    if (key[e] < 0 || key[e] >= num_nodes || other[e] < 0 || other[e] >= num_nodes) {
      throw StateError("MakeAdjacency: edge " + std::to_string(e) + " names a node outside 0 .. " +
                           std::to_string(num_nodes - 1),
                       {}, "build the edge lists with ComputeNodeFeatures");
    }
    ++ptr[static_cast<size_t>(key[e]) + 1];
  }
  for (size_t v = 0; v < n; ++v) ptr[v + 1] += ptr[v];
  std::vector<int64_t> next(ptr.begin(), ptr.end() - 1), nbr(key.size());
  for (size_t e = 0; e < key.size(); ++e)
    nbr[static_cast<size_t>(next[static_cast<size_t>(key[e])]++)] = other[e];
  auto tensor = [](std::vector<int64_t>& v) {
    return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kInt64).clone();
  };
  return {tensor(ptr), tensor(nbr)};
}

}  // namespace gosim::agents::learned
