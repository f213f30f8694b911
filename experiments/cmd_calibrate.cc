// `gosim calibrate --trace T.json[.gz] --out configs/calibrated/NAME.yaml
//  [--report] [--holdout-steps 20,21] [--transfer-trace B.json.gz] ...`
// `gosim calibrate --profile P --predict T.json[.gz] [--json]`
// `gosim calibrate --evaluate [--manifest calibration/evaluation.yaml]`
// `gosim calibrate --validate [--gpu h100|h200] [--json]`
//
// Reads a profiler trace, fits a calibrated device profile on every step and
// writes it (--out). With --report it also prints the accuracy: kernel-time
// errors on held-out steps (fitted on the others), the whole-step replay of
// every step, and, with --transfer-trace, the prediction of another GPU's
// trace. The method and the measured numbers are in docs/CALIBRATION.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "calibration/accuracy.h"
#include "calibration/fit.h"
#include "calibration/predict.h"
#include "calibration/replay.h"
#include "calibration/samples.h"
#include "calibration/trace_reader.h"
#include "calibration/validate.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "experiments/commands.h"
#include "sim/cluster.h"
#include "sim/device_profile.h"

namespace gosim::cli {

namespace {

using calibration::AccuracyReport;
using calibration::DeviceScale;
using calibration::Trace;
using calibration::TraceSamples;

struct CalibrateArgs {
  std::string trace;
  std::vector<std::string> also;            // more traces whose samples join the written profile's fit
  std::vector<std::string> transfers_from;  // traces whose transfer samples alone join it
  std::string predictions;                  // hold-out predictions as CSV
  std::string out;
  bool report = false;
  bool replay = true;
  std::vector<int64_t> holdout_steps;
  std::string step_pattern = "^ProfilerStep#(\\d+)$";
  std::string fit = "huber";
  std::string weighting = "absolute";
  int min_samples = 3;
  std::string device_kind;
  std::string transfer_trace;
  std::string transfer_step_pattern;
  double cross_thread_gap_us = 200.0;
  // Prediction and evaluation.
  std::string profile;
  std::string predict;
  bool json = false;
  bool evaluate = false;
  int breakdown = 0;
  std::string manifest = "calibration/evaluation.yaml";
  std::string traces_dir = "../shared/data/traces";
  int skip_steps = 0;
  double max_median_error = -1.0;
  bool preserve_total = false;
  // Validation.
  bool validate = false;
  std::string gpu;         // empty: every GPU of the manifest
  std::string scale_from;  // --predict: allow a profile of this other kind, scaled
  std::string validation_manifest = "calibration/validation.yaml";
};

std::string TraceSummary(const Trace& trace, const TraceSamples& samples) {
  char line[512];
  int64_t kernels = 0;
  for (const auto& a : trace.activities) kernels += a.kind == calibration::ActivityKind::kKernel;
  int64_t shaped = 0;
  for (const auto& s : samples.ops) shaped += s.has_shapes;
  std::snprintf(
      line, sizeof(line),
      "trace %s: schema %s, device %s, %zu ops, %zu runtime calls, %zu GPU activities (%lld kernels), "
      "%zu collectives, %zu steps\n"
      "  kernels joined to ops: %lld by External id, %lld by enclosing op, %lld by their own id, "
      "%lld unattributed, %lld without a runtime call\n"
      "  samples: %zu ops (%lld with input shapes), %zu memcpys/collectives; launch overhead %.2f us per "
      "op, launch latency %.2f us\n",
      trace.source.c_str(), std::string(calibration::TraceSchemaName(trace.schema)).c_str(),
      samples.device_kind.c_str(), trace.ops.size(), trace.runtime.size(), trace.activities.size(),
      static_cast<long long>(kernels), trace.collectives.size(), trace.steps.size(),
      static_cast<long long>(trace.join.by_external_id), static_cast<long long>(trace.join.by_enclosure),
      static_cast<long long>(trace.join.by_activity_id), static_cast<long long>(trace.join.unattributed),
      static_cast<long long>(trace.join.no_runtime), samples.ops.size(), static_cast<long long>(shaped),
      samples.transfers.size(), samples.launch_overhead * 1e6, samples.launch_latency * 1e6);
  return line;
}

// Step indices of `numbers`; ConfigError for a number the trace lacks.
std::vector<int32_t> StepIndices(const Trace& trace, const std::vector<int64_t>& numbers) {
  std::vector<int32_t> out;
  std::vector<std::string> known;
  for (const auto& s : trace.steps) known.push_back(std::to_string(s.number));
  for (int64_t n : numbers) {
    int32_t found = -1;
    for (size_t i = 0; i < trace.steps.size(); ++i) {
      if (trace.steps[i].number == n) found = static_cast<int32_t>(i);
    }
    if (found < 0) {
      throw ConfigError("the trace has no step " + std::to_string(n), Location{"--holdout-steps"},
                        "its steps are: " + (known.empty() ? std::string("none") : Join(known, ", ")));
    }
    out.push_back(found);
  }
  return out;
}

// The first device of kind `kind` among the cluster presets, or nullptr.
std::optional<sim::DeviceSpec> PresetDevice(const std::string& kind) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(ResolveDataPath("configs/clusters"), ec)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    try {
      const sim::Cluster cluster = sim::LoadCluster(file);
      for (const auto& d : cluster.devices()) {
        if (d.kind == kind) return d;
      }
    } catch (const Error&) {
      continue;  // a broken preset is reported by the commands that use it
    }
  }
  return std::nullopt;
}

