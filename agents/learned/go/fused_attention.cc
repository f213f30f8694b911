#include "agents/learned/go/fused_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace gosim::agents::learned::go {

namespace {

// On x86 with GCC the kernels are compiled three times, the CPU's features
// choosing one at run time: for x86-64-v4 (AVX-512) with vectors of 16
// floats, and for x86-64-v3 (AVX2, FMA) and the baseline with vectors of 8
// (the baseline splits each into two SSE registers).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GOSIM_ATTENTION_X86 1
// A function compiled for another -march inlines only what is declared
// always_inline.
#define GOSIM_ATTENTION_INLINE __attribute__((always_inline)) inline
#else
#define GOSIM_ATTENTION_X86 0
#define GOSIM_ATTENTION_INLINE inline
#endif

// Rows of keys are padded with zeros to kLanes floats (the widest vector).
constexpr int64_t kLanes = 16;
// Keys per tile of the backward sweep (BackwardRows).
constexpr int64_t kTile = 128;
// Widest head (model / heads) the kernels take; GO's is 8.
constexpr int64_t kMaxHeadWidth = 256;

struct Head {
  int64_t m = 0, l = 0, dh = 0, stride = 0;
  float scale = 1.0F;
  const float* r = nullptr;  // [stride + kLanes]: r[u] = bias(M + L - 1 - u), zero-padded
};

// Vectors of W floats and of W 32-bit integers (GCC's vector extension),
// unaligned and aliasing floats. Spelled out per width: GCC drops a
// vector_size that depends on a template parameter.
template <int W>
struct VecTypes;
template <>
struct VecTypes<8> {
  typedef float Vec __attribute__((vector_size(32), aligned(alignof(float)), may_alias));
  typedef std::int32_t IntVec __attribute__((vector_size(32), aligned(alignof(float)), may_alias));
};
template <>
struct VecTypes<16> {
  typedef float Vec __attribute__((vector_size(64), aligned(alignof(float)), may_alias));
  typedef std::int32_t IntVec __attribute__((vector_size(64), aligned(alignof(float)), may_alias));
};

// The kernels for vectors of W floats.
template <int W>
struct Kernels {
  using Vec = typename VecTypes<W>::Vec;
  using IntVec = typename VecTypes<W>::IntVec;
  static constexpr int64_t kWidth = W;

  GOSIM_ATTENTION_INLINE static Vec Load(const float* p) { return *reinterpret_cast<const Vec*>(p); }
  GOSIM_ATTENTION_INLINE static void Store(float* p, Vec v) { *reinterpret_cast<Vec*>(p) = v; }
  GOSIM_ATTENTION_INLINE static Vec Splat(float a) { return Vec{} + a; }
  GOSIM_ATTENTION_INLINE static float Sum(Vec v) {
    float sum = 0.0F;
    for (int64_t t = 0; t < kWidth; ++t) sum += v[t];
    return sum;
  }

  // Keys a query's row sweeps: its n visible ones, rounded up to whole vectors.
  GOSIM_ATTENTION_INLINE static int64_t RowLength(int64_t n) { return (n + kWidth - 1) / kWidth * kWidth; }

  // exp(x) for x <= 0 to about 2 ulp, branch-free: x = n ln 2 + r with
  // |r| <= ln 2 / 2, exp(r) by the minimax polynomial of the Cephes library's
  // expf, 2^n written into the exponent; below -87 it returns about 1e-38.
  GOSIM_ATTENTION_INLINE static Vec Exp(Vec x) {
    x = x < -87.0F ? Splat(-87.0F) : x;
    const Vec n = (x * 1.44269504088896341F + 12582912.0F) - 12582912.0F;  // round to nearest
    Vec r = x - n * 0.693359375F;
    r = r - n * -2.12194440e-4F;
    Vec p = Splat(1.9875691500e-4F);
    p = p * r + 1.3981999507e-3F;
    p = p * r + 8.3334519073e-3F;
    p = p * r + 4.1665795894e-2F;
    p = p * r + 1.6666665459e-1F;
    p = p * r + 5.0000001201e-1F;
    p = p * r * r + r + 1.0F;
    const IntVec bits = (__builtin_convertvector(n, IntVec) + 127) << 23;
    return p * reinterpret_cast<const Vec&>(bits);
  }

