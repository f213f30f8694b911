#include "graphs/op_costs.h"

#include <string>
#include <unordered_map>

namespace gosim::graphs {

double NumElements(std::span<const int64_t> shape) {
  double n = 1.0;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

bool IsBatchNormOp(std::string_view op_type) {
  // "batchnorm" in the name, case and underscores ignored; no allocation, as
  // the simulator asks this of every fused group it times.
  constexpr std::string_view kKey = "batchnorm";
  const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  for (size_t start = 0; start < op_type.size(); ++start) {
    if (lower(op_type[start]) != kKey[0]) continue;
    size_t matched = 0;
    for (size_t i = start; i < op_type.size() && matched < kKey.size(); ++i) {
      if (op_type[i] == '_') continue;
      if (lower(op_type[i]) != kKey[matched]) break;
      ++matched;
    }
    if (matched == kKey.size()) return true;
  }
  return false;
}

double ChannelExtent(std::string_view op_type, std::span<const int64_t> shape) {
  if (shape.size() < 2 || shape[1] <= 0 || !IsBatchNormOp(op_type)) return 0.0;
  return NumElements(shape) / static_cast<double>(shape[1]);
}

double ConvFlops(double batch, double out_channels, double out_spatial, double in_channels_per_group,
                 double kernel_elements, bool bias) {
  const double outputs = batch * out_channels * out_spatial;
  return 2.0 * outputs * in_channels_per_group * kernel_elements + (bias ? outputs : 0.0);
}

double ConvTransposeFlops(double batch, double in_channels, double in_spatial, double out_channels_per_group,
                          double kernel_elements) {
  return 2.0 * batch * in_channels * in_spatial * out_channels_per_group * kernel_elements;
}

double MatMulFlops(double batch, double m, double k, double n) {
  return 2.0 * batch * m * k * n;
}

double GemmFlops(double m, double k, double n, bool bias) {
  return 2.0 * m * k * n + (bias ? m * n : 0.0);
}

double ElementwiseFlops(double elements) {
  return elements;
}
double PoolFlops(double output_elements, double kernel_elements) {
  return output_elements * kernel_elements;
}
double GlobalPoolFlops(double input_elements) {
  return input_elements;
}
double ReduceFlops(double input_elements) {
  return input_elements;
}
double BatchNormFlops(double elements) {
  return 4.0 * elements;
}
double LayerNormFlops(double elements) {
  return 7.0 * elements;
}
double SoftmaxFlops(double elements) {
  return 5.0 * elements;
}

OpCostClass ClassifyOnnxOp(std::string_view op_type) {
  using C = OpCostClass;
  static const std::unordered_map<std::string_view, OpCostClass> kClasses = {
      {"Conv", C::kConv},
      {"ConvTranspose", C::kConvTranspose},
      {"Gemm", C::kGemm},
      {"MatMul", C::kMatMul},
      // elementwise arithmetic, activations and comparisons
      {"Add", C::kElementwise},
      {"Sub", C::kElementwise},
      {"Mul", C::kElementwise},
      {"Div", C::kElementwise},
      {"Pow", C::kElementwise},
      {"Mod", C::kElementwise},
      {"Neg", C::kElementwise},
      {"Abs", C::kElementwise},
      {"Sqrt", C::kElementwise},
      {"Reciprocal", C::kElementwise},
      {"Exp", C::kElementwise},
      {"Log", C::kElementwise},
      {"Relu", C::kElementwise},
      {"LeakyRelu", C::kElementwise},
      {"PRelu", C::kElementwise},
      {"Elu", C::kElementwise},
      {"Selu", C::kElementwise},
      {"Celu", C::kElementwise},
      {"Sigmoid", C::kElementwise},
      {"HardSigmoid", C::kElementwise},
      {"HardSwish", C::kElementwise},
      {"Tanh", C::kElementwise},
      {"Erf", C::kElementwise},
      {"Softplus", C::kElementwise},
      {"Softsign", C::kElementwise},
      {"Clip", C::kElementwise},
      {"Max", C::kElementwise},
      {"Min", C::kElementwise},
      {"Sum", C::kElementwise},
      {"Mean", C::kElementwise},
      {"Sin", C::kElementwise},
      {"Cos", C::kElementwise},
      {"Floor", C::kElementwise},
      {"Ceil", C::kElementwise},
      {"Round", C::kElementwise},
      {"Sign", C::kElementwise},
      {"Equal", C::kElementwise},
      {"Less", C::kElementwise},
      {"LessOrEqual", C::kElementwise},
      {"Greater", C::kElementwise},
      {"GreaterOrEqual", C::kElementwise},
      {"Not", C::kElementwise},
      {"And", C::kElementwise},
      {"Or", C::kElementwise},
      {"Xor", C::kElementwise},
      {"Where", C::kElementwise},
      // pooling
      {"MaxPool", C::kPool},
      {"AveragePool", C::kPool},
      {"LpPool", C::kPool},
      {"GlobalAveragePool", C::kGlobalPool},
      {"GlobalMaxPool", C::kGlobalPool},
      {"GlobalLpPool", C::kGlobalPool},
      // reductions
      {"ReduceSum", C::kReduce},
      {"ReduceMean", C::kReduce},
      {"ReduceMax", C::kReduce},
      {"ReduceMin", C::kReduce},
      {"ReduceProd", C::kReduce},
      {"ReduceL1", C::kReduce},
      {"ReduceL2", C::kReduce},
      {"ReduceSumSquare", C::kReduce},
      {"ReduceLogSumExp", C::kReduce},
      {"ArgMax", C::kReduce},
      {"ArgMin", C::kReduce},
      // normalization
      {"BatchNormalization", C::kBatchNorm},
      {"LayerNormalization", C::kLayerNorm},
      {"InstanceNormalization", C::kLayerNorm},
      {"Softmax", C::kSoftmax},
      {"LogSoftmax", C::kSoftmax},
      {"Gather", C::kGather},
      // data movement and metadata: no arithmetic
      {"Constant", C::kDataMovement},
      {"ConstantOfShape", C::kDataMovement},
      {"Shape", C::kDataMovement},
      {"Size", C::kDataMovement},
      {"Reshape", C::kDataMovement},
      {"Flatten", C::kDataMovement},
      {"Squeeze", C::kDataMovement},
      {"Unsqueeze", C::kDataMovement},
      {"Identity", C::kDataMovement},
      {"Transpose", C::kDataMovement},
      {"Concat", C::kDataMovement},
      {"Split", C::kDataMovement},
      {"Slice", C::kDataMovement},
      {"Expand", C::kDataMovement},
      {"Tile", C::kDataMovement},
      {"Pad", C::kDataMovement},
      {"Cast", C::kDataMovement},
      {"Dropout", C::kDataMovement},
      {"GatherElements", C::kDataMovement},
      {"GatherND", C::kDataMovement},
      {"ScatterND", C::kDataMovement},
      {"ScatterElements", C::kDataMovement},
      {"Range", C::kDataMovement},
      {"DepthToSpace", C::kDataMovement},
      {"SpaceToDepth", C::kDataMovement},
  };
  auto it = kClasses.find(op_type);
  return it == kClasses.end() ? OpCostClass::kOther : it->second;
}

}  // namespace gosim::graphs
