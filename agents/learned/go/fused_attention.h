// GO's attention with relative-position biases as one fused CPU operation
// (forward and backward), for graphs of many segments.
//
// The same function as RecurrentAttentionImpl's unfused path: queries q_i
// against keys and values k_j, v_j of M memory and L segment positions; query
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

// qkv: [B x (M + L) x 3d], each row the query, the key and the value of one
// position (d = heads x dh; head h is columns h dh .. (h + 1) dh - 1 of each
// part), as the layer's projection gives them: rows 0 .. M - 1 are the
// memory, whose queries are not used. relative_bias: [heads x R] (R >= 1).
// Float32 on the CPU. Returns [B x L x d], the heads side by side, and is
// differentiable in qkv (the memory's queries get a zero gradient) and
// relative_bias (once: no gradient of the gradient, create_graph is not
// supported). Reading and writing the packed layout directly spares the
// slices, transposes and copies (and their backward) that per-head q, k, v
// tensors cost.
torch::Tensor FusedRelativeAttention(const torch::Tensor& qkv, int64_t heads, int64_t memory,
                                     const torch::Tensor& relative_bias);

}  // namespace gosim::agents::learned::go
