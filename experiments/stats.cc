#include "experiments/stats.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace gosim::experiments {

double TQuantile975(int df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) df = 1;
  return df <= 30 ? kTable[df - 1] : 1.96;
}

std::optional<Interval> MeanInterval95(const std::vector<double>& values) {
  const size_t n = values.size();
  if (n < 2) return std::nullopt;
  double mean = 0.0;
  for (const double v : values) mean += v;
  mean /= static_cast<double>(n);
  double squares = 0.0;
  for (const double v : values) squares += (v - mean) * (v - mean);
  const double half = TQuantile975(static_cast<int>(n) - 1) *
                      std::sqrt(squares / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n));
  return Interval{mean - half, mean + half};
}

PairedComparison PairedBootstrap(const std::vector<double>& agent, const std::vector<double>& reference) {
  PairedComparison out;
  const size_t n = std::min(agent.size(), reference.size());
  out.pairs = static_cast<int>(n);
  if (n == 0) return out;
  std::vector<double> pct(n);
  for (size_t i = 0; i < n; ++i) pct[i] = (agent[i] / reference[i] - 1.0) * 100.0;
  double sum = 0.0;
  for (const double p : pct) sum += p;
  out.mean_pct = sum / static_cast<double>(n);
  std::vector<double> means(kBootstrapResamples);
  Rng rng(0x5eed5eed5eedULL);
  for (double& mean : means) {
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += pct[rng.UniformInt(n)];
    mean = total / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  out.pct_interval = {means[static_cast<size_t>(0.025 * (kBootstrapResamples - 1))],
                      means[static_cast<size_t>(0.975 * (kBootstrapResamples - 1))]};
  if (out.pairs >= kMinPairs) {
    if (out.pct_interval.high < 0.0) out.verdict = -1;
    if (out.pct_interval.low > 0.0) out.verdict = 1;
  }
  return out;
}

std::optional<double> GeometricMean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double logs = 0.0;
  for (const double v : values) logs += std::log(v);
  return std::exp(logs / static_cast<double>(values.size()));
}

}  // namespace gosim::experiments
