// Coarse classes of operators, shared by cost models (per-class roofline
// efficiencies), calibrated device profiles (per-class coefficients) and
// analysis.
//
// ClassifyOp understands the op type names of every graph source gosim reads:
//   TensorFlow        MatMul, Conv2D, Conv2DBackpropInput, FusedBatchNormV3,
//                     ReluGrad, ApplyAdam, GatherV2, NcclAllReduce, ...
//   PyTorch aten      aten::mm, aten::addmm, aten::convolution,
//                     aten::convolution_backward, aten::native_batch_norm,
//                     aten::relu_, aten::_foreach_add_, c10d::allreduce_,
//                     also the FX spelling aten.mm.default
//   ONNX              Gemm, Conv, BatchNormalization, ReduceMean, Gather, ...
//   gosim generators  the TensorFlow names above plus LayerNorm(Grad),
//                     Gelu(Grad), RelShift, MeanGrad, ...
// Matching ignores case, underscores, a namespace prefix ("aten::"), an
// in-place trailing '_', version suffixes (V2, V3) and, for most classes, a
// Grad / Backward suffix (ReluGrad is elementwise like Relu). Names it does
// not recognize are kOther. ClassifyOp does not allocate and is thread-safe.
#ifndef GOSIM_GRAPHS_OP_CLASS_H_
#define GOSIM_GRAPHS_OP_CLASS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gosim::graphs {

enum class OpClass : uint8_t {
  kMatMul = 0,     // matrix products, attention, recurrent cells
  kConv,           // forward convolutions (transposed ones included)
  kConvBackward,   // gradients of convolutions w.r.t. input or filter
  kElementwise,    // unary/binary pointwise math, activations, casts, dropout
  kReduction,      // sums, means, max, arg-max, losses
  kPooling,        // max / average / global pooling and their gradients
  kNormalization,  // batch / layer / group / instance norm and their gradients
  kSoftmax,        // softmax, log-softmax, softmax cross-entropy
  kEmbedding,      // gathers, embedding lookups, scatters, segment sums
  kOptimizer,      // parameter updates (ApplyAdam, _foreach_*, ...)
  kMemory,         // copies, views, reshapes, concat/split, constants
  kCommunication,  // collectives and send/recv
  kOther,          // sources (Input, Parameter, Placeholder), NoOp, unknown
};

inline constexpr int kNumOpClasses = 13;

// "matmul", "conv", "conv_backward", "elementwise", "reduction", "pooling",
// "normalization", "softmax", "embedding", "optimizer", "memory",
// "communication", "other".
std::string_view OpClassName(OpClass op_class);
// The inverse of OpClassName; also accepts "data_movement" for kMemory.
// nullopt for anything else.
std::optional<OpClass> ParseOpClass(std::string_view name);
// Every class, in enum order.
const std::array<OpClass, kNumOpClasses>& AllOpClasses();

// The class of an op type name.
OpClass ClassifyOp(std::string_view op_type);

// Ops after which the host waits for the device (docs/SIMULATOR.md, "The
// host"): a read of a value to the host (aten::item,
// aten::_local_scalar_dense, aten::is_nonzero, aten::equal), ops whose output
// shape depends on the data (aten::nonzero, aten::masked_select,
// aten::unique and its variants, aten::_unique2), device-to-host copies
// (a `Recv` to the host is not one: the host does not wait) and explicit
// synchronizations (cudaDeviceSynchronize, aten::synchronize as names).
bool SynchronizesHost(std::string_view op_type);

// The kind of a convolution (forward or backward), by its weight's input
// channels per group: depthwise (one per group, the input having more than
// one channel), grouped (fewer than the input has) or dense. At equal FLOPs
// their kernels differ several times in speed, so calibrated profiles fit
// them apart (docs/CALIBRATION.md, "Fitting").
enum class ConvKind : uint8_t { kDense = 0, kGrouped, kDepthwise };
// "" for kDense, "depthwise", "grouped": the name a calibrated op type or
// class carries in parentheses ("aten::conv2d (depthwise)", "conv (grouped)").
std::string_view ConvKindName(ConvKind kind);
// The kind as an op type's suffix: "" for kDense, " (depthwise)", " (grouped)".
std::string ConvKindSuffix(ConvKind kind);
// The kind of a convolution whose weight has `per_group` input channels per
// group and whose input has `channels` (dense when either is unknown, <= 0).
ConvKind ConvKindOf(int64_t per_group, int64_t channels);
// The kind an op type or class name carries ("aten::conv2d (depthwise)",
// also before a precision tag: "conv (grouped) [bf16]"), else kDense.
ConvKind TypeConvKind(std::string_view op_type);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_OP_CLASS_H_
