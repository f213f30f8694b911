// BuildStepGraph: the dependency graph of one profiler step (replay.h).
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "calibration/accuracy.h"
#include "calibration/fit.h"
#include "calibration/replay.h"
#include "core/strings.h"
#include "graphs/graph_builder.h"

namespace gosim::calibration {
namespace {

// Slack for comparing measured times (timestamps are often whole microseconds).
constexpr double kTolerance = 1.0e-6;
constexpr const char* kReplayKind = "replay";

bool IsDeviceSync(const std::string& name) {
  return name == "cudaDeviceSynchronize" || name == "cudaFree";
}
bool IsStreamSync(const std::string& name) {
  return name == "cudaStreamSynchronize" || name == "cudaEventSynchronize";
}

class StepGraphBuilder {
 public:
  StepGraphBuilder(const Trace& trace, const TraceSamples& samples, int32_t step,
                   const sim::DeviceProfile* profile, const ReplayOptions& options)
      : trace_(trace),
        samples_(samples),
        step_(trace.steps[static_cast<size_t>(step)]),
        profile_(profile),
        options_(options),
        builder_("step_" + std::to_string(trace.steps[static_cast<size_t>(step)].number), trace.source) {}

  StepGraph Build() {
    CollectCalls();
    AddGpuNodes();
    AddCpuNodes();
    AddCrossStreamEdges();
    return Finish();
  }

 private:
  struct NodeInfo {
    int32_t device;
    double start;  // measured interval
    double end;
    bool gpu;
  };

  // ---- collection ----
  void CollectCalls() {
    const double s = step_.start;
    const double e = step_.end();
    for (size_t i = 0; i < trace_.runtime.size(); ++i) {
      const RuntimeCall& c = trace_.runtime[i];
      if (c.start >= s && c.start < e) calls_by_thread_[c.thread].push_back(static_cast<int32_t>(i));
    }
    if (calls_by_thread_.empty()) {
      // A trace without runtime calls (`gosim profile` on CPU devices): the
      // step's device activities alone, in stream order.
      for (size_t i = 0; i < trace_.activities.size(); ++i) {
        const GpuActivity& a = trace_.activities[i];
        if (a.runtime < 0 && a.start >= s && a.start < e) step_activities_.push_back(static_cast<int32_t>(i));
      }
      if (step_activities_.empty()) {
        throw TraceError(
            "step " + std::to_string(step_.number) +
                " has no CUDA runtime calls and no device activities to replay",
            Location{trace_.source},
            "replay needs a GPU trace with runtime events (cuda_runtime) or a gosim profile trace");
      }
      activity_only_ = true;
      return;
    }
    for (auto& [thread, calls] : calls_by_thread_) {
      std::sort(calls.begin(), calls.end(),
                [&](int32_t a, int32_t b) { return Call(a).start < Call(b).start; });
      for (int32_t c : calls) in_step_call_.insert(c);
    }
    for (const TraceOp& op : trace_.ops) {
      if (!op.annotation && op.start >= s && op.start < e) {
        op_starts_[op.thread].push_back(op.start);
        if (IsTopLevelOp(trace_.ops, op)) top_op_starts_[op.thread].push_back(op.start);
      }
    }
    for (auto& [thread, starts] : op_starts_) std::sort(starts.begin(), starts.end());
    for (auto& [thread, starts] : top_op_starts_) std::sort(starts.begin(), starts.end());
    for (size_t i = 0; i < trace_.activities.size(); ++i) {
      const GpuActivity& a = trace_.activities[i];
      if (a.runtime >= 0 && in_step_call_.count(a.runtime)) {
        activities_of_call_[a.runtime].push_back(static_cast<int32_t>(i));
        step_activities_.push_back(static_cast<int32_t>(i));
      }
    }
    for (const GpuSync& sync : trace_.syncs) {
      if (sync.kind == "Stream Wait Event") {
        has_wait_events_ = true;
        wait_syncs_.push_back(&sync);
      } else if (sync.correlation >= 0) {
        sync_by_correlation_[sync.correlation] = &sync;
      }
    }
    for (size_t i = 0; i < trace_.runtime.size(); ++i) {
      if (trace_.runtime[i].correlation >= 0)
        call_by_correlation_[trace_.runtime[i].correlation] = static_cast<int32_t>(i);
    }
  }

