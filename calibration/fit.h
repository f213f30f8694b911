// Fitting a DeviceProfile to the samples of a trace.
//
// Per op type, per op class and for the default: kernel time = intercept +
// per_flop * flops + per_byte * bytes + per_channel_element * channel_extent
// (a batch norm's elements per channel, graphs::ChannelExtent; 0 for other
// ops, whose fits keep that coefficient at 0), fitted with non-negative least squares
// (or its Huber-robust variant, nnls.h) on the samples whose input shapes the
// trace recorded. With relative weighting each row is divided by its measured
// time, so the fit minimizes squared relative errors (the mean absolute
// percentage error is what the accuracy report measures); with absolute
// weighting it minimizes squared seconds (total time). Where fewer than
// `min_samples` samples have shapes, the cost is the median measured time
// (intercept only). Links: latency + bytes / bandwidth, fitted the same way
// on memcpys and sized collectives.
#ifndef GOSIM_CALIBRATION_FIT_H_
#define GOSIM_CALIBRATION_FIT_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/samples.h"
#include "sim/device_profile.h"

namespace gosim::calibration {

enum class FitMethod { kNnls, kHuber };
enum class Weighting { kRelative, kSqrt, kAbsolute };

struct FitOptions {
  FitMethod method = FitMethod::kHuber;
  Weighting weighting = Weighting::kAbsolute;
  int min_samples = 3;  // fewer samples with shapes -> median-time fallback
  // Scale each fitted cost so that its predictions add up to the measured
  // total of its samples (relative weighting under-predicts totals).
  bool preserve_total = false;
};

// "nnls" / "huber", "relative" / "absolute"; ConfigError otherwise.
FitMethod ParseFitMethod(const std::string& text);
Weighting ParseWeighting(const std::string& text);

// Fits the linear cost of `samples` (all of one group). Samples with
// has_shapes false only count towards the median fallback. `mape` is the
// training error.
sim::KernelFit FitKernelCost(const std::vector<const OpSample*>& samples, const FitOptions& options);
// Fits latency + bytes / bandwidth to sized transfer samples; a link whose
// time does not grow with size gets bandwidth 1e15 bytes/s.
sim::LinkFit FitLinkCost(const std::vector<const TransferSample*>& samples, const FitOptions& options);

// Fits a profile to the samples of the steps in `steps` (indices into the
// trace's steps); every sample, in a step or not, when `steps` is empty.
// `step_numbers` are recorded as the profile's source steps.
sim::DeviceProfile FitProfile(const TraceSamples& samples, const FitOptions& options,
                              const std::vector<int32_t>& steps,
                              const std::vector<int64_t>& step_numbers = {});

// The same for the op and transfer samples that `use_op` / `use_transfer`
// accept, and the host table of the steps `use_step` accepts (all when null).
sim::DeviceProfile FitProfileIf(const TraceSamples& samples, const FitOptions& options,
                                const std::function<bool(const OpSample&)>& use_op,
                                const std::function<bool(const TransferSample&)>& use_transfer,
                                const std::vector<int64_t>& step_numbers = {},
                                const std::function<bool(int32_t step)>& use_step = nullptr);

// Predicted kernel time of an op (seconds, launch overhead excluded) and of
// a transfer, as the simulator's calibrated cost model computes them. A
// transfer on a link the profile lacks takes the default fit's intercept.
double PredictKernel(const sim::DeviceProfile& profile, std::string_view op_type, double flops, double bytes,
                     double channel_extent = 0.0);
double PredictTransfer(const sim::DeviceProfile& profile, std::string_view link, double bytes);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_FIT_H_
