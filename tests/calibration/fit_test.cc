#include "calibration/fit.h"

#include <doctest/doctest.h>

#include "calibration/accuracy.h"
#include "core/error.h"
#include "core/rng.h"

namespace gosim::calibration {
namespace {

OpSample Sample(const std::string& type, double flops, double bytes, double time, int32_t step = 0) {
  OpSample s;
  s.type = type;
  s.op_class = graphs::ClassifyOp(type);
  s.flops = flops;
  s.bytes = bytes;
  s.time = time;
  s.has_shapes = true;
  s.kernels = 1;
  s.step = step;
  return s;
}

std::vector<const OpSample*> Pointers(const std::vector<OpSample>& v) {
  std::vector<const OpSample*> out;
  for (const OpSample& s : v) out.push_back(&s);
  return out;
}

}  // namespace

TEST_CASE("a linear cost is recovered exactly from exact data, with every method and weighting") {
  Rng rng(3);
  std::vector<OpSample> samples;
  for (int i = 0; i < 40; ++i) {
    const double flops = rng.Uniform(1e6, 1e10);
    const double bytes = rng.Uniform(1e4, 1e8);
    samples.push_back(Sample("aten::mm", flops, bytes, 5e-6 + 1e-13 * flops + 2e-12 * bytes));
  }
  for (FitMethod method : {FitMethod::kNnls, FitMethod::kHuber}) {
    for (Weighting weighting : {Weighting::kRelative, Weighting::kSqrt, Weighting::kAbsolute}) {
      FitOptions options;
      options.method = method;
      options.weighting = weighting;
      const sim::KernelFit fit = FitKernelCost(Pointers(samples), options);
      CHECK(fit.intercept == doctest::Approx(5e-6).epsilon(1e-6));
      CHECK(fit.per_flop == doctest::Approx(1e-13).epsilon(1e-6));
      CHECK(fit.per_byte == doctest::Approx(2e-12).epsilon(1e-6));
      CHECK(fit.samples == 40);
      CHECK(fit.mape < 1e-6);
    }
  }
}

TEST_CASE("a batch norm's time per element of a channel is recovered; other ops keep that coefficient at 0") {
  // Kernels that reduce each channel in one block: with few channels the
  // time follows N x H x W, not the bytes (H200 traces, docs/CALIBRATION.md).
  Rng rng(5);
  std::vector<OpSample> norms, adds;
  for (int i = 0; i < 40; ++i) {
    OpSample s = Sample("aten::cudnn_batch_norm_backward", 0.0, rng.Uniform(1e6, 2e8), 0.0);
    s.channel_extent = rng.Uniform(1e3, 1e6);
    s.time = 4e-6 + 3e-13 * s.bytes + 1.5e-9 * s.channel_extent;
    s.flops = 0.25 * s.bytes;  // proportional to bytes, as for a real batch norm
    norms.push_back(s);
    adds.push_back(Sample("aten::add", 0.0, s.bytes, 2e-6 + 1e-12 * s.bytes));
  }
  FitOptions options;
  options.method = FitMethod::kNnls;
  const sim::KernelFit norm = FitKernelCost(Pointers(norms), options);
  CHECK(norm.per_channel_element == doctest::Approx(1.5e-9).epsilon(1e-6));
  CHECK(norm.intercept == doctest::Approx(4e-6).epsilon(1e-6));
  CHECK(norm.mape < 1e-6);
  const sim::KernelFit add = FitKernelCost(Pointers(adds), options);
  CHECK(add.per_channel_element == 0.0);
  CHECK(add.per_byte == doctest::Approx(1e-12).epsilon(1e-6));
  // The simulator's reader takes the coefficient back, and a profile without
  // it (every one fitted before it existed) reads as 0.
  sim::DeviceProfile p;
  p.device_kind = "H200";
  p.op_types["FusedBatchNormGrad"] = norm;
  const sim::DeviceProfile back = sim::ParseDeviceProfile(sim::DeviceProfileToYaml(p), "p.yaml");
  CHECK(back.op_types.at("FusedBatchNormGrad") == norm);
  CHECK(PredictKernel(back, "FusedBatchNormGrad", 0.0, 1e6, 1e5) ==
        doctest::Approx(4e-6 + 3e-13 * 1e6 + 1.5e-9 * 1e5).epsilon(1e-6));
  const sim::DeviceProfile old = sim::ParseDeviceProfile(
      "format: gosim.device_profile\nversion: 1\ndevice_kind: H200\nlaunch_overhead: 0\ndefault: {intercept: "
      "1.0e-6, per_flop: 0, per_byte: 1.0e-12}\n",
      "old.yaml");
  CHECK(old.fallback.per_channel_element == 0.0);
  CHECK_THROWS_WITH_AS(sim::ParseDeviceProfile("format: gosim.device_profile\nversion: 1\ndevice_kind: "
                                               "H200\nlaunch_overhead: 0\ndefault: {intercept: 0, "
                                               "per_flop: 0, per_byte: 0, per_channel_element: -1}\n",
                                               "bad.yaml"),
                       doctest::Contains("per_channel_element must be a finite number >= 0"), ConfigError);
}

TEST_CASE("coefficients stay non-negative") {
  // Time falls with bytes: least squares would give a negative per_byte.
  std::vector<OpSample> samples;
  for (int i = 1; i <= 10; ++i) samples.push_back(Sample("aten::add", 0.0, i * 1e6, 1e-4 - i * 1e-6));
  const sim::KernelFit fit = FitKernelCost(Pointers(samples), FitOptions{});
  CHECK(fit.per_byte == 0.0);
  CHECK(fit.intercept > 0.0);
}

TEST_CASE("median fallback without enough shapes") {
  std::vector<OpSample> samples = {Sample("x::y", 0, 0, 3e-6), Sample("x::y", 0, 0, 1e-6),
                                   Sample("x::y", 0, 0, 9e-6)};
  for (OpSample& s : samples) s.has_shapes = false;
  const sim::KernelFit fit = FitKernelCost(Pointers(samples), FitOptions{});
  CHECK(fit.intercept == doctest::Approx(3e-6));
  CHECK(fit.per_flop == 0.0);
  CHECK(fit.samples == 3);
  FitOptions strict;
  strict.min_samples = 5;
  std::vector<OpSample> few = {Sample("a::b", 1e6, 0, 2e-6), Sample("a::b", 2e6, 0, 4e-6)};
  CHECK(FitKernelCost(Pointers(few), strict).intercept == doctest::Approx(3e-6));
}

TEST_CASE("alpha-beta link fits") {
  std::vector<TransferSample> samples;
  for (int i = 1; i <= 8; ++i) {
    TransferSample t;
    t.link = "memcpy_htod";
    t.bytes = i * 1e6;
    t.time = 1e-5 + t.bytes / 1e10;
    samples.push_back(t);
  }
  std::vector<const TransferSample*> p;
  for (const auto& s : samples) p.push_back(&s);
  const sim::LinkFit fit = FitLinkCost(p, FitOptions{});
  CHECK(fit.latency == doctest::Approx(1e-5).epsilon(1e-6));
  CHECK(fit.bandwidth == doctest::Approx(1e10).epsilon(1e-6));
  // One size only: a pure bandwidth.
  std::vector<const TransferSample*> one = {p[0], p[0]};
  CHECK(FitLinkCost(one, FitOptions{}).bandwidth == doctest::Approx(1e6 / (1e-5 + 1e-4)));
  // Unknown sizes: a constant time per transfer.
  TransferSample unsized;
  unsized.has_size = false;
  unsized.time = 7e-6;
  const sim::LinkFit constant = FitLinkCost({&unsized}, FitOptions{});
  CHECK(constant.latency == doctest::Approx(7e-6));
  CHECK(constant.bandwidth == 1e15);
}

TEST_CASE("a profile: types, classes, default, links; its YAML round-trips through the simulator's reader") {
  TraceSamples samples;
  samples.source = "/some/dir/trace.json.gz";
  samples.device_kind = "V100";
  samples.launch_overhead = 4e-6;
  for (int step = 0; step < 2; ++step) {
    for (int i = 1; i <= 5; ++i) {
      samples.ops.push_back(Sample("aten::mm", i * 1e9, 0, 2e-6 + i * 1e9 * 1e-13, step));
      samples.ops.push_back(Sample("aten::relu_", 0, i * 1e6, 1e-6 + i * 1e6 * 1e-12, step));
    }
  }
  TransferSample t;
  t.link = "memcpy_htod";
  t.bytes = 1e6;
  t.time = 1e-4;
  samples.transfers.push_back(t);
  const sim::DeviceProfile p = FitProfile(samples, FitOptions{}, {}, {16, 17});
  CHECK(p.device_kind == "V100");
  CHECK(p.launch_overhead == 4e-6);
  CHECK(p.source["trace"].as<std::string>() == "trace.json.gz");
  REQUIRE(p.op_types.count("aten::mm") == 1);
  CHECK(p.op_types.at("aten::mm").per_flop == doctest::Approx(1e-13).epsilon(1e-6));
  CHECK(p.op_classes[static_cast<size_t>(graphs::OpClass::kMatMul)].has_value());
  CHECK(p.op_classes[static_cast<size_t>(graphs::OpClass::kElementwise)].has_value());
  CHECK(PredictKernel(p, "aten::mm", 1e9, 0) == doctest::Approx(2e-6 + 1e-4).epsilon(1e-6));
  // Unknown type of a known class: the class fit; unknown class: the default.
  CHECK(PredictKernel(p, "aten::bmm", 1e9, 0) == doctest::Approx(2e-6 + 1e-4).epsilon(1e-6));
  CHECK(PredictKernel(p, "weird::op", 0, 0) == doctest::Approx(p.fallback.Time(0, 0)));
  CHECK(PredictTransfer(p, "memcpy_htod", 1e6) == doctest::Approx(1e-4));
  const sim::DeviceProfile back = sim::ParseDeviceProfile(sim::DeviceProfileToYaml(p), "p.yaml");
  CHECK(back.op_types == p.op_types);
  CHECK(back.links == p.links);
  CHECK(back.fallback == p.fallback);
  CHECK(back.launch_overhead == p.launch_overhead);
  // Only step 1's samples.
  const sim::DeviceProfile one = FitProfile(samples, FitOptions{}, {1}, {17});
  CHECK(one.op_types.at("aten::mm").samples == 5);
}

TEST_CASE("a whole-model optimizer op keeps its type fit and stays out of the class fit") {
  TraceSamples samples;
  samples.device_kind = "H200";
  for (int i = 1; i <= 5; ++i) {
    // One multi-tensor update per step over every parameter: a large
    // intercept that a per-parameter ApplyAdam must not inherit.
    samples.ops.push_back(Sample("aten::_foreach_add_", 0, i * 1e8, 1.5e-4 + i * 1e8 * 2e-13));
  }
  const sim::DeviceProfile p = FitProfile(samples, FitOptions{}, {}, {});
  CHECK(graphs::ClassifyOp("aten::_foreach_add_") == graphs::OpClass::kOptimizer);
  REQUIRE(p.op_types.count("aten::_foreach_add_") == 1);
  CHECK(p.op_types.at("aten::_foreach_add_").intercept == doctest::Approx(1.5e-4).epsilon(1e-6));
  CHECK_FALSE(p.op_classes[static_cast<size_t>(graphs::OpClass::kOptimizer)].has_value());
  // So a per-parameter update falls back to the default, not the multi-tensor intercept.
  CHECK(&p.FitFor("ApplyAdam", graphs::OpClass::kOptimizer) == &p.fallback);
}

TEST_CASE("16-bit samples fit their precision's class, not the fp32 class") {
  TraceSamples samples;
  samples.device_kind = "H200";
  for (int i = 1; i <= 5; ++i) {
    samples.ops.push_back(Sample("aten::mm", i * 1e9, 0, 2e-6 + i * 1e9 * 1e-13));
    OpSample fast = Sample("aten::mm [bf16]", i * 1e9, 0, 2e-6 + i * 1e9 * 1e-14);
    fast.op_class = graphs::OpClass::kMatMul;
    samples.ops.push_back(fast);
  }
  const sim::DeviceProfile p = FitProfile(samples, FitOptions{}, {}, {});
  const auto matmul = static_cast<size_t>(graphs::OpClass::kMatMul);
  REQUIRE(p.op_classes[matmul].has_value());
  REQUIRE(p.op_class_precisions.count("bf16") == 1);
  REQUIRE(p.op_class_precisions.at("bf16")[matmul].has_value());
  CHECK(p.op_classes[matmul]->samples == 5);
  CHECK(p.op_classes[matmul]->per_flop == doctest::Approx(1e-13).epsilon(1e-6));
  CHECK(p.op_class_precisions.at("bf16")[matmul]->per_flop == doctest::Approx(1e-14).epsilon(1e-6));
  // An unseen 16-bit type takes its precision's class fit, an unseen fp32 one the fp32 class's.
  CHECK(PredictKernel(p, "aten::bmm [bf16]", 1e9, 0) == doctest::Approx(2e-6 + 1e-5).epsilon(1e-6));
  CHECK(PredictKernel(p, "aten::bmm", 1e9, 0) == doctest::Approx(2e-6 + 1e-4).epsilon(1e-6));
  // Written as "matmul [bf16]" and read back.
  const std::string yaml = sim::DeviceProfileToYaml(p);
  CHECK(yaml.find("matmul [bf16]: {") != std::string::npos);
  const sim::DeviceProfile back = sim::ParseDeviceProfile(yaml, "p.yaml");
  CHECK(back.op_class_precisions == p.op_class_precisions);
  CHECK(back.op_classes == p.op_classes);
}

TEST_CASE(
    "Depthwise and grouped convolutions fit classes of their kind; the plain conv class is the dense ones'") {
  TraceSamples samples;
  samples.device_kind = "H200";
  for (int i = 1; i <= 5; ++i) {
    for (const auto& [type, per_flop] : {std::pair<const char*, double>{"aten::conv2d", 1e-14},
                                         {"aten::conv2d (depthwise)", 1e-12},
                                         {"aten::conv2d (grouped)", 1e-13},
                                         {"aten::conv2d (depthwise) [bf16]", 2e-12}}) {
      OpSample s = Sample(type, i * 1e9, 0, 1e-6 + i * 1e9 * per_flop);
      s.op_class = graphs::OpClass::kConv;
      samples.ops.push_back(s);
    }
  }
  const sim::DeviceProfile p = FitProfile(samples, FitOptions{}, {}, {});
  const auto conv = static_cast<size_t>(graphs::OpClass::kConv);
  REQUIRE(p.op_classes[conv].has_value());
  CHECK(p.op_classes[conv]->samples == 5);  // the dense samples only
  CHECK(p.op_classes[conv]->per_flop == doctest::Approx(1e-14).epsilon(1e-6));
  REQUIRE(p.op_class_kinds.count("conv (depthwise)") == 1);
  REQUIRE(p.op_class_kinds.count("conv (grouped)") == 1);
  REQUIRE(p.op_class_kinds.count("conv (depthwise) [bf16]") == 1);
  CHECK(p.op_class_kinds.at("conv (depthwise)").per_flop == doctest::Approx(1e-12).epsilon(1e-6));
  CHECK(p.op_class_kinds.at("conv (grouped)").per_flop == doctest::Approx(1e-13).epsilon(1e-6));
  CHECK(p.op_class_precisions.count("bf16") == 0);  // no dense bf16 sample
  // An unseen type of a kind takes its kind's class fit, not the dense one.
  CHECK(PredictKernel(p, "aten::conv1d (depthwise)", 1e9, 0) == doctest::Approx(1e-6 + 1e-3).epsilon(1e-6));
  CHECK(PredictKernel(p, "aten::conv1d (grouped)", 1e9, 0) == doctest::Approx(1e-6 + 1e-4).epsilon(1e-6));
  CHECK(PredictKernel(p, "aten::conv1d", 1e9, 0) == doctest::Approx(1e-6 + 1e-5).epsilon(1e-6));
  // A grouped one in bf16 without a bf16 fit of its kind: the kind's fp32 fit.
  CHECK(PredictKernel(p, "aten::conv1d (grouped) [bf16]", 1e9, 0) ==
        doctest::Approx(1e-6 + 1e-4).epsilon(1e-6));
  const std::string yaml = sim::DeviceProfileToYaml(p);
  CHECK(yaml.find("conv (depthwise) [bf16]: {") != std::string::npos);
  const sim::DeviceProfile back = sim::ParseDeviceProfile(yaml, "p.yaml");
  CHECK(back.op_class_kinds == p.op_class_kinds);
  CHECK(back.op_classes == p.op_classes);
}

TEST_CASE(
    "ops of gosim profile traces are also fitted by graph op type, on the graph's own FLOPs and bytes") {
  TraceSamples samples;
  samples.device_kind = "cpu";
  for (int i = 1; i <= 6; ++i) {
    // The trace's FLOPs (from input shapes) and the graph's differ; the time
    // is exactly linear in the graph's.
    OpSample s = Sample("aten::mm", 2.0 * i * 1e6, 1e3, 5e-6 + i * 1e6 * 1e-11);
    s.graph_type = "MatMul";
    s.graph_flops = i * 1e6;
    s.graph_bytes = 0.0;
    samples.ops.push_back(s);
    samples.ops.push_back(Sample("aten::relu", 0, i * 1e4, 1e-6));  // no graph node: aten key only
  }
  const sim::DeviceProfile p = FitProfile(samples, FitOptions{.method = FitMethod::kNnls}, {}, {});
  REQUIRE(p.op_types.count("aten::mm") == 1);
  REQUIRE(p.op_types.count("MatMul") == 1);
  CHECK(p.op_types.count("aten::relu") == 1);
  CHECK(p.op_types.size() == 3);
  CHECK(p.op_types.at("MatMul").per_flop == doctest::Approx(1e-11).epsilon(1e-6));
  CHECK(p.op_types.at("MatMul").samples == 6);
  CHECK(PredictKernel(p, "MatMul", 3e6, 0) == doctest::Approx(5e-6 + 3e-5).epsilon(1e-6));
}

TEST_CASE("MergeSamples: several traces of one device kind make one fit") {
  TraceSamples a, b;
  a.source = "/x/a.json.gz";
  b.source = "/y/b.json.gz";
  a.device_kind = b.device_kind = "cpu";
  a.step_numbers = {3, 4};
  b.step_numbers = {7};
  a.launch_overhead = 2e-6;
  b.launch_overhead = 5e-6;
  for (int i = 0; i < 4; ++i) a.ops.push_back(Sample("aten::mm", 1e6, 0, 1e-5, i % 2));
  for (int i = 0; i < 2; ++i) b.ops.push_back(Sample("aten::mm", 2e6, 0, 2e-5, 0));
  b.ops.push_back(Sample("aten::mm", 2e6, 0, 2e-5, -1));  // outside every step
  a.activity_op = {0, 1, 2, 3};
  const TraceSamples m = MergeSamples({a, b});
  CHECK(m.source == "a.json.gz+b.json.gz");
  CHECK(m.step_numbers == std::vector<int64_t>{3, 4, 7});
  REQUIRE(m.ops.size() == 7);
  CHECK(m.ops[4].step == 2);  // b's step 0 follows a's two steps
  CHECK(m.ops[6].step == -1);
  CHECK(m.ops[0].op == -1);
  CHECK(m.activity_op.empty());
  // Launch overhead weighted by the op samples inside steps: (4 x 2 + 2 x 5) / 6 us.
  CHECK(m.launch_overhead == doctest::Approx(3e-6));
  const sim::DeviceProfile p = FitProfile(m, FitOptions{}, {}, m.step_numbers);
  CHECK(p.op_types.at("aten::mm").samples == 7);
  // Only the GPU-bound part gives the launch overhead when one is: b's
  // kernels fill 90% of its steps, a's 30% (its gaps are the host's pace).
  a.gpu_busy_fraction = 0.3;
  b.gpu_busy_fraction = 0.9;
  const TraceSamples bound = MergeSamples({a, b});
  CHECK(bound.launch_overhead == doctest::Approx(5e-6));
  CHECK(bound.gpu_busy_fraction == doctest::Approx((2 * 0.3 + 1 * 0.9) / 3));
  b.gpu_busy_fraction = 0.5;  // none GPU-bound: all parts, as before
  CHECK(MergeSamples({a, b}).launch_overhead == doctest::Approx(3e-6));
  b.device_kind = "V100";
  CHECK_THROWS_AS(MergeSamples({a, b}), TraceError);
  CHECK(MergeSamples({a}).source == a.source);
}

TEST_CASE("unseen-shape cross-validation of an exactly linear op type") {
  TraceSamples samples;
  for (int step = 0; step < 2; ++step) {
    for (int i = 1; i <= 10; ++i)
      samples.ops.push_back(Sample("aten::mm", i * 1e9, i * 3e6, 1e-6 + i * 1e-4, step));
  }
  const AccuracyReport r = EvaluateUnseenShapes(samples, FitOptions{}, 5);
  CHECK(r.ops.count == 20);
  CHECK(r.ops.mape() < 1e-6);
  CHECK(r.per_type.at("aten::mm").count == 20);
}

TEST_CASE("the calibrated profiles in configs/calibrated load in the simulator") {
  for (const char* name : {"v100_resnet50", "a100_resnet50_ddp", "a100_recsys", "a100_alexnet"}) {
    const sim::DeviceProfile p = sim::LoadDeviceProfile(std::string("configs/calibrated/") + name + ".yaml");
    CHECK(!p.device_kind.empty());
    CHECK(!p.op_types.empty());
    CHECK(p.launch_overhead > 0.0);
  }
}

TEST_CASE("option names") {
  CHECK(ParseFitMethod("nnls") == FitMethod::kNnls);
  CHECK(ParseWeighting("sqrt") == Weighting::kSqrt);
  CHECK_THROWS_AS(ParseFitMethod("lasso"), ConfigError);
  CHECK_THROWS_AS(ParseWeighting("log"), ConfigError);
}

TEST_CASE("error statistics") {
  ErrorStats e;
  e.Add(1.1, 1.0);
  e.Add(0.9, 1.0);
  CHECK(e.count == 2);
  CHECK(e.mape() == doctest::Approx(0.1));
  CHECK(e.weighted() == doctest::Approx(0.1));
  CHECK(e.total() == doctest::Approx(0.0));
}

TEST_CASE("hold-out and transfer evaluation") {
  TraceSamples source;
  source.device_kind = "V100";
  for (int step = 0; step < 3; ++step) {
    for (int i = 1; i <= 4; ++i) {
      OpSample s = Sample("aten::cudnn_convolution_backward", i * 1e9, i * 1e7, 1e-6 + 2e-13 * i * 1e9, step);
      s.ordinal = i - 1;
      source.ops.push_back(s);
    }
  }
  const AccuracyReport held = EvaluateHoldout(source, {10, 11, 12}, {2}, FitOptions{});
  CHECK(held.train_steps == std::vector<int64_t>{10, 11});
  CHECK(held.test_steps == std::vector<int64_t>{12});
  CHECK(held.ops.count == 4);
  CHECK(held.ops.mape() < 1e-6);
  REQUIRE(held.per_step.size() == 1);
  const sim::DeviceProfile profile = FitProfile(source, FitOptions{}, {}, {});

  // The same ops on a GPU twice as fast per FLOP, traced without shapes and
  // under the newer op name; one more op of another type has no partner.
  TraceSamples target;
  for (int i = 1; i <= 4; ++i) {
    OpSample s = Sample("aten::convolution_backward", 0, 0, 1e-6 + 1e-13 * i * 1e9, 0);
    s.has_shapes = false;
    s.ordinal = i - 1;
    target.ops.push_back(s);
  }
  OpSample lonely = Sample("aten::gelu", 0, 0, 1e-5, 0);
  lonely.has_shapes = false;
  target.ops.push_back(lonely);
  DeviceScale scale;
  scale.per_flop = 0.5;
  const AccuracyReport transfer = EvaluateTransfer(profile, source, target, {}, scale, DefaultOpAliases());
  CHECK(transfer.unmatched == 1);
  CHECK(transfer.ops.count == 4);
  CHECK(transfer.ops.mape() < 1e-6);
  const AccuracyReport unscaled =
      EvaluateTransfer(profile, source, target, {}, DeviceScale{}, DefaultOpAliases());
  CHECK(unscaled.ops.total() > 0.9);
  CHECK(FormatAccuracy(transfer).find("unmatched") != std::string::npos);
}

// Across devices, 16-bit tensor-core types scale with the 16-bit peaks,
// which differ from the fp32 ones by a different factor on each GPU.
TEST_CASE("Predicting another device: 16-bit types scale by the 16-bit peaks, the rest by fp32") {
  sim::DeviceSpec v100, h200;
  v100.peak_flops_fp32 = 15.7e12;
  v100.peak_flops_fp16 = 125e12;
  v100.memory_bandwidth = 900e9;
  h200.peak_flops_fp32 = 67e12;
  h200.peak_flops_fp16 = 989e12;
  h200.memory_bandwidth = 4.8e12;
  const DeviceScale scale = ScaleBetween(h200, v100);
  CHECK(scale.per_flop == doctest::Approx(67.0 / 15.7));
  CHECK(scale.per_flop_16 == doctest::Approx(989.0 / 125.0));
  CHECK(scale.per_byte == doctest::Approx(4.8e12 / 900e9));
  sim::DeviceSpec no16 = v100;
  no16.peak_flops_fp16 = 0.0;  // unknown: the fp32 peak counts
  CHECK(ScaleBetween(h200, no16).per_flop_16 == doctest::Approx(989.0 / 15.7));
  CHECK(Sixteen("aten::mm [bf16]"));
  CHECK(Sixteen("aten::conv2d [fp16]"));
  CHECK_FALSE(Sixteen("aten::mm"));
  CHECK_FALSE(Sixteen("aten::conv2d (depthwise) [bf16]"));  // no tensor cores
  sim::DeviceProfile profile;
  profile.op_types["aten::mm [bf16]"] = sim::KernelFit{0.0, 1e-15, 0.0};
  profile.op_types["aten::mm"] = sim::KernelFit{0.0, 1e-14, 0.0};
  DeviceScale s;
  s.per_flop = 2.0;
  s.per_flop_16 = 8.0;
  CHECK(PredictSample(profile, Sample("aten::mm [bf16]", 1e9, 0, 0), s) == doctest::Approx(8e-6));
  CHECK(PredictSample(profile, Sample("aten::mm", 1e9, 0, 0), s) == doctest::Approx(2e-5));
}

TEST_CASE("preserve_total: a robust fit's predictions add up to the measured total of its samples") {
  // Times with noise skewed to the right (one sample in four 40% slow, as on
  // a shared core): Huber follows the typical sample and its sum falls
  // short of the measured one; preserve_total rescales it to the total.
  const double noise[] = {-0.05, 0.0, 0.05, 0.4};
  std::vector<OpSample> samples;
  for (int i = 0; i < 400; ++i) {
    const double flops = 1e6 * (1 + i % 50);
    samples.push_back(Sample("aten::mm", flops, 0.0, (2e-6 + 1e-11 * flops) * (1.0 + noise[i % 4])));
  }
  double measured = 0.0;
  for (const OpSample& s : samples) measured += s.time;
  const auto total = [&](const sim::KernelFit& fit) {
    double sum = 0.0;
    for (const OpSample& s : samples) sum += fit.Time(s.flops, s.bytes);
    return sum;
  };
  FitOptions robust;
  robust.method = FitMethod::kHuber;
  const sim::KernelFit plain = FitKernelCost(Pointers(samples), robust);
  CHECK(total(plain) < 0.95 * measured);
  robust.preserve_total = true;
  const sim::KernelFit kept = FitKernelCost(Pointers(samples), robust);
  CHECK(total(kept) == doctest::Approx(measured).epsilon(1e-9));
  CHECK(kept.per_flop / plain.per_flop == doctest::Approx(measured / total(plain)).epsilon(1e-9));
}

}  // namespace gosim::calibration