  const RuntimeCall& Call(int32_t c) const { return trace_.runtime[static_cast<size_t>(c)]; }
  const GpuActivity& Act(int32_t a) const { return trace_.activities[static_cast<size_t>(a)]; }
  double LaunchTime(int32_t a) const { return Call(Act(a).runtime).start; }

  int32_t Device(const std::string& name) {
    const auto it = device_index_.find(name);
    if (it != device_index_.end()) return it->second;
    const int32_t d = static_cast<int32_t>(device_names_.size());
    device_names_.push_back(name);
    device_index_.emplace(name, d);
    return d;
  }

  int32_t AddNode(const std::string& op, int32_t device, double seconds, double start, double end) {
    return AddNode(op, device, seconds, start, end, false);
  }
  int32_t AddNode(const std::string& op, int32_t device, double seconds, double start, double end, bool gpu) {
    graphs::NodeSpec spec;
    spec.name = "n" + std::to_string(nodes_.size());
    spec.op = op;
    spec.measured.push_back({kReplayKind, std::max(0.0, seconds)});
    builder_.AddNode(std::move(spec));
    nodes_.push_back({device, start, end, gpu});
    return static_cast<int32_t>(nodes_.size() - 1);
  }

  void AddEdge(int32_t src, int32_t dst, int64_t* counter) {
    if (src < 0 || dst < 0 || src == dst) return;
    if (!edge_set_.insert({src, dst}).second) return;
    builder_.AddControlEdge(src, dst);
    ++*counter;
  }

  // An inferred edge must agree with the measured times.
  void AddCheckedEdge(int32_t src, int32_t dst, int64_t* counter) {
    if (src < 0 || dst < 0) return;
    if (nodes_[static_cast<size_t>(src)].end > nodes_[static_cast<size_t>(dst)].start + kTolerance) {
      ++edges_.dropped;
      return;
    }
    AddEdge(src, dst, counter);
  }

  // ---- GPU ----
  // The back-to-back kernel gap: the target's own when replaying, the
  // profile's when predicting.
  // Without runtime calls the profile's launch overhead is the per-op cost
  // between kernels (the executor's own).
  double Gap() const {
    if (!options_.predict_cpu) return samples_.kernel_gap;
    return activity_only_ ? profile_->launch_overhead : profile_->kernel_gap;
  }

  // Operators of `thread` (all, or the top-level ones) that start in [lo, hi).
  double OpsIn(int32_t thread, double lo, double hi, bool top_level = false) const {
    const auto& starts = top_level ? top_op_starts_ : op_starts_;
    const auto it = starts.find(thread);
    if (it == starts.end()) return 0.0;
    const auto& v = it->second;
    return static_cast<double>(std::lower_bound(v.begin(), v.end(), hi) -
                               std::lower_bound(v.begin(), v.end(), lo));
  }

  // The profile's CPU cost of the operators of `thread` starting in [lo, hi).
  double OpsCost(int32_t thread, double lo, double hi) const {
    return profile_->cpu->per_op * OpsIn(thread, lo, hi) +
           profile_->cpu->per_top_op * OpsIn(thread, lo, hi, true);
  }

  // A CPU node's seconds: measured, or (predicting) for the first node of a
  // call the profile's cost per call plus its cost per operator dispatched on
  // the thread since the previous call ([lo, hi)), nothing for the rest.
  double Cpu(double measured, bool first_of_call, int32_t thread = -1, double lo = 0.0,
             double hi = 0.0) const {
    if (!options_.predict_cpu) return measured;
    if (!profile_->cpu) {
      throw ConfigError(
          "the profile for " + profile_->device_kind + " has no cpu fit, so it cannot predict a step", {},
          "refit it with gosim calibrate --out (this version writes cpu: {per_call, per_op})");
    }
    if (!first_of_call) return 0.0;
    return profile_->cpu->per_call + OpsCost(thread, lo, hi);
  }

  double PredictedDuration(int32_t a, double next_start) {
    const GpuActivity& act = Act(a);
    // Without runtime calls, a measured activity lasts until the next one
    // starts (its idle time after it included), so that the stream's nodes
    // add up to the step.
    if (options_.measured_gpu && activity_only_) return next_start - act.start;
    if (options_.measured_gpu) return act.duration + samples_.kernel_gap;
    const int32_t op = samples_.activity_op[static_cast<size_t>(a)];
    if (op >= 0) {
      const OpSample& s = samples_.ops[static_cast<size_t>(op)];
      return PredictSample(*profile_, s, options_.scale) / std::max(1, s.kernels) + Gap();
    }
    const int32_t t = samples_.activity_transfer[static_cast<size_t>(a)];
    if (t >= 0) {
      const TransferSample& x = samples_.transfers[static_cast<size_t>(t)];
      return options_.scale.link * PredictTransfer(*profile_, x.link, x.has_size ? x.bytes : 0.0) + Gap();
    }
    ++unpredicted_;
    return profile_->fallback.Time(0.0, 0.0) + Gap();
  }

