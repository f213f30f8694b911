// PredictTrace and the leave-one-trace-out evaluation (predict.h).
#include "calibration/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "calibration/trace_reader.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/stats.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "sim/cost_models.h"

namespace gosim::calibration {
namespace {

double MedianOf(std::vector<double> v) {
  return v.empty() ? 0.0 : Median(v);
}

std::string Ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f ms", 1e3 * seconds);
  return text;
}

std::string Pct(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%+.1f%%", 100.0 * fraction);
  return text;
}

}  // namespace

namespace {

// The profile with the link fits it should not be trusted on replaced by
// the datasheet's bandwidth (latency kept), or removed when the datasheet
// is unknown; one note per fit.
sim::DeviceProfile GuardLinks(const sim::DeviceProfile& profile, const std::string& kind,
                              const LinkDatasheet& datasheet, std::vector<std::string>* notes) {
  sim::DeviceProfile out = profile;
  const sim::CalibratedOptions limits;
  for (auto it = out.links.begin(); it != out.links.end();) {
    const double sheet = datasheet ? datasheet(kind, it->first) : 0.0;
    const std::string why = sim::LinkFitRejection(it->second, sheet, limits);
    if (why.empty()) {
      ++it;
      continue;
    }
    char line[256];
    if (sheet > 0.0) {
      std::snprintf(line, sizeof(line), "; the datasheet's %.3g GB/s prices it", sheet / 1e9);
      notes->push_back("the profile's " + it->first + " fit is not used: " + why + line);
      it->second.bandwidth = sheet;
      ++it;
    } else {
      notes->push_back("the profile's " + it->first + " fit is not used: " + why +
                       "; no datasheet link for it (the profile's default prices it)");
      it = out.links.erase(it);
    }
  }
  return out;
}

}  // namespace

