#include "calibration/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "calibration/fit.h"
#include "calibration/op_work.h"
#include "core/strings.h"

namespace gosim::calibration {
namespace {

std::string Percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f%%", 100.0 * fraction);
  return buffer;
}

std::string Millis(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f ms", 1e3 * seconds);
  return buffer;
}

std::string StepList(const std::vector<int64_t>& steps) {
  std::string out = "[";
  for (size_t i = 0; i < steps.size(); ++i) out += (i ? ", " : "") + std::to_string(steps[i]);
  return out + "]";
}

// A batch norm's per-channel term scales with memory bandwidth, like bytes:
// its kernels stream each channel through one thread block.
double Scaled(const sim::KernelFit& cost, std::string_view type, double flops, double bytes,
              double channel_extent, bool has_shapes, const DeviceScale& scale) {
  if (!has_shapes) return std::max(0.0, cost.intercept * scale.intercept);
  const double per_flop = Sixteen(type) ? scale.per_flop_16 : scale.per_flop;
  return std::max(0.0,
                  cost.intercept * scale.intercept + cost.per_flop * flops * per_flop +
                      (cost.per_byte * bytes + cost.per_channel_element * channel_extent) * scale.per_byte);
}

const sim::KernelFit& FitOf(const sim::DeviceProfile& profile, const std::string& type) {
  return profile.FitFor(type, graphs::ClassifyOp(BaseSampleType(type)));
}

void AddLinks(const sim::DeviceProfile& profile, const TraceSamples& samples, const std::set<int32_t>& steps,
              const DeviceScale& scale, AccuracyReport* report) {
  for (const TransferSample& t : samples.transfers) {
    if (steps.count(t.step) == 0 || profile.links.count(t.link) == 0) continue;
    report->per_link[t.link].Add(PredictTransfer(profile, t.link, t.bytes) * scale.link, t.time);
  }
}

}  // namespace

DeviceScale ScaleBetween(const sim::DeviceSpec& from, const sim::DeviceSpec& to) {
  DeviceScale scale;
  scale.per_flop = from.peak_flops_fp32 / to.peak_flops_fp32;
  scale.per_flop_16 = from.PeakFlops(graphs::DType::kBFloat16) / to.PeakFlops(graphs::DType::kBFloat16);
  scale.per_byte = from.memory_bandwidth / to.memory_bandwidth;
  return scale;
}

bool Sixteen(std::string_view type) {
  return !sim::TypePrecisionTag(type).empty() && graphs::TypeConvKind(type) == graphs::ConvKind::kDense;
}

void ErrorStats::Add(double predicted_seconds, double measured_seconds) {
  ++count;
  predicted += predicted_seconds;
  measured += measured_seconds;
  const double err = std::fabs(predicted_seconds - measured_seconds);
  abs_err_sum += err;
  // Kernels recorded as 0 us count as 1 us so that the ratio stays finite.
  abs_pct_sum += err / std::max(measured_seconds, 1.0e-6);
}

double PredictSample(const sim::DeviceProfile& profile, const OpSample& sample, const DeviceScale& scale) {
  return Scaled(FitOf(profile, sample.type), sample.type, sample.flops, sample.bytes, sample.channel_extent,
                sample.has_shapes, scale);
}

AccuracyReport EvaluateSteps(const sim::DeviceProfile& profile, const TraceSamples& samples,
                             const std::vector<int32_t>& test, const DeviceScale& scale) {
  AccuracyReport report;
  const std::set<int32_t> steps(test.begin(), test.end());
  std::vector<int32_t> ordered(steps.begin(), steps.end());
  report.per_step.resize(ordered.size());
  for (const OpSample& s : samples.ops) {
    if (steps.count(s.step) == 0) continue;
    const double p = PredictSample(profile, s, scale);
    report.ops.Add(p, s.time);
    report.per_type[s.type].Add(p, s.time);
    const int64_t number = static_cast<size_t>(s.step) < samples.step_numbers.size()
                               ? samples.step_numbers[static_cast<size_t>(s.step)]
                               : s.step;
    report.predictions.push_back({s.type, s.flops, s.bytes, s.time, p, number});
    const auto k = std::lower_bound(ordered.begin(), ordered.end(), s.step) - ordered.begin();
    report.per_step[static_cast<size_t>(k)].Add(p, s.time);
  }
  AddLinks(profile, samples, steps, scale, &report);
  return report;
}