  void AddGpuNodes() {
    std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> streams;
    for (int32_t a : step_activities_) streams[{Act(a).device, Act(a).stream}].push_back(a);
    for (auto& [key, list] : streams) {
      std::sort(list.begin(), list.end(), [&](int32_t x, int32_t y) {
        if (Act(x).start != Act(y).start) return Act(x).start < Act(y).start;
        return x < y;
      });
      const int32_t device = Device("gpu" + std::to_string(key.first) + "_s" + std::to_string(key.second));
      int32_t previous = -1;
      for (size_t k = 0; k < list.size(); ++k) {
        const int32_t a = list[k];
        const GpuActivity& act = Act(a);
        const double next_start = k + 1 < list.size() ? Act(list[k + 1]).start
                                                      : step_.end() + (Act(list.front()).start - step_.start);
        const double seconds = PredictedDuration(a, next_start);
        measured_gpu_ += act.duration;
        predicted_gpu_ += options_.measured_gpu ? act.duration : seconds - Gap();
        gpu_end_ = std::max(gpu_end_, act.end());
        const int32_t node = AddNode(act.kind == ActivityKind::kKernel   ? "gpu:kernel"
                                     : act.kind == ActivityKind::kMemcpy ? "gpu:memcpy"
                                                                         : "gpu:memset",
                                     device, seconds, act.start, act.end(), true);
        activity_node_[a] = node;
        AddEdge(previous, node, &edges_.stream_order);
        previous = node;
        ++gpu_nodes_;
        last_end_ = std::max(last_end_, act.end());
      }
      stream_lists_[key] = list;
    }
  }

  // The last activity on (device, stream) launched before `time` (or by `call`).
  int32_t LastLaunchedBefore(const std::pair<int32_t, int32_t>& stream, double time, int32_t call) const {
    const auto it = stream_lists_.find(stream);
    if (it == stream_lists_.end()) return -1;
    int32_t best = -1;
    for (int32_t a : it->second) {
      if (LaunchTime(a) < time || Act(a).runtime == call) {
        if (best < 0 || Act(a).start > Act(best).start) best = a;
      }
    }
    return best;
  }

  // GPU activities a blocking call waits for (the last one per awaited stream).
  std::vector<int32_t> Awaited(int32_t c) const {
    const RuntimeCall& call = Call(c);
    std::vector<std::pair<int32_t, int32_t>> streams;
    bool all = IsDeviceSync(call.name);
    if (IsStreamSync(call.name)) {
      const auto sync = sync_by_correlation_.find(call.correlation);
      if (sync != sync_by_correlation_.end() && sync->second->stream >= 0) {
        for (const auto& [key, list] : stream_lists_) {
          if (key.second == sync->second->stream) streams.push_back(key);
        }
      } else {
        all = true;
      }
    }
    if (all) {
      for (const auto& [key, list] : stream_lists_) streams.push_back(key);
    }
    const auto own = activities_of_call_.find(c);
    if (StartsWith(call.name, "cudaMemcpy") && own != activities_of_call_.end()) {
      for (int32_t a : own->second) {
        const GpuActivity& act = Act(a);
        const bool blocking = act.kind == ActivityKind::kMemcpy &&
                              (act.copy == CopyKind::kDtoH || act.pageable || call.name == "cudaMemcpy");
        if (blocking) streams.emplace_back(act.device, act.stream);
      }
    }
    std::vector<int32_t> out;
    for (const auto& key : streams) {
      const int32_t a = LastLaunchedBefore(key, call.start, c);
      if (a >= 0 && Act(a).end() <= call.end() + kTolerance) out.push_back(a);
    }
    return out;
  }

  // ---- CPU ----
  // The call on another thread than `thread` with the latest end in (lo, hi].
  int32_t LatestOtherCall(int32_t thread, double lo, double hi) const {
    int32_t best = -1;
    for (const auto& [t, calls] : calls_by_thread_) {
      if (t == thread) continue;
      for (int32_t c : calls) {
        const double end = Call(c).end();
        if (end > lo && end <= hi && (best < 0 || end > Call(best).end())) best = c;
      }
    }
    return best;
  }

