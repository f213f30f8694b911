// Cost models: roofline, kernel work of fused groups, measured times, auto,
// device roles and bad names (the calibrated profiles: calibrated_cost_model_test.cc).
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

}  // namespace
}  // namespace gosim::sim