  // One head of one batch entry: k, v [(M + L) x dh] into kt, vt [dh x stride],
  // zero-padded.
  GOSIM_ATTENTION_INLINE static void Transpose(const float* __restrict rows, int64_t count, int64_t dh,
                                               int64_t stride, float* __restrict columns) {
    std::fill(columns, columns + dh * stride, 0.0F);
    for (int64_t j = 0; j < count; ++j)
      for (int64_t d = 0; d < dh; ++d) columns[d * stride + j] = rows[j * dh + d];
  }

  // Lanes of keys j .. j + kWidth - 1 that query i sees (j' < n = M + i + 1).
  GOSIM_ATTENTION_INLINE static IntVec Visible(int64_t j, int64_t n) {
    IntVec lane;
    for (int t = 0; t < W; ++t) lane[t] = t;
    return (lane + static_cast<std::int32_t>(j)) < static_cast<std::int32_t>(n);
  }

  GOSIM_ATTENTION_INLINE static float Max(Vec v) {
    float top = v[0];
    for (int64_t t = 1; t < kWidth; ++t) top = std::max(top, v[t]);
    return top;
  }

  // The rows of one head of one batch entry. kDh: the head width when fixed at
  // compile time (the loops over it unroll and its accumulators stay in
  // registers), 0 for any width (h.dh). Keys are read transposed, kt and vt
  // [dh x stride], so that a vector holds kWidth keys.
  //
  // Forward, query i: the scores s_j = r[off + j] + sum_d (scale q_id) kt[d][j]
  // and their maximum in one sweep, then exp(s_j - max), their sum and the
  // weighted values in a second; the log-sum-exp is kept for the backward.
  template <int64_t kDh>
  GOSIM_ATTENTION_INLINE static void ForwardRows(const Head& h, const float* __restrict q,
                                                 const float* __restrict kt, const float* __restrict vt,
                                                 float* __restrict s, float* __restrict out,
                                                 float* __restrict lse) {
    const int64_t dh = kDh > 0 ? kDh : h.dh;
    constexpr int64_t kSlots = kDh > 0 ? kDh : kMaxHeadWidth;
    for (int64_t i = 0; i < h.l; ++i) {
      const int64_t n = h.m + i + 1, np = RowLength(n), off = h.l - 1 - i;
      float coef[kSlots];
      for (int64_t d = 0; d < dh; ++d) coef[d] = q[i * dh + d] * h.scale;
      Vec top = Splat(-1e30F);
      for (int64_t j = 0; j < np; j += kWidth) {
        Vec score = Load(h.r + off + j);
        for (int64_t d = 0; d < dh; ++d) score += coef[d] * Load(kt + d * h.stride + j);
        score = Visible(j, n) ? score : Splat(-1e30F);
        Store(s + j, score);
        top = score > top ? score : top;
      }
      const float shift = Max(top);
      Vec sum{};
      Vec acc[kSlots];
      for (int64_t d = 0; d < dh; ++d) acc[d] = Vec{};
      for (int64_t j = 0; j < np; j += kWidth) {
        Vec weight = Exp(Load(s + j) - shift);
        weight = Visible(j, n) ? weight : Vec{};
        sum += weight;
        for (int64_t d = 0; d < dh; ++d) acc[d] += weight * Load(vt + d * h.stride + j);
      }
      const float total = Sum(sum);
      for (int64_t d = 0; d < dh; ++d) out[i * dh + d] = Sum(acc[d]) / total;
      lse[i] = shift + std::log(total);
    }
  }

