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

namespace gosim::sim {
namespace {

using graphs::DType;
using graphs::NodeId;

// Powers of two everywhere, so that every expected time below is exact.
DeviceSpec Device(const std::string& kind = "X") {
  DeviceSpec d;
  d.name = "d0";
  d.kind = kind;
  d.peak_flops_fp32 = std::ldexp(1.0, 40);
  d.peak_flops_fp16 = std::ldexp(1.0, 43);
  d.memory_bandwidth = std::ldexp(1.0, 30);
  d.memory_capacity = int64_t{1} << 34;
  d.launch_overhead = std::ldexp(1.0, -16);
  return d;
}

graphs::NodeSpec Op(const std::string& name, const std::string& op, double flops, int64_t read,
                    int64_t written, int64_t out_bytes, DType dtype = DType::kFloat32) {
  graphs::NodeSpec s;
  s.name = name;
  s.op = op;
  s.flops = flops;
  s.bytes_read = read;
  s.bytes_written = written;
  if (out_bytes >= 0) s.outputs.push_back(graphs::TensorInfo{out_bytes, {}, dtype});
  return s;
}

// mm -> relu: 2^40 and 2^30 FLOPs, each reading and writing 2^29 bytes; h:
// an fp16 matmul; view: no work; m1 -> m2: measured, 2^20-byte tensors.
graphs::Graph CostGraph() {
  graphs::GraphBuilder b("costs");
  b.AddNode(Op("mm", "MatMul", std::ldexp(1.0, 40), int64_t{1} << 29, int64_t{1} << 29, int64_t{1} << 29));
  b.AddNode(Op("relu", "Relu", std::ldexp(1.0, 30), int64_t{1} << 29, int64_t{1} << 29, int64_t{1} << 29));
  b.AddNode(Op("h", "aten::mm", std::ldexp(1.0, 40), 0, 0, 64, DType::kFloat16));
  b.AddNode(Op("view", "aten::view", 0, 0, 0, 16));
  graphs::NodeSpec m1 = Op("m1", "Relu", std::ldexp(1.0, 30), 0, int64_t{1} << 20, int64_t{1} << 20);
  m1.measured = {{"V100", 1e-3}, {"any", 2e-3}};
  graphs::NodeSpec m2 =
      Op("m2", "Relu", std::ldexp(1.0, 30), int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20);
  m2.measured = {{"any", 3e-3}};
  b.AddNode(m1);
  b.AddNode(m2);
  b.AddEdge("mm", "relu", 0);
  b.AddEdge("m1", "m2", 0);
  return b.Build();
}

std::shared_ptr<const CostModel> Make(const std::string& name, const std::string& yaml) {
  return MakeCostModel(name, LoadYamlString(yaml, "exp.yaml"), "exp.yaml");
}

NodeId N(const graphs::Graph& g, const char* name) {
  return *g.FindNode(name);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Cluster ClusterOf(const DeviceSpec& device) {
  ClusterBuilder cb("one", "test");
  cb.AddDevice(device);
  return cb.Build();
}

const char* kProfile =
    "format: gosim.device_profile\n"
    "version: 1\n"
    "device_kind: A100\n"
    "source: {trace: t.json.gz, steps: [1, 2]}\n"
    "launch_overhead: 3.814697265625e-06\n"                                        // 2^-18
    "default: {intercept: 0.0, per_flop: 0.0, per_byte: 9.313225746154785e-10}\n"  // 2^-30
    "op_classes:\n"
    "  matmul: {intercept: 7.62939453125e-06, per_flop: 9.094947017729282e-13, per_byte: 0.0, samples: 4, "
    "mape: 0.25}\n"                                                                      // 2^-17, 2^-40
    "  elementwise: {intercept: 0.0, per_flop: 0.0, per_byte: 1.862645149230957e-09}\n"  // 2^-29
    "op_types:\n"
    "  aten::mm [fp16]: {intercept: 1.52587890625e-05, per_flop: 0.0, per_byte: 0.0}\n"  // 2^-16
    "links:\n"
    "  memcpy_htod: {latency: 8.0e-6, bandwidth: 1.2e10, samples: 30}\n";

}  // namespace

TEST_CASE("Roofline default efficiencies give the documented times") {
  const graphs::Graph g = CostGraph();
  const DeviceSpec d = Device();
  const auto model = MakeCostModel("roofline");
  CHECK(model->name() == "roofline");
  // MatMul (0.7, 0.7): compute 2^40 / (2^40 * 0.7) = memory 2^30 / (2^30 * 0.7) = 1/0.7 s.
  CHECK(model->NodeTime(g, N(g, "mm"), d) ==
        doctest::Approx(std::ldexp(1.0, -16) + 1.0 / 0.7).epsilon(1e-14));
  // Relu (0.5, 0.75): memory 2^30 / (2^30 * 0.75) beats compute 2^30 / (2^40 * 0.5) = 2^-9.
  CHECK(model->NodeTime(g, N(g, "relu"), d) ==
        doctest::Approx(std::ldexp(1.0, -16) + 1.0 / 0.75).epsilon(1e-14));
  CHECK(DefaultEfficiency(graphs::OpClass::kMatMul).compute == 0.70);
  CHECK(DefaultEfficiency(graphs::OpClass::kElementwise).memory == 0.75);
  CHECK(model->NodeTime(g, N(g, "view"), d) == 0.0);  // no work: free by default
}

TEST_CASE("Roofline with configured efficiencies is exact") {
  const graphs::Graph g = CostGraph();
  const DeviceSpec d = Device();
  const auto model = Make("roofline",
                          "compute_efficiency: {default: 0.5, matmul: 1.0}\n"
                          "memory_efficiency: {default: 0.25}\n"
                          "op_types:\n"
                          "  aten::mm: {compute: 0.5}\n"
                          "charge_empty_ops: true\n");
  const double launch = std::ldexp(1.0, -16);
  // MatMul: compute 2^40 / 2^40 = 1 s; memory 2^30 / (2^30 / 4) = 4 s.
  CHECK(model->NodeTime(g, N(g, "mm"), d) == launch + 4.0);
  // Relu: compute 2^30 / 2^39 = 2^-9 s; memory 2^30 / 2^28 = 4 s.
  CHECK(model->NodeTime(g, N(g, "relu"), d) == launch + 4.0);
  // aten::mm in fp16 with its own compute efficiency: 2^40 / (2^43 * 0.5) = 1/4 s.
  CHECK(model->NodeTime(g, N(g, "h"), d) == launch + 0.25);
  CHECK(model->NodeTime(g, N(g, "view"), d) == launch);  // charged

  // A fused MatMul + Relu: one launch, summed FLOPs, only boundary bytes:
  // read 2^29 (mm's input), written 2^29 (relu's output); relu's read of
  // mm's output and mm's write of it disappear. Separately: 2 launches + 8 s.
  const std::vector<NodeId> group{N(g, "mm"), N(g, "relu")};
  const KernelWork work = MakeKernelWork(g, group);
  CHECK(work.flops == std::ldexp(1.0, 40) + std::ldexp(1.0, 30));
  CHECK(work.bytes_read == std::ldexp(1.0, 29));
  CHECK(work.bytes_written == std::ldexp(1.0, 29));
  CHECK(g.op_type_name(work.op) == "MatMul");
  CHECK(work.nodes.size() == 2);
  // compute (2^40 + 2^30) / 2^40 = 1 + 2^-10 s; memory 2^30 * 4 / 2^30 = 4 s.
  CHECK(model->KernelTime(g, work, d) == launch + 4.0);
}

TEST_CASE("MakeKernelWork keeps tensors that leave the group and graph outputs") {
  graphs::GraphBuilder b("fuse");
  b.AddNode(Op("a", "MatMul", 10, 100, 40, 40));
  b.AddNode(Op("b", "Relu", 20, 48, 30, 30, DType::kFloat16));
  b.AddNode(Op("c", "Add", 5, 30, 12, 12));
  b.AddNode(Op("d", "Relu", 1, 40, 40, 40));
  b.AddEdge("a", "b", 0);
  b.AddEdge("b", "c", 0);
  b.AddEdge("a", "d", 0);
  const graphs::Graph g = b.Build();
  const std::vector<NodeId> ab{N(g, "a"), N(g, "b")};
  KernelWork w = MakeKernelWork(g, ab);
  CHECK(w.flops == 30);
  CHECK(w.bytes_read == 100 + 48 - 40);
  CHECK(w.bytes_written == 40 + 30);  // a's output also goes to d
  CHECK(g.op_type_name(w.op) == "Relu");
  CHECK(w.dtype == DType::kFloat16);
  const std::vector<NodeId> bc{N(g, "b"), N(g, "c")};
  w = MakeKernelWork(g, bc);
  CHECK(w.bytes_read == 48);
  CHECK(w.bytes_written == 12);  // c's output has no consumer: a graph output, still written
}

TEST_CASE("Measured uses the device kind, then 'any', then the fallback") {
  const graphs::Graph g = CostGraph();
  const auto model = MakeCostModel("measured");
  CHECK(model->name() == "measured");
  CHECK(model->NodeTime(g, N(g, "m1"), Device("V100")) == 1e-3);
  CHECK(model->NodeTime(g, N(g, "m1"), Device("A100")) == 2e-3);
  CHECK(model->NodeTime(g, N(g, "m2"), Device("V100")) == 3e-3);
  const auto roofline = MakeCostModel("roofline");
  CHECK(model->NodeTime(g, N(g, "mm"), Device()) == roofline->NodeTime(g, N(g, "mm"), Device()));

  const auto with_launch = Make("measured", "add_launch_overhead: true\n");
  CHECK(with_launch->NodeTime(g, N(g, "m1"), Device("V100")) == 1e-3 + std::ldexp(1.0, -16));

  const auto strict = Make("measured", "fallback: error\n");
  CHECK(strict->NodeTime(g, N(g, "m1"), Device("V100")) == 1e-3);
  try {
    strict->NodeTime(g, N(g, "mm"), Device("V100"));
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(Contains(e.what(), "node 'mm' has no measured time for device kind 'V100'"));
  }

  // A fused m1 + m2: the measured sum scaled by the roofline saving. With
  // compute 1.0 and memory 0.25 efficiencies (every class) the roofline
  // times are exact: m1 = L + 2^-8, m2 = L + 2^-7, group = L + 2^-8 (only
  // m2's 2^20-byte output crosses the boundary).
  const auto fused = Make("measured",
                          "roofline:\n"
                          "  compute_efficiency: {default: 1.0}\n"
                          "  memory_efficiency: {default: 0.25}\n");
  const double launch = std::ldexp(1.0, -16);
  const std::vector<NodeId> group{N(g, "m1"), N(g, "m2")};
  const KernelWork work = MakeKernelWork(g, group);
  CHECK(work.bytes_read + work.bytes_written == std::ldexp(1.0, 20));
  const double group_time = launch + std::ldexp(1.0, -8);
  const double separate = (launch + std::ldexp(1.0, -8)) + (launch + std::ldexp(1.0, -7));
  CHECK(fused->KernelTime(g, work, Device("V100")) == (1e-3 + 3e-3) * (group_time / separate));
  KernelWork anonymous = work;
  anonymous.nodes = {};
  CHECK(fused->KernelTime(g, anonymous, Device("V100")) == group_time);
  CHECK_THROWS_AS(strict->KernelTime(g, anonymous, Device("V100")), ConfigError);
}

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

TEST_CASE("Auto: measured for the kind, then the kind's committed profile, then roofline") {
  const graphs::Graph g = CostGraph();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_auto_profiles";
  std::filesystem::create_directories(dir);
  WriteFileAtomic((dir / "a100.yaml").string(), kProfile);
  // Named after a trace, not a kind: used only by name, never by auto.
  std::string other = kProfile;
  other.replace(other.find("device_kind: A100"), 17, "device_kind: V100");
  WriteFileAtomic((dir / "v100_resnet50.yaml").string(), other);
  const auto model = Make("auto", "profiles_dir: " + dir.string() + "\n");
  CHECK(model->name() == "auto");
  CHECK(MakeCostModel(kDefaultCostModel)->name() == "auto");
  const auto roofline = MakeCostModel("roofline");
  const double launch = std::ldexp(1.0, -18);
  // m1: measured for V100, else "any"; m2: "any" on every kind.
  CHECK(model->NodeTime(g, N(g, "m1"), Device("V100")) == 1e-3);
  CHECK(model->NodeTime(g, N(g, "m1"), Device("A100")) == 2e-3);
  CHECK(model->NodeTime(g, N(g, "m2"), Device("A100")) == 3e-3);
  // Unmeasured nodes: the A100 profile (exactly as calibrated gives it) ...
  CHECK(model->NodeTime(g, N(g, "mm"), Device("A100")) == launch + std::ldexp(1.0, -17) + 1.0);
  CHECK(model->NodeTime(g, N(g, "relu"), Device("A100")) == launch + 2.0);
  // ... and roofline for a kind with no profile named after it.
  CHECK(model->NodeTime(g, N(g, "mm"), Device("V100")) == roofline->NodeTime(g, N(g, "mm"), Device("V100")));
  // Fused groups: measured when every member is, else the profile.
  const std::vector<NodeId> measured_group{N(g, "m1"), N(g, "m2")};
  const auto measured = MakeCostModel("measured");
  CHECK(model->KernelTime(g, MakeKernelWork(g, measured_group), Device("A100")) ==
        measured->KernelTime(g, MakeKernelWork(g, measured_group), Device("A100")));
  const std::vector<NodeId> mixed{N(g, "mm"), N(g, "relu")};
  CHECK(model->KernelTime(g, MakeKernelWork(g, mixed), Device("A100")) ==
        launch + std::ldexp(1.0, -17) + (1.0 + std::ldexp(1.0, -10)));
  // Never below the device's peak: h's aten::mm [fp16] fit is a constant 2^-16 s,
  // but 2^40 fp16 FLOPs take 2^-3 s at the 2^43 FLOP/s peak.
  CHECK(model->NodeTime(g, N(g, "h"), Device("A100")) == launch + std::ldexp(1.0, -3));
  CHECK(Make("calibrated", "profile: " + (dir / "a100.yaml").string() + "\n")
            ->NodeTime(g, N(g, "h"), Device("A100")) == launch + std::ldexp(1.0, -3));
  // fp32: the ceiling is the TF32 peak where the device has one (the
  // default fit prices this bytes-free convolution at 0 s).
  graphs::GraphBuilder conv_builder("conv32");
  conv_builder.AddNode(Op("c", "Conv2D", std::ldexp(1.0, 40), 0, 0, 64));
  const graphs::Graph conv = conv_builder.Build();
  DeviceSpec a100 = Device("A100");
  CHECK(model->NodeTime(conv, N(conv, "c"), a100) == launch + 1.0);
  a100.peak_flops_tf32 = std::ldexp(1.0, 42);
  CHECK(model->NodeTime(conv, N(conv, "c"), a100) == launch + std::ldexp(1.0, -2));
  // Links: the profile's fitted host-to-device copy.
  ClusterBuilder cb("two", "test");
  cb.AddDevice(Device("A100"));
  DeviceSpec v100 = Device("V100");
  v100.name = "d1";
  cb.AddDevice(v100);
  LinkSpec htod;
  htod.src = Cluster::kHost;
  htod.dst = 0;
  htod.latency = 1e-6;
  htod.bandwidth = 1e10;  // the fit's 1.2e10 is within [0.05, 1.5] x of it: used
  for (const int32_t d : {0, 1}) {
    LinkSpec to = htod;
    to.dst = d;
    cb.AddLink(to);
    LinkSpec from = htod;
    from.src = d;
    from.dst = Cluster::kHost;
    cb.AddLink(from);
  }
  const Cluster cluster = cb.Build();
  CHECK(model->LinkCostOf(cluster, htod).bandwidth == 1.2e10);
  CHECK(model->Describe(g, cluster) == "auto (A100: measured for 2 of 6 nodes, else calibrated (" +
                                           dir.string() +
                                           "/a100.yaml); V100: measured for 2 of 6 nodes, else roofline)");
  // An explicit profile list replaces the directory's.
  const auto explicit_profile = Make("auto", "profile: " + (dir / "v100_resnet50.yaml").string() + "\n");
  CHECK(explicit_profile->NodeTime(g, N(g, "mm"), Device("V100")) == launch + std::ldexp(1.0, -17) + 1.0);
  CHECK(explicit_profile->NodeTime(g, N(g, "mm"), Device("A100")) ==
        roofline->NodeTime(g, N(g, "mm"), Device("A100")));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Auto prices measured nodes without FLOPs and warns about nodes with neither") {
  // An expert split of a graph with measured times but no FLOPs: roofline
  // prices it at the launch overhead alone, auto at the measured time.
  graphs::GraphBuilder b("measured_only");
  graphs::NodeSpec a = Op("a", "MatMul", 0.0, 0, 0, 64);
  a.measured = {{"any", 2.5e-3}};
  graphs::NodeSpec c = Op("c", "MatMul", 0.0, 0, 0, 64);
  c.measured = {{"K80", 1.5e-3}};
  b.AddNode(a);
  b.AddNode(c);
  b.AddEdge("a", "c", 0);
  const graphs::Graph g = b.Build();
  const auto model = Make("auto", "profiles_dir: /nonexistent\n");
  CHECK(model->NodeTime(g, N(g, "a"), Device("V100")) == 2.5e-3);
  CHECK(MakeCostModel("roofline")->NodeTime(g, N(g, "a"), Device("V100")) == 0.0);
  CHECK(model->NodeTime(g, N(g, "c"), Device("K80")) == 1.5e-3);
  ClusterBuilder cb("one", "test");
  cb.AddDevice(Device("V100"));
  const Cluster v100 = cb.Build();
  const std::vector<std::string> warnings = model->Warnings(g, v100);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "cost model auto: 1 of 2 nodes of graph 'measured_only' have neither FLOPs nor a measured time for "
        "device kind 'V100' (e.g. 'c'); measured times exist for K80: simulate on that kind");
  ClusterBuilder ck("one", "test");
  ck.AddDevice(Device("K80"));
  CHECK(model->Warnings(g, ck.Build()).empty());
  // A graph with FLOPs everywhere: nothing to say.
  CHECK(model->Warnings(CostGraph(), v100).empty());
}

TEST_CASE("Measured times by device role: a CPU takes its kind's or \"cpu\" times, never \"any\"") {
  // a: "any" only (a cost graph's compute_cost); b: "any" and "cpu"; c: its
  // own kind's as well. Every node also has FLOPs (2^30) for the roofline.
  graphs::GraphBuilder b("roles");
  graphs::NodeSpec a = Op("a", "Relu", std::ldexp(1.0, 30), 0, 0, 64);
  a.measured = {{"any", 1e-3}};
  graphs::NodeSpec bb = Op("b", "Relu", std::ldexp(1.0, 30), 0, 0, 64);
  bb.measured = {{"any", 1e-3}, {"cpu", 8e-3}};
  graphs::NodeSpec c = Op("c", "Relu", std::ldexp(1.0, 30), 0, 0, 64);
  c.measured = {{"cpu", 8e-3}, {"Haswell", 9e-3}, {"any", 1e-3}};
  b.AddNode(a);
  b.AddNode(bb);
  b.AddNode(c);
  const graphs::Graph g = b.Build();
  DeviceSpec gpu = Device("K80");
  DeviceSpec cpu = Device("Haswell");
  cpu.name = "cpu0";
  cpu.role = DeviceRole::kCpu;
  CHECK(MeasuredTimeFor(g.node(N(g, "a")), gpu)->seconds == 1e-3);
  CHECK(MeasuredTimeFor(g.node(N(g, "a")), cpu) == nullptr);
  CHECK(MeasuredTimeFor(g.node(N(g, "b")), gpu)->seconds == 1e-3);
  CHECK(MeasuredTimeFor(g.node(N(g, "b")), cpu)->seconds == 8e-3);
  CHECK(MeasuredTimeFor(g.node(N(g, "c")), cpu)->seconds == 9e-3);

  // Roofline of a on the CPU: launch 2^-16 + 2^30 FLOPs / (2^40 x 0.5).
  const double roofline_a = std::ldexp(1.0, -16) + std::ldexp(1.0, -9);
  const auto measured = MakeCostModel("measured");
  const auto automatic = Make("auto", "profiles_dir: /nonexistent\n");
  for (const auto& model : {measured, automatic}) {
    CHECK(model->NodeTime(g, N(g, "a"), gpu) == 1e-3);
    CHECK(model->NodeTime(g, N(g, "a"), cpu) == roofline_a);
    CHECK(model->NodeTime(g, N(g, "b"), cpu) == 8e-3);
    CHECK(model->NodeTime(g, N(g, "c"), cpu) == 9e-3);
  }
  // A fused group on the CPU is measured only when every member is for it.
  const std::vector<NodeId> ab{N(g, "a"), N(g, "b")};
  const std::vector<NodeId> bc{N(g, "b"), N(g, "c")};
  CHECK(automatic->KernelTime(g, MakeKernelWork(g, ab), cpu) ==
        MakeCostModel("roofline")->KernelTime(g, MakeKernelWork(g, ab), cpu));
  CHECK(automatic->KernelTime(g, MakeKernelWork(g, bc), cpu) ==
        measured->KernelTime(g, MakeKernelWork(g, bc), cpu));

  // The header counts only the nodes whose measured time a kind takes.
  ClusterBuilder cb("k80_cpu", "test");
  cb.AddDevice(gpu);
  cb.AddDevice(cpu);
  for (const auto& [src, dst] : {std::pair{0, 1}, std::pair{1, 0}}) {
    LinkSpec link;
    link.src = src;
    link.dst = dst;
    link.bandwidth = 1e9;
    cb.AddLink(link);
  }
  const Cluster cluster = cb.Build();
  CHECK(automatic->Describe(g, cluster) ==
        "auto (K80: measured for 3 of 3 nodes, else roofline; Haswell: measured for 2 of 3 nodes, else "
        "roofline)");
  CHECK(measured->Describe(g, cluster) ==
        "measured (K80: measured for all 3 nodes; Haswell: measured for 2 of 3 nodes, else roofline)");
  graphs::GraphBuilder any_only("any_only");
  graphs::NodeSpec x = Op("x", "CostGraphNode", 0.0, 0, 0, 64);
  x.measured = {{"any", 1e-3}};
  any_only.AddNode(x);
  const graphs::Graph costgraph = any_only.Build();
  CHECK(automatic->Describe(costgraph, cluster) ==
        "auto (K80: measured for 1 of 1 nodes, else roofline; Haswell: roofline)");
  CHECK(measured->Describe(costgraph, cluster) ==
        "measured (K80: measured for all 1 nodes; Haswell: roofline)");
  // ... and warns that the CPU prices them without their times.
  const std::vector<std::string> warnings = automatic->Warnings(costgraph, cluster);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "cost model auto: 1 of 1 nodes of graph 'any_only' have neither FLOPs nor a measured time for device "
        "kind 'Haswell' (e.g. 'x'); measured times exist for any: simulate on that kind (a CPU device takes "
        "times measured for \"Haswell\" or \"cpu\", not \"any\")");
}

