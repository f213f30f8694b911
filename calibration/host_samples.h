// The host side of a trace as the engine charges it: host time per op type
// (sim::HostFit, docs/CALIBRATION.md, "The host").
//
// Per profiler step, every operator called from Python or from the autograd
// engine (a "unit": an op with no enclosing op, only annotations around it)
// costs its span, less what its runtime calls waited for the GPU (a call
// counts at most a few times its kind's median: a launch blocked on a full
// queue, a synchronization), plus the idle time since the previous unit on
// any thread (the Python between them; the threads take turns: the main
// thread waits in loss.backward() while the autograd engine's thread runs).
// Nested operators inherit an equal share of their parent's own time, so
// that every operator name, at every level, gets what its whole call cost:
// aten::linear and its aten::addmm, aten::conv2d and its aten::convolution.
// Gradient accumulation (AccumulateGrad units) and the optimizer's Python
// (the idle time inside Optimizer.* annotations, and a zero_grad annotation
// without ops) are per-parameter work.
//
// The profiler itself slows the host: with shapes recorded, a step of
// ResNet-50 on the H100 took 58 ms profiled and 28 ms unprofiled. The fit
// scales every figure by the median of unprofiled step / profiled host time
// over the host-bound traces whose unprofiled step was timed
// (`record_gpu_traces.py` writes it into a provenance.json beside the
// traces, which ExtractHostSamples reads).
#ifndef GOSIM_CALIBRATION_HOST_SAMPLES_H_
#define GOSIM_CALIBRATION_HOST_SAMPLES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "calibration/trace.h"
#include "sim/device_profile.h"

namespace gosim::calibration {

struct HostSamples {
  struct Sum {
    double seconds = 0.0;
    double instances = 0.0;
    double kernels = 0.0;  // launch calls in the instances' subtrees
  };
  struct Step {
    int32_t trace = 0;  // index into `traces`
    std::map<std::string, Sum, std::less<>> types;
    Sum launch_units;  // units that launched GPU work
    Sum view_units;    // units that launched none
    double parameter_seconds = 0.0;
    double parameters = 0.0;  // AccumulateGrad units
    double host_s = 0.0;      // the step's host time (units and the idle time before them)
    double gpu_s = 0.0;       // kernel, memcpy and memset time of the activities launched in it
    double period_s = 0.0;    // the step annotation's duration
  };
  struct TraceInfo {
    std::string source;
    double unprofiled_step_s = -1.0;  // < 0: not timed
  };
  std::vector<Step> steps;  // indexed like the trace's steps (merged: renumbered like MergeSamples)
  std::vector<TraceInfo> traces;
};

// The host samples of every step of `trace` (none when it has no CPU
// operators in its steps). The unprofiled step time comes from a
// provenance.json of format gosim.gpu_traces beside the trace file, when it
// lists the file.
HostSamples ExtractHostSamples(const Trace& trace);

// Appends `part` (its steps after those already there).
void AppendHostSamples(const HostSamples& part, HostSamples* into);

// The host table of the steps `use_step` accepts (every step when null), or
// nullopt when they have no units.
std::optional<sim::HostFit> FitHost(const HostSamples& samples,
                                    const std::function<bool(int32_t step)>& use_step = nullptr);

// The unprofiled step time of `trace_path` in the provenance.json beside it,
// or -1.
double UnprofiledStepTime(const std::string& trace_path);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_HOST_SAMPLES_H_
