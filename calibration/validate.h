// Validation of the simulator against measured training steps
// (`gosim calibrate --validate`; docs/CALIBRATION.md, "Validation").
//
// For every model recorded on a GPU (calibration/data/gpu) the repository
// holds its training step exported by gosim's exporter with the recording's
// model code, batch, dtype and optimizer (calibration/data/gpu/graphs).
// Leave one model out: a profile is fitted on the traces of the other
// models of that GPU (the model's fp32 and bf16 steps and its other batch
// sizes are one group, left out together), and the held-out model's
// exported graph is simulated with that profile by the engine every agent
// uses (an Evaluator with the `auto` cost model on the GPU's preset,
// everything on one device, the default simulator options: the host is
// modelled where the profile has a host table), exactly as `gosim simulate`
// does. The prediction is compared with the step measured without the
// profiler (provenance.json beside the traces), and shown beside the
// profiled period and the GPU's busy time.
#ifndef GOSIM_CALIBRATION_VALIDATE_H_
#define GOSIM_CALIBRATION_VALIDATE_H_

#include <string>
#include <vector>

#include "calibration/fit.h"

namespace gosim::calibration {

struct ValidationModel {
  std::string name;   // e.g. "resnet50", "resnet50_bf16"
  std::string trace;  // resolved path
  std::string graph;  // resolved path of the exported graph
  std::string group;  // left out together; default: name
};

struct ValidationGpu {
  std::string gpu;     // "h100", "h200"
  std::string preset;  // cluster preset of the GPU, e.g. "h200x8_nvswitch"
  std::vector<ValidationModel> models;
};

// Reads the manifest (calibration/validation.yaml): `gpus: {NAME: {preset,
// traces_dir, graphs_dir, models: [{name, trace, graph, group}]}}`, paths
// relative to the repository (ResolveDataPath). Models whose trace or graph
// file is absent go to `missing` (name and path), not to the result.
std::vector<ValidationGpu> ReadValidationManifest(const std::string& path, std::vector<std::string>* missing);

struct ValidationRow {
  std::string model;
  std::string gpu;
  std::vector<std::string> fitted_on;     // models whose traces the profile was fitted on
  double predicted_step_s = 0.0;          // the engine's step on the exported graph
  double measured_step_s = 0.0;           // unprofiled steady-state step (record_gpu_traces.py)
  double measured_profiled_step_s = 0.0;  // median ProfilerStep period of the trace
  double predicted_gpu_busy_s = 0.0;      // the device's busy time in the simulation
  double measured_gpu_busy_s = 0.0;       // median kernel, memcpy and memset time per profiled step
  double predicted_host_busy_s = 0.0;     // the busiest host thread in the simulation
  double measured_host_s = 0.0;  // the profiled steps' host time (median) x the profile's profiler factor
  std::string execution;         // what the engine ran ("eager", or "none" without a host table)
  std::string cost_model;        // CostModel::Describe
  int32_t nodes = 0;             // of the exported graph

  double error() const { return measured_step_s > 0.0 ? predicted_step_s / measured_step_s - 1.0 : 0.0; }
  double gpu_error() const {
    return measured_gpu_busy_s > 0.0 ? predicted_gpu_busy_s / measured_gpu_busy_s - 1.0 : 0.0;
  }
};

// The targets of the validation (median and worst |error| against the
// unprofiled step, on each GPU; docs/CALIBRATION.md, "Validation").
inline constexpr double kValidationTargetMedian = 0.08;
inline constexpr double kValidationTargetWorst = 0.25;

struct ValidationSummary {
  std::string gpu;
  int32_t models = 0;
  double median_abs_error = 0.0;
  double worst_abs_error = 0.0;
  std::string worst_model;
  double median_abs_gpu_error = 0.0;
  // Why the models off by more than kValidationTargetMedian are off. Taking
  // a step as the larger of its GPU busy and host busy times, each such
  // model is counted where putting the measured value in place of one
  // side's prediction brings the step nearest to the measured one:
  // `gpu_side` (the exported graph's kernels as the fits price them),
  // `host_side` (per-op host costs of a model the profile has not seen);
  // or `neither` when even both measured sides miss the step by more than
  // the target (the step is not the larger of the two as recorded: overlap,
  // synchronisations, the profiler factor's estimate of the host).
  int32_t missed = 0;
  int32_t gpu_side = 0;
  int32_t host_side = 0;
  int32_t neither = 0;
};

struct Validation {
  std::vector<ValidationRow> rows;
  std::vector<ValidationSummary> summaries;  // per GPU
};

// Leave-one-model-out over each GPU's models (at least two per GPU).
// `progress` (may be null) gets a line per model as it finishes.
Validation ValidateLeaveOneModelOut(const std::vector<ValidationGpu>& gpus, const FitOptions& fit,
                                    const std::function<void(const std::string&)>& progress = nullptr);

// The summary of one GPU's rows: median and worst |error|, and why the
// models off by more than kValidationTargetMedian are off.
ValidationSummary SummarizeValidation(const std::string& gpu, const std::vector<ValidationRow>& rows);

// One JSON object per row (with "model"), then one per GPU with "summary":
// the median and worst error, the targets, by how much they are missed and
// why (the counts above and the line of ValidationWhy).
std::string ValidationJson(const Validation& validation);
// A table per GPU, its median and worst error, the targets, and why.
std::string FormatValidation(const Validation& validation);
// One line: how many models miss the median target and on which side, and
// where the causes are documented; empty when no model misses it.
std::string ValidationWhy(const ValidationSummary& summary);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_VALIDATE_H_
