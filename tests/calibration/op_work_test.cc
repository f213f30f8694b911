#include "calibration/op_work.h"

#include <doctest/doctest.h>

#include "calibration/trace_reader.h"

namespace gosim::calibration {
namespace {

OpInput Tensor(std::vector<int64_t> shape, graphs::DType dtype = graphs::DType::kFloat32) {
  OpInput in;
  in.shape = std::move(shape);
  in.dtype = dtype;
  in.is_tensor = true;
  in.type = dtype == graphs::DType::kInt64 ? "long int" : "float";
  return in;
}

OpInput NotTensor() {
  return OpInput{};
}

OpInput List(std::vector<std::vector<int64_t>> shapes) {
  OpInput in;
  in.list = std::move(shapes);
  in.dtype = graphs::DType::kFloat32;
  in.type = "TensorList";
  return in;
}

OpInput Scalar(std::string value, std::string type = "ScalarList") {
  OpInput in;
  in.type = std::move(type);
  in.value = std::move(value);
  return in;
}

}  // namespace

TEST_CASE("matrix products") {
  OpWork w = EstimateOpWork("aten::mm", {Tensor({8, 16}), Tensor({16, 32})});
  CHECK(w.known);
  CHECK(w.flops == 2.0 * 8 * 16 * 32);
  CHECK(w.bytes == (8 * 16 + 16 * 32 + 8 * 32) * 4.0);
  w = EstimateOpWork("aten::addmm",
                     {Tensor({32}), Tensor({8, 16}), Tensor({16, 32}), NotTensor(), NotTensor()});
  CHECK(w.flops == 2.0 * 8 * 16 * 32 + 8 * 32);
  CHECK(w.bytes == (32 + 8 * 16 + 16 * 32 + 8 * 32) * 4.0);
  w = EstimateOpWork("aten::linear", {Tensor({4, 8, 16}), Tensor({32, 16}), Tensor({32})});
  CHECK(w.flops == 2.0 * 32 * 16 * 32 + 32 * 32);
  w = EstimateOpWork("aten::linear", {Tensor({8, 16}), Tensor({32, 16}), NotTensor()});
  CHECK(w.flops == 2.0 * 8 * 16 * 32);
  w = EstimateOpWork("aten::bmm", {Tensor({4, 8, 16}), Tensor({4, 16, 32})});
  CHECK(w.flops == 4 * 2.0 * 8 * 16 * 32);
  w = EstimateOpWork("aten::matmul", {Tensor({2, 3, 8, 16}), Tensor({16, 32})});
  CHECK(w.flops == 6 * 2.0 * 8 * 16 * 32);
  CHECK_FALSE(EstimateOpWork("aten::mm", {Tensor({8, 16})}).known);
}

TEST_CASE("convolutions forward and backward") {
  const std::vector<int64_t> output = {2, 4, 4, 4};  // stride 2
  OpWork w =
      EstimateOpWork("aten::conv2d", {Tensor({2, 3, 8, 8}), Tensor({4, 3, 3, 3}), NotTensor()}, &output);
  CHECK(w.flops == 2.0 * (2 * 4 * 16) * 3 * 9);
  CHECK_FALSE(w.approximate);
  CHECK(w.bytes == (2 * 3 * 64 + 4 * 27 + 2 * 4 * 16) * 4.0);
  w = EstimateOpWork("aten::conv2d", {Tensor({2, 3, 8, 8}), Tensor({4, 3, 3, 3}), Tensor({4})}, &output);
  CHECK(w.flops == 2.0 * (2 * 4 * 16) * 3 * 9 + 2 * 4 * 16);
  w = EstimateOpWork("aten::cudnn_convolution", {Tensor({2, 3, 8, 8}), Tensor({4, 3, 3, 3})});
  CHECK(w.approximate);  // no output shape: stride 1, "same" padding assumed
  CHECK(w.flops == 2.0 * (2 * 4 * 64) * 3 * 9);
  // Grouped (depthwise): weight [M, C/g, k, k].
  w = EstimateOpWork("aten::conv2d", {Tensor({1, 8, 4, 4}), Tensor({8, 1, 3, 3})});
  CHECK(w.flops == 2.0 * (8 * 16) * 1 * 9);
  // Backward: both gradients, 2x the forward.
  const double forward = 2.0 * (2 * 4 * 16) * 3 * 9;
  w = EstimateOpWork("aten::convolution_backward",
                     {Tensor({2, 4, 4, 4}), Tensor({2, 3, 8, 8}), Tensor({4, 3, 3, 3})});
  CHECK(w.flops == 2.0 * forward);
  w = EstimateOpWork("aten::cudnn_convolution_backward",
                     {Tensor({2, 3, 8, 8}), Tensor({2, 4, 4, 4}), Tensor({4, 3, 3, 3})});
  CHECK(w.flops == 2.0 * forward);
  w = EstimateOpWork("aten::cudnn_convolution_backward_input",
                     {NotTensor(), Tensor({2, 4, 4, 4}), Tensor({4, 3, 3, 3})});
  CHECK(w.flops == forward);
}

TEST_CASE("elementwise, normalization, softmax, reductions, embedding, optimizer") {
  OpWork w = EstimateOpWork("aten::add_", {Tensor({8, 32}), Tensor({8, 32}), NotTensor()});
  CHECK(w.flops == 256);
  CHECK(w.bytes == 3 * 256 * 4.0);
  w = EstimateOpWork("aten::mul", {Tensor({8, 32}), Tensor({32})});  // broadcast
  CHECK(w.flops == 256);
  w = EstimateOpWork("aten::threshold_backward", {Tensor({4, 4}), Tensor({4, 4}), NotTensor()});
  CHECK(w.flops == 16);
  w = EstimateOpWork("aten::fill_", {Tensor({100}), NotTensor()});
  CHECK(w.bytes == 400);
  w = EstimateOpWork("aten::batch_norm",
                     {Tensor({2, 4, 4, 4}), Tensor({4}), Tensor({4}), Tensor({4}), Tensor({4})});
  CHECK(w.flops == 4 * 128);
  CHECK(w.channel_extent == 2 * 4 * 4);  // N x H x W per channel
  w = EstimateOpWork("aten::cudnn_batch_norm_backward",
                     {Tensor({32, 64, 35, 35}), Tensor({32, 64, 35, 35}), Tensor({64}), Tensor({64})});
  CHECK(w.channel_extent == 32 * 35 * 35);
  w = EstimateOpWork("aten::instance_norm", {Tensor({2, 4, 4, 4}), Tensor({4}), Tensor({4})});
  CHECK(w.channel_extent == 0);  // per (image, channel): not a batch norm's extent
  w = EstimateOpWork("aten::native_layer_norm_backward", {Tensor({8, 32}), Tensor({8, 32})});
  CHECK(w.channel_extent == 0);
  w = EstimateOpWork("aten::native_layer_norm_backward", {Tensor({8, 32}), Tensor({8, 32})});
  CHECK(w.flops == 2 * 7 * 256);
  w = EstimateOpWork("aten::_softmax", {Tensor({8, 32}), NotTensor(), NotTensor()});
  CHECK(w.flops == 5 * 256);
  CHECK(w.bytes == 2 * 256 * 4.0);
  w = EstimateOpWork("aten::sum", {Tensor({8, 32}), NotTensor()});
  CHECK(w.flops == 256);
  w = EstimateOpWork("aten::embedding", {Tensor({100, 16}), Tensor({8}, graphs::DType::kInt64)});
  CHECK(w.flops == 0);
  CHECK(w.bytes == 2 * 8 * 16 * 4.0 + 8 * 8);
  w = EstimateOpWork("aten::_foreach_add_", {List({{10}, {20}}), List({{10}, {20}}), NotTensor()});
  CHECK(w.flops == 60);
  w = EstimateOpWork("aten::_fused_adam_",
                     {List({{10}, {20}}), List({{10}, {20}}), List({{10}, {20}}), List({{10}, {20}})});
  CHECK(w.flops == 12 * 30);
  CHECK_FALSE(EstimateOpWork("fbgemm::bounds_check", {NotTensor(), NotTensor()}).known);
  CHECK(EstimateOpWork("aten::cat", {List({{2, 3}, {4, 3}}), NotTensor()}).flops == 0);
}

TEST_CASE("convolution kinds: dense, grouped, depthwise") {
  const OpInput x = Tensor({8, 32, 28, 28});
  const OpInput grad = Tensor({8, 32, 28, 28});
  CHECK(ConvVariant("aten::conv2d", {x, Tensor({64, 32, 3, 3})}).empty());
  CHECK(ConvVariant("aten::conv2d", {x, Tensor({32, 8, 3, 3})}) == " (grouped)");
  CHECK(ConvVariant("aten::conv2d", {x, Tensor({32, 1, 3, 3})}) == " (depthwise)");
  // convolution_backward(grad_output, input, weight, ...)
  CHECK(ConvVariant("aten::convolution_backward", {grad, x, Tensor({32, 1, 7, 7})}) == " (depthwise)");
  CHECK(ConvVariant("aten::convolution_backward", {grad, x, Tensor({32, 32, 1, 1})}).empty());
  // Not a convolution, a transposed one (another weight layout), or shapes missing.
  CHECK(ConvVariant("aten::mm", {Tensor({4, 4}), Tensor({4, 4})}).empty());
  CHECK(ConvVariant("aten::conv_transpose2d", {x, Tensor({32, 1, 3, 3})}).empty());
  CHECK(ConvVariant("aten::conv2d", {x, NotTensor()}).empty());
  CHECK(BaseSampleType("aten::conv2d (depthwise)") == "aten::conv2d");
  CHECK(BaseSampleType("aten::mm") == "aten::mm");
}

TEST_CASE("whole-model optimizer ops are told apart from per-tensor ones") {
  CHECK(SpansManyTensors("aten::_foreach_add_"));
  CHECK(SpansManyTensors("aten::_foreach_addcdiv_ [bf16]"));
  CHECK(SpansManyTensors("aten::_fused_adamw_"));
  CHECK(SpansManyTensors("Optimizer.step#AdamW.step"));
  CHECK(SpansManyTensors("fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function"));
  CHECK(SpansManyTensors("torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>"));
  CHECK_FALSE(SpansManyTensors("aten::embedding_dense_backward"));
  CHECK_FALSE(SpansManyTensors("aten::add_"));
  CHECK_FALSE(SpansManyTensors("ApplyAdam"));
}

TEST_CASE("mixed precision: 16-bit matmuls, convolutions, attention and batch norms are types of their own") {
  const OpInput a16 = Tensor({64, 64}, graphs::DType::kBFloat16);
  // Batch norms on bf16 inputs: fitted on fp32 ones, they came out 30-40%
  // under (half the bytes, not half the time).
  const OpInput bn16 = Tensor({8, 32, 28, 28}, graphs::DType::kBFloat16);
  CHECK(PrecisionVariant("aten::cudnn_batch_norm", {bn16, Tensor({32})}) == " [bf16]");
  CHECK(PrecisionVariant("aten::native_batch_norm_backward", {bn16, bn16}) == " [bf16]");
  CHECK(PrecisionVariant("aten::layer_norm", {bn16}).empty());  // autocast runs layer norms in fp32
  CHECK(PrecisionVariant("aten::mm", {a16, a16}) == " [bf16]");
  CHECK(PrecisionVariant("aten::mm", {Tensor({64, 64}, graphs::DType::kFloat16), a16}) == " [fp16]");
  CHECK(PrecisionVariant("aten::mm", {Tensor({64, 64}), a16}).empty());  // the first tensor decides
  CHECK(PrecisionVariant("aten::add", {a16, a16}).empty());              // elementwise: bytes carry the dtype
  CHECK(PrecisionVariant("aten::_scaled_dot_product_efficient_attention",
                         {Tensor({2, 4, 8, 16}, graphs::DType::kBFloat16)}) == " [bf16]");
  const OpInput x = Tensor({8, 32, 28, 28}, graphs::DType::kBFloat16);
  CHECK(SampleType("aten::conv2d", {x, Tensor({32, 1, 3, 3}, graphs::DType::kBFloat16)}) ==
        "aten::conv2d (depthwise) [bf16]");
  CHECK(BaseSampleType("aten::conv2d (depthwise) [bf16]") == "aten::conv2d");
  CHECK(BaseSampleType("aten::mm [bf16]") == "aten::mm");
}

TEST_CASE("operator names") {
  CHECK(BaseOpName("aten::add_") == "add");
  CHECK(BaseOpName("aten::_foreach_add_") == "_foreach_add");
  CHECK(BaseOpName("aten::mul.out") == "mul");
  CHECK(BaseOpName("aten::_convolution") == "_convolution");
  CHECK(BaseOpName("Relu") == "Relu");
  CHECK(IsOperatorName("aten::conv2d"));
  CHECK(IsOperatorName("c10d::allreduce_"));
  CHECK_FALSE(IsOperatorName("autograd::engine::evaluate_function: X"));
  CHECK_FALSE(IsOperatorName("torch::autograd::AccumulateGrad"));
  CHECK_FALSE(IsOperatorName("ProfilerStep#3"));
  CHECK(DeviceKindFromName("Tesla V100-DGXS-32GB") == "V100");
  CHECK(DeviceKindFromName("NVIDIA A100-PG509-200") == "A100");
  CHECK(DeviceKindFromName("NVIDIA GeForce RTX 3090") == "RTX3090");
  CHECK(DeviceKindFromName("NVIDIA H100 80GB HBM3") == "H100");
  CHECK(NormalizeCollective("nccl:all_reduce") == "allreduce");
  CHECK(NormalizeCollective("all_to_all_single") == "alltoall");
  CHECK(DTypeFromProfilerType("c10::Half") == graphs::DType::kFloat16);
  CHECK(DTypeFromProfilerType("long int") == graphs::DType::kInt64);
  CHECK(DTypeFromCommsType("Byte") == graphs::DType::kUInt8);
}

TEST_CASE("convolution output shapes from the autograd pairing") {
  // conv2d (sequence number 7) whose backward node holds convolution_backward
  // with grad_output [2, 4, 4, 4].
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
     "args": {"External id": 1, "Sequence number": 7, "Input Dims": [[2, 3, 8, 8], [4, 3, 3, 3], []], "Input type": ["float", "float", ""]}},
    {"ph": "X", "cat": "cpu_op", "name": "ConvolutionBackward0", "pid": 1, "tid": 2, "ts": 50, "dur": 20,
     "args": {"External id": 2, "Sequence number": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::convolution_backward", "pid": 1, "tid": 2, "ts": 52, "dur": 15,
     "args": {"External id": 3, "Input Dims": [[2, 4, 4, 4], [2, 3, 8, 8], [4, 3, 3, 3]], "Input type": ["float", "float", "float"]}}
  ]})";
  const Trace t = ParseTrace(trace, "pair.json");
  const ConvHints hints = PairConvolutionOutputs(t);
  REQUIRE(hints.size() == 1);
  CHECK(hints.at(0) == std::vector<int64_t>{2, 4, 4, 4});
}

