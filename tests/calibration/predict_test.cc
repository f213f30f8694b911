#include "calibration/predict.h"

#include <doctest/doctest.h>

#include <string>

#include "calibration/accuracy.h"
#include "calibration/fit.h"
#include "calibration/trace_reader.h"
#include "core/error.h"
#include "gosim_source_dir.h"  // GOSIM_SOURCE_DIR, GOSIM_SHARED_DIR
#include "tests/calibration/trace_test_data.h"

namespace gosim::calibration {
namespace {

// The committed real trace (calibration/data/README.md): AlexNet forward
// passes on an A100; the first is a 12.8 s warm-up.
Trace CommittedTrace() {
  ReadOptions read;
  read.step_pattern = "\\|forward\\]$";
  return ReadTrace(std::string(GOSIM_SOURCE_DIR) + "/calibration/data/hta_a100_alexnet.json.gz", read);
}

}  // namespace

TEST_CASE("prediction of the committed A100 trace: period, GPU busy, the replay check and the JSON") {
  Trace trace = CommittedTrace();
  REQUIRE(trace.steps.size() == 2);
  SkipSteps(&trace, 1);
  REQUIRE(trace.steps.size() == 1);
  CHECK_THROWS_AS(SkipSteps(&trace, 1), ConfigError);
  const TraceSamples samples = ExtractSamples(trace);
  CHECK(samples.device_kind == "A100");
  // In-sample (fitted on the step it predicts): only the machinery is
  // checked here; held-out figures come from --evaluate.
  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {}, samples.step_numbers);
  REQUIRE(profile.cpu.has_value());
  const TracePrediction p = PredictTrace(trace, samples, profile);
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].step == 1);
  CHECK(p.measured_step_s == doctest::Approx(0.036356).epsilon(1e-6));  // the forward annotation
  CHECK(p.measured_gpu_busy_s == doctest::Approx(0.005317).epsilon(1e-6));
  CHECK(std::abs(p.replay_error()) < 0.02);  // the steady state fed the measured times
  CHECK(p.predicted_step_s > 0.0);
  CHECK(p.predicted_gpu_busy_s > 0.0);
  const std::string json = PredictionJson(p);
  for (const char* field : {"\"step\":1", "\"predicted_step_s\":", "\"measured_step_s\":",
                            "\"predicted_gpu_busy_s\":", "\"measured_gpu_busy_s\":"}) {
    CHECK(json.find(field) != std::string::npos);
  }
  CHECK(FormatPrediction(p).find("median: measured 36.36 ms") != std::string::npos);

  // Link fits it should not trust: too few samples, or a bandwidth outside
  // [0.05, 1.5] x the datasheet's, are replaced by the datasheet's
  // bandwidth (latency kept), one note each; without a datasheet the fit
  // is dropped. A fit within the band is kept, silently.
  sim::DeviceProfile links = profile;
  links.links["nccl_alltoall"] = sim::LinkFit{20e-6, 90e6, 5};         // 5 samples at 90 MB/s
  links.links["memcpy_ptop"] = sim::LinkFit{10e-6, 200e9, 50};         // within the band
  links.links["nccl_allreduce"] = sim::LinkFit{10e-6, 1e9, 50};        // 50 samples, 1/300 of the sheet
  const LinkDatasheet sheet = [](const std::string& kind, const std::string& link) {
    CHECK(kind == "A100");
    return link == "memcpy_htod" ? 0.0 : 300e9;
  };
  const TracePrediction guarded = PredictTrace(trace, samples, links, {}, 200e-6, sheet);
  REQUIRE(guarded.link_notes.size() == 2);
  CHECK(guarded.link_notes[0].find("nccl_allreduce fit is not used") != std::string::npos);
  CHECK(guarded.link_notes[1].find("nccl_alltoall fit is not used") != std::string::npos);
  CHECK(guarded.link_notes[1].find("300 GB/s prices it") != std::string::npos);
  CHECK(FormatPrediction(guarded).find("nccl_alltoall fit is not used") != std::string::npos);
  const TracePrediction unsheeted = PredictTrace(trace, samples, links, {}, 200e-6,
                                                 [](const std::string&, const std::string&) { return 0.0; });
  // Without a datasheet only the sample count can be judged: the 5-sample
  // all-to-all fit is dropped, the 50-sample all-reduce one is kept.
  REQUIRE(unsheeted.link_notes.size() == 1);
  CHECK(unsheeted.link_notes[0].find("nccl_alltoall fit is not used") != std::string::npos);
  CHECK(unsheeted.link_notes[0].find("no datasheet link") != std::string::npos);

  // A profile without the host side cannot predict.
  sim::DeviceProfile old = profile;
  old.cpu.reset();
  CHECK_THROWS_AS(PredictTrace(trace, samples, old), ConfigError);
}

