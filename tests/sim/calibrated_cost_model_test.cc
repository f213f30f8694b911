// The calibrated cost model: device profiles priced by op type, class and
// default, TF32, convolution kinds, depthwise ONNX convolutions, update nodes
// as shares of multi-tensor calls (helpers: cost_model_test_util.h).
#include "sim/cost_model.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/io.h"
#include "core/yaml.h"
#include "graphs/graph_builder.h"
#include "graphs/io.h"
#include "graphs/onnx_format.h"
#include "graphs/op_costs.h"
#include "sim/cost_models.h"
#include "sim/device_profile.h"
#include "sim/evaluator.h"
#include "sim/options.h"
#include "tests/sim/cost_model_test_util.h"

namespace gosim::sim {
namespace {

using cost_test::ClusterOf;
using cost_test::Contains;
using cost_test::CostGraph;
using cost_test::Device;
using cost_test::kProfile;
using cost_test::Make;
using cost_test::N;
using cost_test::Op;
using graphs::DType;
using graphs::NodeId;

TEST_CASE("Calibrated profiles: op type, then class, then default; roofline for other kinds") {
  const graphs::Graph g = CostGraph();
  const DeviceProfile profile = ParseDeviceProfile(kProfile, "a100.yaml");
  CHECK(profile.device_kind == "A100");
  CHECK(profile.links.at("memcpy_htod").bandwidth == 1.2e10);
  CHECK(profile.op_classes[static_cast<size_t>(graphs::OpClass::kMatMul)]->samples == 4);
  const CalibratedCostModel model({profile});
  const DeviceSpec a100 = Device("A100");
  const double launch = std::ldexp(1.0, -18);
  // MatMul: class fit 2^-17 + 2^-40 * 2^40 (the device's own launch is not used).
  CHECK(model.NodeTime(g, N(g, "mm"), a100) == launch + std::ldexp(1.0, -17) + 1.0);
  // aten::mm in fp16: its op type's fit of that precision, 2^-16, would run
  // 2^40 FLOPs faster than the 2^43 FLOP/s fp16 peak: the peak prices it,
  // 2^-3, and the description says so.
  CHECK(model.NodeTime(g, N(g, "h"), a100) == launch + std::ldexp(1.0, -3));
  CHECK(model.PeakRaised(g, a100) == 1);
  // Relu: elementwise fit 2^-29 * 2^30 bytes.
  CHECK(model.NodeTime(g, N(g, "relu"), a100) == launch + 2.0);
  CHECK(model.NodeTime(g, N(g, "view"), a100) == 0.0);
  // A device kind without a profile is an error naming both kinds, unless
  // roofline is asked for.
  try {
    model.NodeTime(g, N(g, "mm"), Device("V100"));
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(Contains(e.what(), "no profile (the profiles given are for A100) for device kind 'V100'"));
  }
  CHECK_THROWS_AS(model.KernelTime(g, MakeKernelWork(g, std::vector<NodeId>{N(g, "mm")}), Device("V100")),
                  ConfigError);
  const auto roofline = MakeCostModel("roofline");
  CalibratedOptions lenient;
  lenient.fallback = Fallback::kRoofline;
  const CalibratedCostModel with_roofline({profile}, lenient);
  CHECK(with_roofline.NodeTime(g, N(g, "mm"), Device("V100")) ==
        roofline->NodeTime(g, N(g, "mm"), Device("V100")));
  CHECK_THROWS_AS(CalibratedCostModel({profile, profile}), ConfigError);

  // Written and parsed back: the same profile.
  const DeviceProfile back = ParseDeviceProfile(DeviceProfileToYaml(profile), "back.yaml");
  CHECK(back.launch_overhead == profile.launch_overhead);
  CHECK(back.fallback == profile.fallback);
  CHECK(back.op_classes == profile.op_classes);
  CHECK(back.op_types == profile.op_types);
  CHECK(back.links == profile.links);
  CHECK(back.source["steps"][1].as<int>() == 2);

  // By name, from a file.
  const std::string path = (std::filesystem::temp_directory_path() / "gosim_profile_test.yaml").string();
  WriteFileAtomic(path, kProfile);
  const auto by_name = Make("calibrated", "profile: " + path + "\n");
  CHECK(by_name->name() == "calibrated");
  CHECK(by_name->NodeTime(g, N(g, "h"), a100) == launch + std::ldexp(1.0, -3));
  // By name too, another kind is an error unless roofline is asked for.
  CHECK_THROWS_AS(by_name->NodeTime(g, N(g, "mm"), Device("V100")), ConfigError);
  CHECK(Make("calibrated", "profile: " + path + "\nfallback: roofline\n")
            ->NodeTime(g, N(g, "mm"), Device("V100")) == roofline->NodeTime(g, N(g, "mm"), Device("V100")));
  std::filesystem::remove(path);
}

TEST_CASE(
    "Calibrated batch norms pay per element of a channel: node, fused group, names of every framework") {
  CHECK(graphs::IsBatchNormOp("FusedBatchNormGrad"));
  CHECK(graphs::IsBatchNormOp("aten::cudnn_batch_norm_backward"));
  CHECK(graphs::IsBatchNormOp("native_batch_norm"));
  CHECK(graphs::IsBatchNormOp("BatchNormalization"));
  CHECK_FALSE(graphs::IsBatchNormOp("LayerNorm"));
  CHECK_FALSE(graphs::IsBatchNormOp("batch_matmul"));
  CHECK_FALSE(graphs::IsBatchNormOp("aten::instance_norm"));
  const std::vector<int64_t> nchw{32, 64, 35, 35};
  CHECK(graphs::ChannelExtent("FusedBatchNorm", nchw) == 32 * 35 * 35);
  CHECK(graphs::ChannelExtent("Relu", nchw) == 0.0);
  CHECK(graphs::ChannelExtent("FusedBatchNorm", std::vector<int64_t>{64}) == 0.0);

  // bn (4 x 2 x 8 x 8: 256 elements per channel) -> relu; per element of a
  // channel 2^-20 s, per byte 2^-30.
  graphs::GraphBuilder b("bn");
  graphs::NodeSpec bn = Op("bn", "FusedBatchNorm", 4096, 2048, 2048, -1);
  bn.outputs.push_back(graphs::TensorInfo{2048, {4, 2, 8, 8}, DType::kFloat32});
  b.AddNode(bn);
  b.AddNode(Op("relu", "Relu", 512, 2048, 2048, 2048));
  b.AddNode(Op("bare", "FusedBatchNormGrad", 4096, 2048, 2048, 2048));  // no shape: no per-channel term
  b.AddEdge("bn", "relu", 0);
  const graphs::Graph g = b.Build();
  CHECK(NodeChannelExtent(g, g.node(N(g, "bn"))) == 256.0);
  CHECK(NodeChannelExtent(g, g.node(N(g, "relu"))) == 0.0);
  // kProfile without its links, so that two op types can follow.
  const std::string base(kProfile);
  const DeviceProfile profile = ParseDeviceProfile(
      base.substr(0, base.find("links:")) +
          "  FusedBatchNorm: {intercept: 0.0, per_flop: 0.0, per_byte: 9.313225746154785e-10, "
          "per_channel_element: 9.5367431640625e-07}\n"
          "  FusedBatchNormGrad: {intercept: 0.0, per_flop: 0.0, per_byte: 9.313225746154785e-10, "
          "per_channel_element: 9.5367431640625e-07}\n",
      "h200.yaml");
  const CalibratedCostModel model({profile});
  const DeviceSpec a100 = Device("A100");
  const double launch = std::ldexp(1.0, -18);
  // 4,096 bytes x 2^-30 + 256 x 2^-20.
  CHECK(model.NodeTime(g, N(g, "bn"), a100) ==
        launch + 4096 * std::ldexp(1.0, -30) + 256 * std::ldexp(1.0, -20));
  CHECK(model.NodeTime(g, N(g, "bare"), a100) == launch + 4096 * std::ldexp(1.0, -30));
  // bn + relu fused: the group's op is the batch norm (the most FLOPs), its
  // extent comes along; the intermediate tensor is neither written nor read.
  const KernelWork work = MakeKernelWork(g, std::vector<NodeId>{N(g, "bn"), N(g, "relu")});
  CHECK(work.channel_extent == 256.0);
  CHECK(model.KernelTime(g, work, a100) ==
        launch + (work.bytes_read + work.bytes_written) * std::ldexp(1.0, -30) + 256 * std::ldexp(1.0, -20));
  // The roofline model has no such term.
  const auto roofline = MakeCostModel("roofline");
  CHECK(roofline->KernelTime(g, work, a100) == roofline->KernelTime(
                                                   g,
                                                   [&] {
                                                     KernelWork w = work;
                                                     w.channel_extent = 0.0;
                                                     return w;
                                                   }(),
                                                   a100));
}

TEST_CASE(
    "Calibrated profiles price 16-bit matmuls, convolutions and norms only with fits of their precision") {
  // The same 2^40-FLOP product in fp32, fp16 and bf16, and an fp16 Relu.
  graphs::GraphBuilder b("mixed");
  b.AddNode(Op("mm32", "MatMul", std::ldexp(1.0, 40), 0, 0, 64));
  b.AddNode(Op("mm16", "MatMul", std::ldexp(1.0, 40), 0, 0, 64, DType::kFloat16));
  b.AddNode(Op("mmbf", "MatMul", std::ldexp(1.0, 40), 0, 0, 64, DType::kBFloat16));
  b.AddNode(Op("relu16", "Relu", 0, int64_t{1} << 29, int64_t{1} << 29, 64, DType::kFloat16));
  const graphs::Graph g = b.Build();
  const std::string base(kProfile);
  const std::string fp32_only = base.substr(0, base.find("op_types:"));
  DeviceSpec a100 = Device("A100");
  a100.peak_flops_fp16 = std::ldexp(1.0, 46);  // 2^40 FLOPs: 2^-6 s at the peak, below the fits
  const double launch = std::ldexp(1.0, -18);
  const auto roofline = MakeCostModel("roofline");
  {
    // fp32 fits only: the fp32 product and the Relu (bytes carry the
    // dtype) are priced; a 16-bit product is refused, not priced as fp32.
    const CalibratedCostModel model({ParseDeviceProfile(fp32_only, "a100.yaml")});
    CHECK(model.NodeTime(g, N(g, "mm32"), a100) == launch + std::ldexp(1.0, -17) + 1.0);
    CHECK(model.NodeTime(g, N(g, "relu16"), a100) == launch + 2.0);
    try {
      model.NodeTime(g, N(g, "mm16"), a100);
      FAIL("expected ConfigError");
    } catch (const ConfigError& e) {
      CHECK(Contains(e.what(), "the profile has no fp16 fit for matmul ops (op type 'MatMul')"));
    }
    CHECK_THROWS_AS(model.KernelTime(g, MakeKernelWork(g, std::vector<NodeId>{N(g, "mmbf")}), a100),
                    ConfigError);
    std::string example;
    CHECK(model.PrecisionMisses(g, a100, &example) == 2);
    CHECK(example == "mm16");
    // With fallback: roofline, roofline prices them.
    CalibratedOptions lenient;
    lenient.fallback = Fallback::kRoofline;
    const CalibratedCostModel with_roofline({ParseDeviceProfile(fp32_only, "a100.yaml")}, lenient);
    CHECK(with_roofline.NodeTime(g, N(g, "mm16"), a100) == roofline->NodeTime(g, N(g, "mm16"), a100));
  }
  {
    // A class fit of fp16 prices fp16 products (2^-44 per FLOP: 2^-4 s), not bf16 ones.
    const DeviceProfile p = ParseDeviceProfile(
        fp32_only +
            "  matmul [fp16]: {intercept: 0.0, per_flop: 5.684341886080802e-14, per_byte: 0.0}\n"
            "op_types:\n"
            "  MatMul [bf16]: {intercept: 0.0, per_flop: 0.0, per_byte: 0.0, samples: 3}\n",
        "a100.yaml");
    REQUIRE(p.op_class_precisions.at("fp16")[static_cast<size_t>(graphs::OpClass::kMatMul)].has_value());
    const CalibratedCostModel model({p});
    CHECK(model.NodeTime(g, N(g, "mm16"), a100) == launch + std::ldexp(1.0, -4));
    // bf16: the op type's fit of that precision wins (a constant 0 here,
    // raised to the peak's 2^-6 s).
    CHECK(model.NodeTime(g, N(g, "mmbf"), a100) == launch + std::ldexp(1.0, -6));
    CHECK(model.NodeTime(g, N(g, "mm32"), a100) == launch + std::ldexp(1.0, -17) + 1.0);
    CHECK(model.PrecisionMisses(g, a100) == 0);
    const DeviceProfile back = ParseDeviceProfile(DeviceProfileToYaml(p), "back.yaml");
    CHECK(back.op_class_precisions == p.op_class_precisions);
    CHECK(back.op_types == p.op_types);
  }
  // Bad precision keys are one error line each.
  CHECK_THROWS_WITH_AS(ParseDeviceProfile(fp32_only + "  matmul [fp8]: {intercept: 0.0}\n", "a.yaml"),
                       doctest::Contains("unknown precision '[fp8]' of op class 'matmul'"), ConfigError);
  CHECK_THROWS_WITH_AS(ParseDeviceProfile(fp32_only + "  matmal [bf16]: {intercept: 0.0}\n", "a.yaml"),
                       doctest::Contains("unknown op class 'matmal'"), ConfigError);
  // auto: roofline for those nodes, said once in the description and the warnings.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_auto_precision";
  std::filesystem::create_directories(dir);
  WriteFileAtomic((dir / "a100.yaml").string(), fp32_only);
  const auto model = Make("auto", "profiles_dir: " + dir.string() + "\n");
  CHECK(model->NodeTime(g, N(g, "mm16"), a100) == roofline->NodeTime(g, N(g, "mm16"), a100));
  CHECK(model->NodeTime(g, N(g, "mm32"), a100) == launch + std::ldexp(1.0, -17) + 1.0);
  ClusterBuilder cb("one", "test");
  cb.AddDevice(a100);
  const Cluster cluster = cb.Build();
  CHECK(Contains(model->Describe(g, cluster), "roofline for 2 16-bit nodes it has no fit for"));
  const std::vector<std::string> warnings = model->Warnings(g, cluster);
  REQUIRE(warnings.size() == 1);
  CHECK(
      Contains(warnings[0], "2 of 4 nodes of graph 'mixed' run in 16 bits, and the A100 profile has no fit"));
}

// gosim.torch.export(..., tf32=True) records matrix products as tfloat32:
// float32 tensors computed on TF32 tensor cores.
TEST_CASE("TF32 products: the TF32 peak in roofline, a profile's [tf32] fits, else roofline at that peak") {
  graphs::GraphBuilder b("tf32");
  b.AddNode(Op("mm32", "aten::mm", std::ldexp(1.0, 40), 0, 0, 64));
  b.AddNode(Op("mmtf", "aten::mm", std::ldexp(1.0, 40), 0, 0, 64, DType::kTFloat32));
  const graphs::Graph g = b.Build();
  DeviceSpec a100 = Device("A100");
  a100.peak_flops_tf32 = std::ldexp(1.0, 42);
  const double device_launch = std::ldexp(1.0, -16);
  const auto roofline = Make("roofline", "compute_efficiency: {matmul: 1.0}\n");
  // Roofline: fp32 at the fp32 peak (1 s), tfloat32 at the TF32 peak (1/4 s);
  // a device without TF32 runs it at the fp32 peak.
  CHECK(roofline->NodeTime(g, N(g, "mm32"), a100) == device_launch + 1.0);
  CHECK(roofline->NodeTime(g, N(g, "mmtf"), a100) == device_launch + 0.25);
  CHECK(roofline->NodeTime(g, N(g, "mmtf"), Device("A100")) == device_launch + 1.0);
  CHECK(a100.PeakFlops(DType::kTFloat32) == std::ldexp(1.0, 42));
  CHECK(a100.CeilingFlops(DType::kTFloat32) == a100.CeilingFlops(DType::kFloat32));

  const std::string base(kProfile);
  const std::string fp32_only = base.substr(0, base.find("op_types:"));
  const double launch = std::ldexp(1.0, -18);
  {
    // A "matmul [tf32]" class fit (2^-42 per FLOP: 1/4 s) prices the tf32
    // product; the fp32 one keeps the fp32 class fit (2^-17 + 1 s).
    const DeviceProfile p = ParseDeviceProfile(
        fp32_only + "  matmul [tf32]: {intercept: 0.0, per_flop: 2.2737367544323206e-13, per_byte: 0.0}\n",
        "a100.yaml");
    const CalibratedCostModel model({p});
    CHECK(model.NodeTime(g, N(g, "mmtf"), a100) == launch + 0.25);
    CHECK(model.NodeTime(g, N(g, "mm32"), a100) == launch + std::ldexp(1.0, -17) + 1.0);
    CHECK(model.PrecisionMisses(g, a100, nullptr, true) == 0);
    CHECK(ParseDeviceProfile(DeviceProfileToYaml(p), "back.yaml").op_class_precisions ==
          p.op_class_precisions);
  }
  // Without [tf32] fits, auto prices the product by roofline at the TF32
  // peak (never by the fp32 fit, which is 4x slower here) and says so.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_auto_tf32";
  std::filesystem::create_directories(dir);
  WriteFileAtomic((dir / "a100.yaml").string(), fp32_only);
  const auto model = Make("auto", "profiles_dir: " + dir.string() + "\n");
  CHECK(model->NodeTime(g, N(g, "mmtf"), a100) == MakeCostModel("roofline")->NodeTime(g, N(g, "mmtf"), a100));
  CHECK(model->NodeTime(g, N(g, "mmtf"), a100) < model->NodeTime(g, N(g, "mm32"), a100) / 2);
  const Cluster cluster = ClusterOf(a100);
  const std::string described = model->Describe(g, cluster);
  CHECK(Contains(described, "roofline at the TF32 peak for 1 tf32 nodes it has no fit for"));
  CHECK(!Contains(described, "16-bit"));
  CHECK(model->Warnings(g, cluster).empty());
}

// Depthwise and grouped convolutions (graphs::ConvKind) read from the
// weight's shape, and priced by their kind's fits before the dense ones.
TEST_CASE("Calibrated: a convolution's kind from its weight, priced by the kind's fits first") {
  graphs::GraphBuilder b("convs");
  const auto tensor = [](const std::string& name, const std::string& op, std::vector<int64_t> shape,
                         bool parameter, DType dtype = DType::kFloat32) {
    graphs::NodeSpec s;
    s.name = name;
    s.op = op;
    s.outputs.push_back(graphs::TensorInfo{64, std::move(shape), dtype});
    if (parameter) s.persistent_bytes = 64;
    return s;
  };
  b.AddNode(tensor("x", "Input", {8, 32, 16, 16}, false));
  b.AddNode(tensor("x1", "Input", {8, 1, 16, 16}, false));
  b.AddNode(tensor("gout", "Input", {8, 64, 16, 16}, false));
  b.AddNode(tensor("w_dw", "Parameter", {32, 1, 3, 3}, true));
  b.AddNode(tensor("w_g", "Parameter", {32, 8, 3, 3}, true));
  b.AddNode(tensor("w_dense", "Parameter", {64, 32, 3, 3}, true));
  b.AddNode(tensor("w_one", "Parameter", {64, 1, 3, 3}, true));
  const std::vector<std::tuple<const char*, const char*, std::vector<const char*>, DType>> convs = {
      {"dw", "aten::convolution", {"x", "w_dw"}, DType::kFloat32},
      {"dw16", "aten::convolution", {"x", "w_dw"}, DType::kBFloat16},
      {"g", "aten::convolution", {"x", "w_g"}, DType::kFloat32},
      {"dense", "aten::convolution", {"x", "w_dense"}, DType::kFloat32},
      {"dense16", "aten::convolution", {"x", "w_dense"}, DType::kBFloat16},
      // A dense one on a 1-channel input: its grad_output's 64 channels are not the input's.
      {"one_bw", "aten::convolution_backward", {"gout", "x1", "w_one"}, DType::kFloat32},
      {"dw_bw", "aten::convolution_backward", {"x", "x", "w_dw"}, DType::kFloat32},
      {"tf_dw", "DepthwiseConv2dNativeBackpropFilter", {"x", "x"}, DType::kFloat32},
      {"transposed", "aten::conv_transpose2d", {"x", "w_dw"}, DType::kFloat32},
      {"no_weight", "Conv2DBackpropFilter", {"x", "x"}, DType::kFloat32}};
  for (const auto& [name, op, inputs, dtype] : convs) {
    b.AddNode(Op(name, op, 1.0, 0, 0, 64, dtype));
    for (const char* input : inputs) b.AddEdge(input, name, 0);
  }
  const graphs::Graph g = b.Build();
  using graphs::ConvKind;
  CHECK(NodeConvKind(g, N(g, "dw")) == ConvKind::kDepthwise);
  CHECK(NodeConvKind(g, N(g, "dw16")) == ConvKind::kDepthwise);
  CHECK(NodeConvKind(g, N(g, "g")) == ConvKind::kGrouped);
  CHECK(NodeConvKind(g, N(g, "dense")) == ConvKind::kDense);
  CHECK(NodeConvKind(g, N(g, "one_bw")) == ConvKind::kDense);
  CHECK(NodeConvKind(g, N(g, "dw_bw")) == ConvKind::kDepthwise);
  CHECK(NodeConvKind(g, N(g, "tf_dw")) == ConvKind::kDepthwise);
  CHECK(NodeConvKind(g, N(g, "transposed")) == ConvKind::kDense);
  CHECK(NodeConvKind(g, N(g, "no_weight")) == ConvKind::kDense);
  CHECK(NodeConvKind(g, N(g, "x")) == ConvKind::kDense);  // not a convolution
  CHECK(MakeKernelWork(g, std::vector<NodeId>{N(g, "dw")}).op_node == N(g, "dw"));

  // Intercepts as labels: each node takes one fit (launch 2^-18 + 2^-k).
  const std::string base(kProfile);
  const std::string classes =
      base.substr(0, base.find("op_types:")) +
      "  conv: {intercept: 9.765625e-04, per_flop: 0.0, per_byte: 0.0}\n"              // 2^-10
      "  conv (depthwise): {intercept: 1.953125e-03, per_flop: 0.0, per_byte: 0.0}\n"  // 2^-9
      "  conv (grouped): {intercept: 3.90625e-03, per_flop: 0.0, per_byte: 0.0}\n"     // 2^-8
      "  conv_backward: {intercept: 9.765625e-04, per_flop: 0.0, per_byte: 0.0}\n";
  const std::string types =
      "op_types:\n  aten::convolution: {intercept: 7.8125e-03, per_flop: 0.0, per_byte: 0.0}\n";
  const DeviceSpec a100 = Device("A100");
  const double launch = std::ldexp(1.0, -18);
  const auto time = [&](const CalibratedCostModel& m, const char* node) {
    return m.NodeTime(g, N(g, node), a100);
  };
  {
    const CalibratedCostModel model({ParseDeviceProfile(classes + types, "a100.yaml")});
    CHECK(time(model, "dense") == launch + std::ldexp(1.0, -7));  // the dense type fit
    CHECK(time(model, "dw") == launch + std::ldexp(1.0, -9));     // the kind's class before the dense type
    CHECK(model.KernelTime(g, MakeKernelWork(g, std::vector<NodeId>{N(g, "dw")}), a100) ==
          launch + std::ldexp(1.0, -9));
    CHECK(time(model, "g") == launch + std::ldexp(1.0, -8));
    CHECK(time(model, "tf_dw") == launch + std::ldexp(1.0, -10));  // no conv_backward (depthwise): the class
    // bf16 without bf16 fits: a depthwise one takes its kind's fp32 fit, a dense one none.
    CHECK(time(model, "dw16") == launch + std::ldexp(1.0, -9));
    CHECK_THROWS_AS(time(model, "dense16"), ConfigError);
    std::string example;
    CHECK(model.PrecisionMisses(g, a100, &example) == 1);
    CHECK(example == "dense16");
  }
  {
    // The kind's type fit first, and a bf16 one in its precision.
    const DeviceProfile p = ParseDeviceProfile(
        classes + "  conv (depthwise) [bf16]: {intercept: 3.125e-02, per_flop: 0.0, per_byte: 0.0}\n" +
            types +
            "  aten::convolution (depthwise): {intercept: 1.5625e-02, per_flop: 0.0, per_byte: 0.0}\n",
        "a100.yaml");
    const CalibratedCostModel model({p});
    CHECK(time(model, "dw") == launch + std::ldexp(1.0, -6));
    CHECK(time(model, "dw16") == launch + std::ldexp(1.0, -5));
    CHECK(time(model, "g") == launch + std::ldexp(1.0, -8));
    const DeviceProfile back = ParseDeviceProfile(DeviceProfileToYaml(p), "back.yaml");
    CHECK(back.op_class_kinds == p.op_class_kinds);
    CHECK(back.op_class_kinds.count("conv (depthwise) [bf16]") == 1);
  }
  // Kinds belong to convolutions only; a misspelt kind is no class.
  const std::string fp32_only = base.substr(0, base.find("op_types:"));
  CHECK_THROWS_WITH_AS(ParseDeviceProfile(fp32_only + "  matmul (depthwise): {intercept: 0.0}\n", "a.yaml"),
                       doctest::Contains("op class 'matmul' has no kinds"), ConfigError);
  CHECK_THROWS_WITH_AS(ParseDeviceProfile(fp32_only + "  conv (depthwize): {intercept: 0.0}\n", "a.yaml"),
                       doctest::Contains("unknown op class 'conv (depthwize)'"), ConfigError);
}

// An ONNX Conv's weight is an initializer: its kind comes from the op type
// the importer gives it (graphs/onnx_format.cc), and it takes that kind's fit.
TEST_CASE("Calibrated: an ONNX depthwise Conv takes the depthwise fit" *
          doctest::skip(!graphs::OnnxSupported())) {
  const graphs::Graph g = graphs::LoadGraph("tests/data/onnx/depthwise.onnx");
  using graphs::ConvKind;
  CHECK(NodeConvKind(g, N(g, "dw")) == ConvKind::kDepthwise);
  CHECK(NodeConvKind(g, N(g, "grouped")) == ConvKind::kGrouped);
  CHECK(NodeConvKind(g, N(g, "dense")) == ConvKind::kDense);
  const std::string base(kProfile);
  const CalibratedCostModel model({ParseDeviceProfile(
      base.substr(0, base.find("op_types:")) +
          "  conv: {intercept: 9.765625e-04, per_flop: 0.0, per_byte: 0.0}\n"               // 2^-10
          "  conv (depthwise): {intercept: 1.953125e-03, per_flop: 0.0, per_byte: 0.0}\n",  // 2^-9
      "a100.yaml")});
  const DeviceSpec a100 = Device("A100");
  const double launch = std::ldexp(1.0, -18);
  CHECK(model.NodeTime(g, N(g, "dw"), a100) == launch + std::ldexp(1.0, -9));
  CHECK(model.NodeTime(g, N(g, "grouped"), a100) == launch + std::ldexp(1.0, -10));  // no grouped fit: conv
  CHECK(model.NodeTime(g, N(g, "dense"), a100) == launch + std::ldexp(1.0, -10));
}

// PyTorch's foreach optimizers: an update node whose `_foreach_` type the
// profile fits is a share of one call over the parameters its type updates.
TEST_CASE("Calibrated: update nodes as shares of multi-tensor calls") {
  graphs::GraphBuilder b("sgd");
  const auto update = [](const std::string& name, const std::string& op, const std::string& parameter,
                         double flops, int64_t bytes, DType dtype = DType::kFloat32) {
    graphs::NodeSpec s = Op(name, op, flops, bytes / 2, bytes / 2, 64, dtype);
    s.phase = graphs::Phase::kUpdate;
    s.colocation = parameter;
    return s;
  };
  const double flops = std::ldexp(1.0, 20);
  for (int p = 0; p < 4; ++p) {  // momentum SGD: two add_ and one mul_ per parameter
    const std::string k = std::to_string(p);
    b.AddNode(update("buf" + k, "aten::add_", "w" + k, flops, 1024));
    b.AddNode(update("step" + k, "aten::add_", "w" + k, flops, 1024));
    b.AddNode(update("mul" + k, "aten::mul_", "w" + k, flops, 1024));
  }
  b.AddNode(update("big", "aten::add_", "w3", flops, int64_t{1} << 24));
  b.AddNode(update("half", "aten::add_", "w0", flops, 1024, DType::kBFloat16));
  b.AddNode(update("alone", "aten::add_", "", flops, 1024));  // no colocation group: a parameter of its own
  b.AddNode(Op("fwd", "aten::add_", flops, 512, 512, 64));    // forward: its own kernel
  for (int p = 0; p < 2; ++p)  // weight decay's out-of-place add: the in-place sibling's fit
    b.AddNode(update("decay" + std::to_string(p), "aten::add", "w" + std::to_string(p), flops, 1024));
  const graphs::Graph g = b.Build();
  CHECK(g.update_parameters(g.FindOpType("aten::add_")) == 5);
  CHECK(g.update_parameters(g.FindOpType("aten::mul_")) == 4);
  CHECK(g.update_parameters(g.FindOpType("aten::add")) == 2);
  CHECK(g.update_parameters(-1) == 0);

  const std::string base(kProfile);
  const DeviceProfile profile = ParseDeviceProfile(base.substr(0, base.find("links:")) +
                                                       "  aten::_foreach_add_: {intercept: 2.44140625e-04, "
                                                       "per_flop: 9.094947017729282e-13, per_byte: 0.0}\n",
                                                   "a100.yaml");  // 2^-12, 2^-40
  const DeviceSpec a100 = Device("A100");
  const double launch = std::ldexp(1.0, -18);
  const double share = (launch + std::ldexp(1.0, -12)) / 5 + std::ldexp(1.0, -20);
  const CalibratedCostModel model({profile});
  for (const char* name : {"buf0", "step2", "alone"})
    CHECK(model.NodeTime(g, N(g, name), a100) == doctest::Approx(share).epsilon(1e-15));
  // The fit has no byte term: 2^24 bytes would take less than the 2^30 B/s
  // memory allows, so the device's bandwidth prices them (2^-6 s).
  CHECK(model.NodeTime(g, N(g, "big"), a100) ==
        doctest::Approx(launch / 5 + std::ldexp(1.0, -6)).epsilon(1e-15));
  CHECK(model.NodeTime(g, N(g, "decay1"), a100) ==
        doctest::Approx((launch + std::ldexp(1.0, -12)) / 2 + std::ldexp(1.0, -20)).epsilon(1e-15));
  // Ten add_ shares over five parameters: two calls' launches and intercepts.
  CHECK(model.MultiTensorNodes(g, a100) == 12);
  CHECK(model.LaunchOf(g, N(g, "buf0"), a100) == launch / 5);
  // No _foreach_mul_ fit, 16 bits, the forward phase: their own kernels (elementwise class, 2^-29 s/byte).
  CHECK(model.NodeTime(g, N(g, "mul0"), a100) == launch + std::ldexp(1.0, -19));
  CHECK(model.NodeTime(g, N(g, "fwd"), a100) == launch + std::ldexp(1.0, -19));
  CHECK(model.LaunchOf(g, N(g, "mul0"), a100) == launch);
  CHECK(model.MultiTensorOf(g, N(g, "half"), a100).fit == nullptr);
  // A fused group is one kernel with its own launch.
  const std::vector<NodeId> pair{N(g, "buf0"), N(g, "step0")};
  CHECK(model.KernelTime(g, MakeKernelWork(g, pair), a100) > launch);
  CHECK(model.KernelTime(g, MakeKernelWork(g, std::vector<NodeId>{N(g, "buf1")}), a100) ==
        model.NodeTime(g, N(g, "buf1"), a100));
  CHECK(Contains(model.Describe(g, ClusterOf(a100)), "12 update nodes as shares of multi-tensor calls"));
  // multi_tensor_updates: false (foreach=False): every node pays a launch.
  CalibratedOptions per_node;
  per_node.multi_tensor_updates = false;
  const CalibratedCostModel separate({profile}, per_node);
  CHECK(separate.NodeTime(g, N(g, "buf0"), a100) == launch + std::ldexp(1.0, -19));
  CHECK(separate.MultiTensorNodes(g, a100) == 0);

  // auto: the roofline floor charges the share's launch, not a whole one:
  // big's 2^24 bytes take 2^-6 s at 2^30 B/s.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_auto_foreach";
  std::filesystem::create_directories(dir);
  WriteFileAtomic((dir / "a100.yaml").string(), DeviceProfileToYaml(profile));
  const auto automatic = Make("auto", "profiles_dir: " + dir.string() + "\n");
  CHECK(automatic->NodeTime(g, N(g, "buf0"), a100) == doctest::Approx(share).epsilon(1e-15));
  CHECK(automatic->NodeTime(g, N(g, "big"), a100) == doctest::Approx(launch / 5 + std::ldexp(1.0, -6)));
  CHECK(Contains(automatic->Describe(g, ClusterOf(a100)), "12 update nodes as shares of multi-tensor calls"));
  const auto off =
      Make("calibrated", "profile: " + (dir / "a100.yaml").string() + "\nmulti_tensor_updates: false\n");
  CHECK(off->NodeTime(g, N(g, "buf0"), a100) == launch + std::ldexp(1.0, -19));
  const auto automatic_off =
      Make("auto", "profiles_dir: " + dir.string() + "\nmulti_tensor_updates: false\n");
  CHECK(automatic_off->NodeTime(g, N(g, "buf0"), a100) == launch + std::ldexp(1.0, -19));
  CHECK(!Contains(automatic_off->Describe(g, ClusterOf(a100)), "multi-tensor"));
}

TEST_CASE("Calibrated: with the host modelled, a launch becomes the queued gap per kernel") {
  const graphs::Graph g = CostGraph();
  const std::string base(kProfile);
  const std::string hosted = base.substr(0, base.find("links:")) +
                             "kernel_gap: 9.5367431640625e-07\n" +  // 2^-20
                             "host:\n"
                             "  launch: {seconds: 1.52587890625e-05, kernels: 3}\n"
                             "  op_types:\n"
                             "    Relu: {seconds: 1.52587890625e-05, kernels: 2}\n"
                             "    MatMul: {seconds: 1.52587890625e-05, kernels: 0.25}\n";
  const DeviceSpec a100 = Device("A100");
  const double launch = std::ldexp(1.0, -18), gap = std::ldexp(1.0, -20);
  const CalibratedCostModel model({ParseDeviceProfile(hosted, "a100.yaml")});
  REQUIRE(model.HostModelled(a100));
  // Relu launches two kernels: two queued gaps instead of one launch.
  CHECK(model.HostedLaunchDelta(g, N(g, "relu"), a100) == 2 * gap - launch);
  // At least one kernel per op with work.
  CHECK(model.HostedLaunchDelta(g, N(g, "mm"), a100) == gap - launch);
  // No work, no kernel: NodeTime is 0 and stays so.
  CHECK(model.HostedLaunchDelta(g, N(g, "view"), a100) == 0.0);
  // The launch is never more than NodeTime holds.
  CHECK(model.NodeTime(g, N(g, "relu"), a100) + model.HostedLaunchDelta(g, N(g, "relu"), a100) ==
        2.0 + 2 * gap);
  // A fused group: the type of its op node.
  const std::vector<NodeId> pair{N(g, "m1"), N(g, "m2")};
  CHECK(model.HostedKernelLaunchDelta(g, MakeKernelWork(g, pair), a100) == 2 * gap - launch);
  // A profile without a host table: nothing changes (the engine has no host there).
  const CalibratedCostModel plain({ParseDeviceProfile(kProfile, "a100.yaml")});
  CHECK(!plain.HostModelled(a100));
  CHECK(plain.HostedLaunchDelta(g, N(g, "relu"), a100) == 0.0);

  // The engine applies it under eager execution only: a -> b on one device,
  // Relu kernels of 2^-29 s/byte x 2^10 bytes.
  graphs::GraphBuilder b("chain");
  b.AddNode(Op("a", "Relu", 0, 512, 512, 1024));
  b.AddNode(Op("b", "Relu", 0, 512, 512, 1024));
  b.AddEdge("a", "b", 0);
  const graphs::Graph chain = b.Build();
  const auto shared = std::make_shared<CalibratedCostModel>(model);
  const Evaluator eager(chain, ClusterOf(a100), shared);
  SimOptions none_options;
  none_options.execution = Execution::kNone;
  const Evaluator none(chain, ClusterOf(a100), shared, none_options);
  Decision d;
  d.placement = {0, 0};
  const SimResult with_host = eager.Simulate(d, true);
  const SimResult without = none.Simulate(d, true);
  const double kernel = std::ldexp(1.0, -19);
  CHECK(with_host.execution == Execution::kEager);
  for (const auto& op : without.ops)
    CHECK(op.end - op.start == doctest::Approx(launch + kernel).epsilon(1e-12));
  for (const auto& op : with_host.ops)
    CHECK(op.end - op.start == doctest::Approx(2 * gap + kernel).epsilon(1e-12));
}

}  // namespace
}  // namespace gosim::sim
