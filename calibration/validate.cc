#include "calibration/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "calibration/host_samples.h"
#include "calibration/samples.h"
#include "calibration/trace_reader.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/stats.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "graphs/io.h"
#include "sim/cluster.h"
#include "sim/cost_models.h"
#include "sim/decision.h"
#include "sim/evaluator.h"

namespace gosim::calibration {

std::vector<ValidationGpu> ReadValidationManifest(const std::string& path,
                                                  std::vector<std::string>* missing) {
  const YAML::Node root = LoadYamlString(ReadFile(path), path);
  YamlMap m = YamlMap::Root(root, path);
  m.Allow({"gpus"});
  m.Finish();
  const YAML::Node gpus = m.Node("gpus");
  if (!gpus || !gpus.IsMap() || gpus.size() == 0)
    m.Fail("gpus", "expected a mapping of GPU name: {preset, models}");
  std::vector<ValidationGpu> out;
  for (auto it = gpus.begin(); it != gpus.end(); ++it) {
    const std::string name = it->first.Scalar();
    YamlMap g(it->second, path, "gpus." + name);
    g.Allow({"preset", "traces_dir", "graphs_dir", "models", "about"});
    g.Finish();
    ValidationGpu gpu;
    gpu.gpu = name;
    gpu.preset = g.Require<std::string>("preset");
    const std::filesystem::path traces(g.Require<std::string>("traces_dir"));
    const std::filesystem::path graphs(g.Require<std::string>("graphs_dir"));
    const YAML::Node models = g.Node("models");
    if (!models || !models.IsSequence() || models.size() == 0) {
      g.Fail("models", "expected a non-empty list of {name, trace, graph, group}");
    }
    for (size_t i = 0; i < models.size(); ++i) {
      YamlMap e(models[i], path, "gpus." + name + ".models[" + std::to_string(i) + "]");
      e.Allow({"name", "trace", "graph", "group", "about"});
      e.Finish();
      ValidationModel model;
      model.name = e.Require<std::string>("name");
      model.trace = ResolveDataPath((traces / e.Require<std::string>("trace")).lexically_normal().string());
      model.graph = ResolveDataPath((graphs / e.Require<std::string>("graph")).lexically_normal().string());
      model.group = e.Get<std::string>("group", model.name);
      const bool has_trace = FileExists(model.trace), has_graph = FileExists(model.graph);
      if (!has_trace || !has_graph) {
        if (missing != nullptr) {
          missing->push_back(name + " " + model.name + " (" + (has_trace ? model.graph : model.trace) + ")");
        }
        continue;
      }
      gpu.models.push_back(std::move(model));
    }
    out.push_back(std::move(gpu));
  }
  return out;
}

namespace {

std::string Points(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f points", 100.0 * fraction);
  return buf;
}

struct Loaded {
  TraceSamples samples;
  double unprofiled = -1.0;
  double profiled_period = 0.0;
  double gpu_busy = 0.0;
  double host = 0.0;  // profiled
};

Loaded Load(const ValidationModel& model) {
  Loaded l;
  const Trace trace = ReadTrace(model.trace, ReadOptions{});
  if (trace.steps.empty()) {
    throw TraceError("no profiler steps", Location{model.trace},
                     "record with torch.profiler and prof.step()");
  }
  l.samples = ExtractSamples(trace);
  RequireKnownDeviceKind(l.samples, "a trace of a named GPU");
  l.unprofiled = UnprofiledStepTime(model.trace);
  if (l.unprofiled <= 0.0) {
    throw ConfigError("no unprofiled step time for " + model.trace, Location{model.trace},
                      "a provenance.json of record_gpu_traces.py beside the trace must list it");
  }
  std::vector<double> periods, gpu, host;
  for (const HostSamples::Step& s : l.samples.host.steps) {
    periods.push_back(s.period_s);
    gpu.push_back(s.gpu_s);
    host.push_back(s.host_s);
  }
  l.profiled_period = Median(periods);
  l.gpu_busy = Median(gpu);
  l.host = Median(host);
  return l;
}

}  // namespace

Validation ValidateLeaveOneModelOut(const std::vector<ValidationGpu>& gpus, const FitOptions& fit,
                                    const std::function<void(const std::string&)>& progress) {
  Validation out;
  for (const ValidationGpu& gpu : gpus) {
    if (gpu.models.size() < 2) {
      throw ConfigError("leave-one-model-out on " + gpu.gpu + " needs two models or more, not " +
                            std::to_string(gpu.models.size()),
                        {}, "list more models in the validation manifest");
    }
    const sim::Cluster cluster = sim::LoadCluster(gpu.preset);
    std::vector<Loaded> loaded;
    for (const ValidationModel& m : gpu.models) loaded.push_back(Load(m));
    std::vector<ValidationRow> rows;
    for (size_t held = 0; held < gpu.models.size(); ++held) {
      const ValidationModel& model = gpu.models[held];
      std::vector<TraceSamples> parts;
      ValidationRow row;
      row.model = model.name;
      row.gpu = gpu.gpu;
      for (size_t i = 0; i < gpu.models.size(); ++i) {
        if (gpu.models[i].group == model.group) continue;
        parts.push_back(loaded[i].samples);
        row.fitted_on.push_back(gpu.models[i].name);
      }
      if (parts.empty()) {
        throw ConfigError("every model of " + gpu.gpu + " is in group '" + model.group + "'", {},
                          "give the models their own groups");
      }
      const TraceSamples merged = MergeSamples(parts);
      sim::DeviceProfile profile = FitProfile(merged, fit, {}, merged.step_numbers);
      const double factor = profile.host ? profile.host->profiler_factor : 1.0;
      // What gosim simulate does: the auto cost model (here with the
      // profile fitted on the other models), the preset, everything on one
      // device, the default simulator options.
      const auto cost_model =
          sim::AutoCostModel::WithProfiles({std::move(profile)}, "fitted without " + model.group);
      const graphs::Graph graph = graphs::LoadGraph(model.graph);
      const sim::Evaluator evaluator(graph, cluster, cost_model, sim::SimOptions{});
      const sim::SimResult result = evaluator.Simulate(sim::SingleDeviceDecision(graph, 0), false);
      const Loaded& l = loaded[held];
      row.predicted_step_s = result.step_time;
      row.measured_step_s = l.unprofiled;
      row.measured_profiled_step_s = l.profiled_period;
      row.predicted_gpu_busy_s = result.devices.empty() ? 0.0 : result.devices[0].busy_time;
      row.measured_gpu_busy_s = l.gpu_busy;
      row.predicted_host_busy_s = result.host_busy;
      row.measured_host_s = l.host * factor;
      row.execution = std::string(sim::ExecutionName(result.execution));
      row.cost_model = result.cost_model;
      row.nodes = graph.num_nodes();
      if (!result.feasible) {
        throw ConfigError(
            "the exported graph of " + model.name + " does not fit on one device of " + gpu.preset,
            Location{model.graph}, "check the graph's memory (gosim simulate --graph ...)");
      }
      if (progress) {
        char line[256];
        std::snprintf(line, sizeof(line), "%s %s: predicted %.2f ms, measured %.2f ms (%+.1f%%)",
                      gpu.gpu.c_str(), model.name.c_str(), 1e3 * row.predicted_step_s,
                      1e3 * row.measured_step_s, 100.0 * row.error());
        progress(line);
      }
      rows.push_back(std::move(row));
    }
    out.summaries.push_back(SummarizeValidation(gpu.gpu, rows));
    out.rows.insert(out.rows.end(), rows.begin(), rows.end());
  }
  return out;
}

ValidationSummary SummarizeValidation(const std::string& gpu, const std::vector<ValidationRow>& rows) {
  ValidationSummary summary;
  summary.gpu = gpu;
  summary.models = static_cast<int32_t>(rows.size());
  std::vector<double> errors, gpu_errors;
  for (const ValidationRow& r : rows) {
    errors.push_back(std::fabs(r.error()));
    gpu_errors.push_back(std::fabs(r.gpu_error()));
    if (std::fabs(r.error()) >= summary.worst_abs_error) {
      summary.worst_abs_error = std::fabs(r.error());
      summary.worst_model = r.model;
    }
  }
  summary.median_abs_error = Median(errors);
  summary.median_abs_gpu_error = Median(gpu_errors);
  for (const ValidationRow& r : rows) {
    if (std::fabs(r.error()) <= kValidationTargetMedian || r.measured_step_s <= 0.0) continue;
    ++summary.missed;
    const double m = r.measured_step_s;
    const double host = r.measured_host_s > 0.0 ? r.measured_host_s : r.predicted_host_busy_s;
    const double gpu_fixed = std::fabs(std::max(r.measured_gpu_busy_s, r.predicted_host_busy_s) / m - 1.0);
    const double host_fixed = std::fabs(std::max(r.predicted_gpu_busy_s, host) / m - 1.0);
    const double both_fixed = std::fabs(std::max(r.measured_gpu_busy_s, host) / m - 1.0);
    if (both_fixed > kValidationTargetMedian) {
      ++summary.neither;
    } else {
      ++(gpu_fixed <= host_fixed ? summary.gpu_side : summary.host_side);
    }
  }
  return summary;
}

std::string ValidationWhy(const ValidationSummary& s) {
  if (s.missed == 0) return "";
  char line[512];
  std::snprintf(
      line, sizeof(line),
      "why: %d of %d models are off by more than %.0f%%: %d mostly by the GPU side (exported ops priced "
      "by fits keyed to other ops), %d by the host side (per-op host costs of a model the profile "
      "has not seen), %d by neither alone (the step is not the larger of the two as recorded); "
      "docs/CALIBRATION.md, \"Validation\"",
      s.missed, s.models, 100.0 * kValidationTargetMedian, s.gpu_side, s.host_side, s.neither);
  return line;
}

std::string ValidationJson(const Validation& v) {
  std::string out;
  for (const ValidationRow& r : v.rows) {
    const nlohmann::json j{{"model", r.model},
                           {"gpu", r.gpu},
                           {"predicted_step_s", r.predicted_step_s},
                           {"measured_step_s", r.measured_step_s},
                           {"measured_profiled_step_s", r.measured_profiled_step_s},
                           {"error", r.error()},
                           {"predicted_gpu_busy_s", r.predicted_gpu_busy_s},
                           {"measured_gpu_busy_s", r.measured_gpu_busy_s},
                           {"predicted_host_busy_s", r.predicted_host_busy_s},
                           {"measured_host_s", r.measured_host_s},
                           {"execution", r.execution},
                           {"cost_model", r.cost_model},
                           {"nodes", r.nodes},
                           {"fitted_on", r.fitted_on}};
    out += DumpJson(j) + "\n";
  }
  for (const ValidationSummary& s : v.summaries) {
    const nlohmann::json j{
        {"gpu", s.gpu},
        {"summary",
         {{"models", s.models},
          {"median_abs_error", s.median_abs_error},
          {"worst_abs_error", s.worst_abs_error},
          {"worst_model", s.worst_model},
          {"median_abs_gpu_error", s.median_abs_gpu_error},
          {"target_median", kValidationTargetMedian},
          {"target_worst", kValidationTargetWorst},
          {"median_missed_by", std::max(0.0, s.median_abs_error - kValidationTargetMedian)},
          {"worst_missed_by", std::max(0.0, s.worst_abs_error - kValidationTargetWorst)},
          {"missed_models", s.missed},
          {"missed_gpu_side", s.gpu_side},
          {"missed_host_side", s.host_side},
          {"missed_neither_side", s.neither},
          {"why", ValidationWhy(s)}}}};
    out += DumpJson(j) + "\n";
  }
  return out;
}

std::string FormatValidation(const Validation& v) {
  std::string out;
  char line[512];
  for (const ValidationSummary& s : v.summaries) {
    std::snprintf(line, sizeof(line),
                  "== %s: each model's exported training step simulated by the engine (execution, host and "
                  "GPU as gosim simulate) with a profile fitted on the other models\n",
                  s.gpu.c_str());
    out += line;
    std::snprintf(line, sizeof(line), "%-22s %7s %11s %11s %11s %8s %11s %11s %11s %11s\n", "model", "nodes",
                  "predicted", "measured", "profiled", "error", "GPU pred", "GPU meas", "host pred",
                  "host meas");
    out += line;
    for (const ValidationRow& r : v.rows) {
      if (r.gpu != s.gpu) continue;
      std::snprintf(line, sizeof(line),
                    "%-22s %7d %8.2f ms %8.2f ms %8.2f ms %+7.1f%% %8.2f ms %8.2f ms %8.2f ms %8.2f ms\n",
                    r.model.c_str(), r.nodes, 1e3 * r.predicted_step_s, 1e3 * r.measured_step_s,
                    1e3 * r.measured_profiled_step_s, 100.0 * r.error(), 1e3 * r.predicted_gpu_busy_s,
                    1e3 * r.measured_gpu_busy_s, 1e3 * r.predicted_host_busy_s, 1e3 * r.measured_host_s);
      out += line;
    }
    std::snprintf(line, sizeof(line),
                  "%s: median |error| %.1f%%, worst %.1f%% (%s) over %d models against the unprofiled step; "
                  "GPU busy time median |error| %.1f%%\n",
                  s.gpu.c_str(), 100.0 * s.median_abs_error, 100.0 * s.worst_abs_error, s.worst_model.c_str(),
                  s.models, 100.0 * s.median_abs_gpu_error);
    out += line;
    const bool median_ok = s.median_abs_error <= kValidationTargetMedian;
    const bool worst_ok = s.worst_abs_error <= kValidationTargetWorst;
    std::snprintf(
        line, sizeof(line), "targets: median <= %.0f%% %s, worst <= %.0f%% %s\n",
        100.0 * kValidationTargetMedian,
        median_ok ? "met" : ("missed by " + Points(s.median_abs_error - kValidationTargetMedian)).c_str(),
        100.0 * kValidationTargetWorst,
        worst_ok ? "met" : ("missed by " + Points(s.worst_abs_error - kValidationTargetWorst)).c_str());
    out += line;
    if (const std::string why = ValidationWhy(s); !why.empty()) out += why + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace gosim::calibration
