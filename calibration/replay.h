// Whole-step replay: rebuild one profiler step's dependency graph from the
// trace and simulate it with calibrated costs.
//
// The graph (a gosim::graphs::Graph run by sim::Evaluator on a cluster with
// one device per CPU thread and one per GPU stream):
//   - CPU: per thread, one node per CUDA runtime call covering the CPU time
//     since the previous call (measured; the replay predicts GPU times, not
//     Python). A call whose kernel started before the call returned is split
//     at that point, so the kernel becomes ready when it really could start.
//   - GPU: one node per kernel, memcpy and memset launched in the step, on
//     its stream's device; its time is predicted by the profile (an op's
//     predicted kernel time shared equally by its activities, memcpys and
//     collectives by their link fit), or measured in the check mode; plus
//     the trace's median back-to-back kernel gap (TraceSamples::kernel_gap).
//   - Edges: CPU program order per thread; launch (call -> activity); stream
//     order; cross-stream waits (Kineto cuda_sync "Stream Wait Event", else
//     cudaEventRecord + cudaStreamWaitEvent on one thread); CPU-GPU
//     synchronization (cudaStreamSynchronize, cudaDeviceSynchronize,
//     cudaEventSynchronize, cudaFree, blocking memcpys: the call waits for the
//     GPU work launched before it, and only its measured residual is CPU
//     time); cross-thread waits (a long gap on one thread that ends after
//     another thread's call: the gap waits for that call).
// Every inferred edge (cross-stream, sync, cross-thread) must agree with the
// measured times (its source ended before its target started) or it is
// dropped and counted.
//
// Measured step time: the step period, from the step annotation's start to
// the next step annotation's start (ProfilerStep to ProfilerStep; the
// annotation's own span for the last step). The end of the last GPU activity
// the step launched is reported beside it (measured_drain): on a trace whose
// CPU runs ahead it lies well past the period (12 ms on the V100 ResNet-50
// trace), which is why it is not the reference.
#ifndef GOSIM_CALIBRATION_REPLAY_H_
#define GOSIM_CALIBRATION_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/accuracy.h"
#include "calibration/samples.h"
#include "calibration/trace.h"
#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/decision.h"
#include "sim/device_profile.h"

namespace gosim::calibration {

struct ReplayOptions {
  // A CPU gap (seconds) at least this long that another thread's call ends
  // inside is taken as a wait for that thread.
  double cross_thread_gap = 200.0e-6;
  // Time GPU activities with their measured durations instead of the
  // profile: checks the graph reconstruction itself.
  bool measured_gpu = false;
  // Prediction (`gosim calibrate --predict`): nothing measured from the
  // target. CPU nodes take the profile's per-call and per-step costs
  // (sim::CpuFit) instead of their measured times, GPU activities the
  // profile's kernel gap instead of the target's. The dependency structure
  // (threads, launches, streams, waits) still comes from the trace.
  bool predict_cpu = false;
  // Coefficient scaling when the profile is of another device kind.
  DeviceScale scale;
};

struct EdgeCounts {
  int64_t cpu_order = 0;
  int64_t launch = 0;
  int64_t stream_order = 0;
  int64_t cross_stream = 0;
  int64_t sync = 0;
  int64_t cross_thread = 0;
  int64_t dropped = 0;  // inferred edges that contradicted the measured times
};

struct StepGraph {
  graphs::Graph graph;
  sim::Cluster cluster;
  sim::Decision decision;  // placement of every node on its thread / stream device
  int64_t step_number = -1;
  double measured_time = 0.0;     // seconds: the step period (see the file comment)
  double measured_drain = 0.0;    // seconds from the step start to its last CPU call or GPU activity
  double measured_gpu_end = 0.0;  // seconds from the step start to the end of its last GPU activity
  double measured_gpu = 0.0;      // seconds: sum of the measured GPU activity durations
  double predicted_gpu = 0.0;     // seconds: sum of the GPU node durations used
  int32_t cpu_nodes = 0;
  int32_t gpu_nodes = 0;
  int32_t unpredicted = 0;  // GPU activities with neither an op nor a link (default cost)
  EdgeCounts edges;
  std::vector<bool> gpu_node;      // per graph node
  std::vector<double> node_start;  // per graph node: its measured start (orders a device's nodes)
};

// The measured period of `step` (see the file comment), seconds.
double MeasuredPeriod(const Trace& trace, const ProfilerStep& step);

// Builds the graph of step `step` (index into trace.steps). `profile` may be
// null only with options.measured_gpu. Throws TraceError when the step has
// no runtime calls.
StepGraph BuildStepGraph(const Trace& trace, const TraceSamples& samples, int32_t step,
                         const sim::DeviceProfile* profile, const ReplayOptions& options);

struct ReplayResult {
  int64_t step_number = -1;
  double measured = 0.0;   // seconds: the measured step period
  double simulated = 0.0;  // seconds: steady-state period with the profile's GPU times
  double check = 0.0;      // seconds: steady-state period with the measured GPU times
  // From the step start to the end of the last GPU activity: measured and
  // simulated with the profile (tells more than the step time when the CPU
  // bounds the step).
  double measured_gpu_end = 0.0;
  double simulated_gpu_end = 0.0;
  double measured_gpu = 0.0;
  double predicted_gpu = 0.0;
  int32_t nodes = 0;
  EdgeCounts edges;
  int32_t unpredicted = 0;

  double error() const { return measured > 0.0 ? (simulated - measured) / measured : 0.0; }
  double gpu_end_error() const {
    return measured_gpu_end > 0.0 ? (simulated_gpu_end - measured_gpu_end) / measured_gpu_end : 0.0;
  }
  double check_error() const { return measured > 0.0 ? (check - measured) / measured : 0.0; }
};

// Simulates the step graph (sim::Evaluator, one cluster device per thread and
// stream) with the profile and with the measured GPU times.
ReplayResult ReplayStep(const Trace& trace, const TraceSamples& samples, int32_t step,
                        const sim::DeviceProfile& profile, const ReplayOptions& options = {});

// The simulated makespan of a step graph and the end of its last GPU node,
// in seconds, starting from idle devices.
struct StepSimulation {
  double makespan = 0.0;
  double gpu_end = 0.0;
};
StepSimulation SimulateStepGraph(const StepGraph& step_graph);

// The steady-state period of a step run over and over: `copies` copies of
// the step graph, each device's (CPU thread's, GPU stream's) copy k+1
// chained after its copy k, so that the CPU runs ahead and kernels stay
// queued across the step boundary as far as the dependencies allow; the
// period is the mean distance between the ends of consecutive copies after
// the first (end(copies) - end(2)) / (copies - 2). copies >= 3.
double SimulateSteadyState(const StepGraph& step_graph, int copies = 4);

// A text table of replay results, with the mean absolute error.
std::string FormatReplay(const std::vector<ReplayResult>& results);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_REPLAY_H_