  // Backward, query i, in one sweep over its keys (tile by tile): the
  // weights p_j again (exp(s_j - lse_i)), dP_j = dO_i . v_j,
  // dS_j = p_j (dP_j - dO_i . O_i), and then dQ_i = scale sum_j dS_j k_j,
  // dK_j += scale dS_j q_i, dV_j += p_j dO_i, dr[off + j] += dS_j.
  template <int64_t kDh>
  GOSIM_ATTENTION_INLINE static void BackwardRows(const Head& h, const float* __restrict q,
                                                  const float* __restrict kt, const float* __restrict vt,
                                                  const float* __restrict out, const float* __restrict lse,
                                                  const float* __restrict dout, float* __restrict dq,
                                                  float* __restrict dkt, float* __restrict dvt,
                                                  float* __restrict dr) {
    const int64_t dh = kDh > 0 ? kDh : h.dh;
    constexpr int64_t kSlots = kDh > 0 ? kDh : kMaxHeadWidth;
    std::fill(dq, dq + h.l * dh, 0.0F);
    // Keys in tiles, so that the tile's slices of kt, vt and their gradients
    // (4 x dh x kTile floats) stay in the L1 cache while every query that sees
    // the tile sweeps it.
    for (int64_t tile = 0; tile < h.m + h.l; tile += kTile) {
      for (int64_t i = std::max<int64_t>(0, tile - h.m); i < h.l; ++i) {
        const int64_t n = h.m + i + 1, end = std::min(RowLength(n), tile + kTile), off = h.l - 1 - i;
        const float* go = dout + i * dh;
        float coef[kSlots];
        float delta = 0.0F;  // dO_i . O_i
        for (int64_t d = 0; d < dh; ++d) {
          coef[d] = q[i * dh + d] * h.scale;
          delta += go[d] * out[i * dh + d];
        }
        Vec acc[kSlots];
        for (int64_t d = 0; d < dh; ++d) acc[d] = Vec{};
        for (int64_t j = tile; j < end; j += kWidth) {
          Vec score = Load(h.r + off + j);
          Vec dp{};
          for (int64_t d = 0; d < dh; ++d) {
            score += coef[d] * Load(kt + d * h.stride + j);
            dp += go[d] * Load(vt + d * h.stride + j);
          }
          Vec weight = Exp(score - lse[i]);
          weight = Visible(j, n) ? weight : Vec{};
          const Vec ds = weight * (dp - delta);
          Store(dr + off + j, Load(dr + off + j) + ds);
          for (int64_t d = 0; d < dh; ++d) {
            acc[d] += ds * Load(kt + d * h.stride + j);
            Store(dkt + d * h.stride + j, Load(dkt + d * h.stride + j) + coef[d] * ds);
            Store(dvt + d * h.stride + j, Load(dvt + d * h.stride + j) + go[d] * weight);
          }
        }
        for (int64_t d = 0; d < dh; ++d) dq[i * dh + d] += h.scale * Sum(acc[d]);
      }
    }
  }

  GOSIM_ATTENTION_INLINE static void ForwardHead(const Head& h, const float* q, const float* k,
                                                 const float* v, float* out, float* lse, float* work) {
    float* kt = work;
    float* vt = kt + h.dh * h.stride;
    float* s = vt + h.dh * h.stride;
    Transpose(k, h.m + h.l, h.dh, h.stride, kt);
    Transpose(v, h.m + h.l, h.dh, h.stride, vt);
    switch (h.dh) {
      case 4:
        ForwardRows<4>(h, q, kt, vt, s, out, lse);
        break;
      case 8:
        ForwardRows<8>(h, q, kt, vt, s, out, lse);
        break;
      case 16:
        ForwardRows<16>(h, q, kt, vt, s, out, lse);
        break;
      default:
        ForwardRows<0>(h, q, kt, vt, s, out, lse);
    }
  }

