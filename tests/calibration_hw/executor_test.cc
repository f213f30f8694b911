// The LibTorch hardware executor (calibration/hardware/): real execution of a
// tiny graph under two decisions, the recorded trace read back through the
// calibration readers, and the rank statistics of `gosim replay`.
#include "calibration/hardware/executor.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <utility>

#include "calibration/fit.h"
#include "calibration/hardware/op_recipes.h"
#include "calibration/hardware/rank_stats.h"
#include "calibration/samples.h"
#include "calibration/trace_reader.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"

namespace gosim::calibration::hardware {
namespace {

graphs::Graph TinyBert() {
  return graphs::Generate("bert",
                          LoadYamlString("{layers: 1, hidden: 32, heads: 2, intermediate: 64, seq_len: 8, "
                                         "vocab: 50, max_position: 16, max_predictions: 2, batch: 2, "
                                         "training: true}"),
                          "test");
}

// Distinct (tensor, destination device) pairs read across devices.
int64_t CrossDeviceTensors(const graphs::Graph& g, const sim::Decision& d) {
  std::set<std::pair<graphs::TensorId, int32_t>> pairs;
  for (const graphs::Edge& e : g.edges()) {
    if (e.is_control()) continue;
    const int32_t src = d.placement[static_cast<size_t>(e.src)];
    const int32_t dst = d.placement[static_cast<size_t>(e.dst)];
    if (src != dst) pairs.emplace(g.tensor(e.src, e.output_index), dst);
  }
  return static_cast<int64_t>(pairs.size());
}

}  // namespace

TEST_CASE("the executor runs a tiny graph under two decisions with the decision's copies") {
  const graphs::Graph g = TinyBert();
  ExecutorOptions options;
  options.num_devices = 2;
  options.allow_cuda = false;
  Executor executor(g, options);
  CHECK(executor.backend() == "cpu");
  CHECK(executor.plan().aten_ops.count("aten::mm") + executor.plan().aten_ops.count("aten::bmm") > 0);

  sim::Decision one = sim::SingleDeviceDecision(g, 0);
  sim::Decision split = one;
  for (int32_t v = 0; v < g.num_nodes(); ++v) split.placement[static_cast<size_t>(v)] = v % 2;
  split.priority.assign(static_cast<size_t>(g.num_nodes()), 0.0);
  for (int32_t v = 0; v < g.num_nodes(); ++v) split.priority[static_cast<size_t>(v)] = -v;

  const Measurement a = executor.Run(one, 1, 2);
  CHECK(a.step_times.size() == 2);
  CHECK(a.median_step_time > 0.0);
  CHECK(a.copies == 0);
  CHECK(a.peak_memory.size() == 2);
  CHECK(a.peak_memory[0] > 0);

  const int64_t expected = CrossDeviceTensors(g, split);
  REQUIRE(expected > 0);
  const Measurement b = executor.Run(split, 1, 2);
  CHECK(b.median_step_time > 0.0);
  CHECK(b.copies == expected);
  CHECK(b.copied_bytes > 0);
  CHECK(b.peak_memory[1] > 0);
}

TEST_CASE("a decision that does not fit is one DecisionError") {
  const graphs::Graph g = TinyBert();
  ExecutorOptions options;
  options.num_devices = 2;
  options.allow_cuda = false;
  Executor executor(g, options);
  sim::Decision wrong = sim::SingleDeviceDecision(g, 0);
  wrong.placement.pop_back();
  CHECK_THROWS_AS(executor.Run(wrong, 0, 1), DecisionError);
  sim::Decision far = sim::SingleDeviceDecision(g, 0);
  far.placement[3] = 5;
  CHECK_THROWS_AS(executor.Run(far, 0, 1), DecisionError);
  // The executor still works after a rejected decision.
  CHECK(executor.Run(sim::SingleDeviceDecision(g, 1), 0, 1).median_step_time > 0.0);
}

TEST_CASE("the recorded trace reads back through ReadTrace and joins kernels to ops") {
  const graphs::Graph g = TinyBert();
  ExecutorOptions options;
  options.allow_cuda = false;
  Executor executor(g, options);
  const std::string path =
      (std::filesystem::temp_directory_path() / "gosim_hw_test" / "profile.json.gz").string();
  const Measurement m = executor.Profile(sim::SingleDeviceDecision(g, 0), 1, 3, path);
  CHECK(m.step_times.size() == 3);

  const Trace trace = ReadTrace(path);
  CHECK(trace.steps.size() == 3);
  CHECK(trace.DeviceKind() == "cpu");
  REQUIRE(!trace.activities.empty());
  CHECK(trace.join.by_activity_id == static_cast<int64_t>(trace.activities.size()));
  CHECK(trace.join.unattributed == 0);

  const TraceSamples samples = ExtractSamples(trace);
  int32_t mm_with_flops = 0;
  for (const OpSample& s : samples.ops) {
    CHECK(s.step >= 0);
    CHECK(s.has_shapes);
    if ((s.type == "aten::mm" || s.type == "aten::bmm") && s.flops > 0.0) ++mm_with_flops;
  }
  CHECK(mm_with_flops > 0);
  // The matmul FLOPs recorded are at least the graph's matmul nodes' FLOPs.
  double graph_matmul_flops = 0.0;
  for (const graphs::Node& n : g.nodes()) {
    if (graphs::ClassifyOp(g.op_type_name(n.op)) == graphs::OpClass::kMatMul) graph_matmul_flops += n.flops;
  }
  double trace_matmul_flops = 0.0;
  for (const OpSample& s : samples.ops) {
    if (s.op_class == graphs::OpClass::kMatMul && s.step == 0) trace_matmul_flops += s.flops;
  }
  // (Nodes run as an equivalent matmul add to the trace's side.)
  CHECK(graph_matmul_flops > 0.0);
  CHECK(trace_matmul_flops >= graph_matmul_flops * 0.999);

  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {});
  CHECK(profile.device_kind == "cpu");
  CHECK(profile.op_classes[static_cast<size_t>(graphs::OpClass::kMatMul)].has_value());
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("a dense layer on a batched activation runs as one matmul, not a bmm over weight copies") {
  // TinyBert's activations are [batch, seq, hidden]; its dense layers
  // multiply them by [hidden, n] weights (variables: persistent bytes).
  const graphs::Graph g = TinyBert();
  ExecutorOptions options;
  options.allow_cuda = false;
  Executor executor(g, options);
  const std::string path =
      (std::filesystem::temp_directory_path() / "gosim_hw_dense_test" / "profile.json.gz").string();
  executor.Profile(sim::SingleDeviceDecision(g, 0), 0, 1, path);
  const Trace trace = ReadTrace(path);
  int32_t dense = 0;
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const graphs::Node& n = g.node(v);
    if (g.op_type_name(n.op) != "MatMul" || n.outputs.empty() || n.outputs[0].shape.size() != 3) continue;
    bool reads_weight = false;
    for (graphs::EdgeId e : g.in_edges(v)) {
      const graphs::Node& src = g.node(g.edge(e).src);
      reads_weight = reads_weight || (src.persistent_bytes > 0 && src.outputs[0].shape.size() == 2);
    }
    if (!reads_weight) continue;
    ++dense;
    bool found = false;
    for (const TraceOp& op : trace.ops) {
      if (op.node != n.name) continue;
      found = true;
      CHECK_MESSAGE(op.name == "aten::mm", n.name << " ran as " << op.name);
    }
    CHECK_MESSAGE(found, n.name << " is not in the trace");
  }
  CHECK(dense > 0);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("max pooling solves a stride and padding ATen accepts (Inception's valid 3x3 / 2 windows)") {
  // 75 px: the stem's pools map 73 -> 36 and 35 -> 17 ("valid", stride 2);
  // a stride rounded up from in / out (3) needs padding 18, which ATen
  // refuses (padding at most half the window), and planning crashed.
  const graphs::Graph g = graphs::Generate(
      "inception_v3", LoadYamlString("{image_size: 75, aux_logits: false, batch: 1, training: true}"),
      "test");
  int32_t pools = 0;
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    Recipe r = PlanNode(g, v);
    if (r.kind != RecipeKind::kMaxPool && r.kind != RecipeKind::kMaxPoolBackward) continue;
    ++pools;
    REQUIRE(r.params.size() == 3);
    const int64_t k = r.params[0], s = r.params[1], p = r.params[2];
    CHECK(2 * p <= k);
    const std::vector<int64_t>& x = r.operands.back().shape;  // forward input / backward's x
    const std::vector<int64_t> y = g.node(v).outputs[0].shape;
    const int64_t in = x[2];
    const int64_t out = r.kind == RecipeKind::kMaxPool ? y[2] : r.operands[0].shape[2];
    CHECK((in + 2 * p - k) / s + 1 == out);
    if (in == 73 && out == 36) CHECK(s == 2);
    PrepareConstants(&r, at::kCPU);  // runs the pool: ATen's checks
  }
  CHECK(pools >= 4);
}

