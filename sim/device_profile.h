// A calibrated device profile: per device kind, a linear kernel-time model
// fitted to real profiler traces (written by `gosim calibrate`, read by the
// `calibrated` cost model). File format: docs/FORMATS.md, "Calibrated device
// profile".
//
// Kernel time of a node of op type t with class c (graphs/op_class.h):
//   launch_overhead + max(0, intercept + per_flop * flops + per_byte * bytes
//                            + per_channel_element * channel_extent)
// with bytes = bytes_read + bytes_written, channel_extent the elements per
// channel of a batch norm (graphs::ChannelExtent; 0 for other ops) and the
// coefficients of op_types[t] when present, else op_classes[c], else
// `default`. Matmuls, convolutions and batch norms run in 16 bits
// (PrecisionSensitive) take the fits of their precision first:
// op_types["t [bf16]"], then op_class_precisions["bf16"][c] (file key
// "matmul [bf16]"); tensor cores make them several times faster than fp32
// at equal FLOPs, so the fp32 fits do not price them (HasPrecision). A
// tfloat32 matmul (fp32 on TF32 tensor cores) likewise takes "[tf32]" fits.
// Depthwise and grouped convolutions (graphs::ConvKind) take the fits of
// their kind before any other: op_types["t (depthwise)"], then
// op_class_kinds["conv (depthwise)"] (with the precision's tag for a 16-bit
// one: "conv (depthwise) [bf16]"), then the type and class fits above; the
// plain conv classes are fitted on dense convolutions only.
#ifndef GOSIM_SIM_DEVICE_PROFILE_H_
#define GOSIM_SIM_DEVICE_PROFILE_H_

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "graphs/graph.h"
#include "graphs/op_class.h"

namespace gosim::sim {

// One fitted linear model. Units: seconds, seconds per FLOP, seconds per byte.
struct KernelFit {
  double intercept = 0.0;  // may be negative; the kernel time is clamped at 0
  double per_flop = 0.0;   // >= 0
  double per_byte = 0.0;   // >= 0
  // >= 0, seconds per element of one channel (N x H x W) of a batch norm:
  // its kernels reduce each channel in one thread block, so that with fewer
  // channels than the GPU has room for, the time follows the elements per
  // channel, not the bytes (docs/CALIBRATION.md, "Fitting").
  double per_channel_element = 0.0;
  int64_t samples = 0;  // kernels the fit used (0 = not recorded)
  double mape = -1.0;   // mean absolute percentage error on held-out data as a fraction; < 0 = not recorded

  // max(0, intercept + per_flop * flops + per_byte * bytes
  //        + per_channel_element * channel_extent), without launch.
  double Time(double flops, double bytes, double channel_extent = 0.0) const;
  bool operator==(const KernelFit&) const = default;
};

// An alpha-beta fit of one kind of transfer: latency + bytes / bandwidth.
struct LinkFit {
  double latency = 0.0;    // seconds, >= 0
  double bandwidth = 0.0;  // bytes/s, > 0
  int64_t samples = 0;
  bool operator==(const LinkFit&) const = default;
};

// The host side of a step (docs/CALIBRATION.md, "Prediction"): CPU time per
// CUDA runtime call (launch) and per profiled operator (dispatch, framework
// and Python time around it), fitted by non-negative least squares on the
// CPU time of each step and thread.
struct CpuFit {
  double per_call = 0.0;    // seconds, >= 0
  double per_op = 0.0;      // seconds, >= 0
  double per_top_op = 0.0;  // seconds, >= 0: extra per operator called from outside any operator
  int64_t samples = 0;      // (step, thread) rows the fit used
  bool operator==(const CpuFit&) const = default;
};

// The host table (docs/CALIBRATION.md, "The host"): the CPU time the
// framework spends to run one op, by op type, as the engine charges it to the
// host thread that dispatches the op (docs/SIMULATOR.md, "The host"). Fitted
// from profiler traces: each operator called from Python or from the autograd
// engine takes its span (less the time its runtime calls waited for the GPU)
// plus the idle time before it since the previous one (the Python between
// them); nested operators inherit an equal share of their parent's own time,
// so that an op type's figure is what its whole call cost, at whatever level
// an exporter records it (aten::linear, or its aten::addmm). Every figure is
// already scaled by `profiler_factor`, the host's unprofiled speed over its
// profiled one.
struct HostOpFit {
  double seconds = 0.0;  // host time per op, >= 0
  double kernels = 0.0;  // GPU launches per op (mean), informational
  int64_t samples = 0;   // op instances measured
  bool operator==(const HostOpFit&) const = default;
};

struct HostFit {
  std::map<std::string, HostOpFit, std::less<>> op_types;  // every operator name of the traces
  std::array<std::optional<HostOpFit>, graphs::kNumOpClasses> op_classes;
  HostOpFit launch;  // an op with GPU work that neither its type nor its class covers
  HostOpFit view;    // an op without GPU work (a view, metadata) that its type does not cover
  // Per parameter tensor an optimizer step updates: gradient accumulation
  // (AccumulateGrad) and the optimizer's Python around its kernels
  // (zero_grad, grouping), seconds.
  double per_parameter = 0.0;
  // Unprofiled over profiled host time (<= 1: the profiler slows the host),
  // the median over the host-bound traces whose unprofiled step was timed;
  // 1 when none was (`profiler_samples` 0): the figures then include the
  // profiler's own overhead.
  double profiler_factor = 1.0;
  int64_t profiler_samples = 0;
  bool operator==(const HostFit&) const = default;