  GOSIM_ATTENTION_INLINE static void BackwardHead(const Head& h, const float* q, const float* k,
                                                  const float* v, const float* out, const float* lse,
                                                  const float* dout, float* dq, float* dk, float* dv,
                                                  float* dr, float* work) {
    const int64_t block = h.dh * h.stride;
    float* kt = work;
    float* vt = kt + block;
    float* dkt = vt + block;
    float* dvt = dkt + block;
    Transpose(k, h.m + h.l, h.dh, h.stride, kt);
    Transpose(v, h.m + h.l, h.dh, h.stride, vt);
    std::fill(dkt, dkt + 2 * block, 0.0F);
    switch (h.dh) {
      case 4:
        BackwardRows<4>(h, q, kt, vt, out, lse, dout, dq, dkt, dvt, dr);
        break;
      case 8:
        BackwardRows<8>(h, q, kt, vt, out, lse, dout, dq, dkt, dvt, dr);
        break;
      case 16:
        BackwardRows<16>(h, q, kt, vt, out, lse, dout, dq, dkt, dvt, dr);
        break;
      default:
        BackwardRows<0>(h, q, kt, vt, out, lse, dout, dq, dkt, dvt, dr);
    }
    for (int64_t j = 0; j < h.m + h.l; ++j)
      for (int64_t d = 0; d < h.dh; ++d) {
        dk[j * h.dh + d] = dkt[d * h.stride + j];
        dv[j * h.dh + d] = dvt[d * h.stride + j];
      }
  }
};

#define GOSIM_FORWARD_HEAD_ARGS \
  const Head &h, const float *q, const float *k, const float *v, float *out, float *lse, float *work
#define GOSIM_BACKWARD_HEAD_ARGS                                                                     \
  const Head &h, const float *q, const float *k, const float *v, const float *out, const float *lse, \
      const float *dout, float *dq, float *dk, float *dv, float *dr, float *work
#if GOSIM_ATTENTION_X86
__attribute__((target("arch=x86-64-v4"))) void ForwardHeadV4(GOSIM_FORWARD_HEAD_ARGS) {
  Kernels<16>::ForwardHead(h, q, k, v, out, lse, work);
}
__attribute__((target_clones("arch=x86-64-v3", "default"))) void ForwardHeadV3(GOSIM_FORWARD_HEAD_ARGS) {
  Kernels<8>::ForwardHead(h, q, k, v, out, lse, work);
}
__attribute__((target("arch=x86-64-v4"))) void BackwardHeadV4(GOSIM_BACKWARD_HEAD_ARGS) {
  Kernels<16>::BackwardHead(h, q, k, v, out, lse, dout, dq, dk, dv, dr, work);
}
__attribute__((target_clones("arch=x86-64-v3", "default"))) void BackwardHeadV3(GOSIM_BACKWARD_HEAD_ARGS) {
  Kernels<8>::BackwardHead(h, q, k, v, out, lse, dout, dq, dk, dv, dr, work);
}
std::atomic<int> forced_width{0};  // SetFusedAttentionWidthForTesting
bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("x86-64-v4");
  return has && forced_width.load(std::memory_order_relaxed) != 8;
}
void ForwardHead(GOSIM_FORWARD_HEAD_ARGS) {
  HasAvx512() ? ForwardHeadV4(h, q, k, v, out, lse, work) : ForwardHeadV3(h, q, k, v, out, lse, work);
}
void BackwardHead(GOSIM_BACKWARD_HEAD_ARGS) {
  HasAvx512() ? BackwardHeadV4(h, q, k, v, out, lse, dout, dq, dk, dv, dr, work)
              : BackwardHeadV3(h, q, k, v, out, lse, dout, dq, dk, dv, dr, work);
}
#else
void ForwardHead(GOSIM_FORWARD_HEAD_ARGS) {
  Kernels<8>::ForwardHead(h, q, k, v, out, lse, work);
}
void BackwardHead(GOSIM_BACKWARD_HEAD_ARGS) {
  Kernels<8>::BackwardHead(h, q, k, v, out, lse, dout, dq, dk, dv, dr, work);
}
#endif
#undef GOSIM_FORWARD_HEAD_ARGS
#undef GOSIM_BACKWARD_HEAD_ARGS

// Floats between the rows of kt, vt and their gradients: the keys rounded up
// to kLanes, plus kLanes so that a power-of-two row count (512 in GO's trunk)
// does not put the 32 rows the backward sweeps in the same few cache sets.
int64_t RoundUp(int64_t n) {
  return (n + kLanes - 1) / kLanes * kLanes;
}

struct Shape {
  int64_t b = 0, heads = 0, l = 0, m = 0, dh = 0, relative = 0;
};

Shape Check(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
            const torch::Tensor& relative_bias) {
  auto fail = [](const std::string& what) {
    throw ConfigError("fused attention: " + what, {}, "pass float32 CPU tensors of the documented shapes");
  };
  for (const torch::Tensor* t : {&q, &k, &v})
    if (t->dim() != 4 || t->scalar_type() != torch::kFloat || !t->device().is_cpu())
      fail("q, k, v must be float32 CPU tensors [B x H x len x dh]");
  if (relative_bias.dim() != 2 || relative_bias.scalar_type() != torch::kFloat || relative_bias.size(1) < 1)
    fail("relative_bias must be a float32 tensor [H x R], R >= 1");
  Shape s{q.size(0), q.size(1), q.size(2), k.size(2) - q.size(2), q.size(3), relative_bias.size(1)};
  if (s.dh < 1 || s.dh > kMaxHeadWidth) fail("head width " + std::to_string(s.dh) + " outside 1 .. 256");
  if (k.sizes() != v.sizes() || k.size(0) != s.b || k.size(1) != s.heads || k.size(3) != s.dh || s.m < 0 ||
      relative_bias.size(0) != s.heads)
    fail("k and v must be [B x H x (M + L) x dh] for q [B x H x L x dh] and relative_bias [H x R]");
  return s;
}

int64_t Stride(const Shape& s) {
  return RoundUp(s.m + s.l) + kLanes;
}

