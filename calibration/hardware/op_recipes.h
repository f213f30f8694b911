// How one graph node runs as real aten ops (internal to calibration/hardware).
//
// A Recipe is planned once per node from its op type (graphs::ClassifyOp)
// and tensor shapes: the aten op that stands for it, the operand shapes, and
// how to find each operand among the node's data inputs (the first unused
// input with the same element count and dtype) or else a constant made at
// plan time. Nodes whose shapes do not fit their op are run as an equivalent
// matmul of their FLOPs, or a memory copy of their bytes; nodes without work
// (sources, views) run nothing and publish preallocated outputs.
//
// The recipe also records what the profiler would record for the op: its
// aten name and "Input Dims" / "Input type", chosen so that
// calibration/op_work.h derives the node's FLOPs from them.
#ifndef GOSIM_CALIBRATION_HARDWARE_OP_RECIPES_H_
#define GOSIM_CALIBRATION_HARDWARE_OP_RECIPES_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graphs/graph.h"

namespace gosim::calibration::hardware {

enum class RecipeKind : uint8_t {
  kNone,  // no work: outputs are preallocated
  kMatmul,
  kConv,
  kConvBackwardInput,
  kConvBackwardWeight,
  kUnary,
  kBinary,
  kAddN,
  kReduce,
  kSoftmax,
  kSoftmaxBackward,
  kCrossEntropy,
  kCrossEntropyBackward,
  kLayerNorm,
  kLayerNormBackward,
  kBatchNorm,
  kBatchNormBackward,
  kMaxPool,
  kMaxPoolBackward,
  kEmbedding,
  kAdam,
  kCopy,
};

struct Operand {
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  bool from_input = true;   // may be taken from a data input with the same numel and dtype
  int64_t index_range = 0;  // integer operands: values in [0, index_range)
};

// One argument as the profiler records it.
struct RecordedArg {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> list;
  std::string type;  // "float", "long int", "TensorList", "" (non-tensor)
};

struct Recipe {
  RecipeKind kind = RecipeKind::kNone;
  std::string aten;   // e.g. "aten::mm"; empty for kNone
  std::string unary;  // kUnary / kBinary: which function ("relu", "tanh_backward", ...)
  std::vector<Operand> operands;
  std::vector<int64_t> params;  // kind-specific: stride, padding, kernel, dim, ...
  std::vector<RecordedArg> recorded;
  bool fallback = false;  // ran as the equivalent matmul / copy
  // Constants for the operands (allocated by Prepare on CPU).
  std::vector<at::Tensor> constants;
};

// Plans node `id`. Never throws for odd shapes: it falls back (see above).
Recipe PlanNode(const graphs::Graph& graph, graphs::NodeId id);

// Allocates the recipe's constant operands on `device` (random values).
void PrepareConstants(Recipe* recipe, const at::Device& device);

// Runs the recipe on `inputs` (the node's data inputs in in-edge order, on
// the recipe's device); returns the results (at least the first output).
std::vector<at::Tensor> RunRecipe(const Recipe& recipe, const std::vector<at::Tensor>& inputs);

// The element type and element count gosim runs a tensor with.
at::ScalarType TorchDType(graphs::DType dtype);
int64_t ElementCount(const graphs::TensorInfo& info);
std::vector<int64_t> RunShape(const graphs::TensorInfo& info);

}  // namespace gosim::calibration::hardware

#endif  // GOSIM_CALIBRATION_HARDWARE_OP_RECIPES_H_
