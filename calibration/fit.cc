#include "calibration/fit.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "calibration/nnls.h"
#include "calibration/op_work.h"
#include "core/error.h"
#include "core/stats.h"

namespace gosim::calibration {
namespace {

// Relative weights never divide by less than this (kernels recorded as 0 us).
constexpr double kMinTime = 1.0e-6;
// A link whose time does not grow with size within the observed range.
constexpr double kUnboundedBandwidth = 1.0e15;

// Solves time ~ x . features with x >= 0; columns are scaled to unit maximum
// for conditioning and all-zero columns get a zero coefficient.
Eigen::VectorXd SolveScaled(Eigen::MatrixXd features, const Eigen::VectorXd& times,
                            const FitOptions& options) {
  const Eigen::Index m = features.rows();
  const Eigen::Index n = features.cols();
  Eigen::VectorXd rhs = times;
  if (options.weighting != Weighting::kAbsolute) {
    for (Eigen::Index i = 0; i < m; ++i) {
      const double w = options.weighting == Weighting::kRelative
                           ? 1.0 / std::max(times(i), kMinTime)
                           : 1.0 / std::sqrt(std::max(times(i), kMinTime));
      features.row(i) *= w;
      rhs(i) *= w;
    }
  }
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const double max = features.col(j).cwiseAbs().maxCoeff();
    if (max > 0.0) {
      scale(j) = max;
      features.col(j) /= max;
    }
  }
  Eigen::VectorXd x =
      options.method == FitMethod::kHuber ? SolveHuberNnls(features, rhs) : SolveNnls(features, rhs);
  for (Eigen::Index j = 0; j < n; ++j) x(j) /= scale(j);
  return x;
}

double Mape(const std::vector<const OpSample*>& samples, const sim::KernelFit& cost) {
  double sum = 0.0;
  int64_t count = 0;
  for (const OpSample* s : samples) {
    if (s->time <= 0.0) continue;
    const double predicted =
        s->has_shapes ? cost.Time(s->flops, s->bytes, s->channel_extent) : cost.Time(0.0, 0.0);
    sum += std::fabs(predicted - s->time) / s->time;
    ++count;
  }
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

}  // namespace

FitMethod ParseFitMethod(const std::string& text) {
  if (text == "nnls") return FitMethod::kNnls;
  if (text == "huber") return FitMethod::kHuber;
  throw ConfigError("unknown fit method '" + text + "'", {}, "valid values are: nnls, huber");
}

Weighting ParseWeighting(const std::string& text) {
  if (text == "relative") return Weighting::kRelative;
  if (text == "absolute") return Weighting::kAbsolute;
  if (text == "sqrt") return Weighting::kSqrt;
  throw ConfigError("unknown weighting '" + text + "'", {}, "valid values are: relative, sqrt, absolute");
}

sim::KernelFit FitKernelCost(const std::vector<const OpSample*>& samples, const FitOptions& options) {
  sim::KernelFit cost;
  std::vector<const OpSample*> shaped;
  for (const OpSample* s : samples) {
    if (s->has_shapes) shaped.push_back(s);
  }
  if (static_cast<int>(shaped.size()) >= std::max(1, options.min_samples)) {
    // A column that is zero for every sample (channel_extent of anything
    // but a batch norm) gets a zero coefficient.
    Eigen::MatrixXd features(static_cast<Eigen::Index>(shaped.size()), 4);
    Eigen::VectorXd times(static_cast<Eigen::Index>(shaped.size()));
    for (size_t i = 0; i < shaped.size(); ++i) {
      const auto r = static_cast<Eigen::Index>(i);
      features(r, 0) = 1.0;
      features(r, 1) = shaped[i]->flops;
      features(r, 2) = shaped[i]->bytes;
      features(r, 3) = shaped[i]->channel_extent;
      times(r) = shaped[i]->time;
    }
    const Eigen::VectorXd x = SolveScaled(features, times, options);
    cost.intercept = x(0);
    cost.per_flop = x(1);
    cost.per_byte = x(2);
    cost.per_channel_element = x(3);
    if (options.preserve_total) {
      // Rescale so that the fitted times add up to the measured ones.
      double measured = 0.0;
      double predicted = 0.0;
      for (const OpSample* s : shaped) {
        measured += s->time;
        predicted += cost.Time(s->flops, s->bytes, s->channel_extent);
      }
      if (predicted > 0.0 && measured > 0.0) {
        const double c = measured / predicted;
        cost.intercept *= c;
        cost.per_flop *= c;
        cost.per_byte *= c;
        cost.per_channel_element *= c;
      }
    }
    cost.samples = static_cast<int64_t>(shaped.size());
    cost.mape = Mape(shaped, cost);
    return cost;
  }
  std::vector<double> times;
  for (const OpSample* s : samples) times.push_back(s->time);
  cost.intercept = Median(times);
  cost.samples = static_cast<int64_t>(samples.size());
  cost.mape = Mape(samples, cost);
  return cost;
}

sim::LinkFit FitLinkCost(const std::vector<const TransferSample*>& samples, const FitOptions& options) {
  sim::LinkFit link;
  link.bandwidth = kUnboundedBandwidth;
  std::vector<const TransferSample*> sized;
  std::set<double> sizes;
  std::vector<double> times;
  for (const TransferSample* s : samples) {
    times.push_back(s->time);
    if (!s->has_size) continue;
    sized.push_back(s);
    sizes.insert(s->bytes);
  }
  link.samples = static_cast<int64_t>(samples.size());
  if (sized.empty()) {
    link.latency = Median(times);  // constant time per transfer
    return link;
  }
  link.samples = static_cast<int64_t>(sized.size());
  if (sizes.size() < 2) {
    double bytes = 0.0;
    double seconds = 0.0;
    for (const TransferSample* s : sized) {
      bytes += s->bytes;
      seconds += s->time;
    }
    if (bytes > 0.0 && seconds > 0.0) {
      link.bandwidth = bytes / seconds;
    } else {
      link.latency = Median(times);
    }
    return link;
  }
  Eigen::MatrixXd features(static_cast<Eigen::Index>(sized.size()), 2);
  Eigen::VectorXd t(static_cast<Eigen::Index>(sized.size()));
  for (size_t i = 0; i < sized.size(); ++i) {
    features(static_cast<Eigen::Index>(i), 0) = 1.0;
    features(static_cast<Eigen::Index>(i), 1) = sized[i]->bytes;
    t(static_cast<Eigen::Index>(i)) = sized[i]->time;
  }
  const Eigen::VectorXd x = SolveScaled(features, t, options);
  link.latency = x(0);
  if (x(1) > 0.0) link.bandwidth = std::min(kUnboundedBandwidth, 1.0 / x(1));
  return link;
}

sim::DeviceProfile FitProfile(const TraceSamples& samples, const FitOptions& options,
                              const std::vector<int32_t>& steps, const std::vector<int64_t>& step_numbers) {
  const std::set<int32_t> chosen(steps.begin(), steps.end());
  return FitProfileIf(
      samples, options, [&](const OpSample& s) { return chosen.empty() || chosen.count(s.step) > 0; },
      [&](const TransferSample& t) { return chosen.empty() || chosen.count(t.step) > 0; }, step_numbers,
      [&](int32_t step) { return chosen.empty() || chosen.count(step) > 0; });
}

sim::DeviceProfile FitProfileIf(const TraceSamples& samples, const FitOptions& options,
                                const std::function<bool(const OpSample&)>& use_op,
                                const std::function<bool(const TransferSample&)>& use_transfer,
                                const std::vector<int64_t>& step_numbers,
                                const std::function<bool(int32_t step)>& use_step) {
  std::map<std::string, std::vector<const OpSample*>> by_type;
  // Class fits per precision and kind of convolution: a 16-bit matmul's
  // samples ("aten::mm [bf16]") fit "matmul [bf16]", not "matmul"
  // (sim::PrecisionSensitive); a depthwise convolution's ("aten::conv2d
  // (depthwise)") fit "conv (depthwise)", so that "conv" is the dense ones'.
  // Ops that update many tensors at once fit their own types only
  // (SpansManyTensors).
  std::map<std::tuple<graphs::OpClass, graphs::ConvKind, std::string>, std::vector<const OpSample*>> by_class;
  std::vector<const OpSample*> all;
  for (const OpSample& s : samples.ops) {
    if (!use_op(s)) continue;
    by_type[s.type].push_back(&s);
    if (!SpansManyTensors(s.type)) {
      by_class[{s.op_class, graphs::TypeConvKind(s.type), std::string(sim::TypePrecisionTag(s.type))}]
          .push_back(&s);
    }
    all.push_back(&s);
  }
  std::map<std::string, std::vector<const TransferSample*>> by_link;
  for (const TransferSample& t : samples.transfers) {
    if (use_transfer(t)) by_link[t.link].push_back(&t);
  }
  sim::DeviceProfile profile;
  profile.device_kind = samples.device_kind;
  profile.source["trace"] = std::filesystem::path(samples.source).filename().string();
  profile.source["steps"] = step_numbers;
  profile.source["steps"].SetStyle(YAML::EmitterStyle::Flow);
  profile.launch_overhead = samples.launch_overhead;
  profile.kernel_gap = samples.kernel_gap;
  if (!samples.cpu_rows.empty()) {
    // seconds = per_call * calls + per_op * ops + per_top_op * top-level ops
    // per (step, thread), by NNLS on columns scaled to unit maximum. A
    // top-level op carries the caller's time around it (Python, the
    // autograd engine); a nested one only the dispatcher's.
    const auto rows = static_cast<Eigen::Index>(samples.cpu_rows.size());
    Eigen::MatrixXd a(rows, 3);
    Eigen::VectorXd b(rows);
    double max_calls = 0.0, max_ops = 0.0, max_top = 0.0;
    for (const auto& r : samples.cpu_rows) {
      max_calls = std::max(max_calls, r.calls);
      max_ops = std::max(max_ops, r.ops);
      max_top = std::max(max_top, r.top_ops);
    }
    max_calls = std::max(max_calls, 1.0);
    max_ops = std::max(max_ops, 1.0);
    max_top = std::max(max_top, 1.0);
    for (Eigen::Index i = 0; i < rows; ++i) {
      const auto& r = samples.cpu_rows[static_cast<size_t>(i)];
      a(i, 0) = r.calls / max_calls;
      a(i, 1) = r.ops / max_ops;
      a(i, 2) = r.top_ops / max_top;
      b(i) = r.seconds;
    }
    const Eigen::VectorXd x = options.method == FitMethod::kHuber ? SolveHuberNnls(a, b) : SolveNnls(a, b);
    profile.cpu = sim::CpuFit{x(0) / max_calls, x(1) / max_ops, x(2) / max_top, static_cast<int64_t>(rows)};
  }
  profile.host = FitHost(samples.host, use_step);
  profile.fallback = FitKernelCost(all, options);
  for (const auto& [type, list] : by_type) profile.op_types[type] = FitKernelCost(list, options);
  // Traces of `gosim profile` say which graph op type each op ran for, with
  // the node's FLOPs and bytes as the simulator computes them: fit those
  // types too, on the simulator's own features, so that the calibrated cost
  // model finds "MatMul" or "Dropout" directly instead of falling back to
  // the op class (graph op types never start with "aten::", so the two sets
  // of keys do not collide; a trace op of the same name would win).
  std::map<std::string, std::vector<OpSample>> by_graph_type;
  for (const OpSample* s : all) {
    if (s->graph_type.empty() || s->graph_flops < 0.0 || s->graph_bytes < 0.0) continue;
    OpSample g = *s;
    g.type = s->graph_type;
    g.flops = s->graph_flops;
    g.bytes = s->graph_bytes;
    g.has_shapes = true;
    g.approximate = false;
    by_graph_type[g.type].push_back(std::move(g));
  }
  for (const auto& [type, list] : by_graph_type) {
    if (profile.op_types.count(type) > 0) continue;
    std::vector<const OpSample*> pointers;
    for (const OpSample& g : list) pointers.push_back(&g);
    profile.op_types[type] = FitKernelCost(pointers, options);
  }
  for (const auto& [key, list] : by_class) {
    const auto& [cls, kind, tag] = key;
    if (kind != graphs::ConvKind::kDense) {
      profile.op_class_kinds[std::string(graphs::OpClassName(cls)) + graphs::ConvKindSuffix(kind) +
                             (tag.empty() ? "" : " [" + tag + "]")] = FitKernelCost(list, options);
    } else if (tag.empty()) {
      profile.op_classes[static_cast<size_t>(cls)] = FitKernelCost(list, options);
    } else {
      profile.op_class_precisions[tag][static_cast<size_t>(cls)] = FitKernelCost(list, options);
    }
  }
  for (const auto& [link, list] : by_link) profile.links[link] = FitLinkCost(list, options);
  return profile;
}

double PredictKernel(const sim::DeviceProfile& profile, std::string_view op_type, double flops, double bytes,
                     double channel_extent) {
  return profile.FitFor(op_type, graphs::ClassifyOp(BaseSampleType(op_type)))
      .Time(flops, bytes, channel_extent);
}

double PredictTransfer(const sim::DeviceProfile& profile, std::string_view link, double bytes) {
  const auto it = profile.links.find(link);
  if (it == profile.links.end()) return profile.fallback.Time(0.0, 0.0);
  return it->second.latency + bytes / it->second.bandwidth;
}

}  // namespace gosim::calibration