  void AddCpuNodes() {
    struct Pending {
      int32_t node;
      int32_t call;  // the other thread's call this node waits for
    };
    std::vector<Pending> cross;
    for (const auto& [thread, calls] : calls_by_thread_) {
      const int32_t device = Device("cpu_" + trace_.threads[static_cast<size_t>(thread)].tid);
      const bool main = thread == step_.thread;
      double previous_end = step_.start;
      int32_t previous = -1;
      for (size_t k = 0; k < calls.size(); ++k) {
        const int32_t c = calls[k];
        const RuntimeCall& call = Call(c);
        double segment_start = previous_end;
        int32_t waits_for = -1;
        const bool first_elsewhere = k == 0 && !main;
        if (first_elsewhere || call.start - previous_end >= options_.cross_thread_gap) {
          waits_for =
              LatestOtherCall(thread, first_elsewhere ? step_.start - kTolerance : previous_end, call.start);
          if (waits_for >= 0) segment_start = std::max(segment_start, Call(waits_for).end());
        }
        const std::vector<int32_t> awaited = Awaited(c);
        const auto own = activities_of_call_.find(c);
        double launch_point = call.end();
        if (own != activities_of_call_.end()) {
          for (int32_t a : own->second)
            launch_point = std::min(launch_point, std::max(call.start, Act(a).start));
        }
        const std::string op = "cpu:" + call.name;
        int32_t entry = -1;  // first node of the call, chained after `previous`
        int32_t exit = -1;   // last node of the call
        if (!awaited.empty()) {
          // The CPU time up to the call, then a wait for the GPU and the
          // measured residual after the last awaited activity ended.
          entry = AddNode(op, device, Cpu(call.start - segment_start, true, thread, previous_end, call.end()),
                          segment_start, call.start);
          double last = call.start;
          for (int32_t a : awaited) last = std::max(last, Act(a).end());
          const double residual = std::clamp(call.end() - last, 0.0, call.duration);
          exit = AddNode("cpu:wait", device, Cpu(residual, false), call.end() - residual, call.end());
          AddEdge(entry, exit, &edges_.cpu_order);
          for (int32_t a : awaited) AddCheckedEdge(activity_node_.at(a), exit, &edges_.sync);
        } else if (launch_point < call.end()) {
          // The kernel started before the call returned: it was ready then.
          entry =
              AddNode(op, device, Cpu(launch_point - segment_start, true, thread, previous_end, call.end()),
                      segment_start, launch_point);
          exit = AddNode(op, device, Cpu(call.end() - launch_point, false), launch_point, call.end());
          AddEdge(entry, exit, &edges_.cpu_order);
        } else {
          entry = exit =
              AddNode(op, device, Cpu(call.end() - segment_start, true, thread, previous_end, call.end()),
                      segment_start, call.end());
        }
        cpu_nodes_ += entry == exit ? 1 : 2;
        AddEdge(previous, entry, &edges_.cpu_order);
        if (waits_for >= 0) cross.push_back({entry, waits_for});
        end_node_of_call_[c] = exit;
        if (own != activities_of_call_.end()) {
          for (int32_t a : own->second) AddEdge(entry, activity_node_.at(a), &edges_.launch);
        }
        previous = exit;
        previous_end = call.end();
        last_end_ = std::max(last_end_, call.end());
      }
      if (main && (step_.end() > previous_end || options_.predict_cpu)) {
        const double tail_seconds =
            options_.predict_cpu ? OpsCost(thread, previous_end, step_.end()) : step_.end() - previous_end;
        const int32_t tail = AddNode("cpu:tail", device, tail_seconds, previous_end, step_.end());
        AddEdge(previous, tail, &edges_.cpu_order);
        ++cpu_nodes_;
      }
    }
    for (const Pending& p : cross) AddCheckedEdge(end_node_of_call_.at(p.call), p.node, &edges_.cross_thread);
  }

