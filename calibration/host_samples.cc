#include "calibration/host_samples.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "calibration/samples.h"
#include "core/io.h"
#include "core/stats.h"
#include "core/strings.h"
#include "graphs/op_class.h"

namespace gosim::calibration {
namespace {

// A trace whose kernels fill less than this share of the unprofiled step is
// host-bound: its unprofiled step is the host's unprofiled time.
constexpr double kHostBound = 0.8;
// The host's own part of a call that waits for the GPU (a synchronization,
// a blocking copy, cudaFree).
constexpr double kBlockingCallHost = 5.0e-6;

bool IsLaunchCall(const std::string& name) {
  return name.find("Launch") != std::string::npos || StartsWith(name, "cudaMemcpy") ||
         StartsWith(name, "cudaMemset");
}

bool IsAccumulateGrad(const std::string& name) {
  return name.find("AccumulateGrad") != std::string::npos;
}

bool IsOptimizerAnnotation(const std::string& name) {
  return StartsWith(name, "Optimizer.");
}

class StepHostBuilder {
 public:
  StepHostBuilder(const Trace& trace, const std::map<std::string, double>& caps) : trace_(trace) {
    const size_t n = trace.ops.size();
    children_.assign(n, {});
    waste_.assign(n, 0.0);
    launches_.assign(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      const int32_t parent = trace.ops[i].parent;
      if (parent >= 0) children_[static_cast<size_t>(parent)].push_back(static_cast<int32_t>(i));
    }
    // Direct waits and launches of each op, then summed over subtrees
    // (deepest ops first: a child before its parent).
    for (const RuntimeCall& c : trace.runtime) {
      if (c.op < 0) continue;
      const double host =
          MayBlock(c.name) ? std::min(c.duration, kBlockingCallHost) : std::min(c.duration, caps.at(c.name));
      waste_[static_cast<size_t>(c.op)] += c.duration - host;
      if (IsLaunchCall(c.name)) launches_[static_cast<size_t>(c.op)] += 1.0;
    }
    std::vector<int32_t> depth(n, 0);
    std::vector<int32_t> order(n);
    for (size_t i = 0; i < n; ++i) {
      order[i] = static_cast<int32_t>(i);
      for (int32_t p = trace.ops[i].parent; p >= 0; p = trace.ops[static_cast<size_t>(p)].parent) ++depth[i];
    }
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return depth[a] > depth[b]; });
    for (const int32_t i : order) {
      const int32_t parent = trace.ops[static_cast<size_t>(i)].parent;
      if (parent < 0) continue;
      waste_[static_cast<size_t>(parent)] += waste_[static_cast<size_t>(i)];
      launches_[static_cast<size_t>(parent)] += launches_[static_cast<size_t>(i)];
    }
  }

  HostSamples::Step Build(const ProfilerStep& step) {
    HostSamples::Step out;
    out.period_s = step.duration;
    struct Unit {
      int32_t op;
      bool parameter;  // AccumulateGrad, or an optimizer annotation without ops
      bool optimizer;  // inside an Optimizer.* annotation: the idle time before it is per-parameter
    };
    std::vector<Unit> units;
    for (size_t i = 0; i < trace_.ops.size(); ++i) {
      const TraceOp& op = trace_.ops[i];
      if (op.start < step.start || op.start >= step.end()) continue;
      const bool in_optimizer = InOptimizer(op);
      if (op.annotation) {
        // zero_grad(set_to_none=True): a loop in Python, no operator.
        if (IsOptimizerAnnotation(op.name) && !HasOpChild(static_cast<int32_t>(i)))
          units.push_back({static_cast<int32_t>(i), true, true});
        continue;
      }
      if (!IsTopLevelOp(trace_.ops, op)) continue;
      units.push_back({static_cast<int32_t>(i), IsAccumulateGrad(op.name), in_optimizer});
    }
    std::sort(units.begin(), units.end(), [&](const Unit& a, const Unit& b) {
      return trace_.ops[static_cast<size_t>(a.op)].start < trace_.ops[static_cast<size_t>(b.op)].start;
    });
    double reach = step.start;
    for (const Unit& u : units) {
      const TraceOp& op = trace_.ops[static_cast<size_t>(u.op)];
      const double gap = std::max(0.0, op.start - reach);
      reach = std::max(reach, op.end());
      const double span = std::max(0.0, op.duration - waste_[static_cast<size_t>(u.op)]);
      out.host_s += gap + span;
      if (u.parameter) {
        out.parameter_seconds += gap + span;
        if (!op.annotation) out.parameters += 1.0;
        continue;
      }
      double total = span + gap;
      if (u.optimizer) {
        out.parameter_seconds += gap;
        total = span;
      }
      HostSamples::Sum& kind = launches_[static_cast<size_t>(u.op)] > 0.0 ? out.launch_units : out.view_units;
      kind.seconds += total;
      kind.instances += 1.0;
      kind.kernels += launches_[static_cast<size_t>(u.op)];
      Distribute(u.op, total, &out);
    }
    for (const GpuActivity& a : trace_.activities) {
      if (a.start >= step.start && a.start < step.end()) out.gpu_s += a.duration;
    }
    return out;
  }

