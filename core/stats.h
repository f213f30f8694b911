// Small order statistics shared by the modules (calibration fits, replay
// measurements, benchmarks).
#ifndef GOSIM_CORE_STATS_H_
#define GOSIM_CORE_STATS_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gosim {

// The median of `values` (the mean of the two middle values for an even
// count); 0 for an empty vector. Takes a copy: the input keeps its order.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t mid = values.size() / 2;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(mid);
  std::nth_element(values.begin(), middle, values.end());
  double m = *middle;
  if (values.size() % 2 == 0) m = 0.5 * (m + *std::max_element(values.begin(), middle));
  return m;
}

}  // namespace gosim

#endif  // GOSIM_CORE_STATS_H_
