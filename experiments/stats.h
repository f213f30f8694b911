// Statistics of the summary tables: a 95% t-interval of a mean over seeds,
// a paired bootstrap of an agent against the reference, and the geometric
// mean of speedups (docs/EXPERIMENTS.md, "The summary table").
#ifndef GOSIM_EXPERIMENTS_STATS_H_
#define GOSIM_EXPERIMENTS_STATS_H_

#include <optional>
#include <vector>

namespace gosim::experiments {

struct Interval {
  double low = 0.0;
  double high = 0.0;
};

// The two-sided 95% quantile of Student's t with `df` degrees of freedom
// (df >= 1; 1.96 beyond 30).
double TQuantile975(int df);

// Mean +- t(0.975, n-1) x s / sqrt(n) (s: the sample standard deviation);
// none for fewer than 2 values.
std::optional<Interval> MeanInterval95(const std::vector<double>& values);

// An agent against the reference over paired runs (the same seed, or every
// seed of the agent against a reference with one seed).
struct PairedComparison {
  int pairs = 0;
  double mean_pct = 0.0;  // mean over pairs of (agent / reference - 1) x 100
  Interval pct_interval;  // 95% percentile interval of that mean, paired bootstrap
  // -1 better (the interval is below 0), +1 worse (above 0), 0 neither, or
  // fewer than kMinPairs pairs (no claim).
  int verdict = 0;
};
inline constexpr int kMinPairs = 3;
inline constexpr int kBootstrapResamples = 10000;

// `agent[i]` and `reference[i]` are the i-th pair (reference values > 0).
// Resamples the pairs kBootstrapResamples times with a fixed seed, so the
// result is deterministic.
PairedComparison PairedBootstrap(const std::vector<double>& agent, const std::vector<double>& reference);

// exp(mean(log(x))) of positive values; none when empty.
std::optional<double> GeometricMean(const std::vector<double>& values);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_STATS_H_
