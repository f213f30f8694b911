// Turning a Trace into fitting samples.
//
// An op sample is one top-level operator instance (see TopLevelOp) that ran
// GPU work: its kernel time is the total duration of the kernels and memsets
// it launched (NCCL kernels and memcpys excluded), its FLOPs and bytes come
// from its recorded input shapes (op_work.h). A transfer sample is one memcpy
// ("memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memcpy_ptop") or one NCCL
// collective ("nccl_allreduce", "nccl_alltoall", ...) with its size.
#ifndef GOSIM_CALIBRATION_SAMPLES_H_
#define GOSIM_CALIBRATION_SAMPLES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibration/host_samples.h"
#include "calibration/trace.h"
#include "graphs/op_class.h"

namespace gosim::calibration {

struct OpSample {
  int32_t op = -1;                                     // the top-level op in the trace
  std::string type;                                    // its name, e.g. "aten::conv2d"
  graphs::OpClass op_class = graphs::OpClass::kOther;  // graphs::ClassifyOp(type)
  double flops = 0.0;
  double bytes = 0.0;           // read + written
  double channel_extent = 0.0;  // a batch norm's elements per channel (graphs::ChannelExtent), else 0
  bool has_shapes = false;      // the trace recorded input shapes for it
  bool approximate = false;     // an assumed size entered flops / bytes
  double time = 0.0;            // seconds of kernel + memset time
  int32_t kernels = 0;          // GPU activities summed into `time`
  int32_t step = -1;            // index into Trace::steps, -1 outside every step
  int32_t ordinal = -1;         // the k-th sample of `type` in its step, by start time
  // The gosim graph node the op ran for (traces of `gosim profile`): its op
  // type, FLOPs and bytes as the simulator's cost models see them; empty /
  // -1 otherwise.
  std::string graph_type;
  double graph_flops = -1.0;
  double graph_bytes = -1.0;
};

struct TransferSample {
  std::string link;  // "memcpy_htod", "nccl_allreduce", ...
  double bytes = 0.0;
  bool has_size = true;  // false for a collective whose message size is unknown
  double time = 0.0;     // seconds
  int32_t step = -1;
  int32_t activity = -1;
};

struct TraceSamples {
  std::string source;
  std::string device_kind;
  std::vector<int64_t> step_numbers;  // of the trace's steps, by index
  std::vector<OpSample> ops;
  std::vector<TransferSample> transfers;
  // Per trace activity: its op sample / transfer sample, or -1.
  std::vector<int32_t> activity_op;
  std::vector<int32_t> activity_transfer;
  // Mean GPU idle time per op sample (in steps) between its activities and
  // the previous activity on the same stream (gaps over 1 ms, stalls rather
  // than launch costs, are left out), in seconds: the profile's
  // launch_overhead. And the median time from a launch call to the start of
  // its kernel on an idle stream.
  double launch_overhead = 0.0;
  // Kernel time over step time, summed over the steps: near 1 when the GPU
  // bounds the step, far below when the host does (its stream gaps then
  // measure the host, and MergeSamples leaves them out of launch_overhead).
  double gpu_busy_fraction = 0.0;
  double launch_latency = 0.0;
  int64_t launch_samples = 0;
  // Median gap between consecutive activities on a stream when the second
  // was launched before the first ended (the GPU's own per-kernel cost when
  // kernels are queued back to back), in seconds.
  double kernel_gap = 0.0;
  // The host side (sim::CpuFit): per step and CPU thread, the CPU time that
  // is not waiting for the GPU (the time up to each non-blocking runtime call
  // since the previous one, on the step's thread also the tail after its last
  // call), its runtime calls and its operators.
  struct CpuRow {
    double seconds = 0.0;
    double calls = 0.0;
    double ops = 0.0;
    double top_ops = 0.0;  // of `ops`, those called from outside any operator (IsTopLevelOp)
  };
  std::vector<CpuRow> cpu_rows;
  // The host table's samples (host_samples.h), per step.
  HostSamples host;
};

// Extracts the samples of every op, memcpy and collective of `trace`.
TraceSamples ExtractSamples(const Trace& trace);

// TraceError when the trace does not say which GPU it ran on (no
// deviceProperties, or a name DeviceKindFromName cannot read: the kind is
// then "gpu"), so that a profile fitted on it, or a prediction of it, would
// be for no device kind the simulator knows. `option` names the option that
// sets the kind instead (e.g. "--device-kind").
void RequireKnownDeviceKind(const TraceSamples& samples, const std::string& option);

// The samples of several traces of one device kind, for one fit (e.g.
// `gosim profile` runs of several architectures): ops and transfers
// concatenated with their steps renumbered after the previous traces' (the
// step numbers follow), the launch figures averaged by launch samples. The
// per-activity indices (`activity_op`, `activity_transfer`, `OpSample::op`)
// refer to no single trace and are cleared / -1. TraceError when the device
// kinds differ.
TraceSamples MergeSamples(const std::vector<TraceSamples>& parts);

// A runtime call that may wait for the GPU (synchronizations, blocking
// copies, cudaMalloc / cudaFree): its CPU time is not dispatch.
bool MayBlock(const std::string& name);
// Per runtime call name, the most of a call's duration that is the host's
// own work: 3x the median duration of the name in the trace plus 5 us (a
// launch takes ~5 us; once the GPU's launch queue is full, a launch blocks
// for hundreds, which is the GPU's time).
std::map<std::string, double> RuntimeCaps(const Trace& trace);

// The transfer link name of an activity ("memcpy_htod", "nccl_allreduce"), or
// "" when it is neither a memcpy nor a collective.
std::string LinkNameOf(const Trace& trace, const GpuActivity& activity);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_SAMPLES_H_