TracePrediction PredictTrace(const Trace& trace, const TraceSamples& samples,
                             const sim::DeviceProfile& given_profile, const DeviceScale& scale,
                             double cross_thread_gap, const LinkDatasheet& datasheet) {
  std::vector<std::string> link_notes;
  const sim::DeviceProfile profile = GuardLinks(given_profile, samples.device_kind, datasheet, &link_notes);
  if (trace.steps.empty()) {
    throw TraceError("no profiler steps to predict", Location{trace.source},
                     "give --step-pattern REGEX matching the annotation that delimits a step");
  }
  if (!profile.cpu && !trace.runtime.empty()) {
    throw ConfigError(
        "the profile for " + profile.device_kind + " has no cpu fit, so it cannot predict a step", {},
        "refit it with gosim calibrate --out (this version writes cpu: {per_call, per_step})");
  }
  if (samples.ops.empty() && samples.transfers.empty()) {
    throw TraceError(
        "no GPU activity of the trace is joined to an operator or a copy, so there is nothing to predict",
        Location{trace.source},
        "record the trace with CUDA activities (torch.profiler activities=[CPU, CUDA])");
  }
  TracePrediction out;
  out.link_notes = std::move(link_notes);
  out.trace = trace.source;
  out.device_kind = samples.device_kind;
  out.profile_kind = profile.device_kind;
  out.scale = scale;
  ReplayOptions predict;
  predict.predict_cpu = true;
  predict.scale = scale;
  predict.cross_thread_gap = cross_thread_gap;
  ReplayOptions check;
  check.measured_gpu = true;
  check.cross_thread_gap = cross_thread_gap;
  std::vector<double> measured, predicted, replay, gpu_measured, gpu_predicted;
  const std::string file = std::filesystem::path(trace.source).filename().string();
  if (profile.source && profile.source["trace"]) {
    for (const std::string& part : Split(profile.source["trace"].as<std::string>(""), '+')) {
      if (part == file) out.in_sample = true;
    }
  }
  for (int32_t i = 0; i < static_cast<int32_t>(trace.steps.size()); ++i) {
    const StepGraph graph = BuildStepGraph(trace, samples, i, &profile, predict);
    out.cross_thread_edges += static_cast<double>(graph.edges.cross_thread);
    out.dropped_edges += static_cast<double>(graph.edges.dropped);
    const StepGraph measured_graph = BuildStepGraph(trace, samples, i, nullptr, check);
    StepPrediction s;
    s.step = graph.step_number;
    s.measured_step_s = graph.measured_time;
    s.predicted_step_s = SimulateSteadyState(graph);
    s.replay_step_s = SimulateSteadyState(measured_graph);
    s.measured_gpu_busy_s = graph.measured_gpu;
    s.predicted_gpu_busy_s = graph.predicted_gpu;
    out.steps.push_back(s);
    measured.push_back(s.measured_step_s);
    predicted.push_back(s.predicted_step_s);
    replay.push_back(s.replay_step_s);
    gpu_measured.push_back(s.measured_gpu_busy_s);
    gpu_predicted.push_back(s.predicted_gpu_busy_s);
  }
  out.measured_step_s = MedianOf(measured);
  out.predicted_step_s = MedianOf(predicted);
  out.replay_step_s = MedianOf(replay);
  out.measured_gpu_busy_s = MedianOf(gpu_measured);
  out.predicted_gpu_busy_s = MedianOf(gpu_predicted);
  std::map<std::string, OpTypeError> by_type;
  double kernel_time = 0.0, unestimated_time = 0.0;
  for (const OpSample& s : samples.ops) {
    if (s.step < 0) continue;
    out.kernels += s.kernels;
    kernel_time += s.time;
    if (s.has_shapes) out.kernels_with_shapes += s.kernels;
    if (!s.has_shapes || (s.flops <= 0.0 && s.bytes <= 0.0)) unestimated_time += s.time;
    OpTypeError& e = by_type[s.type];
    e.measured_s += s.time;
    e.predicted_s += PredictSample(profile, s, scale);
    e.count += 1.0;
  }
  const double steps = static_cast<double>(trace.steps.size());
  out.kernels /= steps;
  out.kernels_with_shapes /= steps;
  out.cross_thread_edges /= steps;
  out.dropped_edges /= steps;
  out.unestimated_share = kernel_time > 0.0 ? unestimated_time / kernel_time : 0.0;
  for (auto& [type, e] : by_type) {
    e.type = type;
    e.measured_s /= steps;
    e.predicted_s /= steps;
    e.count /= steps;
    out.by_type.push_back(e);
  }
  std::sort(out.by_type.begin(), out.by_type.end(), [](const OpTypeError& a, const OpTypeError& b) {
    return std::fabs(a.predicted_s - a.measured_s) > std::fabs(b.predicted_s - b.measured_s);
  });
  return out;
}

std::string PredictionJson(const TracePrediction& p) {
  std::string out;
  for (const StepPrediction& s : p.steps) {
    const nlohmann::json line = {{"trace", p.trace},
                                 {"device_kind", p.device_kind},
                                 {"profile_kind", p.profile_kind},
                                 {"step", s.step},
                                 {"predicted_step_s", s.predicted_step_s},
                                 {"measured_step_s", s.measured_step_s},
                                 {"predicted_gpu_busy_s", s.predicted_gpu_busy_s},
                                 {"measured_gpu_busy_s", s.measured_gpu_busy_s},
                                 {"replay_step_s", s.replay_step_s},
                                 {"sample", p.in_sample ? "in-sample" : "out-of-sample"},
                                 {"kernels", p.kernels},
                                 {"kernels_with_shapes", p.kernels_with_shapes},
                                 {"unestimated_gpu_share", p.unestimated_share},
                                 {"cross_thread_edges_from_measured_gaps", p.cross_thread_edges},
                                 {"edges_dropped_by_measured_times", p.dropped_edges}};
    out += DumpJson(line) + "\n";
  }
  return out;
}