void ReportTransfer(const CalibrateArgs& args, const sim::DeviceProfile& profile, const TraceSamples& source,
                    const calibration::ReadOptions& read) {
  calibration::ReadOptions target_read = read;
  if (!args.transfer_step_pattern.empty()) target_read.step_pattern = args.transfer_step_pattern;
  const Trace target = calibration::ReadTrace(args.transfer_trace, target_read);
  const TraceSamples target_samples = calibration::ExtractSamples(target);
  std::printf("\n== transfer: profile of %s (%s) predicting %s (%s)\n", source.source.c_str(),
              source.device_kind.c_str(), target.source.c_str(), target_samples.device_kind.c_str());
  std::printf("%s", TraceSummary(target, target_samples).c_str());
  const auto aliases = calibration::DefaultOpAliases();
  AccuracyReport plain =
      calibration::EvaluateTransfer(profile, source, target_samples, {}, DeviceScale{}, aliases);
  plain.title = "-- unscaled (the source profile as is)";
  std::printf("%s", calibration::FormatAccuracy(plain).c_str());
  const auto from = PresetDevice(source.device_kind);
  const auto to = PresetDevice(target_samples.device_kind);
  if (!from || !to) {
    std::printf(
        "-- roofline-scaled: skipped (no cluster preset in configs/clusters with device kind %s and %s)\n",
        source.device_kind.c_str(), target_samples.device_kind.c_str());
    return;
  }
  const DeviceScale scale = calibration::ScaleBetween(*from, *to);
  AccuracyReport scaled = calibration::EvaluateTransfer(profile, source, target_samples, {}, scale, aliases);
  char title[256];
  std::snprintf(title, sizeof(title),
                "-- roofline-scaled: per_flop x %.3f (fp32 peak %s / %s; 16-bit tensor-core types x %.3f, "
                "16-bit peak), "
                "per_byte x %.3f (memory bandwidth), from the cluster presets",
                scale.per_flop, source.device_kind.c_str(), target_samples.device_kind.c_str(),
                scale.per_flop_16, scale.per_byte);
  scaled.title = title;
  std::printf("%s", calibration::FormatAccuracy(scaled).c_str());
}

