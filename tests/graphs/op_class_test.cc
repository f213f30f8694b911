#include "graphs/op_class.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>

namespace gosim::graphs {

TEST_CASE("Op classes round-trip through their names") {
  for (const OpClass c : AllOpClasses()) CHECK(ParseOpClass(OpClassName(c)) == c);
  CHECK(OpClassName(OpClass::kConvBackward) == "conv_backward");
  CHECK(ParseOpClass("data_movement") == OpClass::kMemory);
  CHECK_FALSE(ParseOpClass("matmull").has_value());
  CHECK(AllOpClasses().size() == static_cast<size_t>(kNumOpClasses));
}

TEST_CASE("ClassifyOp recognizes TensorFlow, aten, ONNX and generator names") {
  const std::pair<const char*, OpClass> cases[] = {
      // TensorFlow
      {"MatMul", OpClass::kMatMul},
      {"BatchMatMulV2", OpClass::kMatMul},
      {"Conv2D", OpClass::kConv},
      {"Conv2DBackpropInput", OpClass::kConvBackward},
      {"Conv2DBackpropFilter", OpClass::kConvBackward},
      {"DepthwiseConv2dNative", OpClass::kConv},
      {"DepthwiseConv2dNativeBackpropFilter", OpClass::kConvBackward},
      {"FusedBatchNormV3", OpClass::kNormalization},
      {"FusedBatchNormGradV3", OpClass::kNormalization},
      {"Relu", OpClass::kElementwise},
      {"ReluGrad", OpClass::kElementwise},
      {"BiasAdd", OpClass::kElementwise},
      {"BiasAddGrad", OpClass::kReduction},
      {"Sum", OpClass::kReduction},
      {"MaxPool", OpClass::kPooling},
      {"AvgPoolGrad", OpClass::kPooling},
      {"Softmax", OpClass::kSoftmax},
      {"SparseSoftmaxCrossEntropyWithLogits", OpClass::kSoftmax},
      {"GatherV2", OpClass::kEmbedding},
      {"UnsortedSegmentSum", OpClass::kEmbedding},
      {"ApplyAdam", OpClass::kOptimizer},
      {"ResourceApplyGradientDescent", OpClass::kOptimizer},
      {"SparseApplyMomentum", OpClass::kOptimizer},
      {"ConcatV2", OpClass::kMemory},
      {"Reshape", OpClass::kMemory},
      {"Identity", OpClass::kMemory},
      {"Const", OpClass::kMemory},
      {"StopGradient", OpClass::kMemory},
      {"Select", OpClass::kElementwise},
      {"NcclAllReduce", OpClass::kCommunication},
      {"_Send", OpClass::kCommunication},
      {"_Recv", OpClass::kCommunication},
      {"NoOp", OpClass::kOther},
      {"Placeholder", OpClass::kOther},
      // PyTorch aten
      {"aten::mm", OpClass::kMatMul},
      {"aten::addmm", OpClass::kMatMul},
      {"aten::bmm", OpClass::kMatMul},
      {"aten::baddbmm", OpClass::kMatMul},
      {"aten::linear", OpClass::kMatMul},
      {"aten::convolution", OpClass::kConv},
      {"aten::cudnn_convolution", OpClass::kConv},
      {"aten::convolution_backward", OpClass::kConvBackward},
      {"aten::native_batch_norm", OpClass::kNormalization},
      {"aten::native_batch_norm_backward", OpClass::kNormalization},
      {"aten::native_layer_norm_backward", OpClass::kNormalization},
      {"aten::relu_", OpClass::kElementwise},
      {"aten::threshold_backward", OpClass::kElementwise},
      {"aten::add_", OpClass::kElementwise},
      {"aten::add", OpClass::kElementwise},
      {"aten::bernoulli_", OpClass::kElementwise},
      {"aten::_log_softmax", OpClass::kSoftmax},
      {"aten::_log_softmax_backward_data", OpClass::kSoftmax},
      {"aten::nll_loss_forward", OpClass::kReduction},
      {"aten::nll_loss_backward", OpClass::kReduction},
      {"aten::max_pool2d_with_indices", OpClass::kPooling},
      {"aten::max_pool2d_with_indices_backward", OpClass::kPooling},
      {"aten::avg_pool2d_backward", OpClass::kPooling},
      {"aten::mean", OpClass::kReduction},
      {"aten::embedding", OpClass::kEmbedding},
      {"aten::embedding_dense_backward", OpClass::kEmbedding},
      {"aten::index_select", OpClass::kEmbedding},
      {"aten::view", OpClass::kMemory},
      {"aten::_reshape_alias", OpClass::kMemory},
      {"aten::t", OpClass::kMemory},
      {"aten::expand", OpClass::kMemory},
      {"aten::cat", OpClass::kMemory},
      {"aten::slice", OpClass::kMemory},
      {"aten::select", OpClass::kMemory},
      {"aten::copy_", OpClass::kMemory},
      {"aten::_to_copy", OpClass::kMemory},
      {"aten::empty_like", OpClass::kMemory},
      {"aten::ones_like", OpClass::kMemory},
      {"aten::_foreach_add_", OpClass::kOptimizer},
      {"aten::_fused_adam_", OpClass::kOptimizer},
      {"aten.mm.default", OpClass::kMatMul},
      {"torch.ops.aten.convolution.default", OpClass::kConv},
      {"c10d::allreduce_", OpClass::kCommunication},
      {"nccl:all_reduce", OpClass::kCommunication},
      {"prims::convert_element_type", OpClass::kElementwise},
      // ONNX
      {"Gemm", OpClass::kMatMul},
      {"Conv", OpClass::kConv},
      {"ConvTranspose", OpClass::kConv},
      {"BatchNormalization", OpClass::kNormalization},
      {"LayerNormalization", OpClass::kNormalization},
      {"ReduceMean", OpClass::kReduction},
      {"GlobalAveragePool", OpClass::kPooling},
      {"Gather", OpClass::kEmbedding},
      {"Flatten", OpClass::kMemory},
      {"Unsqueeze", OpClass::kMemory},
      {"Erf", OpClass::kElementwise},
      {"LSTM", OpClass::kMatMul},
      // gosim generators
      {"LayerNorm", OpClass::kNormalization},
      {"LayerNormGrad", OpClass::kNormalization},
      {"Gelu", OpClass::kElementwise},
      {"GeluGrad", OpClass::kElementwise},
      {"DropoutGrad", OpClass::kElementwise},
      {"MeanGrad", OpClass::kElementwise},
      {"RelShift", OpClass::kMemory},
      {"SoftmaxGrad", OpClass::kSoftmax},
      {"SparseSoftmaxCrossEntropyWithLogitsGrad", OpClass::kSoftmax},
      {"Conv1DBackpropFilter", OpClass::kConvBackward},
      {"ScatterSub", OpClass::kEmbedding},
      {"AddN", OpClass::kElementwise},
      {"Variable", OpClass::kMemory},
      {"Input", OpClass::kOther},
      {"Parameter", OpClass::kOther},
      {"OptimizerState", OpClass::kOther},
      // fallbacks
      {"MyCustomMatMulThing", OpClass::kMatMul},
      {"frobnicate", OpClass::kOther},
      {"", OpClass::kOther},
  };
  for (const auto& [name, expected] : cases) {
    CAPTURE(std::string(name));
    CHECK(OpClassName(ClassifyOp(name)) == OpClassName(expected));
  }
  const std::string very_long = "MatMul" + std::string(300, 'x');
  CHECK(ClassifyOp(very_long) == OpClass::kOther);
}

}  // namespace gosim::graphs