  // The figure of an op: its type's, else a known alias's (the CPU
  // decomposition an exporter records for what a GPU ran: "aten::native_X"
  // -> "aten::X", "aten::cudnn_X"), else its class's, else `launch` or
  // `view` (`has_work`: the op reads or writes memory or computes).
  const HostOpFit& For(std::string_view op_type, graphs::OpClass op_class, bool has_work) const;
};

// The k-th (0, 1) name a GPU trace may give an op an exporter traced on the
// CPU as `op_type`: "aten::native_X" -> "aten::X", "aten::cudnn_X"; "" when
// there is none. Written into `buffer` (no allocation); the host table falls
// back to these names before its class (kernel fits do not: tried, the
// validation's median moved from 24.9% to 25.1% on the H200).
std::string_view OpTypeAlias(std::string_view op_type, int k, char* buffer, size_t size);

// "bf16" or "fp16" for 16-bit floating point, "tf32" for tfloat32 (float32
// on TF32 tensor cores), else "": the tag of the op types and class fits of
// that precision ("aten::mm [bf16]", "matmul [tf32]").
std::string_view PrecisionTag(graphs::DType dtype);
// Classes whose kernels a profile fits per precision: matrix products,
// convolutions and their gradients, normalizations (calibration's
// PrecisionApplies on profiled op names).
bool PrecisionSensitive(graphs::OpClass op_class);
// The tag a type or class name ends with ("aten::mm [bf16]" -> "bf16"), or "".
std::string_view TypePrecisionTag(std::string_view op_type);

struct DeviceProfile {
  std::string device_kind;       // matches DeviceSpec::kind, e.g. "A100"
  YAML::Node source;             // free-form provenance (trace, steps, ...); may be null
  double launch_overhead = 0.0;  // seconds, added once per kernel
  double kernel_gap = 0.0;       // seconds: median idle time between back-to-back kernels on a stream
  std::optional<CpuFit> cpu;     // absent in profiles fitted before it existed
  std::optional<HostFit> host;   // the host table; absent: the engine does not model this kind's host
  KernelFit fallback;            // the file's `default`
  std::array<std::optional<KernelFit>, graphs::kNumOpClasses> op_classes;
  // Class fits of 16-bit and TF32 kernels, by PrecisionTag ("bf16", "fp16", "tf32").
  std::map<std::string, std::array<std::optional<KernelFit>, graphs::kNumOpClasses>, std::less<>>
      op_class_precisions;
  // Class fits of depthwise and grouped convolutions, by name as the file
  // has them: "conv (depthwise)", "conv_backward (grouped) [bf16]".
  std::map<std::string, KernelFit, std::less<>> op_class_kinds;
  std::map<std::string, KernelFit, std::less<>> op_types;
  std::map<std::string, LinkFit, std::less<>> links;  // e.g. memcpy_htod, nccl_allreduce

  // The coefficients for an op type run in `dtype`: for a depthwise or
  // grouped convolution (`kind`, or the kind its type carries:
  // "aten::conv2d (depthwise)") the kind's type and class fits first; for
  // a 16-bit op of a PrecisionSensitive class only fits of its precision;
  // then op_types, its class, default. A type that carries its tag
  // already (calibration's "aten::mm [bf16]") is looked up as it is, then
  // its precision's class fit.
  const KernelFit& FitFor(std::string_view op_type, graphs::OpClass op_class,
                          graphs::DType dtype = graphs::DType::kFloat32,
                          graphs::ConvKind kind = graphs::ConvKind::kDense) const;
  // False when the op needs its precision's fits (above) and the profile
  // has neither the type's nor the class's: FitFor then gives an fp32 fit,
  // which the simulator refuses or replaces with roofline.
  bool HasPrecision(std::string_view op_type, graphs::OpClass op_class, graphs::DType dtype,
                    graphs::ConvKind kind = graphs::ConvKind::kDense) const;
  // FitFor in one lookup, or nullptr where HasPrecision is false.
  const KernelFit* FitOfPrecision(std::string_view op_type, graphs::OpClass op_class, graphs::DType dtype,
                                  graphs::ConvKind kind = graphs::ConvKind::kDense) const;
  // Seconds for one kernel, launch overhead included.
  double KernelTime(std::string_view op_type, graphs::OpClass op_class, double flops, double bytes,
                    double channel_extent = 0.0, graphs::DType dtype = graphs::DType::kFloat32,
                    graphs::ConvKind kind = graphs::ConvKind::kDense) const;
};

// Parses a profile; every problem is a ConfigError with file, line and path.
DeviceProfile ParseDeviceProfile(const std::string& yaml_text, const std::string& source);
// Reads a profile file; a bare name ("a100") is looked up as
// configs/calibrated/<name>.yaml.
DeviceProfile LoadDeviceProfile(const std::string& path_or_name);
// The profile in the file format (doubles with 17 significant digits, so
// writing then parsing gives the same profile).
std::string DeviceProfileToYaml(const DeviceProfile& profile);
// Writes atomically (core/io.h).
void SaveDeviceProfile(const std::string& path, const DeviceProfile& profile);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_DEVICE_PROFILE_H_