// The datasheet bandwidth of the links a profile's `link` fit describes on
// a device of `kind`: the fastest device-to-device link (peer copies,
// collectives) or host link (memcpy_htod / dtoh) of the first preset with
// that kind; 0 when none.
double PresetLinkBandwidth(const std::string& kind, const std::string& link) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(ResolveDataPath("configs/clusters"), ec)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  const bool host = link == "memcpy_htod" || link == "memcpy_dtoh";
  for (const std::string& file : files) {
    try {
      const sim::Cluster cluster = sim::LoadCluster(file);
      if (cluster.num_devices() == 0 || cluster.device(0).kind != kind) continue;
      double best = 0.0;
      for (const sim::LinkSpec& l : cluster.links()) {
        const bool device_pair = l.src >= 0 && l.dst >= 0;
        if (device_pair != !host) continue;
        best = std::max(best, l.bandwidth);
      }
      if (best > 0.0) return best;
    } catch (const Error&) {
      continue;
    }
  }
  return 0.0;
}

// Scaling between two device kinds from the cluster presets.
std::optional<DeviceScale> PresetScale(const std::string& from_kind, const std::string& to_kind) {
  const auto from = PresetDevice(from_kind);
  const auto to = PresetDevice(to_kind);
  if (!from || !to) return std::nullopt;
  return calibration::ScaleBetween(*from, *to);
}

int Predict(const CalibrateArgs& args) {
  if (args.profile.empty()) {
    throw ConfigError("--predict needs --profile", Location{"--predict"},
                      "give --profile configs/calibrated/KIND.yaml (a profile fitted on other traces)");
  }
  if (args.skip_steps < 0) throw ConfigError("--skip-steps must be >= 0", Location{"--skip-steps"});
  const sim::DeviceProfile profile = sim::LoadDeviceProfile(args.profile);
  calibration::ReadOptions read;
  read.step_pattern = args.step_pattern;
  Trace trace = calibration::ReadTrace(ResolveDataPath(args.predict), read);
  calibration::SkipSteps(&trace, args.skip_steps);
  TraceSamples samples = calibration::ExtractSamples(trace);
  if (!args.device_kind.empty()) samples.device_kind = args.device_kind;
  calibration::RequireKnownDeviceKind(samples, "--device-kind");
  DeviceScale scale;
  if (samples.device_kind != profile.device_kind) {
    // Another kind's profile is a guess scaled by datasheet ratios: only when asked for.
    if (args.scale_from != profile.device_kind) {
      throw ConfigError(
          "the profile is for " + profile.device_kind + ", the trace ran on " + samples.device_kind,
          Location{args.profile},
          "give a profile of " + samples.device_kind + ", or --scale-from " + profile.device_kind +
              " to scale this one by the presets' peak and bandwidth ratios (docs/CALIBRATION.md: "
              "off by -74% to +103% across kinds)");
    }
    const std::optional<DeviceScale> s = PresetScale(profile.device_kind, samples.device_kind);
    if (!s) {
      throw ConfigError(
          "the profile is for " + profile.device_kind + ", the trace ran on " + samples.device_kind,
          Location{args.profile},
          "give a profile of " + samples.device_kind +
              " (no cluster preset has both kinds, so it cannot be scaled)");
    }
    scale = *s;
  }
  const calibration::TracePrediction prediction = calibration::PredictTrace(
      trace, samples, profile, scale, args.cross_thread_gap_us * 1e-6, PresetLinkBandwidth);
  std::printf("%s", args.json ? calibration::PredictionJson(prediction).c_str()
                              : calibration::FormatPrediction(prediction).c_str());
  return 0;
}

// The fit options of the command line (--fit, --weighting, --min-samples,
// --preserve-total).
calibration::FitOptions FitOptionsOf(const CalibrateArgs& args) {
  calibration::FitOptions fit;
  fit.method = calibration::ParseFitMethod(args.fit);
  fit.weighting = calibration::ParseWeighting(args.weighting);
  fit.min_samples = args.min_samples;
  fit.preserve_total = args.preserve_total;
  return fit;
}