TEST_CASE("a trace without runtime calls (gosim profile on a CPU) predicts from its activities") {
  // Two steps of 100 us on one device: mm [10, 50) then relu [60, 80), each
  // a cpu_op with its own kernel activity (joined by External id).
  const char* text = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100, "args": {}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1100, "dur": 100, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1010, "dur": 40,
   "args": {"External id": 1, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "kernel", "name": "aten::mm", "pid": 0, "tid": 7, "ts": 1010, "dur": 40, "args": {"External id": 1, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 2, "ts": 1060, "dur": 20,
   "args": {"External id": 2, "Input Dims": [[64, 64]], "Input type": ["float"]}},
  {"ph": "X", "cat": "kernel", "name": "aten::relu", "pid": 0, "tid": 7, "ts": 1060, "dur": 20, "args": {"External id": 2, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1110, "dur": 40,
   "args": {"External id": 3, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "kernel", "name": "aten::mm", "pid": 0, "tid": 7, "ts": 1110, "dur": 40, "args": {"External id": 3, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 2, "ts": 1160, "dur": 20,
   "args": {"External id": 4, "Input Dims": [[64, 64]], "Input type": ["float"]}},
  {"ph": "X", "cat": "kernel", "name": "aten::relu", "pid": 0, "tid": 7, "ts": 1160, "dur": 20, "args": {"External id": 4, "device": 0, "stream": 7}}
]})";
  const Trace trace = ParseTrace(text, "cpu.json");
  REQUIRE(trace.steps.size() == 2);
  CHECK(trace.runtime.empty());
  const TraceSamples samples = ExtractSamples(trace);
  REQUIRE(samples.ops.size() == 4);
  // Idle before relu (10 us), before the second mm (30 us), before the
  // second relu (10 us): 50 us over 4 ops.
  CHECK(samples.launch_overhead == doctest::Approx(12.5e-6));
  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {}, samples.step_numbers);
  CHECK(!profile.cpu.has_value());  // no runtime calls, no host fit: not needed here
  const TracePrediction p = PredictTrace(trace, samples, profile);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].measured_step_s == doctest::Approx(100e-6));
  // The replay fed the measured times: each activity until the next starts.
  CHECK(p.steps[0].replay_step_s == doctest::Approx(100e-6));
  // Predicted: mm 40 us and relu 20 us (two samples each: their medians),
  // plus the 12.5 us launch overhead per op.
  CHECK(p.steps[0].predicted_step_s == doctest::Approx(85e-6));
  CHECK(p.steps[0].predicted_gpu_busy_s == doctest::Approx(60e-6));
  CHECK(p.steps[0].measured_gpu_busy_s == doctest::Approx(60e-6));
}

TEST_CASE("prediction and evaluation edge cases") {
  // No steps: a TraceError, never an empty table.
  ReadOptions read;
  read.step_pattern = "^no such annotation$";
  const Trace none =
      ReadTrace(std::string(GOSIM_SOURCE_DIR) + "/calibration/data/hta_a100_alexnet.json.gz", read);
  CHECK(none.steps.empty());
  const TraceSamples samples = ExtractSamples(none);
  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {}, {});
  CHECK_THROWS_AS(PredictTrace(none, samples, profile), TraceError);

  // An empty match says so instead of "MAPE 0.0%".
  AccuracyReport empty;
  empty.unmatched = 7;
  const std::string text = FormatAccuracy(empty);
  CHECK(text.find("no matched ops (7 target ops") != std::string::npos);
  CHECK(text.find("MAPE") == std::string::npos);

  // A trace that names no GPU cannot be fitted or predicted without a kind.
  std::string no_kind = testing::kKinetoTrace;
  const size_t from = no_kind.find(" \"deviceProperties\"");
  const size_t to = no_kind.find(" \"distributedInfo\"");
  REQUIRE(from != std::string::npos);
  REQUIRE(to > from);
  no_kind.erase(from, to - from);
  TraceSamples unnamed = ExtractSamples(ParseTrace(no_kind, "unnamed.json"));
  CHECK(unnamed.device_kind == "gpu");
  try {
    RequireKnownDeviceKind(unnamed, "--device-kind");
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()).find("unnamed.json") != std::string::npos);
    CHECK(std::string(e.what()).find("give --device-kind KIND") != std::string::npos);
  }
  unnamed.device_kind = "A100";
  CHECK_NOTHROW(RequireKnownDeviceKind(unnamed, "--device-kind"));
  CHECK_NOTHROW(RequireKnownDeviceKind(ExtractSamples(ParseTrace(testing::kKinetoTrace, "small.json")), "x"));

  // A trace whose GPU activities join no operator has nothing to predict.
  const std::string no_kernels = R"json({"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB"}],
   "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
     "args": {"External id": 1, "Input Dims": [[8, 32]], "Input type": ["float"]}}]})json";
  const Trace bare = ParseTrace(no_kernels, "bare.json");
  REQUIRE_FALSE(bare.steps.empty());
  const TraceSamples bare_samples = ExtractSamples(bare);
  CHECK_THROWS_WITH_AS(PredictTrace(bare, bare_samples, profile), doctest::Contains("nothing to predict"),
                       TraceError);

  // A manifest whose files are absent lists them as missing.
  std::vector<std::string> missing;
  const auto traces = ReadEvaluationManifest(std::string(GOSIM_SOURCE_DIR) + "/calibration/evaluation.yaml",
                                             "/nonexistent", &missing);
  CHECK(traces.empty());
  CHECK(missing.size() == 4);
  CHECK_THROWS_AS(EvaluateLeaveOneOut({}, FitOptions{}, nullptr), ConfigError);

  // The CPU manifest: >= 8 models of several families, each with the graph
  // that records its trace, which a missing entry names.
  missing.clear();
  CHECK(ReadEvaluationManifest(std::string(GOSIM_SOURCE_DIR) + "/calibration/evaluation_cpu.yaml",
                               "/nonexistent", &missing)
            .empty());
  REQUIRE(missing.size() >= 8);
  for (const std::string& m : missing) CHECK(m.find("gosim profile --graph '") != std::string::npos);
  CHECK(missing[0].find("--out /nonexistent/bert.json.gz") != std::string::npos);
}

}  // namespace gosim::calibration
