// Tests of the row-parallel linear layer (agents/learned/common/
// parallel_linear.h): its output and its gradients in x, the weight and the
// bias against torch's linear, for row counts around the kernels' blocks and
// the gradient's chunks and widths around their vectors and panels, with
// both kernel widths; the same numbers bit for bit whatever the thread
// count; and bad arguments refused.
#include <vector>

#include "agents/learned/common/parallel_linear.h"
#include "agents/learned/common/simd.h"
#include "core/error.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents::learned {
namespace {

namespace F = torch::nn::functional;

struct Grads {
  torch::Tensor y, dx, dw, db;
};

// y = linear(x, w, b) (torch's or ParallelLinear), then the gradients of
// sum(y * probe).
Grads Run(bool parallel, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
          const torch::Tensor& probe) {
  const torch::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const torch::Tensor b = b0.defined() ? b0.clone().requires_grad_(true) : torch::Tensor();
  const torch::Tensor y = parallel ? ParallelLinear(x, w, b) : F::linear(x, w, b);
  (y * probe).sum().backward();
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

struct Case {
  std::vector<int64_t> leading;  // x: [leading... x K]
  int64_t k, n;
  bool bias;
};

TEST_CASE("ParallelLinear: output and gradients equal torch's linear") {
  // Rows: 1, fewer than a block of 4, not a multiple of it, more than one
  // chunk of the weight's gradient (1,024) with a short last one; widths K
  // and N of 1, under a vector, between vectors, over one panel (64 floats
  // with AVX-512, 16 with 8-float vectors) and GO's 32, 59 and 96.
  const std::vector<Case> cases = {
      {{1}, 1, 1, true},     {{3}, 5, 2, true},          {{7}, 32, 96, true},    {{2, 130}, 59, 32, false},
      {{2500}, 32, 8, true}, {{3, 5, 9}, 17, 130, true}, {{1100}, 64, 32, true}, {{6}, 16, 16, false}};
  for (const int width : {0, 8})
    for (const Case& c : cases) {
      simd::SetWidthForTesting(width);
      CAPTURE(width);
      CAPTURE(c.k);
      CAPTURE(c.n);
      torch::manual_seed(3);
      std::vector<int64_t> shape = c.leading;
      shape.push_back(c.k);
      const torch::Tensor x = torch::randn(shape), w = torch::randn({c.n, c.k});
      const torch::Tensor b = c.bias ? torch::randn({c.n}) : torch::Tensor();
      shape.back() = c.n;
      const torch::Tensor probe = torch::randn(shape);
      const Grads ours = Run(true, x, w, b, probe), reference = Run(false, x, w, b, probe);
      CHECK(ours.y.sizes() == reference.y.sizes());
      CHECK(torch::allclose(ours.y, reference.y, 1e-4, 1e-4));
      CHECK(torch::allclose(ours.dx, reference.dx, 1e-4, 1e-4));
      CHECK(torch::allclose(ours.dw, reference.dw, 1e-4, 1e-3));
      if (c.bias) CHECK(torch::allclose(ours.db, reference.db, 1e-4, 1e-3));
    }
  simd::SetWidthForTesting(0);
}

TEST_CASE("ParallelLinear: the same numbers bit for bit with 1, 2 and 3 threads") {
  // 5,001 rows: the threads' shares are not all multiples of the kernels'
  // blocks of 4 rows, and the last chunk of the weight's gradient is short.
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({5001, 32}), w = torch::randn({96, 32}), b = torch::randn({96});
  const torch::Tensor probe = torch::randn({5001, 96});
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  const Grads one = Run(true, x, w, b, probe);
  for (const int more : {2, 3}) {
    CAPTURE(more);
    torch::set_num_threads(more);
    const Grads other = Run(true, x, w, b, probe);
    CHECK(torch::equal(one.y, other.y));
    CHECK(torch::equal(one.dx, other.dx));
    CHECK(torch::equal(one.dw, other.dw));
    CHECK(torch::equal(one.db, other.db));
  }
  torch::set_num_threads(threads);
}

TEST_CASE("ParallelLinear: gradients only where asked, and bad arguments refused") {
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({10, 4});
  const torch::Tensor w = torch::randn({3, 4}).requires_grad_(true);
  ParallelLinear(x, w, torch::Tensor()).sum().backward();
  CHECK(w.grad().defined());
  CHECK_FALSE(x.grad().defined());
  // A frozen weight and a bias that learns: the bias's gradient alone, equal
  // to torch's.
  const torch::Tensor frozen = torch::randn({3, 4});
  const torch::Tensor b = torch::randn({3}).requires_grad_(true),
                      b2 = b.detach().clone().requires_grad_(true);
  const torch::Tensor probe = torch::randn({10, 3});
  (ParallelLinear(x, frozen, b) * probe).sum().backward();
  (F::linear(x, frozen, b2) * probe).sum().backward();
  CHECK_FALSE(frozen.grad().defined());
  CHECK(torch::allclose(b.grad(), b2.grad(), 1e-5, 1e-5));

  CHECK_THROWS_AS(ParallelLinear(x, torch::randn({3, 5}), torch::Tensor()), ConfigError);
  CHECK_THROWS_AS(ParallelLinear(x, torch::randn({3, 4}), torch::randn({4})), ConfigError);
  CHECK_THROWS_AS(ParallelLinear(x.to(torch::kDouble), torch::randn({3, 4}), torch::Tensor()), ConfigError);
  CHECK_THROWS_AS(ParallelLinear(x, torch::randn({12}), torch::Tensor()), ConfigError);
}

}  // namespace
}  // namespace gosim::agents::learned
