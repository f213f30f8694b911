// FLOPs and bytes of a profiled operator, from the input shapes the profiler
// recorded ("Input Dims" / "Input type").
//
// The FLOP formulas are those of graphs/op_costs.h (a multiply-add counts 2;
// elementwise ops 1 FLOP per output element). This file maps PyTorch
// operator names (aten::*, their in-place and backward variants) and their
// argument layouts onto them:
//   matmul: mm, addmm, bmm, baddbmm, matmul, linear (2 * m * k * n per batch)
//   convolution forward (conv1d/2d/3d, convolution, _convolution,
//     cudnn_convolution, ...) and backward (convolution_backward,
//     cudnn_convolution_backward[_input|_weight]); a backward computing both
//     gradients costs 2x the forward. The forward's output size is not in the
//     trace: it is taken from the matching backward (same autograd sequence
//     number, ConvHints) or, failing that, assumed equal to the input size
//     (stride 1, "same" padding) and the work is marked approximate.
//   elementwise ops (add, mul, relu, threshold_backward, dropout, copy_, ...)
//   reductions (sum, mean, max, norm, ...), pooling (input elements),
//   normalization (batch/layer/group norm; backward 2x), softmax and
//   log_softmax (backward 2x), cross-entropy and nll loss, embedding,
//   gather/index/cat data movement (0 FLOPs), and optimizer updates (_foreach_*,
//   fused Adam/SGD: FLOPs per parameter element).
// Bytes are the tensor inputs read plus the output written (the largest
// input's size for elementwise ops, whose output shape is not recorded).
#ifndef GOSIM_CALIBRATION_OP_WORK_H_
#define GOSIM_CALIBRATION_OP_WORK_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/trace.h"

namespace gosim::calibration {

struct OpWork {
  double flops = 0.0;
  double bytes = 0.0;           // bytes read + written
  double channel_extent = 0.0;  // a batch norm's elements per channel (graphs::ChannelExtent), else 0
  bool known = false;           // derived from recorded shapes
  bool approximate = false;     // an assumption filled a missing size
};

// Output shapes of convolution forward ops that the trace implies, by op
// index (see PairConvolutionOutputs).
using ConvHints = std::map<int32_t, std::vector<int64_t>>;

// FLOPs and bytes of op `name` with `inputs`. `conv_output` (may be null) is
// the output shape of a convolution forward when known.
OpWork EstimateOpWork(std::string_view name, const std::vector<OpInput>& inputs,
                      const std::vector<int64_t>* conv_output = nullptr);

// For every convolution forward op with recorded inputs, the output shape
// found through autograd: the backward node with the same sequence number
// holds a *convolution_backward op whose grad_output is that output.
ConvHints PairConvolutionOutputs(const Trace& trace);

// The kind of a convolution (forward or backward) by its weight's input
// channels per group: " (depthwise)" (one per group, more than one input
// channel), " (grouped)" (fewer than the input's), else "" (dense, or not a
// convolution, or shapes missing). Appended to the op's name, it makes the
// calibration fit each kind apart: their kernels' efficiency differs several
// times at equal FLOPs.
std::string ConvVariant(std::string_view name, const std::vector<OpInput>& inputs);

// " [bf16]" or " [fp16]" for a matmul, convolution, attention or batch-norm
// op whose first tensor argument is of that dtype (mixed precision: tensor
// cores run it several times faster than fp32 at equal FLOPs; a batch norm
// moves half the bytes in more than half the time), else "".
std::string PrecisionVariant(std::string_view name, const std::vector<OpInput>& inputs);

// Whether op `name` is a matmul, convolution, attention or batch-norm op
// (those whose speed depends on the precision at equal FLOPs and bytes).
bool PrecisionApplies(std::string_view name);

// Whether op `name` updates many tensors at once: `_foreach_*`, the fused
// optimizers (`_fused_adam`), the profiler's `Optimizer.step#...` and
// `Optimizer.zero_grad#...` ranges, and FBGEMM's table-batched embeddings
// (`fbgemm::split_embedding_*` and their autograd `SplitLookupFunction`
// nodes, whose backward updates every table with a fused optimizer). Their fits stay with their own op
// types and stay out of class fits: the class fit prices a graph's
// per-parameter update (ApplyAdam), one tensor each, which a whole-model
// op's intercept would overcharge 25x (docs/CALIBRATION.md, "Fitting").
bool SpansManyTensors(std::string_view name);

// The type a calibration sample of op `name` is fitted under: the name,
// its ConvVariant and its PrecisionVariant, e.g. "aten::conv2d (depthwise) [bf16]".
std::string SampleType(std::string_view name, const std::vector<OpInput>& inputs);

// An op sample's type without its suffixes: "aten::conv2d (depthwise) [bf16]" -> "aten::conv2d".
std::string_view BaseSampleType(std::string_view type);

// Strips the namespace and in-place/out suffixes: "aten::add_" -> "add",
// "aten::relu_" -> "relu", "aten::mul.out" -> "mul".
std::string BaseOpName(std::string_view name);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_OP_WORK_H_
