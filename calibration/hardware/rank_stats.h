// Rank statistics for comparing simulated and measured step times.
#ifndef GOSIM_CALIBRATION_HARDWARE_RANK_STATS_H_
#define GOSIM_CALIBRATION_HARDWARE_RANK_STATS_H_

#include <vector>

#include "core/stats.h"

namespace gosim::calibration::hardware {

// Kendall's tau-b between paired samples x and y (ties in either corrected
// as in Kendall 1945): +1 same order, -1 reversed; 0 when fewer than two
// pairs or either side is constant. StateError when sizes differ.
double KendallTau(const std::vector<double>& x, const std::vector<double>& y);

// The median lives in core/stats.h (gosim::Median), found from this
// namespace without qualification.

}  // namespace gosim::calibration::hardware

#endif  // GOSIM_CALIBRATION_HARDWARE_RANK_STATS_H_