TEST_CASE("Bad cost model names, options and profiles are ConfigErrors") {
  CHECK(CostModelNames() == std::vector<std::string>{"auto", "calibrated", "measured", "roofline"});
  try {
    MakeCostModel("rooflin");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(Contains(e.what(), "Did you mean 'roofline'?"));
    CHECK(Contains(e.what(), "auto, calibrated, measured, roofline"));
  }
  try {
    Make("roofline", "compute_efficiency: {matmull: 0.5}\n");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 1);
    CHECK(Contains(e.what(), "Did you mean 'matmul'?"));
  }
  try {
    Make("roofline", "memory_efficiency:\n  default: 1.5\n");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 2);
    CHECK(e.where().path == "cost_model.options.memory_efficiency.default");
  }
  try {
    Make("measured", "falback: error\n");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(Contains(e.what(), "Did you mean 'fallback'?"));
  }
  CHECK_THROWS_AS(Make("measured", "fallback: maybe\n"), ConfigError);
  CHECK_THROWS_AS(Make("calibrated", "fallback: roofline\n"), ConfigError);  // no profile
  CHECK_THROWS_AS(Make("calibrated", "profile: no_such_profile\n"), ConfigError);

  std::string bad = kProfile;
  bad.replace(bad.find("  elementwise:"), 14, "  elementwize:");
  try {
    ParseDeviceProfile(bad, "p.yaml");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 9);
    CHECK(Contains(e.what(), "Did you mean 'elementwise'?"));
  }
  bad = kProfile;
  bad.replace(bad.find("per_flop: 9.094947017729282e-13"), 31, "per_flop: -1.0");
  CHECK_THROWS_AS(ParseDeviceProfile(bad, "p.yaml"), ConfigError);
  bad = kProfile;
  bad.replace(bad.find("gosim.device_profile"), 20, "gosim.something_else");
  CHECK_THROWS_AS(ParseDeviceProfile(bad, "p.yaml"), ConfigError);
  CHECK_THROWS_AS(ParseDeviceProfile("format: gosim.device_profile\nversion: 1\ndevice_kind: X\n", "p.yaml"),
                  ConfigError);  // no default
}

}  // namespace gosim::sim
