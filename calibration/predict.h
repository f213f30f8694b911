// Prediction of a trace it was not fitted on, and leave-one-trace-out
// evaluation (`gosim calibrate --predict` / `--evaluate`; the method and the
// measured figures are in docs/CALIBRATION.md, "Prediction").
//
// From the target trace a prediction uses only what a user knows before
// running it: the ops with their shapes and dtypes (FLOPs and bytes), the
// threads, streams and devices, and the order of launches and waits (the
// step's dependency graph, calibration/replay.h). Every duration (kernels,
// copies, CPU dispatch, the per-step framework overhead, the gap between
// queued kernels) comes from the profile. The predicted step period is the
// steady state of the step run over and over (SimulateSteadyState: the CPU
// runs ahead and kernels stay queued across step boundaries).
#ifndef GOSIM_CALIBRATION_PREDICT_H_
#define GOSIM_CALIBRATION_PREDICT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibration/accuracy.h"
#include "calibration/fit.h"
#include "calibration/replay.h"
#include "calibration/samples.h"
#include "calibration/trace.h"
#include "sim/device_profile.h"

namespace gosim::calibration {

struct StepPrediction {
  int64_t step = -1;
  double predicted_step_s = 0.0;      // steady-state period, everything from the profile
  double measured_step_s = 0.0;       // ProfilerStep to ProfilerStep
  double predicted_gpu_busy_s = 0.0;  // sum of the predicted GPU activity times
  double measured_gpu_busy_s = 0.0;   // sum of the measured GPU activity times
  double replay_step_s = 0.0;         // steady state fed the measured CPU and GPU times (the check)

  double error() const { return measured_step_s > 0.0 ? predicted_step_s / measured_step_s - 1.0 : 0.0; }
  double replay_error() const { return measured_step_s > 0.0 ? replay_step_s / measured_step_s - 1.0 : 0.0; }
};

// Kernel time of one op type in a predicted trace, per step (means over the
// steps): what the trace measured and what the profile predicts.
struct OpTypeError {
  std::string type;
  double measured_s = 0.0;
  double predicted_s = 0.0;
  double count = 0.0;  // instances per step
};

struct TracePrediction {
  std::string trace;
  std::string device_kind;   // of the trace
  std::string profile_kind;  // of the profile
  DeviceScale scale;         // applied when the kinds differ
  std::vector<StepPrediction> steps;
  // Medians over the steps.
  double measured_step_s = 0.0;
  double predicted_step_s = 0.0;
  double replay_step_s = 0.0;
  double measured_gpu_busy_s = 0.0;
  double predicted_gpu_busy_s = 0.0;
  // Per op type, largest |predicted - measured| first.
  std::vector<OpTypeError> by_type;
  // What the prediction had to go on (per step, means over the steps).
  double kernels = 0.0;              // GPU kernels joined to operators
  double kernels_with_shapes = 0.0;  // of those, launched by an operator whose input shapes were recorded
  // Share of the measured kernel time whose operators have no FLOP or byte
  // estimate (no input shapes, or none that op_work.h reads): the profile
  // prices those by their type's median time, blind to their size.
  double unestimated_share = 0.0;
  // Whether the profile was fitted on this very trace (its source names the
  // file): then the prediction is in-sample.
  bool in_sample = false;
  // What the step graph still takes from the target's measured times
  // (calibration/replay.h): cross-thread waits inferred where a thread's
  // measured gap is >= the cross-thread gap, and inferred edges dropped
  // because the measured times contradict them (per step, means).
  double cross_thread_edges = 0.0;
  double dropped_edges = 0.0;
  // One line per link fit of the profile not used (PredictTrace).
  std::vector<std::string> link_notes;

