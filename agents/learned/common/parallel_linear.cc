#include "agents/learned/common/parallel_linear.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "agents/learned/common/simd.h"
#include "core/error.h"

namespace gosim::agents::learned {

namespace {

// Rows per chunk of the weight gradient's sum: fixed, so that the order of
// the sum (and its rounding) does not depend on the thread count.
constexpr int64_t kChunk = 1024;
// Rows below which the forward pass and dL/dx stay on one thread.
constexpr int64_t kGrain = 256;

// out[r][c] = bias[c] + sum_i a[r * a_row + i * a_inner] * b[i * b_row + c]
// for i < inner, the rows r Rows is given and the columns c < cols; b and
// bias are padded with zeros to b_row >= PadToLanes(cols) columns, so that
// whole vectors can be read.
struct Product {
  const float* a = nullptr;
  int64_t a_row = 0, a_inner = 0, inner = 0;
  const float* b = nullptr;
  int64_t b_row = 0;
  const float* bias = nullptr;  // or none: zeros
  int64_t cols = 0;
  float* out = nullptr;
  int64_t out_row = 0;
};

template <int W>
struct LinearKernels : simd::Ops<W> {
  using Base = simd::Ops<W>;
  using Base::Load;
  using Base::Store;
  using typename Base::Vec;
  // A block of kRows rows x kPanel vectors of columns: its accumulators stay
  // in registers (16 of the 32 AVX-512 registers, 8 of the 16 AVX2 ones).
  static constexpr int kRows = 4;
  static constexpr int kPanel = W == 16 ? 4 : 2;

  // The first `count` lanes of v, count < W. The lanes are read at indices
  // known at compile time: an index known only at run time (or a copy
  // through a buffer) would keep every accumulator of Block in memory.
  GOSIM_SIMD_INLINE static void StorePartial(float* o, Vec v, int64_t count) {
#pragma GCC unroll 16
    for (int t = 0; t < W; ++t)
      if (t < count) o[t] = v[t];
  }

  template <int R, int V>
  GOSIM_SIMD_INLINE static void Block(const Product& p, int64_t r0, int64_t c0) {
    Vec acc[R * V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const Vec init = p.bias != nullptr ? Load(p.bias + c0 + v * W) : Vec{};
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r * V + v] = init;
    }
    const float* a = p.a + r0 * p.a_row;
    const float* b = p.b + c0;
    for (int64_t i = 0; i < p.inner; ++i, a += p.a_inner, b += p.b_row) {
      Vec column[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) column[v] = Load(b + v * W);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const float x = a[r * p.a_row];  // a scalar operand is broadcast
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r * V + v] += x * column[v];
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        const int64_t c = c0 + v * W;
        float* o = p.out + (r0 + r) * p.out_row + c;
        if (c + W <= p.cols) {
          Store(o, acc[r * V + v]);
        } else {
          StorePartial(o, acc[r * V + v], p.cols - c);
        }
      }
  }

  template <int R>
  GOSIM_SIMD_INLINE static void Panels(const Product& p, int64_t r0) {
    const int64_t vectors = (p.cols + W - 1) / W;
    int64_t v0 = 0;
    for (; v0 + kPanel <= vectors; v0 += kPanel) Block<R, kPanel>(p, r0, v0 * W);
    switch (vectors - v0) {
      case 1:
        Block<R, 1>(p, r0, v0 * W);
        break;
      case 2:
        Block<R, 2>(p, r0, v0 * W);
        break;
      case 3:
        Block<R, 3>(p, r0, v0 * W);
        break;
      default:
        break;
    }
  }

  GOSIM_SIMD_INLINE static void Rows(const Product& p, int64_t begin, int64_t end) {
    int64_t r = begin;
    for (; r + kRows <= end; r += kRows) Panels<kRows>(p, r);
    for (; r < end; ++r) Panels<1>(p, r);
  }
};