std::string FormatPrediction(const TracePrediction& p) {
  std::string out = "prediction of " + p.trace + " (" + p.device_kind + ") with a " + p.profile_kind +
                    " profile, " +
                    (p.in_sample ? "in-sample (the profile was fitted on this trace)"
                                 : "out-of-sample (the profile was not fitted on this trace)");
  if (p.device_kind != p.profile_kind) {
    char text[160];
    std::snprintf(text, sizeof(text),
                  ", scaled: per_flop x %.3f (16-bit tensor-core types x %.3f), per_byte x %.3f",
                  p.scale.per_flop, p.scale.per_flop_16, p.scale.per_byte);
    out += text;
  }
  out += "\n";
  char line[512];
  std::snprintf(
      line, sizeof(line),
      "  inputs: %.0f kernels per step, %.0f (%.0f%%) launched by ops with input shapes; %.0f%% of the "
      "kernel time has no FLOP/byte estimate\n",
      p.kernels, p.kernels_with_shapes, p.kernels > 0.0 ? 100.0 * p.kernels_with_shapes / p.kernels : 0.0,
      100.0 * p.unestimated_share);
  out += line;
  for (const std::string& note : p.link_notes) out += "  " + note + "\n";
  if (p.unestimated_share > kUnestimatedWarning) {
    std::snprintf(line, sizeof(line),
                  "  warning: %.0f%% of the measured kernel time (over %.0f%%) comes from ops without input "
                  "shapes: the profile prices them by their type's median time, blind to their size; record "
                  "with record_shapes=True\n",
                  100.0 * p.unestimated_share, 100.0 * kUnestimatedWarning);
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "  from the target's measured times: %.1f cross-thread waits per step (gaps >= the "
                "cross-thread gap), %.1f inferred edges dropped as contradicting them; every duration from "
                "the profile\n",
                p.cross_thread_edges, p.dropped_edges);
  out += line;
  std::snprintf(line, sizeof(line), "  %-8s %12s %12s %8s %12s %12s %12s %8s\n", "step", "measured",
                "predicted", "error", "GPU meas.", "GPU pred.", "replay", "error");
  out += line;
  for (const StepPrediction& s : p.steps) {
    std::snprintf(line, sizeof(line), "  %-8lld %12s %12s %8s %12s %12s %12s %8s\n",
                  static_cast<long long>(s.step), Ms(s.measured_step_s).c_str(),
                  Ms(s.predicted_step_s).c_str(), Pct(s.error()).c_str(), Ms(s.measured_gpu_busy_s).c_str(),
                  Ms(s.predicted_gpu_busy_s).c_str(), Ms(s.replay_step_s).c_str(),
                  Pct(s.replay_error()).c_str());
    out += line;
  }
  std::snprintf(
      line, sizeof(line),
      "  median: measured %s, predicted %s (%s); GPU busy measured %s, predicted %s; replay fed the "
      "measured times %s (%s)\n",
      Ms(p.measured_step_s).c_str(), Ms(p.predicted_step_s).c_str(), Pct(p.error()).c_str(),
      Ms(p.measured_gpu_busy_s).c_str(), Ms(p.predicted_gpu_busy_s).c_str(), Ms(p.replay_step_s).c_str(),
      Pct(p.replay_error()).c_str());
  out += line;
  return out;
}

void SkipSteps(Trace* trace, int count) {
  if (count <= 0) return;
  if (static_cast<size_t>(count) >= trace->steps.size()) {
    throw ConfigError(
        "cannot skip " + std::to_string(count) + " steps of " + std::to_string(trace->steps.size()),
        Location{trace->source}, "skip fewer steps than the trace has");
  }
  trace->steps.erase(trace->steps.begin(), trace->steps.begin() + count);
}

