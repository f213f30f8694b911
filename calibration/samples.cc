#include "calibration/samples.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "calibration/op_work.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/strings.h"

namespace gosim::calibration {
namespace {

constexpr double kStallGap = 1.0e-3;  // seconds; longer stream gaps are stalls, not launch costs
// A trace whose kernels fill at least this much of its steps is GPU-bound:
// its stream gaps are the GPU's per-kernel cost, not the host's pace.
constexpr double kGpuBound = 0.8;

}  // namespace

std::string LinkNameOf(const Trace& trace, const GpuActivity& a) {
  if (a.kind == ActivityKind::kMemcpy) {
    const std::string_view kind = CopyKindName(a.copy);
    return "memcpy_" + std::string(kind.empty() ? "other" : kind);
  }
  if (a.collective >= 0) return "nccl_" + trace.collectives[static_cast<size_t>(a.collective)].name;
  return "";
}

// A runtime call that may block on the GPU: its CPU time is not dispatch.
bool MayBlock(const std::string& name) {
  return name == "cudaDeviceSynchronize" || name == "cudaStreamSynchronize" ||
         name == "cudaEventSynchronize" || name == "cudaFree" || name == "cudaMalloc" ||
         StartsWith(name, "cudaMemcpy");
}

// A runtime call's duration beyond this is back-pressure, not CPU work: once
// the GPU's launch queue is full (a GPU-bound step, the CPU far ahead), a
// launch blocks until a slot frees, and the time spent there is the GPU's.
// The cap is a few times the call's median duration in the trace (a launch
// takes ~5 us on the host; a blocked one hundreds).
std::map<std::string, double> RuntimeCaps(const Trace& trace) {
  std::map<std::string, std::vector<double>> by_name;
  for (const RuntimeCall& c : trace.runtime) by_name[c.name].push_back(c.duration);
  std::map<std::string, double> caps;
  for (auto& [name, durations] : by_name) caps[name] = 3.0 * Median(durations) + 5.0e-6;
  return caps;
}

namespace {

// The host side (TraceSamples::cpu_rows): per step and thread, the CPU time
// of its non-blocking runtime calls since the previous call (or the step
// start on the step's thread, plus the tail after its last call there), its
// non-blocking calls and its operators (annotations excluded). A call counts
// at most its cap (RuntimeCaps): the rest is waiting for the GPU; a gap
// counts less the time another thread ran operators in it (waiting for that
// thread).
void FitCpuSide(const Trace& trace, TraceSamples* out) {
  const std::map<std::string, double> caps = RuntimeCaps(trace);
  for (const ProfilerStep& step : trace.steps) {
    std::map<int32_t, std::vector<const RuntimeCall*>> by_thread;
    for (const RuntimeCall& c : trace.runtime) {
      if (c.start >= step.start && c.start < step.end()) by_thread[c.thread].push_back(&c);
    }
    std::map<int32_t, double> ops, top_ops;
    std::map<int32_t, std::vector<std::pair<double, double>>> busy;  // per thread: top-level op spans
    for (const TraceOp& op : trace.ops) {
      if (!op.annotation && op.start >= step.start && op.start < step.end()) {
        ops[op.thread] += 1.0;
        if (IsTopLevelOp(trace.ops, op)) {
          top_ops[op.thread] += 1.0;
          busy[op.thread].emplace_back(op.start, op.end());
        }
      }
    }
    // The time in [lo, hi) during which another thread runs an operator:
    // the main thread waiting for the autograd engine's backward pass is
    // not its own CPU work.
    auto others_busy = [&](int32_t thread, double lo, double hi) {
      std::vector<std::pair<double, double>> spans;
      for (const auto& [t, list] : busy) {
        if (t == thread) continue;
        for (const auto& [a, b] : list) {
          if (b > lo && a < hi) spans.emplace_back(std::max(a, lo), std::min(b, hi));
        }
      }
      std::sort(spans.begin(), spans.end());
      double covered = 0.0, reach = lo;
      for (const auto& [a, b] : spans) {
        if (b <= reach) continue;
        covered += b - std::max(a, reach);
        reach = b;
      }
      return covered;
    };
    for (auto& [thread, calls] : by_thread) {
      std::sort(calls.begin(), calls.end(),
                [](const RuntimeCall* a, const RuntimeCall* b) { return a->start < b->start; });
      const bool main = thread == step.thread;
      double previous = main ? step.start : calls.front()->start;
      TraceSamples::CpuRow row;
      for (const RuntimeCall* c : calls) {
        const double gap = std::max(0.0, c->start - previous - others_busy(thread, previous, c->start));
        const double segment = gap + std::min(c->duration, caps.at(c->name));
        previous = std::max(previous, c->end());
        if (MayBlock(c->name)) continue;
        row.seconds += segment;
        row.calls += 1.0;
      }
      if (main && step.end() > previous) {
        row.seconds += std::max(0.0, step.end() - previous - others_busy(thread, previous, step.end()));
      }
      row.ops = ops[thread];
      row.top_ops = top_ops[thread];
      out->cpu_rows.push_back(row);
    }
  }
}

}  // namespace

TraceSamples ExtractSamples(const Trace& trace) {
  TraceSamples out;
  out.source = trace.source;
  out.device_kind = trace.DeviceKind();
  for (const ProfilerStep& step : trace.steps) out.step_numbers.push_back(step.number);
  const size_t n = trace.activities.size();
  out.activity_op.assign(n, -1);
  out.activity_transfer.assign(n, -1);
  const ConvHints hints = PairConvolutionOutputs(trace);
  std::map<int32_t, int32_t> sample_of_op;

  for (size_t i = 0; i < n; ++i) {
    const GpuActivity& a = trace.activities[i];
    const std::string link = LinkNameOf(trace, a);
    if (!link.empty()) {
      TransferSample t;
      t.link = link;
      t.time = a.duration;
      t.activity = static_cast<int32_t>(i);
      if (a.collective >= 0) {
        t.bytes = static_cast<double>(trace.collectives[static_cast<size_t>(a.collective)].bytes);
        t.has_size = t.bytes > 0.0;
      } else {
        t.bytes = static_cast<double>(a.bytes);
      }
      const double launched = a.runtime >= 0 ? trace.runtime[static_cast<size_t>(a.runtime)].start : a.start;
      t.step = StepAt(trace, launched);
      out.activity_transfer[i] = static_cast<int32_t>(out.transfers.size());
      out.transfers.push_back(std::move(t));
      continue;
    }
    const int32_t top = TopLevelOp(trace, a.op);
    if (top < 0) continue;
    auto [it, inserted] = sample_of_op.emplace(top, static_cast<int32_t>(out.ops.size()));
    if (inserted) {
      const TraceOp& op = trace.ops[static_cast<size_t>(top)];
      OpSample s;
      s.op = top;
      s.type = op.has_inputs ? SampleType(op.name, op.inputs) : op.name;
      s.op_class = graphs::ClassifyOp(op.name);
      s.has_shapes = op.has_inputs;
      if (op.has_inputs) {
        const auto hint = hints.find(top);
        const OpWork work = EstimateOpWork(op.name, op.inputs, hint == hints.end() ? nullptr : &hint->second);
        s.flops = work.flops;
        s.bytes = work.bytes;
        s.channel_extent = work.channel_extent;
        s.approximate = work.approximate || !work.known;
      }
      if (s.approximate && op.graph_flops >= 0.0 && op.graph_bytes >= 0.0) {
        // `gosim profile` records the node's exact work beside the aten
        // arguments, which lack a convolution's stride and a weight
        // gradient's kernel size (op_work.h then assumes stride 1 and kernel
        // 1: a 3x3 weight gradient came out 9x too small). Where the
        // arguments are complete they describe what ran (an equivalent
        // matmul or copy for a node without its own recipe) and are kept.
        s.flops = op.graph_flops;
        s.bytes = op.graph_bytes;
        s.approximate = false;
      }
      s.step = StepAt(trace, op.start);
      s.graph_type = op.graph_op_type;
      s.graph_flops = op.graph_flops;
      s.graph_bytes = op.graph_bytes;
      out.ops.push_back(std::move(s));
    }
    OpSample& s = out.ops[static_cast<size_t>(it->second)];
    // Under torch.autocast the top-level op (aten::linear) takes fp32
    // arguments and casts inside: the op that launched the kernel says
    // which precision ran.
    if (a.op >= 0 && a.op != top && s.type.find(" [") == std::string::npos) {
      const TraceOp& inner = trace.ops[static_cast<size_t>(a.op)];
      const TraceOp& outer = trace.ops[static_cast<size_t>(top)];
      if (inner.has_inputs && PrecisionApplies(outer.name))
        s.type += PrecisionVariant(inner.name, inner.inputs);
    }
    s.time += a.duration;
    ++s.kernels;
    out.activity_op[i] = it->second;
  }

  // Ordinals by start time within (step, type).
  std::vector<int32_t> order(out.ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
    return trace.ops[static_cast<size_t>(out.ops[static_cast<size_t>(x)].op)].start <
           trace.ops[static_cast<size_t>(out.ops[static_cast<size_t>(y)].op)].start;
  });
  std::map<std::pair<int32_t, std::string>, int32_t> counters;
  for (int32_t s : order) {
    OpSample& sample = out.ops[static_cast<size_t>(s)];
    sample.ordinal = counters[{sample.step, sample.type}]++;
  }