int Evaluate(const CalibrateArgs& args) {
  const calibration::FitOptions fit = FitOptionsOf(args);
  const std::string manifest = ResolveDataPath(args.manifest);
  std::vector<std::string> missing;
  const std::vector<calibration::EvaluationTrace> traces =
      calibration::ReadEvaluationManifest(manifest, args.traces_dir, &missing);
  for (const std::string& m : missing) std::printf("skipped (file absent): %s\n", m.c_str());
  if (traces.size() < 2) {
    std::printf(
        "leave-one-trace-out needs two traces or more; %zu present (the shared traces are not part of "
        "a clone: see docs/CALIBRATION.md)\n",
        traces.size());
    return args.max_median_error >= 0.0 ? 77 : 0;  // 77: CTest's "skipped"
  }
  const calibration::Evaluation evaluation =
      calibration::EvaluateLeaveOneOut(traces, fit, PresetScale, PresetLinkBandwidth);
  std::printf("%s", calibration::FormatEvaluation(evaluation, args.breakdown).c_str());
  if (args.max_median_error >= 0.0 && evaluation.median_abs_error > args.max_median_error) {
    std::printf("FAILED: median |error| %.1f%% is above %.1f%%\n", 100.0 * evaluation.median_abs_error,
                100.0 * args.max_median_error);
    return 1;
  }
  return 0;
}

int Validate(const CalibrateArgs& args) {
  const calibration::FitOptions fit = FitOptionsOf(args);
  std::vector<std::string> missing;
  std::vector<calibration::ValidationGpu> gpus =
      calibration::ReadValidationManifest(ResolveDataPath(args.validation_manifest), &missing);
  if (!args.gpu.empty()) {
    std::vector<std::string> names;
    for (const auto& g : gpus) names.push_back(g.gpu);
    std::erase_if(gpus, [&](const calibration::ValidationGpu& g) { return g.gpu != args.gpu; });
    if (gpus.empty()) {
      throw ConfigError(
          "no GPU '" + args.gpu + "' in " + args.validation_manifest + "." + DidYouMean(args.gpu, names),
          Location{"--gpu"}, "the manifest has: " + Join(names, ", "));
    }
  }
  for (const std::string& m : missing) {
    // `missing` names the GPU first; with --gpu only that GPU's are said.
    if (args.gpu.empty() || m.starts_with(args.gpu + " ")) {
      std::fprintf(stderr, "skipped (file absent): %s\n", m.c_str());
    }
  }
  const auto progress = [&](const std::string& line) {
    if (!args.json) std::fprintf(stderr, "%s\n", line.c_str());
  };
  const calibration::Validation validation = calibration::ValidateLeaveOneModelOut(gpus, fit, progress);
  if (args.json) {
    std::printf("%s", calibration::ValidationJson(validation).c_str());
  } else {
    std::printf("%s", calibration::FormatValidation(validation).c_str());
  }
  if (args.max_median_error >= 0.0) {
    for (const auto& s : validation.summaries) {
      if (s.median_abs_error > args.max_median_error) {
        std::fprintf(stderr, "FAILED: %s median |error| %.1f%% is above %.1f%%\n", s.gpu.c_str(),
                     100.0 * s.median_abs_error, 100.0 * args.max_median_error);
        return 1;
      }
    }
  }
  return 0;
}