// r per head: r[u] = relative_bias[h][min(M + L - 1 - u, R - 1)] for
// u < M + L, then zeros; [H x (stride + kLanes)].
std::vector<float> ReversedBias(const Shape& s, int64_t stride, const torch::Tensor& relative_bias) {
  const torch::Tensor bias = relative_bias.contiguous();
  const float* data = bias.data_ptr<float>();
  const int64_t width = stride + kLanes;
  std::vector<float> r(static_cast<size_t>(s.heads * width), 0.0F);
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t u = 0; u < s.m + s.l; ++u)
      r[static_cast<size_t>(h * width + u)] =
          data[h * s.relative + std::min(s.m + s.l - 1 - u, s.relative - 1)];
  return r;
}

Head MakeHead(const Shape& s, int64_t stride, const std::vector<float>& r, int64_t h) {
  Head head;
  head.m = s.m;
  head.l = s.l;
  head.dh = s.dh;
  head.stride = stride;
  head.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.dh)));
  head.r = r.data() + h * (stride + kLanes);
  return head;
}

class FusedAttentionFunction : public torch::autograd::Function<FusedAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q_in,
                               const torch::Tensor& k_in, const torch::Tensor& v_in,
                               const torch::Tensor& relative_bias) {
    const Shape s = Check(q_in, k_in, v_in, relative_bias);
    const torch::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
    torch::Tensor out = torch::empty({s.b, s.heads, s.l, s.dh});
    torch::Tensor lse = torch::empty({s.b, s.heads, s.l});
    const int64_t stride = Stride(s);
    const std::vector<float> r = ReversedBias(s, stride, relative_bias);
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    float *op = out.data_ptr<float>(), *lp = lse.data_ptr<float>();
    at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> work(static_cast<size_t>((2 * s.dh + 1) * stride));
      for (int64_t t = begin; t < end; ++t) {
        const Head head = MakeHead(s, stride, r, t % s.heads);
        ForwardHead(head, qp + t * s.l * s.dh, kp + t * (s.m + s.l) * s.dh, vp + t * (s.m + s.l) * s.dh,
                    op + t * s.l * s.dh, lp + t * s.l, work.data());
      }
    });
    ctx->save_for_backward({q, k, v, relative_bias, out, lse});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &relative_bias = saved[3];
    const torch::Tensor &out = saved[4], &lse = saved[5];
    const Shape s = Check(q, k, v, relative_bias);
    const torch::Tensor dout = grads[0].contiguous();
    torch::Tensor dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(v);
    const int64_t stride = Stride(s), width = stride + kLanes;
    const std::vector<float> r = ReversedBias(s, stride, relative_bias);
    std::vector<float> dr(static_cast<size_t>(s.b * s.heads * width), 0.0F);
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *op = out.data_ptr<float>(), *lp = lse.data_ptr<float>(), *gp = dout.data_ptr<float>();
    float *dqp = dq.data_ptr<float>(), *dkp = dk.data_ptr<float>(), *dvp = dv.data_ptr<float>();
    at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> work(static_cast<size_t>(4 * s.dh * stride));
      for (int64_t t = begin; t < end; ++t) {
        const Head head = MakeHead(s, stride, r, t % s.heads);
        const int64_t qo = t * s.l * s.dh, ko = t * (s.m + s.l) * s.dh;
        BackwardHead(head, qp + qo, kp + ko, vp + ko, op + qo, lp + t * s.l, gp + qo, dqp + qo, dkp + ko,
                     dvp + ko, dr.data() + t * width, work.data());
      }
    });
    // dr[u] is the gradient of r[u] = relative_bias[h][min(M + L - 1 - u, R - 1)].
    torch::Tensor dbias = torch::zeros({s.heads, s.relative});
    float* db = dbias.data_ptr<float>();
    for (int64_t t = 0; t < s.b * s.heads; ++t) {
      const int64_t h = t % s.heads;
      for (int64_t u = 0; u < s.m + s.l; ++u)
        db[h * s.relative + std::min(s.m + s.l - 1 - u, s.relative - 1)] +=
            dr[static_cast<size_t>(t * width + u)];
    }
    return {dq, dk, dv, dbias};
  }
};

}  // namespace

void SetFusedAttentionWidthForTesting(int width) {
#if GOSIM_ATTENTION_X86
  forced_width.store(width, std::memory_order_relaxed);
#else
  (void)width;
#endif
}

torch::Tensor FusedRelativeAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& relative_bias) {
  return FusedAttentionFunction::apply(q, k, v, relative_bias);
}

}  // namespace gosim::agents::learned::go