  // ---- cross-stream ----
  void AddCrossStreamEdges() {
    if (has_wait_events_) {
      for (const GpuSync* sync : wait_syncs_) {
        const auto wait_call = call_by_correlation_.find(sync->correlation);
        const auto record_call = call_by_correlation_.find(sync->record_correlation);
        if (wait_call == call_by_correlation_.end() || record_call == call_by_correlation_.end()) continue;
        if (!in_step_call_.count(wait_call->second)) continue;
        const double record_time = Call(record_call->second).start;
        const double wait_time = Call(wait_call->second).start;
        int32_t source = -1;
        int32_t waiter = -1;
        for (const auto& [key, list] : stream_lists_) {
          if (key.second == sync->wait_on_stream) {
            const int32_t a = LastLaunchedBefore(key, record_time, -1);
            if (a >= 0 && (source < 0 || Act(a).start > Act(source).start)) source = a;
          }
          if (key.second == sync->stream) {
            for (int32_t a : list) {
              if (LaunchTime(a) >= wait_time && (waiter < 0 || LaunchTime(a) < LaunchTime(waiter)))
                waiter = a;
            }
          }
        }
        if (source >= 0 && waiter >= 0 && Act(source).stream != Act(waiter).stream) {
          AddCheckedEdge(activity_node_.at(source), activity_node_.at(waiter), &edges_.cross_stream);
        }
      }
      return;
    }
    // Without cuda_sync records: cudaEventRecord then cudaStreamWaitEvent on
    // one thread; the event marks the last activity that thread launched.
    for (const auto& [thread, calls] : calls_by_thread_) {
      std::vector<int32_t> launched;  // this thread's activities in launch order
      for (int32_t c : calls) {
        const auto own = activities_of_call_.find(c);
        if (own != activities_of_call_.end())
          launched.insert(launched.end(), own->second.begin(), own->second.end());
      }
      int32_t recorded = -1;  // activity marked by the latest cudaEventRecord
      size_t next = 0;        // first activity launched after the current call
      for (size_t k = 0; k < calls.size(); ++k) {
        const RuntimeCall& call = Call(calls[k]);
        while (next < launched.size() && LaunchTime(launched[next]) < call.start) ++next;
        if (call.name == "cudaEventRecord") {
          recorded = next > 0 ? launched[next - 1] : -1;
        } else if (call.name == "cudaStreamWaitEvent" && next < launched.size()) {
          const int32_t waiter = launched[next];
          // Without a recorded event (some traces omit cudaEventRecord), the
          // latest activity launched on another stream before the wait.
          int32_t source = recorded;
          if (source < 0 || Act(source).stream == Act(waiter).stream) {
            source = -1;
            for (int32_t a : step_activities_) {
              if (Act(a).stream == Act(waiter).stream || LaunchTime(a) >= call.start) continue;
              if (source < 0 || LaunchTime(a) > LaunchTime(source)) source = a;
            }
          }
          if (source >= 0 && Act(waiter).stream != Act(source).stream) {
            source = LatestConsistent(source, waiter, call.start);
            AddCheckedEdge(activity_node_.at(source), activity_node_.at(waiter), &edges_.cross_stream);
          }
        }
      }
    }
  }

  // Without the event's own record the guessed source (the last activity
  // the thread launched, or the latest on another stream) may have run after
  // the waiter started: then the wait was on earlier work of that stream, and
  // the latest activity of it launched before the wait and ended by the
  // waiter's start stands for it (rather than no edge, which let the waiter's
  // stream run ahead in the replay: recsys -5.9%).
  int32_t LatestConsistent(int32_t source, int32_t waiter, double wait_time) const {
    if (Act(source).end() <= Act(waiter).start + kTolerance) return source;
    const auto it = stream_lists_.find({Act(source).device, Act(source).stream});
    if (it == stream_lists_.end()) return source;
    int32_t best = source;
    for (int32_t a : it->second) {
      if (LaunchTime(a) >= wait_time || Act(a).end() > Act(waiter).start + kTolerance) continue;
      if (best == source || Act(a).end() > Act(best).end()) best = a;
    }
    return best;
  }