 private:
  bool InOptimizer(const TraceOp& op) const {
    for (int32_t p = op.parent; p >= 0; p = trace_.ops[static_cast<size_t>(p)].parent) {
      const TraceOp& a = trace_.ops[static_cast<size_t>(p)];
      if (a.annotation && IsOptimizerAnnotation(a.name)) return true;
    }
    return false;
  }

  bool HasOpChild(int32_t op) const {
    for (const int32_t c : children_[static_cast<size_t>(op)]) {
      if (!trace_.ops[static_cast<size_t>(c)].annotation || HasOpChild(c)) return true;
    }
    return false;
  }

  // Records `op` with `total` seconds and hands its own time (total less its
  // operator children's spans) to its children in equal shares.
  void Distribute(int32_t op, double total, HostSamples::Step* out) const {
    const TraceOp& o = trace_.ops[static_cast<size_t>(op)];
    HostSamples::Sum& sum = out->types[o.name];
    sum.seconds += total;
    sum.instances += 1.0;
    sum.kernels += launches_[static_cast<size_t>(op)];
    double spans = 0.0;
    int32_t k = 0;
    for (const int32_t c : children_[static_cast<size_t>(op)]) {
      if (trace_.ops[static_cast<size_t>(c)].annotation) continue;
      spans += std::max(0.0, trace_.ops[static_cast<size_t>(c)].duration - waste_[static_cast<size_t>(c)]);
      ++k;
    }
    if (k == 0) return;
    const double share = std::max(0.0, total - spans) / k;
    for (const int32_t c : children_[static_cast<size_t>(op)]) {
      const TraceOp& child = trace_.ops[static_cast<size_t>(c)];
      if (child.annotation) continue;
      Distribute(c, std::max(0.0, child.duration - waste_[static_cast<size_t>(c)]) + share, out);
    }
  }

  const Trace& trace_;
  std::vector<std::vector<int32_t>> children_;
  std::vector<double> waste_;     // per op: time its subtree's runtime calls waited
  std::vector<double> launches_;  // per op: launch calls in its subtree
};

void Add(HostSamples::Sum& into, const HostSamples::Sum& x) {
  into.seconds += x.seconds;
  into.instances += x.instances;
  into.kernels += x.kernels;
}

sim::HostOpFit Mean(const HostSamples::Sum& s, double factor) {
  sim::HostOpFit fit;
  if (s.instances <= 0.0) return fit;
  fit.seconds = factor * s.seconds / s.instances;
  fit.kernels = s.kernels / s.instances;
  fit.samples = static_cast<int64_t>(s.instances + 0.5);
  return fit;
}

}  // namespace