TEST_CASE("an equivalent matmul is never a matrix-vector product when the output's elements allow a GEMM") {
  // WaveNet's 1-D convolution weight gradients have outputs [k, C, 1]-like
  // shapes; as [rows, 1] they ran as memory-bound matrix-vector products,
  // 10-20x slower per FLOP than the GEMM they stand for.
  const graphs::Graph g = graphs::Generate(
      "wavenet",
      LoadYamlString("{stacks: 1, layers_per_stack: 4, residual_channels: 32, dilation_channels: 32, "
                     "skip_channels: 64, samples: 512, batch: 1, training: true}"),
      "test");
  int32_t fallbacks = 0;
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const Recipe r = PlanNode(g, v);
    if (!r.fallback || r.kind != RecipeKind::kMatmul) continue;
    ++fallbacks;
    const std::vector<int64_t>& a = r.operands[0].shape;
    const std::vector<int64_t>& b = r.operands[1].shape;
    const int64_t m = a[a.size() - 2], n = b.back();
    CHECK_MESSAGE(std::min(m, n) >= 16, g.node(v).name << ": " << m << " x " << n);
    const double flops = 2.0 * static_cast<double>(m * n * a.back()) * (a.size() == 3 ? a[0] : 1);
    CHECK(flops == doctest::Approx(g.node(v).flops).epsilon(0.05));
  }
  CHECK(fallbacks > 0);
}

TEST_CASE("Kendall tau on known inputs") {
  CHECK(KendallTau({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1.0));
  CHECK(KendallTau({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1.0));
  // One discordant pair of six: (5 - 1) / 6.
  CHECK(KendallTau({1, 2, 3, 4}, {1, 3, 2, 4}) == doctest::Approx(4.0 / 6.0));
  // tau-b with a tie in x: (2 - 0) / sqrt(3 * 2) (scipy.stats.kendalltau gives 0.8165).
  CHECK(KendallTau({1, 1, 2}, {1, 2, 3}) == doctest::Approx(0.816496580927726));
  CHECK(KendallTau({1}, {2}) == 0.0);
  CHECK(KendallTau({1, 1, 1}, {1, 2, 3}) == 0.0);
  CHECK_THROWS_AS(KendallTau({1, 2}, {1}), StateError);
  CHECK(Median({3, 1, 2}) == 2.0);
  CHECK(Median({4, 1, 2, 3}) == 2.5);
}

}  // namespace gosim::calibration::hardware
