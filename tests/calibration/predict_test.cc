#include "calibration/predict.h"

#include <doctest/doctest.h>

#include <string>

#include "calibration/accuracy.h"
#include "calibration/fit.h"
#include "calibration/trace_reader.h"
#include "core/error.h"

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

  // A profile without the host side cannot predict.
  sim::DeviceProfile old = profile;
  old.cpu.reset();
  CHECK_THROWS_AS(PredictTrace(trace, samples, old), ConfigError);
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

  // A manifest whose files are absent lists them as missing.
  std::vector<std::string> missing;
  const auto traces = ReadEvaluationManifest(std::string(GOSIM_SOURCE_DIR) + "/calibration/evaluation.yaml",
                                             "/nonexistent", &missing);
  CHECK(traces.empty());
  CHECK(missing.size() == 4);
  CHECK_THROWS_AS(EvaluateLeaveOneOut({}, FitOptions{}, nullptr), ConfigError);
}

}  // namespace gosim::calibration