std::vector<EvaluationTrace> ReadEvaluationManifest(const std::string& path, const std::string& traces_dir,
                                                    std::vector<std::string>* missing) {
  const YAML::Node root = LoadYamlString(ReadFile(path), path);
  YamlMap m = YamlMap::Root(root, path);
  m.Allow({"traces", "profile_steps", "profile_warmup"});  // the last two: calibration/evaluate_cpu.py's
  m.Finish();
  const YAML::Node list = m.Node("traces");
  if (!list || !list.IsSequence() || list.size() == 0) {
    m.Fail("traces", "expected a non-empty list of {name, file, step_pattern}");
  }
  const std::filesystem::path base(traces_dir);
  std::vector<EvaluationTrace> out;
  for (size_t i = 0; i < list.size(); ++i) {
    YamlMap entry(list[i], path, "traces[" + std::to_string(i) + "]");
    entry.Allow({"name", "file", "step_pattern", "skip_steps", "about", "graph", "device_kind", "group"});
    entry.Finish();
    EvaluationTrace t;
    t.name = entry.Require<std::string>("name");
    const std::string relative = entry.Require<std::string>("file");
    t.path = (base / relative).lexically_normal().string();
    t.step_pattern = entry.Get<std::string>("step_pattern", "");
    t.skip_steps = entry.Get<int>("skip_steps", 0);
    t.device_kind = entry.Get<std::string>("device_kind", "");
    t.group = entry.Get<std::string>("group", t.name);
    if (t.skip_steps < 0) entry.Fail("skip_steps", "skip_steps must be >= 0");
    if (!FileExists(t.path)) {
      // A `graph` entry is a model profiled on this machine (evaluation_cpu.yaml).
      const std::string graph = entry.Get<std::string>("graph", "");
      if (missing != nullptr) {
        missing->push_back(t.name + " (" + t.path + ")" +
                           (graph.empty() ? ""
                                          : "; record it with gosim profile --graph '" + graph + "' --out " +
                                                t.path + ", or run calibration/evaluate_cpu.py"));
      }
      continue;
    }
    out.push_back(std::move(t));
  }
  return out;
}

Evaluation EvaluateLeaveOneOut(const std::vector<EvaluationTrace>& traces, const FitOptions& fit,
                               const ScaleFor& scale_for, const LinkDatasheet& datasheet) {
  if (traces.size() < 2) {
    throw ConfigError("leave-one-trace-out needs two traces or more, not " + std::to_string(traces.size()),
                      {}, "list more traces in the evaluation manifest");
  }
  struct Loaded {
    Trace trace;
    TraceSamples samples;
  };
  std::vector<Loaded> loaded;
  std::map<std::string, int> per_kind;
  for (const EvaluationTrace& t : traces) {
    ReadOptions read;
    if (!t.step_pattern.empty()) read.step_pattern = t.step_pattern;
    Loaded l{ReadTrace(t.path, read), {}};
    SkipSteps(&l.trace, t.skip_steps);
    l.samples = ExtractSamples(l.trace);
    if (!t.device_kind.empty()) l.samples.device_kind = t.device_kind;
    RequireKnownDeviceKind(l.samples, "the manifest entry's device_kind:");
    ++per_kind[l.samples.device_kind];
    loaded.push_back(std::move(l));
  }
  Evaluation out;
  std::vector<double> errors, gpu_errors;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const std::string& kind = loaded[i].samples.device_kind;
    std::string fit_kind = kind;
    if (per_kind[kind] < 2) {
      int best = 0;
      for (const auto& [k, n] : per_kind) {
        if (k != kind && n > best) {
          best = n;
          fit_kind = k;
        }
      }
    }
    std::vector<TraceSamples> parts;
    EvaluationRow row;
    row.trace = traces[i].name;
    for (size_t j = 0; j < loaded.size(); ++j) {
      if (j == i || loaded[j].samples.device_kind != fit_kind) continue;
      // One model at two sizes: leaving one out leaves both out.
      if (!traces[i].group.empty() && traces[j].group == traces[i].group) continue;
      parts.push_back(loaded[j].samples);
      row.fitted_on.push_back(traces[j].name);
    }
    if (parts.empty()) {
      throw ConfigError("nothing to fit on when leaving out " + traces[i].name, {},
                        "list at least two traces in the evaluation manifest");
    }
    const TraceSamples merged = MergeSamples(parts);
    const sim::DeviceProfile profile = FitProfile(merged, fit, {}, merged.step_numbers);
    DeviceScale scale;
    if (fit_kind != kind) {
      const std::optional<DeviceScale> s = scale_for(fit_kind, kind);
      if (!s) {
        throw ConfigError("cannot scale a " + fit_kind + " profile to " + kind, {},
                          "add a cluster preset with both device kinds' peak FLOP/s and bandwidth");
      }
      scale = *s;
    }
    row.prediction = PredictTrace(loaded[i].trace, loaded[i].samples, profile, scale, 200.0e-6, datasheet);
    errors.push_back(std::fabs(row.prediction.error()));
    if (row.prediction.measured_gpu_busy_s > 0.0) {
      const double g =
          std::fabs(row.prediction.predicted_gpu_busy_s / row.prediction.measured_gpu_busy_s - 1.0);
      gpu_errors.push_back(g);
      out.worst_abs_gpu_error = std::max(out.worst_abs_gpu_error, g);
    }
    out.worst_abs_error = std::max(out.worst_abs_error, std::fabs(row.prediction.error()));
    out.worst_replay_error = std::max(out.worst_replay_error, std::fabs(row.prediction.replay_error()));
    out.rows.push_back(std::move(row));
  }
  out.median_abs_error = MedianOf(errors);
  out.median_abs_gpu_error = MedianOf(gpu_errors);
  return out;
}