#if GOSIM_SIMD_X86
__attribute__((target("arch=x86-64-v4"))) void RowsV4(const Product& p, int64_t begin, int64_t end) {
  LinearKernels<16>::Rows(p, begin, end);
}
__attribute__((target_clones("arch=x86-64-v3", "default"))) void RowsV3(const Product& p, int64_t begin,
                                                                        int64_t end) {
  LinearKernels<8>::Rows(p, begin, end);
}
void Rows(const Product& p, int64_t begin, int64_t end) {
  simd::UseWide() ? RowsV4(p, begin, end) : RowsV3(p, begin, end);
}
#else
void Rows(const Product& p, int64_t begin, int64_t end) {
  LinearKernels<8>::Rows(p, begin, end);
}
#endif

// out [rows x cols] = a [rows x inner] b [inner x PadToLanes(cols)] (+ bias,
// padded), all contiguous, the rows split over torch's threads.
void RowsInParallel(const float* a, int64_t rows, int64_t inner, const float* b, int64_t cols,
                    const float* bias, float* out) {
  Product p;
  p.a = a;
  p.a_row = inner;
  p.a_inner = 1;
  p.inner = inner;
  p.b = b;
  p.b_row = simd::PadToLanes(cols);
  p.bias = bias;
  p.cols = cols;
  p.out = out;
  p.out_row = cols;
  at::parallel_for(0, rows, kGrain, [&](int64_t begin, int64_t end) { Rows(p, begin, end); });
}

// m [rows x cols] (contiguous), transposed or not, into [.. x PadToLanes(..)]
// with zero padding.
std::vector<float> PackPadded(const torch::Tensor& m, bool transpose) {
  const int64_t rows = m.size(0), cols = m.size(1);
  const float* data = m.data_ptr<float>();
  const int64_t out_rows = transpose ? cols : rows, width = simd::PadToLanes(transpose ? rows : cols);
  std::vector<float> out(static_cast<size_t>(out_rows * width), 0.0F);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(transpose ? c * width + r : r * width + c)] = data[r * cols + c];
  return out;
}

void CheckArguments(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  auto fail = [](const std::string& what) {
    throw ConfigError("parallel linear: " + what, {}, "pass float32 CPU tensors of the documented shapes");
  };
  for (const torch::Tensor* t : {&x, &weight})
    if (t->scalar_type() != torch::kFloat || !t->device().is_cpu())
      fail("x and weight must be float32 CPU tensors");
  if (weight.dim() != 2 || x.dim() < 1 || x.size(-1) != weight.size(1))
    fail("x [... x K] needs weight [N x K]; got x's last dimension " +
         std::to_string(x.dim() < 1 ? 0 : x.size(-1)) + " and weight of " + std::to_string(weight.dim()) +
         " dimensions");
  if (bias.defined() && (bias.scalar_type() != torch::kFloat || !bias.device().is_cpu() || bias.dim() != 1 ||
                         bias.size(0) != weight.size(0)))
    fail("bias must be a float32 CPU tensor [N]");
}