int Calibrate(const CalibrateArgs& args) {
  if (args.validate) return Validate(args);
  if (!args.predict.empty()) return Predict(args);
  if (args.evaluate) return Evaluate(args);
  if (args.trace.empty()) {
    throw ConfigError("give --trace T.json.gz to fit, --predict T.json.gz to predict, or --evaluate",
                      Location{"gosim calibrate"}, "see gosim calibrate --help");
  }
  const calibration::FitOptions fit = FitOptionsOf(args);
  if (args.min_samples < 1) throw ConfigError("--min-samples must be >= 1", Location{"--min-samples"});
  if (args.out.empty() && !args.report && args.predictions.empty()) {
    throw ConfigError("nothing to do", Location{"gosim calibrate"},
                      "give --out FILE to write the profile and/or --report to print the accuracy");
  }
  // Written after the fit: fail before it when they cannot be.
  if (!args.out.empty()) CheckWritable(args.out, "--out");
  if (!args.predictions.empty()) CheckWritable(args.predictions, "--predictions");
  calibration::ReadOptions read;
  read.step_pattern = args.step_pattern;
  const Trace trace = calibration::ReadTrace(ResolveDataPath(args.trace), read);
  TraceSamples samples = calibration::ExtractSamples(trace);
  if (!args.device_kind.empty()) samples.device_kind = args.device_kind;
  calibration::RequireKnownDeviceKind(samples, "--device-kind");
  if (samples.ops.empty()) {
    throw TraceError("the trace has no GPU kernels joined to operators", Location{args.trace},
                     "calibration needs a GPU trace recorded with CUDA activities and CPU ops");
  }
  if (trace.steps.empty()) {
    // Without steps there is no period to fit or score against: write nothing.
    throw TraceError("no step annotation matches --step-pattern '" + args.step_pattern + "'",
                     Location{args.trace},
                     "record with torch.profiler and prof.step() per step, or give --step-pattern REGEX "
                     "matching the annotation that delimits a step (e.g. '\\|forward\\]$')");
  }

  std::vector<int64_t> numbers;
  for (const auto& s : trace.steps) numbers.push_back(s.number);
  sim::DeviceProfile profile = calibration::FitProfile(samples, fit, {}, numbers);
  if (!args.also.empty() || !args.transfers_from.empty()) {
    // The written profile is fitted on every trace; the report below covers --trace alone.
    std::vector<TraceSamples> parts{samples};
    for (const std::string& path : args.also) {
      parts.push_back(calibration::ExtractSamples(calibration::ReadTrace(path, read)));
      if (!args.device_kind.empty()) parts.back().device_kind = args.device_kind;
      calibration::RequireKnownDeviceKind(parts.back(), "--device-kind");
    }
    for (const std::string& path : args.transfers_from) {
      // Kernels of a multi-device run ran beside each other; only its copies
      // and collectives are wanted (and its launch figures are not).
      TraceSamples part = calibration::ExtractSamples(calibration::ReadTrace(path, read));
      if (part.transfers.empty()) {
        throw TraceError("the trace has no memcpy or collective with a size", Location{path},
                         "record it with `gosim profile --decision` placing nodes on several devices");
      }
      if (!args.device_kind.empty()) part.device_kind = args.device_kind;
      part.ops.clear();
      part.launch_samples = 0;
      parts.push_back(std::move(part));
    }
    const TraceSamples merged = calibration::MergeSamples(parts);
    profile = calibration::FitProfile(merged, fit, {}, merged.step_numbers);
  }

  // Hold-out: the given steps, else the last third.
  std::vector<int32_t> holdout;
  if (!args.holdout_steps.empty()) {
    holdout = StepIndices(trace, args.holdout_steps);
  } else if (trace.steps.size() >= 2) {
    const size_t n = trace.steps.size();
    for (size_t i = n - std::max<size_t>(1, n / 3); i < n; ++i) holdout.push_back(static_cast<int32_t>(i));
  }
  if (!holdout.empty() && holdout.size() >= trace.steps.size()) {
    throw ConfigError("every step is held out", Location{"--holdout-steps"},
                      "leave at least one step to fit on");
  }
  std::optional<AccuracyReport> held;
  if (!holdout.empty()) {
    held = calibration::EvaluateHoldout(samples, numbers, holdout, fit);
    if (!args.predictions.empty()) {
      WriteFileAtomic(args.predictions, calibration::PredictionsCsv(*held));
      std::printf("hold-out predictions (%zu ops) written to %s\n", held->predictions.size(),
                  args.predictions.c_str());
    }
    // The written profile records held-out errors per op type.
    for (auto& [type, f] : profile.op_types) {
      const auto it = held->per_type.find(type);
      f.mape = it != held->per_type.end() ? it->second.mape() : -1.0;
    }
  }

  if (args.report) {
    std::printf("%s", TraceSummary(trace, samples).c_str());
    std::printf("fit: %s, %s weighting, min %d samples with shapes per group\n", args.fit.c_str(),
                args.weighting.c_str(), args.min_samples);
    if (held) {
      held->title = "\n== hold-out kernel-time accuracy";
      std::printf("%s", calibration::FormatAccuracy(*held).c_str());
    } else {
      std::printf(
          "\n== hold-out kernel-time accuracy: needs at least two profiler steps (found %zu; see "
          "--step-pattern)\n",
          trace.steps.size());
    }
    AccuracyReport unseen = calibration::EvaluateUnseenShapes(samples, fit);
    if (unseen.ops.count > 0) {
      unseen.title =
          "\n== unseen-shape kernel-time accuracy (5-fold cross-validation over (op type, FLOPs, bytes) "
          "groups)";
      std::printf("%s", calibration::FormatAccuracy(unseen).c_str());
    }
    if (args.replay && !trace.steps.empty()) {
      std::vector<int32_t> train;
      std::vector<int64_t> train_numbers;
      const std::set<int32_t> held_set(holdout.begin(), holdout.end());
      for (size_t i = 0; i < trace.steps.size(); ++i) {
        if (!held_set.count(static_cast<int32_t>(i))) {
          train.push_back(static_cast<int32_t>(i));
          train_numbers.push_back(numbers[i]);
        }
      }
      const sim::DeviceProfile replay_profile = calibration::FitProfile(samples, fit, train, train_numbers);
      calibration::ReplayOptions options;
      options.cross_thread_gap = args.cross_thread_gap_us * 1e-6;
      std::vector<calibration::ReplayResult> all;
      std::vector<calibration::ReplayResult> test;
      for (size_t i = 0; i < trace.steps.size(); ++i) {
        all.push_back(
            calibration::ReplayStep(trace, samples, static_cast<int32_t>(i), replay_profile, options));
        if (held_set.count(static_cast<int32_t>(i))) test.push_back(all.back());
      }
      std::printf("\n== whole-step replay (profile fitted on steps %s)\n",
                  Join(
                      [&] {
                        std::vector<std::string> s;
                        for (int64_t n : train_numbers) s.push_back(std::to_string(n));
                        return s;
                      }(),
                      ", ")
                      .c_str());
      std::printf("%s", calibration::FormatReplay(all).c_str());
      if (trace.steps.size() < 2) {
        std::printf(
            "  in-sample: the trace has one step, so the profile was fitted on the step it scores (use "
            "--predict with a profile fitted on other traces for a held-out figure)\n");
      }
      if (!test.empty()) {
        double sum = 0.0;
        for (const auto& r : test) sum += std::fabs(r.error());
        std::printf("  held-out steps only: mean |error| %.1f%%\n",
                    100.0 * sum / static_cast<double>(test.size()));
      }
    }
    if (!args.transfer_trace.empty()) ReportTransfer(args, profile, samples, read);
  }
  if (!args.out.empty()) {
    sim::SaveDeviceProfile(args.out, profile);
    std::printf("profile for %s written to %s (%zu op types, %zu links)\n", profile.device_kind.c_str(),
                args.out.c_str(), profile.op_types.size(), profile.links.size());
  }
  return 0;
}

}  // namespace