AccuracyReport EvaluateHoldout(const TraceSamples& samples, const std::vector<int64_t>& step_numbers,
                               const std::vector<int32_t>& holdout, const FitOptions& options) {
  const std::set<int32_t> test(holdout.begin(), holdout.end());
  std::vector<int32_t> train;
  std::vector<int64_t> train_numbers;
  std::vector<int64_t> test_numbers;
  for (size_t i = 0; i < step_numbers.size(); ++i) {
    if (test.count(static_cast<int32_t>(i))) {
      test_numbers.push_back(step_numbers[i]);
    } else {
      train.push_back(static_cast<int32_t>(i));
      train_numbers.push_back(step_numbers[i]);
    }
  }
  const sim::DeviceProfile profile = FitProfile(samples, options, train, train_numbers);
  AccuracyReport report = EvaluateSteps(profile, samples, holdout);
  report.train_steps = train_numbers;
  report.test_steps = test_numbers;
  return report;
}

AccuracyReport EvaluateUnseenShapes(const TraceSamples& samples, const FitOptions& options, int folds) {
  folds = std::max(2, folds);
  std::map<std::tuple<std::string, double, double>, int32_t> fold_of;
  for (const OpSample& s : samples.ops) {
    if (s.step >= 0 && s.has_shapes) fold_of.emplace(std::make_tuple(s.type, s.flops, s.bytes), 0);
  }
  int32_t next = 0;
  for (auto& [key, fold] : fold_of) fold = next++ % folds;
  auto fold_of_sample = [&](const OpSample& s) {
    const auto it = fold_of.find(std::make_tuple(s.type, s.flops, s.bytes));
    return it == fold_of.end() || s.step < 0 || !s.has_shapes ? -1 : it->second;
  };
  AccuracyReport report;
  for (int32_t fold = 0; fold < folds; ++fold) {
    const sim::DeviceProfile profile = FitProfileIf(
        samples, options,
        [&](const OpSample& s) {
          const int32_t f = fold_of_sample(s);
          return f >= 0 && f != fold;
        },
        [](const TransferSample&) { return false; });
    for (const OpSample& s : samples.ops) {
      if (fold_of_sample(s) != fold) continue;
      const double p = PredictSample(profile, s);
      report.ops.Add(p, s.time);
      report.per_type[s.type].Add(p, s.time);
    }
  }
  return report;
}

AccuracyReport EvaluateTransfer(const sim::DeviceProfile& profile, const TraceSamples& source,
                                const TraceSamples& target, const std::vector<int32_t>& steps,
                                const DeviceScale& scale, const std::map<std::string, std::string>& aliases) {
  // Reference instances of every source op type: those of the first step it
  // occurs in, by ordinal.
  std::map<std::string, int32_t> reference_step;
  for (const OpSample& s : source.ops) {
    if (s.step < 0 || !s.has_shapes) continue;
    auto [it, inserted] = reference_step.emplace(s.type, s.step);
    if (!inserted) it->second = std::min(it->second, s.step);
  }
  std::map<std::pair<std::string, int32_t>, const OpSample*> reference;
  std::map<std::string, int32_t> reference_count;
  for (const OpSample& s : source.ops) {
    const auto it = reference_step.find(s.type);
    if (it == reference_step.end() || s.step != it->second || !s.has_shapes) continue;
    reference[{s.type, s.ordinal}] = &s;
    ++reference_count[s.type];
  }
  std::map<std::pair<int32_t, std::string>, int32_t> target_count;
  for (const OpSample& s : target.ops) ++target_count[{s.step, s.type}];

  std::set<int32_t> chosen(steps.begin(), steps.end());
  if (chosen.empty()) {
    for (const OpSample& s : target.ops) {
      if (s.step >= 0) chosen.insert(s.step);
    }
  }
  std::vector<int32_t> ordered(chosen.begin(), chosen.end());
  AccuracyReport report;
  report.per_step.resize(ordered.size());
  for (int32_t step : ordered) {
    if (step >= 0 && step < static_cast<int32_t>(target.step_numbers.size())) {
      report.test_steps.push_back(target.step_numbers[static_cast<size_t>(step)]);
    }
  }
  if (report.test_steps.size() != ordered.size()) report.test_steps.clear();
  for (const OpSample& s : target.ops) {
    if (chosen.count(s.step) == 0) continue;
    std::string name = s.type;
    if (profile.op_types.count(name) == 0) {
      const auto alias = aliases.find(name);
      if (alias != aliases.end()) name = alias->second;
    }
    double flops = s.flops;
    double bytes = s.bytes;
    double channel_extent = s.channel_extent;
    if (!s.has_shapes) {
      const auto partner = reference.find({name, s.ordinal});
      const auto count = reference_count.find(name);
      if (partner == reference.end() || count == reference_count.end() ||
          count->second != target_count[{s.step, s.type}]) {
        ++report.unmatched;
        continue;
      }
      flops = partner->second->flops;
      bytes = partner->second->bytes;
      channel_extent = partner->second->channel_extent;
    }
    const double p = Scaled(FitOf(profile, name), name, flops, bytes, channel_extent, true, scale);
    report.ops.Add(p, s.time);
    report.per_type[s.type].Add(p, s.time);
    const auto k = std::lower_bound(ordered.begin(), ordered.end(), s.step) - ordered.begin();
    report.per_step[static_cast<size_t>(k)].Add(p, s.time);
  }
  AddLinks(profile, target, chosen, scale, &report);
  return report;
}