  StepGraph Finish() {
    StepGraph out;
    sim::ClusterBuilder cluster("replay_step_" + std::to_string(step_.number), trace_.source);
    for (const std::string& name : device_names_) {
      sim::DeviceSpec spec;
      spec.name = name;
      spec.kind = kReplayKind;
      spec.peak_flops_fp32 = 1.0e12;
      spec.memory_bandwidth = 1.0e12;
      spec.memory_capacity = int64_t{1} << 50;
      cluster.AddDevice(spec);
    }
    for (int32_t d = 0; d < static_cast<int32_t>(device_names_.size()); ++d) {
      for (const auto& [src, dst] :
           {std::make_pair(d, sim::Cluster::kHost), std::make_pair(sim::Cluster::kHost, d)}) {
        sim::LinkSpec link;
        link.src = src;
        link.dst = dst;
        link.bandwidth = 1.0e12;
        cluster.AddLink(link);
      }
    }
    out.cluster = cluster.Build();
    out.graph = builder_.Build();
    out.decision.placement.assign(static_cast<size_t>(out.graph.num_nodes()), 0);
    out.gpu_node.assign(static_cast<size_t>(out.graph.num_nodes()), false);
    out.node_start.assign(static_cast<size_t>(out.graph.num_nodes()), 0.0);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const auto id = out.graph.FindNode("n" + std::to_string(i));
      out.decision.placement[static_cast<size_t>(*id)] = nodes_[i].device;
      out.gpu_node[static_cast<size_t>(*id)] = nodes_[i].gpu;
      out.node_start[static_cast<size_t>(*id)] = nodes_[i].start;
    }
    out.step_number = step_.number;
    out.measured_time = MeasuredPeriod(trace_, step_);
    out.measured_drain = std::max(last_end_, step_.end()) - step_.start;
    out.measured_gpu_end = gpu_end_ > 0.0 ? gpu_end_ - step_.start : 0.0;
    out.measured_gpu = measured_gpu_;
    out.predicted_gpu = predicted_gpu_;
    out.cpu_nodes = cpu_nodes_;
    out.gpu_nodes = gpu_nodes_;
    out.unpredicted = unpredicted_;
    out.edges = edges_;
    return out;
  }

  const Trace& trace_;
  const TraceSamples& samples_;
  const ProfilerStep& step_;
  const sim::DeviceProfile* profile_;
  const ReplayOptions& options_;
  graphs::GraphBuilder builder_;
  std::vector<NodeInfo> nodes_;
  std::set<std::pair<int32_t, int32_t>> edge_set_;
  std::vector<std::string> device_names_;
  std::map<std::string, int32_t> device_index_;
  std::map<int32_t, std::vector<int32_t>> calls_by_thread_;
  std::map<int32_t, std::vector<double>> op_starts_;      // per thread: operator starts in the step
  std::map<int32_t, std::vector<double>> top_op_starts_;  // the same, top-level operators only
  std::set<int32_t> in_step_call_;
  std::map<int32_t, std::vector<int32_t>> activities_of_call_;
  std::vector<int32_t> step_activities_;
  std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> stream_lists_;
  std::map<int32_t, int32_t> activity_node_;
  std::map<int32_t, int32_t> end_node_of_call_;
  std::map<int64_t, const GpuSync*> sync_by_correlation_;
  std::map<int64_t, int32_t> call_by_correlation_;
  std::vector<const GpuSync*> wait_syncs_;
  bool has_wait_events_ = false;
  bool activity_only_ = false;  // no runtime calls in the step (see CollectCalls)
  EdgeCounts edges_;
  double measured_gpu_ = 0.0;
  double predicted_gpu_ = 0.0;
  double last_end_ = 0.0;
  double gpu_end_ = 0.0;
  int32_t cpu_nodes_ = 0;
  int32_t gpu_nodes_ = 0;
  int32_t unpredicted_ = 0;
};

}  // namespace

double MeasuredPeriod(const Trace& trace, const ProfilerStep& step) {
  // The next step annotation on the same thread that starts at or after this
  // one ends (steps are in time order); else the annotation's own span.
  for (const ProfilerStep& next : trace.steps) {
    if (next.thread == step.thread && next.start >= step.end() - kTolerance && next.start > step.start &&
        next.start - step.end() < 0.5 * step.duration) {
      return next.start - step.start;
    }
  }
  return step.duration;
}

StepGraph BuildStepGraph(const Trace& trace, const TraceSamples& samples, int32_t step,
                         const sim::DeviceProfile* profile, const ReplayOptions& options) {
  if (step < 0 || step >= static_cast<int32_t>(trace.steps.size())) {
    throw ConfigError("step index " + std::to_string(step) + " is out of range (the trace has " +
                          std::to_string(trace.steps.size()) + " steps)",
                      {}, "choose a step of the trace");
  }
  if (profile == nullptr && !options.measured_gpu) {
    throw ConfigError("replay needs a device profile unless GPU times are measured", {}, "");
  }
  if (options.predict_cpu && (profile == nullptr || options.measured_gpu)) {
    throw ConfigError("prediction needs a device profile and predicted GPU times", {}, "");
  }
  return StepGraphBuilder(trace, samples, step, profile, options).Build();
}

}  // namespace gosim::calibration
