// Tests of the fused attention (agents/learned/go/fused_attention.h): its
// output and its gradients in the packed q, k, v and the relative-position bias against
// the unfused computation written out index by index, with and without
// memory, rows that are not a multiple of the kernel's block, distances
// beyond the bias table, and the layer's fused flag on a whole segment.
#include <cmath>
#include <limits>
#include <vector>

#include "agents/learned/common/simd.h"
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

// The layer's packed projection qkv [B x (M + L) x 3 H dh] cut into q
// [B x H x L x dh] (the segment's rows) and k, v [B x H x (M + L) x dh].
torch::Tensor Part(const torch::Tensor& qkv, int64_t heads, int64_t part, int64_t from) {
  const int64_t b = qkv.size(0), rows = qkv.size(1) - from, d = qkv.size(2) / 3;
  return qkv.slice(2, part * d, (part + 1) * d)
      .slice(1, from)
      .reshape({b, rows, heads, d / heads})
      .transpose(1, 2);
}

// softmax(q k^T / sqrt(dh) + bias(M + i - j), keys after the query masked) v,
// the heads side by side: [B x L x H dh].
torch::Tensor Reference(const torch::Tensor& qkv, int64_t heads, int64_t m,
                        const torch::Tensor& relative_bias) {
  const torch::Tensor q = Part(qkv, heads, 0, m), k = Part(qkv, heads, 1, 0), v = Part(qkv, heads, 2, 0);
  const int64_t l = q.size(2);
  const torch::Tensor bias = go_testing::RelativeBiasReference(relative_bias, m, l);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  const torch::Tensor out =
      torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-1, -2)) * scale + bias, -1), v);
  return out.transpose(1, 2).reshape({qkv.size(0), l, -1});
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
      learned::simd::SetWidthForTesting(width);
      CAPTURE(width);
      CAPTURE(c.l);
      CAPTURE(c.m);
      torch::manual_seed(7);
      // Queries and keys of scale 2, values of scale 1.
      const torch::Tensor scale =
          torch::cat({torch::full({2 * c.heads * c.dh}, 2.0), torch::ones({c.heads * c.dh})});
      const torch::Tensor qkv =
          (torch::randn({c.b, c.m + c.l, 3 * c.heads * c.dh}) * scale).requires_grad_(true);
      const torch::Tensor bias = torch::randn({c.heads, c.r}).requires_grad_(true);
      const torch::Tensor probe = torch::randn({c.b, c.l, c.heads * c.dh});

      const torch::Tensor fused = FusedRelativeAttention(qkv, c.heads, c.m, bias);
      (fused * probe).sum().backward();
      const torch::Tensor dqkv = qkv.grad().clone(), dbias = bias.grad().clone();
      qkv.mutable_grad().zero_();
      bias.mutable_grad().zero_();

      const torch::Tensor reference = Reference(qkv, c.heads, c.m, bias);
      (reference * probe).sum().backward();
      CHECK(torch::allclose(fused, reference, 1e-5, 1e-5));
      CHECK(torch::allclose(dqkv, qkv.grad(), 1e-4, 1e-5));
      CHECK(torch::allclose(dbias, bias.grad(), 1e-4, 1e-5));
      // The memory's queries are not used: exactly zero, not rounding.
      if (c.m > 0) CHECK(dqkv.slice(1, 0, c.m).slice(2, 0, c.heads * c.dh).abs().max().item<float>() == 0.0F);
      // One key alone has weight 1 whatever its bias: no gradient then.
      if (c.m + c.l > 1) CHECK(dbias.abs().sum().item<float>() > 0.0F);
    }
  learned::simd::SetWidthForTesting(0);
}

TEST_CASE("FusedRelativeAttention: takes a strided qkv and refuses tensors of the wrong shape") {
  torch::manual_seed(2);
  // A view whose rows are 64 floats apart, 48 of them used.
  const torch::Tensor qkv = torch::randn({2, 20, 64}).slice(2, 0, 48);
  const torch::Tensor bias = torch::randn({2, 8});
  CHECK_FALSE(qkv.is_contiguous());
  CHECK(torch::allclose(FusedRelativeAttention(qkv, 2, 12, bias), Reference(qkv, 2, 12, bias), 1e-5, 1e-5));
  CHECK_THROWS_AS(FusedRelativeAttention(qkv, 5, 12, bias), ConfigError);  // 48 is not 3 x 5 x dh
  CHECK_THROWS_AS(FusedRelativeAttention(qkv, 2, 20, bias), ConfigError);  // no query left
  CHECK_THROWS_AS(FusedRelativeAttention(qkv, 2, -1, bias), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(qkv, 2, 12, torch::randn({3, 8})), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(qkv.to(torch::kDouble), 2, 12, bias), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(qkv.select(0, 0), 2, 12, bias), ConfigError);
  CHECK_THROWS_AS(FusedRelativeAttention(torch::randn({2, 20, 0}), 2, 12, bias), ConfigError);
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