  // Launch costs from the gaps on each stream.
  std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> streams;
  for (size_t i = 0; i < n; ++i) {
    streams[{trace.activities[i].device, trace.activities[i].stream}].push_back(static_cast<int32_t>(i));
  }
  std::vector<double> idle_per_op(out.ops.size(), 0.0);
  std::vector<double> latencies;
  std::vector<double> queued_gaps;
  for (auto& [key, list] : streams) {
    std::sort(list.begin(), list.end(), [&](int32_t x, int32_t y) {
      return trace.activities[static_cast<size_t>(x)].start < trace.activities[static_cast<size_t>(y)].start;
    });
    for (size_t k = 1; k < list.size(); ++k) {
      const GpuActivity& prev = trace.activities[static_cast<size_t>(list[k - 1])];
      const GpuActivity& a = trace.activities[static_cast<size_t>(list[k])];
      const double gap = a.start - prev.end();
      const int32_t sample = out.activity_op[static_cast<size_t>(list[k])];
      if (sample >= 0 && gap > 0.0 && gap <= kStallGap) idle_per_op[static_cast<size_t>(sample)] += gap;
      if (a.runtime >= 0) {
        const RuntimeCall& call = trace.runtime[static_cast<size_t>(a.runtime)];
        if (a.kind == ActivityKind::kKernel && prev.end() <= call.start && a.start >= call.start) {
          latencies.push_back(a.start - call.start);
        }
        if (call.start < prev.end() && gap >= 0.0 && gap <= kStallGap) queued_gaps.push_back(gap);
      }
    }
  }
  double idle_sum = 0.0;
  int64_t idle_count = 0;
  for (size_t s = 0; s < out.ops.size(); ++s) {
    if (out.ops[s].step < 0) continue;
    idle_sum += idle_per_op[s];
    ++idle_count;
  }
  out.launch_overhead = idle_count > 0 ? idle_sum / static_cast<double>(idle_count) : 0.0;
  double kernel_seconds = 0.0, step_seconds = 0.0;
  for (const OpSample& s : out.ops) {
    if (s.step >= 0) kernel_seconds += s.time;
  }
  for (const ProfilerStep& step : trace.steps) step_seconds += step.duration;
  out.gpu_busy_fraction = step_seconds > 0.0 ? kernel_seconds / step_seconds : 0.0;
  out.launch_latency = Median(latencies);
  out.launch_samples = static_cast<int64_t>(latencies.size());
  out.kernel_gap = Median(queued_gaps);
  FitCpuSide(trace, &out);
  out.host = ExtractHostSamples(trace);
  return out;
}

