// GO's attention with relative-position biases as one fused CPU operation
// (forward and backward), for graphs of many segments.
//
// The same function as RecurrentAttentionImpl's unfused path: queries q
// [B x H x L x dh] against keys and values k, v [B x H x (M + L) x dh]; query
// i (position M + i) sees keys 0 .. M + i with score
//   q_i . k_j / sqrt(dh) + relative_bias[h][min(M + i - j, R - 1)],
// and the output is the softmax-weighted sum of the values. The unfused path
// writes the [B x H x L x (M + L)] scores, biases, soft-maxes and reads them
// again, and autograd keeps them; this one keeps one row of scores in cache
// per query and stores only each query's log-sum-exp, recomputing the row
// in the backward (as FlashAttention does on GPUs, Dao et al. 2022). The
// loops run over keys, in vectors of 8 or 16 floats, whatever dh is; on x86
// with GCC the kernels are compiled for AVX-512, for AVX2 + FMA and for the
// baseline, and chosen at run time by the CPU's features.
//
// Results equal the unfused path up to rounding (tests/learned/
// fused_attention_test.cc), not bit for bit, which is why GO uses it only on
// long graphs (GoPolicyImpl::LongGraph), where no paper or bench table runs.
#pragma once

#include <torch/torch.h>

namespace gosim::agents::learned::go {

// q: [B x H x L x dh], k, v: [B x H x (M + L) x dh], relative_bias: [H x R]
// (R >= 1), all float32 on the CPU. Differentiable in q, k, v and
// relative_bias. Returns [B x H x L x dh].
torch::Tensor FusedRelativeAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& relative_bias);

// Tests: 8 runs the 8-float kernels even where the CPU has AVX-512 (whose
// kernels use 16), 0 restores the choice by the CPU.
void SetFusedAttentionWidthForTesting(int width);

}  // namespace gosim::agents::learned::go