std::string FormatEvaluation(const Evaluation& e, int breakdown) {
  std::string out;
  out +=
      "| trace | kind | fitted on | measured period | predicted | error | GPU busy measured / predicted | "
      "replay "
      "(measured times) |\n";
  out += "|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const EvaluationRow& r : e.rows) {
    const TracePrediction& p = r.prediction;
    std::string kind = p.device_kind;
    if (p.profile_kind != p.device_kind) kind += " (from " + p.profile_kind + ", scaled)";
    out += "| " + r.trace + " | " + kind + " | " + Join(r.fitted_on, " + ") + " | " + Ms(p.measured_step_s) +
           " | " + Ms(p.predicted_step_s) + " | " + Pct(p.error()) + " | " + Ms(p.measured_gpu_busy_s) +
           " / " + Ms(p.predicted_gpu_busy_s) + " | " + Pct(p.replay_error()) + " |\n";
  }
  char line[200];
  std::snprintf(
      line, sizeof(line),
      "\nmedian |error| %.1f%%, worst %.1f%% over %zu held-out traces; replay fed the measured times: "
      "worst %.1f%%\n",
      100.0 * e.median_abs_error, 100.0 * e.worst_abs_error, e.rows.size(), 100.0 * e.worst_replay_error);
  out += line;
  std::snprintf(line, sizeof(line), "GPU busy time (kernels): median |error| %.1f%%, worst %.1f%%\n",
                100.0 * e.median_abs_gpu_error, 100.0 * e.worst_abs_gpu_error);
  out += line;
  if (breakdown > 0) {
    out += "\nKernel time per step by op type, largest errors first (measured / predicted, instances):\n";
    for (const EvaluationRow& r : e.rows) {
      out += r.trace + ":";
      const auto& types = r.prediction.by_type;
      for (size_t k = 0; k < types.size() && k < static_cast<size_t>(breakdown); ++k) {
        std::snprintf(line, sizeof(line), "%s %s %s / %s (%.0f)", k == 0 ? "" : ";", types[k].type.c_str(),
                      Ms(types[k].measured_s).c_str(), Ms(types[k].predicted_s).c_str(), types[k].count);
        out += line;
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace gosim::calibration
