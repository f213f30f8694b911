// A linear layer, y = x W^T + b, whose rows are split over torch's threads.
//
// Why: Debian's LibTorch multiplies matrices with the serial OpenBLAS, so a
// torch::nn::Linear runs on one core whatever torch's thread count says, and
// calling that BLAS from several threads at once is not safe (it keeps
// shared buffers without locks). On GO's long graphs the linear layers'
// products were the largest cost left on one core (docs/BENCHMARKS.md, "GO
// at 92.8k nodes"). These kernels are the project's own, over vectors of 8 or
// 16 floats chosen by the CPU (common/simd.h); the rows of x are split over
// torch's threads in the forward pass and for dL/dx, and the weight's
// gradient is summed over fixed chunks of 1,024 rows in a fixed order, so
// that every result is the same whatever the thread count.
//
// Equal to torch::nn::functional::linear up to rounding (another order of
// the sums), not bit for bit: GO uses it only where it uses the fused
// attention (GoPolicyImpl::LongGraph), where no paper or bench table runs.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_PARALLEL_LINEAR_H_
#define GOSIM_AGENTS_LEARNED_COMMON_PARALLEL_LINEAR_H_

#include <torch/torch.h>

namespace gosim::agents::learned {

// x: [... x K], weight: [N x K], bias: [N] or undefined; float32 on the CPU.
// Returns [... x N], differentiable in all three (once: no gradient of the
// gradient, create_graph is not supported).
torch::Tensor ParallelLinear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// The same with a layer's weight and bias.
torch::Tensor ParallelLinear(const torch::Tensor& x, const torch::nn::Linear& layer);

// The layer on x: by ParallelLinear when `parallel`, else torch's own.
torch::Tensor RunLinear(torch::nn::Linear& layer, const torch::Tensor& x, bool parallel);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_PARALLEL_LINEAR_H_