void RequireKnownDeviceKind(const TraceSamples& samples, const std::string& option) {
  if (samples.device_kind != "gpu") return;
  throw TraceError("the trace does not name the GPU it ran on (no deviceProperties entry with a known name)",
                   Location{samples.source},
                   "give " + option + " KIND, a device kind of configs/clusters (e.g. V100, A100, H100)");
}

TraceSamples MergeSamples(const std::vector<TraceSamples>& parts) {
  if (parts.size() == 1) return parts.front();
  TraceSamples out;
  double overhead = 0.0, latency = 0.0, gap = 0.0, ops = 0.0, launches = 0.0;
  // launch_overhead from the GPU-bound parts when there are any: the
  // simulator models the GPU, and a host-bound trace's stream gaps are the
  // host's pace (33 us per op over the 18 H200 traces, 2 us over the
  // GPU-bound ones).
  const bool any_gpu_bound = std::any_of(
      parts.begin(), parts.end(), [](const TraceSamples& p) { return p.gpu_busy_fraction >= kGpuBound; });
  double busy_sum = 0.0, busy_weight = 0.0;  // step-weighted mean of the parts' busy fractions
  int32_t step_offset = 0;
  for (const TraceSamples& p : parts) {
    if (out.device_kind.empty()) out.device_kind = p.device_kind;
    if (p.device_kind != out.device_kind) {
      throw TraceError(
          "the traces are of different device kinds ('" + out.device_kind + "' and '" + p.device_kind + "')",
          Location{p.source}, "fit one profile per device kind");
    }
    out.source += (out.source.empty() ? "" : "+") + std::filesystem::path(p.source).filename().string();
    out.step_numbers.insert(out.step_numbers.end(), p.step_numbers.begin(), p.step_numbers.end());
    for (OpSample s : p.ops) {
      s.op = -1;
      if (s.step >= 0) s.step += step_offset;
      out.ops.push_back(std::move(s));
    }
    for (TransferSample t : p.transfers) {
      t.activity = -1;
      if (t.step >= 0) t.step += step_offset;
      out.transfers.push_back(std::move(t));
    }
    step_offset += static_cast<int32_t>(p.step_numbers.size());
    const auto in_steps = static_cast<double>(
        std::count_if(p.ops.begin(), p.ops.end(), [](const OpSample& s) { return s.step >= 0; }));
    if (!any_gpu_bound || p.gpu_busy_fraction >= kGpuBound) {
      overhead += p.launch_overhead * in_steps;
      ops += in_steps;
    }
    const double steps = static_cast<double>(p.step_numbers.size());
    busy_sum += p.gpu_busy_fraction * steps;
    busy_weight += steps;
    latency += p.launch_latency * static_cast<double>(p.launch_samples);
    gap += p.kernel_gap * static_cast<double>(p.launch_samples);
    out.cpu_rows.insert(out.cpu_rows.end(), p.cpu_rows.begin(), p.cpu_rows.end());
    AppendHostSamples(p.host, &out.host);
    launches += static_cast<double>(p.launch_samples);
    out.launch_samples += p.launch_samples;
  }
  out.launch_overhead = ops > 0.0 ? overhead / ops : 0.0;
  out.gpu_busy_fraction = busy_weight > 0.0 ? busy_sum / busy_weight : 0.0;
  out.launch_latency = launches > 0.0 ? latency / launches : 0.0;
  out.kernel_gap = launches > 0.0 ? gap / launches : 0.0;
  return out;
}

}  // namespace gosim::calibration