std::map<std::string, std::string> DefaultOpAliases() {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"aten::convolution_backward", "aten::cudnn_convolution_backward"},
      {"aten::native_batch_norm_backward", "aten::cudnn_batch_norm_backward"},
  };
  std::map<std::string, std::string> aliases;
  for (const auto& [a, b] : pairs) {
    aliases.emplace(a, b);
    aliases.emplace(b, a);
  }
  return aliases;
}

std::string FormatAccuracy(const AccuracyReport& report, int top) {
  std::string out;
  char line[256];
  if (!report.title.empty()) out += report.title + "\n";
  if (!report.train_steps.empty()) {
    out += "  fitted on steps " + StepList(report.train_steps) + ", predicted steps " +
           StepList(report.test_steps) + "\n";
  } else if (!report.test_steps.empty()) {
    out += "  predicted steps " + StepList(report.test_steps) + "\n";
  }
  if (report.ops.count == 0) {
    // An empty match has no error to report (not "MAPE 0.0%").
    out += "  op kernel times: no matched ops" +
           (report.unmatched > 0 ? " (" + std::to_string(report.unmatched) +
                                       " target ops without shapes or a partner in the source trace)"
                                 : std::string()) +
           "\n";
    return out;
  }
  std::snprintf(
      line, sizeof(line),
      "  op kernel times: %lld ops, MAPE %s, time-weighted error %s, total %s (measured %s, predicted %s)\n",
      static_cast<long long>(report.ops.count), Percent(report.ops.mape()).c_str(),
      Percent(report.ops.weighted()).c_str(), Percent(report.ops.total()).c_str(),
      Millis(report.ops.measured).c_str(), Millis(report.ops.predicted).c_str());
  out += line;
  if (report.unmatched > 0) {
    out += "  unmatched target ops (no shapes and no partner in the source trace): " +
           std::to_string(report.unmatched) + "\n";
  }
  for (size_t i = 0; i < report.per_step.size(); ++i) {
    const ErrorStats& s = report.per_step[i];
    const std::string name = i < report.test_steps.size() ? "step " + std::to_string(report.test_steps[i])
                                                          : "step #" + std::to_string(i);
    std::snprintf(line, sizeof(line), "  %-12s sum of op kernel times: measured %s, predicted %s (%s)\n",
                  name.c_str(), Millis(s.measured).c_str(), Millis(s.predicted).c_str(),
                  Percent(s.total()).c_str());
    out += line;
  }
  for (const auto& [link, s] : report.per_link) {
    std::snprintf(line, sizeof(line), "  link %-22s %5lld transfers, MAPE %s, time-weighted error %s\n",
                  link.c_str(), static_cast<long long>(s.count), Percent(s.mape()).c_str(),
                  Percent(s.weighted()).c_str());
    out += line;
  }
  std::vector<std::pair<std::string, const ErrorStats*>> types;
  for (const auto& [type, s] : report.per_type) types.emplace_back(type, &s);
  std::sort(types.begin(), types.end(), [](const auto& a, const auto& b) {
    if (a.second->measured != b.second->measured) return a.second->measured > b.second->measured;
    return a.first < b.first;
  });
  if (!types.empty()) {
    std::snprintf(line, sizeof(line), "  %-44s %6s %12s %8s %9s\n", "op type", "count", "measured", "MAPE",
                  "weighted");
    out += line;
  }
  for (size_t i = 0; i < types.size() && static_cast<int>(i) < top; ++i) {
    const ErrorStats& s = *types[i].second;
    std::snprintf(line, sizeof(line), "  %-44s %6lld %12s %8s %9s\n", types[i].first.substr(0, 44).c_str(),
                  static_cast<long long>(s.count), Millis(s.measured).c_str(), Percent(s.mape()).c_str(),
                  Percent(s.weighted()).c_str());
    out += line;
  }
  if (static_cast<int>(types.size()) > top) {
    out += "  ... " + std::to_string(types.size() - static_cast<size_t>(top)) + " more op types\n";
  }
  return out;
}

std::string PredictionsCsv(const AccuracyReport& report) {
  std::string out = "type,flops,bytes,measured_s,predicted_s,step\n";
  char line[160];
  for (const Prediction& p : report.predictions) {
    std::snprintf(line, sizeof(line), ",%.17g,%.17g,%.9g,%.9g,%lld\n", p.flops, p.bytes, p.measured,
                  p.predicted, static_cast<long long>(p.step));
    out += CsvField(p.type) + line;
  }
  return out;
}

}  // namespace gosim::calibration
