#include "agents/learned/go/fused_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "agents/learned/common/simd.h"
#include "core/error.h"

namespace gosim::agents::learned::go {

namespace {

// The kernels' vectors and their choice at run time: common/simd.h. Rows of
// keys are padded with zeros to kLanes floats (the widest vector).
constexpr int64_t kLanes = simd::kMaxLanes;
// Keys per tile of the backward sweep (BackwardRows).
constexpr int64_t kTile = 128;
// Widest head (model / heads) the kernels take; GO's is 8.
constexpr int64_t kMaxHeadWidth = 256;

// One head of one batch entry. Its queries (and their gradients) are rows
// qs floats apart, its keys and values (and theirs) rows ks apart, and its
// outputs (and their gradients) rows os apart: columns of the packed
// [B x (M + L) x 3d] and [B x L x d] tensors.
struct Head {
  int64_t m = 0, l = 0, dh = 0, stride = 0;
  int64_t qs = 0, ks = 0, os = 0;
  float scale = 1.0F;
  const float* r = nullptr;  // [stride + kLanes]: r[u] = bias(M + L - 1 - u), zero-padded
};

// The kernels for vectors of W floats.
template <int W>
struct Kernels : simd::Ops<W> {
  using Base = simd::Ops<W>;
  using Base::kWidth;
  using Base::Load;
  using Base::Splat;
  using Base::Store;
  using Base::Sum;
  using typename Base::IntVec;
  using typename Base::Vec;

  // Keys a query's row sweeps: its n visible ones, rounded up to whole vectors.
  GOSIM_SIMD_INLINE static int64_t RowLength(int64_t n) { return Base::RoundUp(n); }