TEST_CASE("pooling counts output x window, as a graph's pooling node does") {
  // Inception-v3's 3x3 stride-1 average pool over [32, 192, 35, 35], padding 1:
  // the output keeps the input's size, 9 FLOPs per output element.
  const std::vector<OpInput> avg = {Tensor({32, 192, 35, 35}), Scalar("[3, 3]"),
                                    Scalar("[1, 1]"),          Scalar("[1, 1]"),
                                    Scalar("False", "Scalar"), Scalar("True", "Scalar")};
  OpWork w = EstimateOpWork("aten::avg_pool2d", avg);
  CHECK_FALSE(w.approximate);
  CHECK(w.flops == 32.0 * 192 * 35 * 35 * 9);
  CHECK(w.bytes == 2.0 * 32 * 192 * 35 * 35 * 4);
  // ResNet's stem max pool: 3x3, stride 2, padding 1, dilation 1: 112 -> 56.
  w = EstimateOpWork("aten::max_pool2d", {Tensor({8, 64, 112, 112}), Scalar("[3, 3]"), Scalar("[2, 2]"),
                                          Scalar("[1, 1]"), Scalar("[1, 1]"), Scalar("False", "Scalar")});
  CHECK(w.flops == 8.0 * 64 * 56 * 56 * 9);
  // ceil_mode rounds up: a 3x3 stride-2 window over 8 without padding fits 4 times, not 3.
  w = EstimateOpWork("aten::max_pool2d", {Tensor({1, 1, 8, 8}), Scalar("[3, 3]"), Scalar("[2, 2]"),
                                          Scalar("[0, 0]"), Scalar("[1, 1]"), Scalar("True", "Scalar")});
  CHECK(w.flops == 4.0 * 4 * 9);
  // An empty stride is the window (PyTorch's default).
  w = EstimateOpWork("aten::avg_pool2d",
                     {Tensor({1, 2, 8, 8}), Scalar("[2, 2]"), Scalar("[]"), Scalar("[0, 0]")});
  CHECK(w.flops == 2.0 * 4 * 4 * 4);
  // Backward: grad_output elements, x the window for an average pool.
  w = EstimateOpWork("aten::avg_pool2d_backward", {Tensor({32, 768, 5, 5}), Tensor({32, 768, 17, 17}),
                                                   Scalar("[5, 5]"), Scalar("[3, 3]"), Scalar("[0, 0]")});
  CHECK_FALSE(w.approximate);
  CHECK(w.flops == 32.0 * 768 * 5 * 5 * 25);
  w = EstimateOpWork("aten::max_pool2d_with_indices_backward",
                     {Tensor({8, 64, 56, 56}), Tensor({8, 64, 112, 112}), Scalar("[3, 3]"), Scalar("[2, 2]"),
                      Scalar("[1, 1]"), Scalar("[1, 1]"), Scalar("False", "Scalar"),
                      Tensor({8, 64, 56, 56}, graphs::DType::kInt64)});
  CHECK(w.flops == 8.0 * 64 * 56 * 56);
  // Without "Concrete Inputs" (older traces): input elements, approximate.
  w = EstimateOpWork("aten::avg_pool2d", {Tensor({32, 192, 35, 35}), NotTensor(), NotTensor(), NotTensor()});
  CHECK(w.approximate);
  CHECK(w.flops == 32.0 * 192 * 35 * 35);
  w = EstimateOpWork("aten::avg_pool2d_backward", {Tensor({32, 768, 5, 5}), Tensor({32, 768, 17, 17})});
  CHECK(w.approximate);
  CHECK(w.flops == 32.0 * 768 * 5 * 5);
  // A window out of range (a damaged trace) is no window either.
  w = EstimateOpWork("aten::max_pool2d", {Tensor({1, 2, 8, 8}), Scalar("[9223372036854775807, 2]"),
                                          Scalar("[2, 2]"), Scalar("[0, 0]"), Scalar("[1, 1]")});
  CHECK(w.approximate);
  w = EstimateOpWork("aten::max_pool2d", {Tensor({1, 2, 8, 8}), Scalar("[2, 2]"), Scalar("[2, 2]"),
                                          Scalar("[0, 0]"), Scalar("[-3, 1]")});
  CHECK(w.approximate);
  // A malformed window is no window.
  w = EstimateOpWork("aten::avg_pool2d",
                     {Tensor({1, 2, 8, 8}), Scalar("[2, x]"), Scalar("[]"), Scalar("[0, 0]")});
  CHECK(w.approximate);
}

TEST_CASE("the profiler's Concrete Inputs are read as scalar arguments' values") {
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::avg_pool2d", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
     "args": {"External id": 1, "Input Dims": [[2, 3, 8, 8], [], [], []], "Input type": ["float", "ScalarList", "ScalarList", "ScalarList"],
              "Concrete Inputs": ["", "[3, 3]", "[1, 1]", "[1, 1]"]}}
  ]})";
  const Trace t = ParseTrace(trace, "pool.json");
  REQUIRE(t.ops.size() == 1);
  REQUIRE(t.ops[0].inputs.size() == 4);
  CHECK(t.ops[0].inputs[0].value.empty());
  CHECK(t.ops[0].inputs[1].value == "[3, 3]");
  const OpWork w = EstimateOpWork(t.ops[0].name, t.ops[0].inputs);
  CHECK(w.flops == 2.0 * 3 * 8 * 8 * 9);
}

}  // namespace gosim::calibration
