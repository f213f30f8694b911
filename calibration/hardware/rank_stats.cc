#include "calibration/hardware/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace gosim::calibration::hardware {

double KendallTau(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) {
    throw StateError(
        "Kendall tau of " + std::to_string(x.size()) + " and " + std::to_string(y.size()) + " values", {},
        "pass one value of each side per item");
  }
  const size_t n = x.size();
  double concordant = 0.0, discordant = 0.0, ties_x = 0.0, ties_y = 0.0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double dx = x[i] - x[j];
      const double dy = y[i] - y[j];
      if (dx == 0.0 && dy == 0.0) continue;  // tied in both: counts in neither
      if (dx == 0.0) {
        ties_x += 1.0;
      } else if (dy == 0.0) {
        ties_y += 1.0;
      } else if ((dx > 0.0) == (dy > 0.0)) {
        concordant += 1.0;
      } else {
        discordant += 1.0;
      }
    }
  }
  const double denom = std::sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y));
  return denom > 0.0 ? (concordant - discordant) / denom : 0.0;
}

}  // namespace gosim::calibration::hardware