double UnprofiledStepTime(const std::string& trace_path) {
  namespace fs = std::filesystem;
  const fs::path provenance = fs::path(trace_path).parent_path() / "provenance.json";
  std::error_code ec;
  if (!fs::is_regular_file(provenance, ec)) return -1.0;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(provenance.string()), nullptr, false);
  if (!j.is_object() || j.value("format", "") != "gosim.gpu_traces" || !j.contains("traces") ||
      !j["traces"].is_array())
    return -1.0;
  const std::string file = fs::path(trace_path).filename().string();
  for (const auto& t : j["traces"]) {
    if (t.is_object() && t.value("file", "") == file && t.contains("unprofiled_step_s") &&
        t["unprofiled_step_s"].is_number()) {
      const double s = t["unprofiled_step_s"].get<double>();
      return s > 0.0 ? s : -1.0;
    }
  }
  return -1.0;
}

HostSamples ExtractHostSamples(const Trace& trace) {
  HostSamples out;
  out.traces.push_back({trace.source, UnprofiledStepTime(trace.source)});
  const std::map<std::string, double> caps = RuntimeCaps(trace);
  StepHostBuilder builder(trace, caps);
  for (const ProfilerStep& step : trace.steps) out.steps.push_back(builder.Build(step));
  return out;
}

void AppendHostSamples(const HostSamples& part, HostSamples* into) {
  const auto offset = static_cast<int32_t>(into->traces.size());
  into->traces.insert(into->traces.end(), part.traces.begin(), part.traces.end());
  for (HostSamples::Step s : part.steps) {
    s.trace += offset;
    into->steps.push_back(std::move(s));
  }
}

std::optional<sim::HostFit> FitHost(const HostSamples& samples,
                                    const std::function<bool(int32_t)>& use_step) {
  std::map<std::string, HostSamples::Sum, std::less<>> types;
  HostSamples::Sum launch, view;
  double parameter_seconds = 0.0, parameters = 0.0;
  std::vector<std::vector<double>> host(samples.traces.size()), gpu(samples.traces.size());
  for (size_t i = 0; i < samples.steps.size(); ++i) {
    if (use_step && !use_step(static_cast<int32_t>(i))) continue;
    const HostSamples::Step& s = samples.steps[i];
    for (const auto& [name, sum] : s.types) Add(types[name], sum);
    Add(launch, s.launch_units);
    Add(view, s.view_units);
    parameter_seconds += s.parameter_seconds;
    parameters += s.parameters;
    host[static_cast<size_t>(s.trace)].push_back(s.host_s);
    gpu[static_cast<size_t>(s.trace)].push_back(s.gpu_s);
  }
  if (launch.instances + view.instances <= 0.0) return std::nullopt;
  // Unprofiled over profiled host time, on the host-bound traces that were
  // timed without the profiler.
  std::vector<double> ratios;
  for (size_t t = 0; t < samples.traces.size(); ++t) {
    const double unprofiled = samples.traces[t].unprofiled_step_s;
    if (unprofiled <= 0.0 || host[t].empty()) continue;
    const double h = Median(host[t]), g = Median(gpu[t]);
    if (h > 0.0 && g < kHostBound * unprofiled) ratios.push_back(std::min(1.0, unprofiled / h));
  }
  sim::HostFit fit;
  fit.profiler_factor = ratios.empty() ? 1.0 : Median(ratios);
  fit.profiler_samples = static_cast<int64_t>(ratios.size());
  const double f = fit.profiler_factor;
  std::map<graphs::OpClass, HostSamples::Sum> classes;
  for (const auto& [name, sum] : types) {
    fit.op_types[name] = Mean(sum, f);
    // Classes from the operators (ns::name) only, not the autograd
    // engine's wrappers, so that a class is what its ops cost.
    if (IsOperatorName(name)) Add(classes[graphs::ClassifyOp(name)], sum);
  }
  for (const auto& [c, sum] : classes) fit.op_classes[static_cast<size_t>(c)] = Mean(sum, f);
  fit.launch = Mean(launch, f);
  fit.view = Mean(view, f);
  fit.per_parameter = parameters > 0.0 ? f * parameter_seconds / parameters : 0.0;
  return fit;
}

}  // namespace gosim::calibration
