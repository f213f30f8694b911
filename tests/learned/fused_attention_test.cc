// Tests of the fused attention (agents/learned/go/fused_attention.h): its
// output and its gradients in q, k, v and the relative-position bias against
// the unfused computation written out index by index, with and without
// memory, rows that are not a multiple of the kernel's block, distances
// beyond the bias table, and the layer's fused flag on a whole segment.
#include <cmath>
#include <limits>
#include <vector>

#include "agents/learned/go/fused_attention.h"
#include "agents/learned/go/go_model.h"
#include "core/error.h"
#include "tests/learned/go_test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using learned::go::FusedRelativeAttention;
using learned::go::RecurrentAttention;

// softmax(q k^T / sqrt(dh) + bias(M + i - j), keys after the query masked) v.
torch::Tensor Reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& relative_bias) {
  const int64_t l = q.size(2), m = k.size(2) - l;
  const torch::Tensor bias = go_testing::RelativeBiasReference(relative_bias, m, l);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  return torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-1, -2)) * scale + bias, -1), v);
}

struct Case {
  int64_t b, heads, l, m, dh, r;
};

TEST_CASE("FusedRelativeAttention: output and every gradient equal the unfused attention") {
  // A memory or none; rows shorter and longer than a vector of keys; more
  // keys than one tile of the backward (128); distances within and beyond
  // the bias table; head widths 4, 5 (the generic kernel), 8 and 16.
  const std::vector<Case> cases = {{2, 3, 37, 0, 8, 64},    {2, 4, 33, 29, 8, 16}, {1, 2, 5, 40, 5, 3},
                                   {3, 1, 16, 16, 4, 100},  {1, 2, 1, 0, 8, 4},    {1, 2, 150, 100, 8, 300},
                                   {1, 1, 20, 140, 16, 64}, {1, 1, 70, 70, 5, 200}};
  // Both kernel widths (16 is the CPU's choice only with AVX-512).
  for (const int width : {0, 8})
    for (const Case& c : cases) {
      learned::go::SetFusedAttentionWidthForTesting(width);
      CAPTURE(width);
      CAPTURE(c.l);
      CAPTURE(c.m);
      torch::manual_seed(7);
      auto leaf = [](torch::Tensor t) { return t.requires_grad_(true); };
      const torch::Tensor q = leaf(torch::randn({c.b, c.heads, c.l, c.dh}) * 2.0);
      const torch::Tensor k = leaf(torch::randn({c.b, c.heads, c.m + c.l, c.dh}) * 2.0);
      const torch::Tensor v = leaf(torch::randn({c.b, c.heads, c.m + c.l, c.dh}));
      const torch::Tensor bias = leaf(torch::randn({c.heads, c.r}));
      const torch::Tensor probe = torch::randn({c.b, c.heads, c.l, c.dh});

      const torch::Tensor fused = FusedRelativeAttention(q, k, v, bias);
      (fused * probe).sum().backward();
      const std::vector<torch::Tensor> grads = {q.grad().clone(), k.grad().clone(), v.grad().clone(),
                                                bias.grad().clone()};
      for (const torch::Tensor& t : {q, k, v, bias}) t.mutable_grad().zero_();

      const torch::Tensor reference = Reference(q, k, v, bias);
      (reference * probe).sum().backward();
      CHECK(torch::allclose(fused, reference, 1e-5, 1e-5));
      CHECK(torch::allclose(grads[0], q.grad(), 1e-4, 1e-5));
      CHECK(torch::allclose(grads[1], k.grad(), 1e-4, 1e-5));
      CHECK(torch::allclose(grads[2], v.grad(), 1e-4, 1e-5));
      CHECK(torch::allclose(grads[3], bias.grad(), 1e-4, 1e-5));
      // One key alone has weight 1 whatever its bias: no gradient then.
      if (c.m + c.l > 1) CHECK(grads[3].abs().sum().item<float>() > 0.0F);
    }
  learned::go::SetFusedAttentionWidthForTesting(0);
}

TEST_CASE("FusedRelativeAttention: takes strided views and refuses tensors of the wrong shape") {
  torch::manual_seed(2);
  // The layer passes transposed slices of one qkv tensor.
  const torch::Tensor qkv = torch::randn({2, 20, 3 * 16});
  auto split = [&](int64_t part, int64_t from, int64_t len) {
    return qkv.slice(2, part * 16, (part + 1) * 16)
        .slice(1, from, from + len)
        .view({2, len, 2, 8})
        .transpose(1, 2);
  };
  const torch::Tensor bias = torch::randn({2, 8});
  const torch::Tensor q = split(0, 12, 8), k = split(1, 0, 20), v = split(2, 0, 20);
  CHECK_FALSE(q.is_contiguous());
  CHECK(torch::allclose(FusedRelativeAttention(q, k, v, bias), Reference(q, k, v, bias), 1e-5, 1e-5));
  CHECK_THROWS_AS(FusedRelativeAttention(q, k.slice(3, 0, 4), v, bias), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(q, k, v, torch::randn({3, 8})), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(q.to(torch::kDouble), k, v, bias), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(q, k.slice(2, 0, 4), v.slice(2, 0, 4), bias), ConfigError);
}

TEST_CASE("RecurrentAttention: the fused flag gives the same layer output and parameter gradients") {
  torch::manual_seed(5);
  const int64_t d = 32, heads = 4;
  RecurrentAttention layer(d, heads, 64);
  {
    torch::NoGradGuard no_grad;
    layer->named_parameters()["relative_bias"].uniform_(-1.0, 1.0);
  }
  const torch::Tensor x = torch::randn({3, 40, d});
  const torch::Tensor memory = torch::randn({3, 40, d});
  const torch::Tensor gamma = torch::randn({3, 2, d}), beta = torch::randn({3, 2, d});
  auto gradients = [&](bool fused) {
    layer->zero_grad();
    const torch::Tensor y = layer->forward(x, memory, gamma, beta, fused);
    (y * y).sum().backward();
    std::vector<torch::Tensor> out = {y.detach()};
    for (const auto& p : layer->parameters()) out.push_back(p.grad().clone());
    return out;
  };
  const std::vector<torch::Tensor> unfused = gradients(false), fused = gradients(true);
  REQUIRE(unfused.size() == fused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(fused[i], unfused[i], 1e-4, 1e-4));
  }
}

}  // namespace
}  // namespace gosim::agents