  // exp(x) for x <= 0 to about 2 ulp, branch-free: x = n ln 2 + r with
  // |r| <= ln 2 / 2, exp(r) by the minimax polynomial of the Cephes library's
  // expf, 2^n written into the exponent; below -87 it returns about 1e-38.
  GOSIM_SIMD_INLINE static Vec Exp(Vec x) {
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

  // One head of one batch entry: k, v [(M + L) x dh] (rows ks floats apart)
  // into kt, vt [dh x stride], zero-padded.
  GOSIM_SIMD_INLINE static void Transpose(const float* __restrict rows, int64_t ks, int64_t count, int64_t dh,
                                          int64_t stride, float* __restrict columns) {
    std::fill(columns, columns + dh * stride, 0.0F);
    for (int64_t j = 0; j < count; ++j)
      for (int64_t d = 0; d < dh; ++d) columns[d * stride + j] = rows[j * ks + d];
  }

  // Lanes of keys j .. j + kWidth - 1 that query i sees (j' < n = M + i + 1).
  GOSIM_SIMD_INLINE static IntVec Visible(int64_t j, int64_t n) {
    IntVec lane;
    for (int t = 0; t < W; ++t) lane[t] = t;
    return (lane + static_cast<std::int32_t>(j)) < static_cast<std::int32_t>(n);
  }

  GOSIM_SIMD_INLINE static float Max(Vec v) {
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
  GOSIM_SIMD_INLINE static void ForwardRows(const Head& h, const float* __restrict q,
                                            const float* __restrict kt, const float* __restrict vt,
                                            float* __restrict s, float* __restrict out,
                                            float* __restrict lse) {
    const int64_t dh = kDh > 0 ? kDh : h.dh;
    constexpr int64_t kSlots = kDh > 0 ? kDh : kMaxHeadWidth;
    for (int64_t i = 0; i < h.l; ++i) {
      const int64_t n = h.m + i + 1, np = RowLength(n), off = h.l - 1 - i;
      float coef[kSlots];
      for (int64_t d = 0; d < dh; ++d) coef[d] = q[i * h.qs + d] * h.scale;
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
      for (int64_t d = 0; d < dh; ++d) out[i * h.os + d] = Sum(acc[d]) / total;
      lse[i] = shift + std::log(total);
    }
  }

  // Backward, query i, in one sweep over its keys (tile by tile): the
  // weights p_j again (exp(s_j - lse_i)), dP_j = dO_i . v_j,
  // dS_j = p_j (dP_j - dO_i . O_i), and then dQ_i = scale sum_j dS_j k_j,
  // dK_j += scale dS_j q_i, dV_j += p_j dO_i, dr[off + j] += dS_j.
  template <int64_t kDh>
  GOSIM_SIMD_INLINE static void BackwardRows(const Head& h, const float* __restrict q,
                                             const float* __restrict kt, const float* __restrict vt,
                                             const float* __restrict out, const float* __restrict lse,
                                             const float* __restrict dout, float* __restrict dq,
                                             float* __restrict dkt, float* __restrict dvt,
                                             float* __restrict dr) {
    const int64_t dh = kDh > 0 ? kDh : h.dh;
    constexpr int64_t kSlots = kDh > 0 ? kDh : kMaxHeadWidth;
    for (int64_t i = 0; i < h.l; ++i) std::fill(dq + i * h.qs, dq + i * h.qs + dh, 0.0F);
    // Keys in tiles, so that the tile's slices of kt, vt and their gradients
    // (4 x dh x kTile floats) stay in the L1 cache while every query that sees
    // the tile sweeps it.
    for (int64_t tile = 0; tile < h.m + h.l; tile += kTile) {
      for (int64_t i = std::max<int64_t>(0, tile - h.m); i < h.l; ++i) {
        const int64_t n = h.m + i + 1, end = std::min(RowLength(n), tile + kTile), off = h.l - 1 - i;
        const float* go = dout + i * h.os;
        float coef[kSlots];
        float delta = 0.0F;  // dO_i . O_i
        for (int64_t d = 0; d < dh; ++d) {
          coef[d] = q[i * h.qs + d] * h.scale;
          delta += go[d] * out[i * h.os + d];
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
          // Keys the query does not see get no weight; their scores are
          // set low first, as in the forward, so that Exp never sees a
          // large argument.
          const IntVec visible = Visible(j, n);
          score = visible ? score : Splat(-1e30F);
          Vec weight = Exp(score - lse[i]);
          weight = visible ? weight : Vec{};
          const Vec ds = weight * (dp - delta);
          Store(dr + off + j, Load(dr + off + j) + ds);
          for (int64_t d = 0; d < dh; ++d) {
            acc[d] += ds * Load(kt + d * h.stride + j);
            Store(dkt + d * h.stride + j, Load(dkt + d * h.stride + j) + coef[d] * ds);
            Store(dvt + d * h.stride + j, Load(dvt + d * h.stride + j) + go[d] * weight);
          }
        }
        for (int64_t d = 0; d < dh; ++d) dq[i * h.qs + d] += h.scale * Sum(acc[d]);
      }
    }
  }

  GOSIM_SIMD_INLINE static void ForwardHead(const Head& h, const float* q, const float* k, const float* v,
                                            float* out, float* lse, float* work) {
    float* kt = work;
    float* vt = kt + h.dh * h.stride;
    float* s = vt + h.dh * h.stride;
    Transpose(k, h.ks, h.m + h.l, h.dh, h.stride, kt);
    Transpose(v, h.ks, h.m + h.l, h.dh, h.stride, vt);
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

  GOSIM_SIMD_INLINE static void BackwardHead(const Head& h, const float* q, const float* k, const float* v,
                                             const float* out, const float* lse, const float* dout, float* dq,
                                             float* dk, float* dv, float* dr, float* work) {
    const int64_t block = h.dh * h.stride;
    float* kt = work;
    float* vt = kt + block;
    float* dkt = vt + block;
    float* dvt = dkt + block;
    Transpose(k, h.ks, h.m + h.l, h.dh, h.stride, kt);
    Transpose(v, h.ks, h.m + h.l, h.dh, h.stride, vt);
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
        dk[j * h.ks + d] = dkt[d * h.stride + j];
        dv[j * h.ks + d] = dvt[d * h.stride + j];
      }
  }
};

#define GOSIM_FORWARD_HEAD_ARGS \
  const Head &h, const float *q, const float *k, const float *v, float *out, float *lse, float *work
#define GOSIM_BACKWARD_HEAD_ARGS                                                                     \
  const Head &h, const float *q, const float *k, const float *v, const float *out, const float *lse, \
      const float *dout, float *dq, float *dk, float *dv, float *dr, float *work
#if GOSIM_SIMD_X86
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
void ForwardHead(GOSIM_FORWARD_HEAD_ARGS) {
  simd::UseWide() ? ForwardHeadV4(h, q, k, v, out, lse, work) : ForwardHeadV3(h, q, k, v, out, lse, work);
}
void BackwardHead(GOSIM_BACKWARD_HEAD_ARGS) {
  simd::UseWide() ? BackwardHeadV4(h, q, k, v, out, lse, dout, dq, dk, dv, dr, work)
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

struct Shape {
  int64_t b = 0, heads = 0, l = 0, m = 0, dh = 0, relative = 0;
  int64_t d() const { return heads * dh; }
  int64_t rows() const { return m + l; }
};

Shape Check(const torch::Tensor& qkv, int64_t heads, int64_t memory, const torch::Tensor& relative_bias) {
  auto fail = [](const std::string& what) {
    throw ConfigError("fused attention: " + what, {}, "pass float32 CPU tensors of the documented shapes");
  };
  if (qkv.dim() != 3 || qkv.scalar_type() != torch::kFloat || !qkv.device().is_cpu())
    fail("qkv must be a float32 CPU tensor [B x (M + L) x 3d]");
  if (heads < 1 || qkv.size(2) % (3 * heads) != 0)
    fail("qkv's last dimension " + std::to_string(qkv.size(2)) + " is not 3 x heads x dh for " +
         std::to_string(heads) + " heads");
  if (memory < 0 || memory >= qkv.size(1))
    fail("memory " + std::to_string(memory) + " must leave at least one query of " +
         std::to_string(qkv.size(1)) + " rows");
  if (relative_bias.dim() != 2 || relative_bias.scalar_type() != torch::kFloat ||
      !relative_bias.device().is_cpu() || relative_bias.size(1) < 1 || relative_bias.size(0) != heads)
    fail("relative_bias must be a float32 CPU tensor [heads x R], R >= 1");
  Shape s{qkv.size(0), heads, qkv.size(1) - memory, memory, qkv.size(2) / (3 * heads), relative_bias.size(1)};
  if (s.dh < 1 || s.dh > kMaxHeadWidth) fail("head width " + std::to_string(s.dh) + " outside 1 .. 256");
  return s;
}

// Floats between the rows of kt, vt and their gradients: the keys rounded up
// to kLanes, plus kLanes so that a power-of-two row count (512 in GO's trunk)
// does not put the 32 rows the backward sweeps in the same few cache sets.
int64_t Stride(const Shape& s) {
  return simd::PadToLanes(s.m + s.l) + kLanes;
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
  head.qs = head.ks = 3 * s.d();
  head.os = s.d();
  head.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.dh)));
  head.r = r.data() + h * (stride + kLanes);
  return head;
}

// Offsets of task t = (batch entry, head) in the packed tensors: its first
// query, its first key (values follow d floats later) and its first output.
struct Offsets {
  int64_t q, k, out;
};
Offsets OffsetsOf(const Shape& s, int64_t t) {
  const int64_t b = t / s.heads, h = t % s.heads;
  const int64_t entry = b * s.rows() * 3 * s.d();
  return {entry + s.m * 3 * s.d() + h * s.dh, entry + s.d() + h * s.dh, b * s.l * s.d() + h * s.dh};
}

class FusedAttentionFunction : public torch::autograd::Function<FusedAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_in,
                               int64_t heads, int64_t memory, const torch::Tensor& relative_bias) {
    const Shape s = Check(qkv_in, heads, memory, relative_bias);
    const torch::Tensor qkv = qkv_in.contiguous();
    torch::Tensor out = torch::empty({s.b, s.l, s.d()}, qkv.options());
    torch::Tensor lse = torch::empty({s.b, s.heads, s.l}, qkv.options());
    const int64_t stride = Stride(s);
    const std::vector<float> r = ReversedBias(s, stride, relative_bias);
    const float* in = qkv.data_ptr<float>();
    float *op = out.data_ptr<float>(), *lp = lse.data_ptr<float>();
    at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> work(static_cast<size_t>((2 * s.dh + 1) * stride));
      for (int64_t t = begin; t < end; ++t) {
        const Head head = MakeHead(s, stride, r, t % s.heads);
        const Offsets o = OffsetsOf(s, t);
        ForwardHead(head, in + o.q, in + o.k, in + o.k + s.d(), op + o.out, lp + t * s.l, work.data());
      }
    });
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["memory"] = memory;
    ctx->save_for_backward({qkv, relative_bias, out, lse});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &qkv = saved[0], &relative_bias = saved[1], &out = saved[2], &lse = saved[3];
    const Shape s =
        Check(qkv, ctx->saved_data["heads"].toInt(), ctx->saved_data["memory"].toInt(), relative_bias);
    const torch::Tensor dout = grads[0].contiguous();
    torch::Tensor dqkv = torch::empty_like(qkv);
    const int64_t stride = Stride(s), width = stride + kLanes;
    const std::vector<float> r = ReversedBias(s, stride, relative_bias);
    std::vector<float> dr(static_cast<size_t>(s.b * s.heads * width), 0.0F);
    const float *in = qkv.data_ptr<float>(), *op = out.data_ptr<float>(), *lp = lse.data_ptr<float>();
    const float* gp = dout.data_ptr<float>();
    float* dp = dqkv.data_ptr<float>();
    at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> work(static_cast<size_t>(4 * s.dh * stride));
      for (int64_t t = begin; t < end; ++t) {
        const Head head = MakeHead(s, stride, r, t % s.heads);
        const Offsets o = OffsetsOf(s, t);
        // The memory rows are keys only: no gradient in their queries.
        float* dq_memory = dp + o.q - s.m * head.qs;
        for (int64_t j = 0; j < s.m; ++j)
          std::fill(dq_memory + j * head.qs, dq_memory + j * head.qs + s.dh, 0.0F);
        BackwardHead(head, in + o.q, in + o.k, in + o.k + s.d(), op + o.out, lp + t * s.l, gp + o.out,
                     dp + o.q, dp + o.k, dp + o.k + s.d(), dr.data() + t * width, work.data());
      }
    });
    // dr[u] is the gradient of r[u] = relative_bias[h][min(M + L - 1 - u, R - 1)].
    torch::Tensor dbias = torch::zeros({s.heads, s.relative}, qkv.options());
    float* db = dbias.data_ptr<float>();
    for (int64_t t = 0; t < s.b * s.heads; ++t) {
      const int64_t h = t % s.heads;
      for (int64_t u = 0; u < s.m + s.l; ++u)
        db[h * s.relative + std::min(s.m + s.l - 1 - u, s.relative - 1)] +=
            dr[static_cast<size_t>(t * width + u)];
    }
    return {dqkv, torch::Tensor(), torch::Tensor(), dbias};
  }
};

}  // namespace

torch::Tensor FusedRelativeAttention(const torch::Tensor& qkv, int64_t heads, int64_t memory,
                                     const torch::Tensor& relative_bias) {
  return FusedAttentionFunction::apply(qkv, heads, memory, relative_bias);
}

}  // namespace gosim::agents::learned::go