class ParallelLinearFunction : public torch::autograd::Function<ParallelLinearFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight_in, const torch::Tensor& bias) {
    // bias: [N], or [0] for none (a custom function takes no undefined input).
    const bool has_bias = bias.numel() > 0;
    const int64_t n = weight_in.size(0), k = weight_in.size(1);
    const torch::Tensor x = x_in.reshape({-1, k}).contiguous(), weight = weight_in.contiguous();
    const int64_t rows = x.size(0);
    torch::Tensor y = torch::empty({rows, n}, x.options());
    const std::vector<float> wt = PackPadded(weight, /*transpose=*/true);  // [K x PadToLanes(N)]
    std::vector<float> padded_bias(static_cast<size_t>(simd::PadToLanes(n)), 0.0F);
    if (has_bias) {
      const torch::Tensor b = bias.contiguous();
      std::copy(b.data_ptr<float>(), b.data_ptr<float>() + n, padded_bias.begin());
    }
    RowsInParallel(x.data_ptr<float>(), rows, k, wt.data(), n, padded_bias.data(), y.data_ptr<float>());
    ctx->saved_data["bias"] = has_bias;
    ctx->save_for_backward({x, weight});
    std::vector<int64_t> shape = x_in.sizes().vec();
    shape.back() = n;
    return y.view(shape);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1];
    const int64_t n = weight.size(0), k = weight.size(1), rows = x.size(0);
    const torch::Tensor dy = grads[0].reshape({rows, n}).contiguous();
    const float* g = dy.data_ptr<float>();
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) {
      // dx = dy W: rows of dy against W [N x PadToLanes(K)].
      dx = torch::empty({rows, k}, x.options());
      const std::vector<float> w = PackPadded(weight, /*transpose=*/false);
      RowsInParallel(g, rows, n, w.data(), k, nullptr, dx.data_ptr<float>());
    }
    const bool want_weight = ctx->needs_input_grad(1);
    const bool want_bias = ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2);
    if (want_weight || want_bias) {
      // dW = dy^T x and db = the sum of dy's rows, per chunk of rows, then
      // the chunks summed in order.
      const int64_t chunks = (rows + kChunk - 1) / kChunk, kp = simd::PadToLanes(k);
      std::vector<float> partial(static_cast<size_t>(want_weight ? chunks * n * kp : 0), 0.0F);
      std::vector<float> partial_bias(static_cast<size_t>(want_bias ? chunks * n : 0), 0.0F);
      const float* xp = x.data_ptr<float>();
      at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> packed(static_cast<size_t>(want_weight ? kChunk * kp : 0), 0.0F);
        for (int64_t c = begin; c < end; ++c) {
          const int64_t r0 = c * kChunk, r1 = std::min(rows, r0 + kChunk);
          if (want_weight) {
            for (int64_t r = r0; r < r1; ++r)
              std::copy(xp + r * k, xp + (r + 1) * k, packed.data() + (r - r0) * kp);
            Product p;  // rows: the N outputs; inner: the chunk's rows
            p.a = g + r0 * n;
            p.a_row = 1;
            p.a_inner = n;
            p.inner = r1 - r0;
            p.b = packed.data();
            p.b_row = kp;
            p.cols = kp;
            p.out = partial.data() + c * n * kp;
            p.out_row = kp;
            Rows(p, 0, n);
          }
          if (want_bias) {
            float* pb = partial_bias.data() + c * n;
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t j = 0; j < n; ++j) pb[j] += g[r * n + j];
          }
        }
      });
      if (want_weight) {
        dweight = torch::zeros({n, k}, x.options());
        float* dw = dweight.data_ptr<float>();
        for (int64_t c = 0; c < chunks; ++c)
          for (int64_t j = 0; j < n; ++j)
            for (int64_t t = 0; t < k; ++t)
              dw[j * k + t] += partial[static_cast<size_t>((c * n + j) * kp + t)];
      }
      if (want_bias) {
        dbias = torch::zeros({n}, x.options());
        float* db = dbias.data_ptr<float>();
        for (int64_t c = 0; c < chunks; ++c)
          for (int64_t j = 0; j < n; ++j) db[j] += partial_bias[static_cast<size_t>(c * n + j)];
      }
    }
    if (dx.defined()) {
      std::vector<int64_t> shape = grads[0].sizes().vec();
      shape.back() = k;
      dx = dx.view(shape);
    }
    return {dx, dweight, dbias};
  }
};

}  // namespace

torch::Tensor ParallelLinear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  CheckArguments(x, weight, bias);
  return ParallelLinearFunction::apply(x, weight, bias.defined() ? bias : torch::empty({0}));
}

torch::Tensor ParallelLinear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return ParallelLinear(x, layer->weight, layer->bias);
}

torch::Tensor RunLinear(torch::nn::Linear& layer, const torch::Tensor& x, bool parallel) {
  return parallel ? ParallelLinear(x, layer) : layer(x);
}

}  // namespace gosim::agents::learned