  double error() const { return measured_step_s > 0.0 ? predicted_step_s / measured_step_s - 1.0 : 0.0; }
  double replay_error() const { return measured_step_s > 0.0 ? replay_step_s / measured_step_s - 1.0 : 0.0; }
};

// The datasheet bandwidth (bytes/s) of the links a profile's fit of `link`
// ("memcpy_ptop", "nccl_allreduce", "memcpy_htod", ...) describes on a
// device of `kind`: the kind's cluster preset's device-to-device or host
// links; 0 when unknown.
using LinkDatasheet = std::function<double(const std::string& kind, const std::string& link)>;

// Predicts every step of `trace` with `profile` (scaled by `scale`). A link
// fit of the profile that rests on fewer than 10 samples, or whose
// bandwidth lies outside [0.05, 1.5] x the datasheet's
// (sim::LinkFitRejection), is replaced by the datasheet's bandwidth, and
// TracePrediction::link_notes says so. Throws TraceError when the trace
// has no steps, ConfigError when the profile has no cpu fit.
TracePrediction PredictTrace(const Trace& trace, const TraceSamples& samples,
                             const sim::DeviceProfile& profile, const DeviceScale& scale = {},
                             double cross_thread_gap = 200.0e-6, const LinkDatasheet& datasheet = nullptr);

// Share of the measured GPU time above which the prediction warns that the
// target's kernels lack FLOP/byte estimates.
inline constexpr double kUnestimatedWarning = 0.2;

// One line of JSON per step with the field names of StepPrediction (and
// `trace`).
std::string PredictionJson(const TracePrediction& prediction);
// A text table of the steps.
std::string FormatPrediction(const TracePrediction& prediction);

// One trace of a leave-one-out evaluation.
struct EvaluationTrace {
  std::string name;
  std::string path;          // resolved
  std::string step_pattern;  // empty = the default
  int skip_steps = 0;        // leading steps left out (warm-up)
  std::string device_kind;   // overrides the trace's (one that names no GPU); empty = the trace's
  std::string group;  // traces of one group (one model at two sizes) are left out together; empty = name
};

// Drops the first `count` steps of a trace (warm-up: a first forward pass
// that allocates memory and picks algorithms).
void SkipSteps(Trace* trace, int count);

// The manifest (YAML: `traces: [{name, file, step_pattern, skip_steps,
// device_kind}]`, each file
// relative to `traces_dir`; entries of models profiled on this machine also
// name their `graph`, calibration/evaluation_cpu.yaml): the listed traces
// whose file exists; `missing` gets the others (with the command that
// records a missing `graph` trace).
std::vector<EvaluationTrace> ReadEvaluationManifest(const std::string& path, const std::string& traces_dir,
                                                    std::vector<std::string>* missing);

struct EvaluationRow {
  std::string trace;
  std::vector<std::string> fitted_on;
  TracePrediction prediction;
};

struct Evaluation {
  std::vector<EvaluationRow> rows;
  double median_abs_error = 0.0;
  double worst_abs_error = 0.0;
  double worst_replay_error = 0.0;    // of the check replay fed measured times
  double median_abs_gpu_error = 0.0;  // |predicted / measured GPU busy time - 1|
  double worst_abs_gpu_error = 0.0;
};

// Scaling of a profile of kind `from` to kind `to` (fp32 peak and memory
// bandwidth ratios of the cluster presets); nullopt when a kind has no preset.
using ScaleFor = std::function<std::optional<DeviceScale>(const std::string& from, const std::string& to)>;

// Leave one trace out: each trace is predicted by a profile fitted on the
// other traces of its device kind, or, when it is the only one of its kind,
// on the traces of the kind with the most traces, scaled by `scale_for`.
Evaluation EvaluateLeaveOneOut(const std::vector<EvaluationTrace>& traces, const FitOptions& fit,
                               const ScaleFor& scale_for, const LinkDatasheet& datasheet = nullptr);

// `breakdown`: after the table, each held-out trace's `breakdown` op types
// with the largest kernel-time errors.
std::string FormatEvaluation(const Evaluation& evaluation, int breakdown = 0);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_PREDICT_H_
