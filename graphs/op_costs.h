// FLOP counts of common operators, derived from tensor shapes.
//
// One place for the formulas so that importers (ONNX), generators and cost
// models count the same way. Conventions:
//   - a multiply-add counts 2 FLOPs;
//   - an elementwise op costs 1 FLOP per output element, transcendental
//     functions (exp, tanh, erf, sigmoid) included, as fvcore and ptflops
//     count them;
//   - data movement (reshape, transpose, concat, gather, cast, ...) costs 0.
// Results are doubles: large models overflow 32-bit counts, and doubles keep
// the exact value up to 2^53 FLOPs.
//
// Formulas (N batch, M output channels, C input channels, g groups, K kernel
// elements, P output spatial elements, E elements):
//   Conv             2 * N * M * P * (C / g) * K  (+ N * M * P with bias)
//   ConvTranspose    2 * N * C * P_in * (M / g) * K  (+ output elements with bias)
//   MatMul           2 * batch * m * k * n
//   Gemm             2 * m * k * n  (+ m * n with a C input)
//   Max/AveragePool  output elements * K
//   GlobalPool       input elements
//   Reduce*          input elements
//   BatchNorm        4 * E  (subtract mean, scale by 1/std, scale, shift)
//   LayerNorm        7 * E  (mean, subtract, square, variance sum,
//                            normalize, scale, shift)
//   Softmax          5 * E  (max, subtract, exp, sum, divide)
#ifndef GOSIM_GRAPHS_OP_COSTS_H_
#define GOSIM_GRAPHS_OP_COSTS_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace gosim::graphs {

// Product of the dimensions (1 for a scalar). Dimensions must be >= 0.
double NumElements(std::span<const int64_t> shape);

// `out_spatial`: output spatial elements per image (H_out * W_out);
// `in_channels_per_group`: C / g; `kernel_elements`: kH * kW.
double ConvFlops(double batch, double out_channels, double out_spatial, double in_channels_per_group,
                 double kernel_elements, bool bias);
// `in_spatial`: input spatial elements per image; `out_channels_per_group`: M / g.
// Without the bias; with one, add ElementwiseFlops(output elements).
double ConvTransposeFlops(double batch, double in_channels, double in_spatial, double out_channels_per_group,
                          double kernel_elements);
double MatMulFlops(double batch, double m, double k, double n);
double GemmFlops(double m, double k, double n, bool bias);
double ElementwiseFlops(double elements);
double PoolFlops(double output_elements, double kernel_elements);
double GlobalPoolFlops(double input_elements);
double ReduceFlops(double input_elements);
double BatchNormFlops(double elements);
double LayerNormFlops(double elements);
double SoftmaxFlops(double elements);

// Whether `op_type` is a batch norm, forward or backward, in any framework's
// spelling ("FusedBatchNormGrad", "aten::cudnn_batch_norm",
// "native_batch_norm_backward", "BatchNormalization", ...).
bool IsBatchNormOp(std::string_view op_type);
// The elements per channel (N x H x W) of a batch norm over a tensor of
// `shape`, channels in dimension 1 (NCHW, gosim's graph layout and
// PyTorch's): its kernels reduce each channel in one thread block, so their
// time follows this extent where there are few channels. 0 for any other op
// and for shapes of rank < 2.
double ChannelExtent(std::string_view op_type, std::span<const int64_t> shape);

// Classification of ONNX op types (standard domain) used by the importer.
enum class OpCostClass {
  kConv,
  kConvTranspose,
  kGemm,
  kMatMul,
  kElementwise,
  kPool,
  kGlobalPool,
  kReduce,
  kBatchNorm,
  kLayerNorm,
  kSoftmax,
  kGather,
  kDataMovement,
  kOther,
};
OpCostClass ClassifyOnnxOp(std::string_view op_type);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_OP_COSTS_H_