void AddCalibrateCommand(CLI::App& root) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = root.add_subcommand("calibrate", "Fit a calibrated device profile to a GPU profiler trace");
  InputFile(cmd->add_option("--trace", args->trace,
                            "PyTorch profiler / Kineto or TensorFlow timeline JSON (.gz too)"));
  InputFile(cmd->add_option("--profile", args->profile, "--predict: the device profile to predict with"));
  InputFile(cmd->add_option(
      "--predict", args->predict,
      "Predict this trace's step period and GPU busy time with --profile, using from the trace only "
      "its ops, shapes, dtypes, threads, streams and devices"));
  cmd->add_flag("--json", args->json,
                "--predict: one JSON object per step (step, predicted_step_s, measured_step_s, "
                "predicted_gpu_busy_s, measured_gpu_busy_s, replay_step_s); --validate: one per model");
  cmd->add_option("--skip-steps", args->skip_steps, "--predict: leave out the first N steps (warm-up)");
  cmd->add_option("--scale-from", args->scale_from,
                  "--predict: the profile is of this other device kind: scale it to the trace's kind by the "
                  "cluster presets' peak and bandwidth ratios (refused otherwise)");
  cmd->add_flag(
      "--evaluate", args->evaluate,
      "Leave-one-trace-out over the traces of --manifest: fit on the others, predict the one left out");
  cmd->add_option("--manifest", args->manifest, "--evaluate: the traces (YAML)")->capture_default_str();
  cmd->add_flag("--validate", args->validate,
                "Leave-one-model-out through the engine the agents use: fit on the other models' traces, "
                "simulate the held-out model's exported training step (calibration/data/gpu/graphs) as "
                "gosim simulate does, compare with its measured unprofiled step");
  cmd->add_option("--gpu", args->gpu, "--validate: only this GPU of the manifest (h100, h200)");
  cmd->add_option("--validation-manifest", args->validation_manifest, "--validate: the models (YAML)")
      ->capture_default_str();
  cmd->add_option("--breakdown", args->breakdown,
                  "--evaluate: print each held-out trace's N op types with the largest kernel-time errors")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--traces-dir", args->traces_dir, "--evaluate: the folder the manifest's files are in")
      ->capture_default_str();
  cmd->add_option(
      "--max-median-error", args->max_median_error,
      "--evaluate / --validate: exit 1 when the median |step error| is above this fraction (--evaluate: 77 "
      "when fewer than two traces are present)");
  InputFile(cmd->add_option(
      "--also", args->also,
      "Another trace of the same device kind to fit the written profile on too (repeatable; e.g. "
      "`gosim profile` runs of other architectures); --report covers --trace alone"));
  InputFile(cmd->add_option(
      "--transfers-from", args->transfers_from,
      "A trace whose copies and collectives (not its kernels) join the written profile's link fits "
      "(repeatable; e.g. `gosim profile --decision` on several devices)"));
  cmd->add_option("--out", args->out, "Write the profile here, e.g. configs/calibrated/v100.yaml");
  cmd->add_option("--predictions", args->predictions,
                  "Write the hold-out predictions (per op: measured and predicted seconds) as CSV here "
                  "(analysis/plot_calibration.py plots them)");
  cmd->add_flag("--report", args->report, "Print the accuracy: hold-out errors, step replay, transfer");
  cmd->add_option("--holdout-steps", args->holdout_steps,
                  "Profiler step numbers to hold out (comma-separated; default: the last third)")
      ->delimiter(',');
  cmd->add_option("--step-pattern", args->step_pattern,
                  "Regex of the annotations that delimit steps (a digit group gives the step number)")
      ->capture_default_str();
  cmd->add_option("--fit", args->fit, "nnls or huber (robust)")->capture_default_str();
  cmd->add_option("--weighting", args->weighting,
                  "Least-squares weights: relative (per-op percentage error), sqrt, absolute (seconds)")
      ->capture_default_str();
  cmd->add_flag("--preserve-total", args->preserve_total,
                "Scale each fitted kernel cost so that its samples' predicted times add up to their measured "
                "total (a robust fit follows the typical sample, a step sums them all)");
  cmd->add_option("--min-samples", args->min_samples,
                  "Samples with shapes needed for a linear fit; fewer -> median time")
      ->capture_default_str();
  cmd->add_option(
      "--device-kind", args->device_kind,
      "Override the device kind read from the trace (needed when it names no GPU); also for --predict");
  InputFile(cmd->add_option("--transfer-trace", args->transfer_trace,
                            "A trace of the same model on another GPU to predict with this profile"));
  cmd->add_option("--transfer-step-pattern", args->transfer_step_pattern,
                  "Step pattern of the transfer trace (default: --step-pattern)");
  cmd->add_option("--cross-thread-gap-us", args->cross_thread_gap_us,
                  "Replay: CPU gaps this long (us) may wait for another thread")
      ->capture_default_str();
  cmd->add_flag("!--no-replay", args->replay, "Skip the whole-step replay in the report");
  Commands().push_back({cmd, [args] { return Calibrate(*args); }});
}

}  // namespace gosim::cli
