// How well a calibrated profile predicts measured kernel and transfer times.
//
// Hold-out: fit on some profiler steps, predict the op samples of the others.
// Transfer: predict a trace from another GPU with a profile fitted on the
// first one, optionally scaling the per-FLOP and per-byte coefficients by the
// ratio of the two devices' peak FLOP/s and memory bandwidth. A target trace
// without input shapes borrows FLOPs and bytes from the source trace's op of
// the same type and ordinal within a step (the same model run on both GPUs);
// ops without such a partner are counted as unmatched and left out.
//
// Errors: MAPE = mean over samples of |predicted - measured| / measured;
// weighted = sum |predicted - measured| / sum measured (time-weighted);
// total = (sum predicted - sum measured) / sum measured.
#ifndef GOSIM_CALIBRATION_ACCURACY_H_
#define GOSIM_CALIBRATION_ACCURACY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/samples.h"
#include "sim/cluster.h"
#include "sim/device_profile.h"

namespace gosim::calibration {

struct ErrorStats {
  int64_t count = 0;
  double abs_pct_sum = 0.0;  // sum of |p - m| / m
  double abs_err_sum = 0.0;  // seconds
  double measured = 0.0;     // seconds
  double predicted = 0.0;    // seconds

  void Add(double predicted_seconds, double measured_seconds);
  double mape() const { return count > 0 ? abs_pct_sum / static_cast<double>(count) : 0.0; }
  double weighted() const { return measured > 0.0 ? abs_err_sum / measured : 0.0; }
  double total() const { return measured > 0.0 ? (predicted - measured) / measured : 0.0; }
};

// One predicted op sample (for scatter plots: `gosim calibrate --predictions`).
struct Prediction {
  std::string type;  // the op sample's type (trace op name)
  double flops = 0.0;
  double bytes = 0.0;
  double measured = 0.0;   // seconds
  double predicted = 0.0;  // seconds
  int64_t step = -1;       // profiler step number
};

struct AccuracyReport {
  std::string title;
  std::vector<int64_t> train_steps;  // step numbers fitted on
  std::vector<int64_t> test_steps;   // step numbers predicted
  ErrorStats ops;                    // every op sample predicted
  std::map<std::string, ErrorStats> per_type;
  std::map<std::string, ErrorStats> per_link;
  std::vector<ErrorStats> per_step;     // sum of op kernel times per test step
  int64_t unmatched = 0;                // transfer: target ops without shapes or partner
  std::vector<Prediction> predictions;  // every op sample predicted (EvaluateSteps / EvaluateHoldout)
};

// The predictions as CSV: type,flops,bytes,measured_s,predicted_s,step.
std::string PredictionsCsv(const AccuracyReport& report);

// Coefficient scaling for predicting another device.
struct DeviceScale {
  double per_flop = 1.0;
  // per_flop of the 16-bit types that run on tensor cores (a precision tag,
  // "aten::mm [bf16]", and no depthwise or grouped kind): the ratio of the
  // two devices' 16-bit peaks, which differs from their fp32 one (V100 125
  // and 15.7 TFLOP/s, H200 989 and 67). Sixteen(type) says which.
  double per_flop_16 = 1.0;
  double per_byte = 1.0;
  double intercept = 1.0;
  double link = 1.0;  // transfer times
};

// Scaling from device `from` to device `to` by their datasheet figures:
// per_flop by the fp32 peaks, per_flop_16 by the 16-bit ones
// (DeviceSpec::PeakFlops; a device without a 16-bit figure counts its fp32
// one), per_byte by the memory bandwidths.
DeviceScale ScaleBetween(const sim::DeviceSpec& from, const sim::DeviceSpec& to);

// Whether an op sample type's FLOPs scale with the 16-bit peak
// (DeviceScale::per_flop_16): it carries a precision tag and is not a
// depthwise or grouped convolution (those run without tensor cores).
bool Sixteen(std::string_view type);

// The predicted kernel time of `sample` (its shapes when recorded, else the
// op type's intercept).
double PredictSample(const sim::DeviceProfile& profile, const OpSample& sample,
                     const DeviceScale& scale = {});

// Predicts the samples of the steps `test` (indices into the trace's steps).
AccuracyReport EvaluateSteps(const sim::DeviceProfile& profile, const TraceSamples& samples,
                             const std::vector<int32_t>& test, const DeviceScale& scale = {});

// Fits on every step but `holdout` (indices) and predicts `holdout`.
struct FitOptions;
AccuracyReport EvaluateHoldout(const TraceSamples& samples, const std::vector<int64_t>& step_numbers,
                               const std::vector<int32_t>& holdout, const FitOptions& options);

// Cross-validation over input shapes: the op samples are grouped by (type,
// FLOPs, bytes), the groups dealt round-robin into `folds` folds, and each
// fold is predicted by a profile fitted on the others, so no prediction has
// seen its shape. Measures how the fit generalizes to new graphs.
AccuracyReport EvaluateUnseenShapes(const TraceSamples& samples, const FitOptions& options, int folds = 5);

// Predicts `target` with `profile` (fitted on `source`). `aliases` maps a
// target op name to the source's name for the same op (PyTorch renames);
// `steps` are the target step indices to predict (empty = every step).
AccuracyReport EvaluateTransfer(const sim::DeviceProfile& profile, const TraceSamples& source,
                                const TraceSamples& target, const std::vector<int32_t>& steps,
                                const DeviceScale& scale, const std::map<std::string, std::string>& aliases);

// Op names that PyTorch versions spell differently, target -> source and back.
std::map<std::string, std::string> DefaultOpAliases();

// A text table: overall, per step, per link and the `top` op types with the
// most measured time.
std::string FormatAccuracy(const AccuracyReport& report, int top = 15);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_ACCURACY_H_
