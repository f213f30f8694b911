// The event loop. One Run is one simulation of one decision in one
// Workspace. Run<kFull = true> also records every kernel and hop with the
// cause of its start time (for the critical path, the timeline and the
// out-of-memory report); Run<false, ...> is the lean path of Evaluate.
// kFusion selects the node -> task mapping of fused groups (without fusion a
// task is its node, and the mapping costs nothing). kHost adds the host
// threads that dispatch every task before its kernel can start
// (docs/SIMULATOR.md, "The host"): a task then waits for its launch as for
// one more input, and under eager and captured execution also for the task
// launched before it on its device (a CUDA stream runs in launch order).
//
// Time advances in instants: all events at time t are handled first (kernels
// and hops end: memory is freed, successors become ready, transfers are
// queued), then idle devices and links pick their next work in a fixed order
// (devices by index, then links by the service order of their head
// transfers). Hence frees precede allocations at one instant, and a ready
// queue sees every task that became ready at t before choosing.
#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "core/error.h"
#include "sim/engine.h"

namespace gosim::sim {
namespace {

template <typename T>
void Fill(std::vector<T>& v, size_t n, T value) {
  v.assign(n, value);  // keeps capacity: no allocation once warmed up
}

}  // namespace

template <bool kFull, bool kFusion, bool kHost>
class Run {
 public:
  Run(const Engine& engine, const Decision& decision, Workspace& ws)
      : e_(engine), m_(engine.model_), opt_(engine.options_), dec_(decision), ws_(ws) {}

  // Cause codes (full runs): a task id, num_nodes + a hop record, or a host
  // record as -2 - record; -1 = none.
  static int32_t HostCause(int32_t record) { return -2 - record; }

  RunOutcome Execute() {
    CheckDecision(dec_, m_, e_.graph_, /*check_devices=*/false);  // Setup checks the devices
    assert(kFusion == dec_.has_fusion());
    Setup();
    if (!out_.stopped) Loop();
    if (!out_.stopped && tasks_done_ != tasks_total_ && gate_ != nullptr) {
      for (const ServiceQueue& parked : ws_.gate_parked) {
        if (!parked.empty()) {
          throw DecisionError("kernels of the pipeline wait for gates that never open", {},
                              "please report this graph and placement (sim/pipeline.cc sets the gates)");
        }
      }
    }
    if (!out_.stopped && tasks_done_ != tasks_total_) {
      throw DecisionError(std::to_string(tasks_total_ - tasks_done_) + " of " + std::to_string(tasks_total_) +
                              " kernels never became ready",
                          {}, "a fusion group is not convex: a path leaves the group and comes back into it");
    }
#ifndef NDEBUG
    if (!out_.stopped) {  // a complete run leaves nothing behind
      for (int32_t d = 0; d < nd_; ++d) {
        assert(ready_[d].empty() && running_[d] < 0);
        if (comm_ != nullptr) assert(ready_[d + nd_].empty() && running_[d + nd_] < 0);
        assert(!track_ || mem_[d] == ws_.persistent[d]);
      }
      for (int32_t l = 0; l < m_.num_links; ++l) assert(link_queue_[l].empty() && !link_busy_[l]);
    }
#endif
    out_.makespan = now_;
    out_.fusion = kFusion;
    if constexpr (kHost) {
      for (const double busy : ws_.thread_busy) out_.host_busy = std::max(out_.host_busy, busy);
      out_.host_processes = nproc_;
    }
    return std::move(out_);
  }

 private:
  using TaskState = Workspace::TaskState;
  using CopyState = Workspace::CopyState;
  using Transfer = Workspace::Transfer;

  // ---- setup -------------------------------------------------------------
  void Setup() {
    const int32_t n = m_.num_nodes;
    nd_ = m_.num_devices;
    comm_ = m_.has_comm ? m_.comm.data() : nullptr;
    nlanes_ = comm_ != nullptr ? 2 * nd_ : nd_;
    track_ = opt_.track_memory;
    reuse_ = opt_.reuse_transfers;
    stop_at_oom_ = opt_.stop_at_oom && opt_.infeasible_step_time > 0.0;
    xprio_ = dec_.has_transfer_priority() ? dec_.transfer_priority.data() : nullptr;
    tprio_ = dec_.has_priority() ? dec_.priority.data() : nullptr;
    tasks_total_ = n;

    // One pass over the placement: device check, per-task state, persistent bytes.
    ws_.tasks.resize(n);
    tasks_ = ws_.tasks.data();
    const int32_t* place = dec_.placement.data();
    const int32_t nc = m_.num_classes;
    const double* op_time = m_.op_time.data();
    const int32_t* device_class = m_.device_class.data();
    const int32_t* deps = m_.deps.data();
    const int64_t* node_persistent = m_.persistent.data();
    Fill(ws_.persistent, nd_, int64_t{0});
    int64_t* persistent = ws_.persistent.data();
    for (int32_t v = 0; v < n; ++v) {
      const int32_t d = place[v];
      if (static_cast<uint32_t>(d) >= static_cast<uint32_t>(nd_)) [[unlikely]] {
        CheckDecision(dec_, m_, e_.graph_);  // throws the DecisionError naming the node
      }
      // One device class (identical devices, the usual case): no class lookup.
      const double time = nc == 1 ? op_time[v] : op_time[static_cast<size_t>(v) * nc + device_class[d]];
      tasks_[v] = TaskState{time, deps[v] + (kHost ? 1 : 0), d};  // kHost: the launch is one more input
      persistent[d] += node_persistent[v];
    }
    if constexpr (kFusion) BuildGroups();
    if (dec_.has_gates()) SetupGates();

    // Every entry of these is written before it is read in a run.
    ws_.copies.resize(static_cast<size_t>(m_.num_tensors));
    ws_.in_copy.resize(m_.inputs.size());
    if (track_ && m_.has_alias) Fill(ws_.held, n, 0);
    ws_.seen_transfer.resize(nd_);
    Fill(ws_.seen, nd_, 0);
    Fill(ws_.mem, nd_, int64_t{0});
    Fill(ws_.peak, nd_, int64_t{0});
    Fill(ws_.running, nlanes_, -1);
    Fill(ws_.dirty_device_words, (static_cast<size_t>(nlanes_) + 63) / 64, uint64_t{0});
    dirty_summary_ = 0;
    assert(nlanes_ <= 64 * 64);  // a summary bit per word (ClusterBuilder allows 1024 devices)
    ws_.ready.resize(nlanes_);
    for (auto& q : ws_.ready) q.Clear();
    const int32_t nl = m_.num_links, nr = m_.num_resources;
    Fill(ws_.link_busy, nl, uint8_t{0});
    Fill(ws_.link_dirty, nl, uint8_t{0});
    ws_.dirty_links.resize(nl);
    ws_.link_heads.reserve(nl);
    num_dirty_links_ = 0;
    ws_.link_queue.resize(nl);
    for (auto& q : ws_.link_queue) q.Clear();
    Fill(ws_.res_busy, nr, uint8_t{0});
    ws_.transfers.clear();
    ws_.events.Clear();
    ws_.events.Reserve(static_cast<size_t>(nlanes_ + nl) + 1);
    if constexpr (kFull) {
      Fill(ws_.busy, nd_, 0.0);
      Fill(ws_.comm_busy, nd_, 0.0);
      Fill(ws_.kernels, nd_, 0);
      Fill(ws_.link_busy_time, nl, 0.0);
      Fill(ws_.link_bytes, nl, int64_t{0});
      Fill(ws_.link_hops, nl, 0);
      Fill(ws_.res_busy_time, nr, 0.0);
      Fill(ws_.res_bytes, nr, int64_t{0});
      Fill(ws_.res_hops, nr, 0);
      Fill(ws_.data_cause, n, -1);
      Fill(ws_.ready_time, n, 0.0);
      Fill(ws_.op_rec_of, n, -1);
      Fill(ws_.last_task, nlanes_, -1);
      Fill(ws_.link_last_hop, nl, -1);
      Fill(ws_.res_last_hop, nr, -1);
      Fill(ws_.live, static_cast<size_t>(m_.NumCopies()), 0);
      ws_.op_recs.clear();
      ws_.hop_recs.clear();
    }
    // Raw views of the per-run arrays (sized above; none is resized during the run).
    running_ = ws_.running.data();
    dirty_words_ = ws_.dirty_device_words.data();
    mem_ = ws_.mem.data();
    peak_ = ws_.peak.data();
    copies_ = ws_.copies.data();
    held_ = ws_.held.data();
    in_copy_ = ws_.in_copy.data();
    seen_ = ws_.seen.data();
    seen_transfer_ = ws_.seen_transfer.data();
    link_busy_ = ws_.link_busy.data();
    link_dirty_ = ws_.link_dirty.data();
    res_busy_ = ws_.res_busy.data();
    ready_ = ws_.ready.data();
    link_queue_ = ws_.link_queue.data();
    if (track_) {
      for (int32_t d = 0; d < nd_; ++d) Alloc(d, ws_.persistent[d], -1, -1);
      if (out_.stopped) return;
    }
    if constexpr (kHost) {
      SetupHost();  // every task waits for its launch; the host threads start at time 0
    } else if constexpr (kFusion) {
      for (int32_t v = 0; v < n; ++v) {
        if (Task(v) == v && tasks_[v].pending == 0) MakeReady(v, -1);
      }
    } else {
      for (int32_t v : m_.sources) MakeReady(v, -1);  // the nodes with no dependencies
    }
  }

  // Maps every node to its task (a fused group runs as its smallest node id)
  // and computes each group's kernel time, external inputs, allocation and
  // priority.
  void BuildGroups() {
    const int32_t n = m_.num_nodes;
    const graphs::Graph& graph = e_.graph_;
    Fill(ws_.group_leader, n, -1);
    Fill(ws_.group_size, n, 1);
    ws_.task_of.resize(n);
    int32_t* task_of = ws_.task_of.data();
    for (int32_t v = 0; v < n; ++v) {
      const int32_t g = dec_.fusion_group[v];
      if (g < 0) {
        task_of[v] = v;
        continue;
      }
      if (ws_.group_leader[g] < 0) ws_.group_leader[g] = v;
      const int32_t leader = ws_.group_leader[g];
      task_of[v] = leader;
      if (comm_ != nullptr && comm_[v]) {
        throw DecisionError("'" + graph.node(v).name + "' is a collective and cannot be fused", {},
                            "leave collectives (op types nccl:*) out of fusion groups");
      }
      if (leader != v) {
        ++ws_.group_size[leader];
        --tasks_total_;
        if (tasks_[v].device != tasks_[leader].device) {
          throw DecisionError("fusion group " + std::to_string(g) + " spans devices: '" +
                                  graph.node(leader).name + "' is on device " +
                                  std::to_string(tasks_[leader].device) + ", '" + graph.node(v).name +
                                  "' on device " + std::to_string(tasks_[v].device),
                              {}, "place every node of a fusion group on the same device");
        }
      }
    }
    task_of_ = task_of;
    ws_.member_off.resize(n + 1);
    ws_.member_off[0] = 0;
    for (int32_t v = 0; v < n; ++v) {
      ws_.member_off[v + 1] = ws_.member_off[v] + (task_of[v] == v ? ws_.group_size[v] : 0);
    }
    ws_.members.resize(n);
    ws_.scratch.assign(ws_.member_off.begin(), ws_.member_off.end() - 1);
    for (int32_t v = 0; v < n; ++v) ws_.members[ws_.scratch[task_of[v]]++] = v;

    ws_.task_alloc.resize(n);
    for (int32_t v = 0; v < n; ++v) ws_.task_alloc[v] = m_.nodes[v].out_bytes;
    talloc_ = ws_.task_alloc.data();
    if (tprio_ != nullptr) {
      ws_.task_priority.assign(dec_.priority.begin(), dec_.priority.end());
      tprio_ = ws_.task_priority.data();
    }
    for (int32_t leader = 0; leader < n; ++leader) {
      if (task_of[leader] != leader || ws_.group_size[leader] == 1) continue;
      const int32_t* members = ws_.members.data() + ws_.member_off[leader];
      const size_t size = static_cast<size_t>(ws_.group_size[leader]);
      const KernelWork work = MakeKernelWork(graph, std::span<const graphs::NodeId>(members, size));
      int64_t alloc = 0;
      int32_t pending = 0;
      double priority = tprio_ != nullptr ? tprio_[leader] : 0.0;
      for (size_t k = 0; k < size; ++k) {
        const int32_t v = members[k];
        const EngineModel::NodeInfo& node = m_.nodes[v];
        if (tprio_ != nullptr) priority = std::max(priority, tprio_[v]);
        for (int32_t i = node.in_begin; i < node.in_end; ++i) {
          if (task_of[m_.inputs[i].producer] != leader) ++pending;
        }
        for (int32_t i = m_.ctrl_in_off[v]; i < m_.ctrl_in_off[v + 1]; ++i) {
          if (task_of[m_.ctrl_in[i]] != leader) ++pending;
        }
        for (int32_t t = node.out_begin; t < node.out_end; ++t) {
          if (Materialized(t, leader)) alloc += m_.tensors[t].bytes;  // the kernel writes it, aliases too
        }
      }
      const DeviceSpec& device = e_.cluster_.device(tasks_[leader].device);
      double time = e_.cost_model_.KernelTime(graph, work, device);
      if constexpr (kHost) {
        if (time > 0.0)
          time = std::max(0.0, time + e_.cost_model_.HostedKernelLaunchDelta(graph, work, device));
      }
      if (!std::isfinite(time) || time < 0.0) {
        throw ConfigError("cost model '" + e_.cost_model_.name() + "' gives time " + std::to_string(time) +
                          " s for the fused group of '" + graph.node(leader).name + "'");
      }
      tasks_[leader].time = time;
      tasks_[leader].pending = pending + (kHost ? 1 : 0);
      ws_.task_alloc[leader] = alloc;
      if (tprio_ != nullptr) ws_.task_priority[leader] = priority;
    }
  }

  int32_t Task(int32_t node) const {
    if constexpr (kFusion) {
      return task_of_[node];
    } else {
      return node;
    }
  }
  int64_t TaskAlloc(int32_t task) const {
    if constexpr (kFusion) {
      return talloc_[task];
    } else {
      return m_.nodes[task].out_bytes;
    }
  }

  // A fused group's output is materialized when something outside the group
  // reads it, or when nothing reads it at all (a graph output).
  bool Materialized(int32_t t, int32_t task) const {
    const EngineModel::TensorInfo& info = m_.tensors[t];
    if (info.cons_begin == info.cons_end) return true;
    for (int32_t i = info.cons_begin; i < info.cons_end; ++i) {
      if (Task(m_.consumers[i].node) != task) return true;
    }
    return false;
  }

  // Whether tensor t is an alias here: a view takes no memory of its own,
  // except as the output of a fused group, which its kernel writes.
  bool Aliased(int32_t t) const {
    const EngineModel::TensorInfo& info = m_.tensors[t];
    if (info.alias == 0) return false;
    if constexpr (kFusion) return ws_.group_size[Task(info.producer)] == 1;
    return true;
  }

  template <typename F>
  void ForEachMember(int32_t task, F&& f) {
    if (!kFusion || ws_.group_size[task] == 1) {
      f(task);
    } else {
      for (int32_t k = ws_.member_off[task]; k < ws_.member_off[task + 1]; ++k) f(ws_.members[k]);
    }
  }

  // ---- the loop ----------------------------------------------------------
  void Loop() {
    Dispatch();
    EventQueue& events = ws_.events;
    while (!out_.stopped && !events.empty()) {
      const double t = events.top_time();
      assert(t >= now_ && "time went backwards");
      now_ = t;
      do {
        const Event ev = events.Pop();
        switch (ev.kind()) {
          case EventKind::kOpFinish:
            OpFinish(ev.id());
            break;
          case EventKind::kHopFinish:
            HopFinish(ev.id());
            break;
          case EventKind::kHostFinish:
            if constexpr (kHost) HostFinish(ev.id());
            break;
          case EventKind::kLaunch:
            if constexpr (kHost)
              MakeReadyNow(ev.id(), kFull ? ws_.launch_cause[static_cast<size_t>(ev.id())] : -1);
            break;
        }
      } while (!events.empty() && events.top_time() == t);
      Dispatch();
    }
  }

  void Dispatch() {
    if constexpr (kHost) {
      // A dispatch can make work for another idle thread of its process.
      while (dirty_thread_summary_ != 0) DispatchHosts();
    }
    if (dirty_summary_ != 0) DispatchDevices();
    if (num_dirty_links_ > 0) DispatchLinks();
  }

  // Branch-free: sets the device's bit and its word's summary bit.
  void MarkDevice(int32_t d) {
    dirty_words_[d >> 6] |= uint64_t{1} << (d & 63);
    dirty_summary_ |= uint64_t{1} << (d >> 6);
  }
  void MarkLink(int32_t l) {
    if (!link_dirty_[l]) {
      link_dirty_[l] = 1;
      ws_.dirty_links[num_dirty_links_++] = l;
    }
  }

  // The stream a task runs on: its device's compute stream, or, for a
  // collective (EngineModel::comm), its device's communication stream.
  int32_t Lane(int32_t task) const {
    return comm_ != nullptr && comm_[task] ? tasks_[task].device + nd_ : tasks_[task].device;
  }

  // A task whose inputs are all there: ready now, or, when the host ran
  // ahead and launches it later, at its launch (a kLaunch event).
  void MakeReady(int32_t task, int32_t cause) {
    if constexpr (kHost) {
      if (launch_time_ != nullptr && launch_time_[task] > now_) {
        ws_.events.Push(launch_time_[task], EventKind::kLaunch, task);
        return;
      }
    }
    MakeReadyNow(task, cause);
  }

  void MakeReadyNow(int32_t task, int32_t cause) {
    if (gate_ != nullptr) [[unlikely]] {
      const int32_t g = gate_[task];
      if (g >= 0 && gate_count_[g] < gate_need_[task]) {
        ws_.gate_parked[static_cast<size_t>(g)].PushHeap(-static_cast<double>(gate_need_[task]), task, now_);
        return;
      }
    }
    EnqueueTask(task, cause);
  }

  // Into its stream's ready queue.
  [[gnu::always_inline]] void EnqueueTask(int32_t task, int32_t cause) {
    const int32_t d = Lane(task);
    if (tprio_ != nullptr) {
      ready_[d].PushHeap(tprio_[task], task, now_);
    } else {
      ready_[d].PushFifo(task, now_);
    }
    // A busy device needs no mark: if its kernel ends at this instant, that
    // event marks it; otherwise it could not start anything now anyway.
    if (running_[d] < 0) MarkDevice(d);
    if constexpr (kFull) {
      ws_.ready_time[task] = now_;
      ws_.data_cause[task] = cause;
    }
  }

  // Idle devices with ready kernels start one, by device index (the set bits
  // in ascending order). Starting a kernel marks no device.
  void DispatchDevices() {
    uint64_t summary = dirty_summary_;
    dirty_summary_ = 0;
    while (summary != 0) {
      const int32_t w = std::countr_zero(summary);
      summary &= summary - 1;
      uint64_t bits = dirty_words_[w];
      dirty_words_[w] = 0;
      while (bits != 0) {
        const int32_t d = w * 64 + std::countr_zero(bits);
        bits &= bits - 1;
        ServiceQueue& q = ready_[d];
        if (running_[d] >= 0 || q.empty() || out_.stopped) continue;
        StartOp(tprio_ != nullptr ? q.PopHeap() : q.PopFifo(), d);
      }
    }
  }

  void StartOp(int32_t task, int32_t lane) {
    const double duration = tasks_[task].time;
    const int32_t d = tasks_[task].device;
    running_[lane] = task;
    if constexpr (kFull) {
      (lane < nd_ ? ws_.busy : ws_.comm_busy)[d] += duration;
      ++ws_.kernels[d];
    }
    if (track_) {
      const int64_t alloc = TaskAlloc(task);
      if (alloc > 0) Alloc(d, alloc, task, -1);
    }
    ws_.events.Push(now_ + duration, EventKind::kOpFinish, task);
    if constexpr (kFull) {
      const bool waited = now_ > ws_.ready_time[task];
      const int32_t cause = waited ? ws_.last_task[lane] : ws_.data_cause[task];
      ws_.op_rec_of[task] = static_cast<int32_t>(ws_.op_recs.size());
      ws_.op_recs.push_back(
          Workspace::OpRec{task, d, ws_.ready_time[task], now_, now_ + duration, cause, waited});
      ws_.last_task[lane] = task;
      if (track_)
        ForEachMember(task, [&](int32_t v) {
          for (int32_t t = m_.nodes[v].out_begin; t < m_.nodes[v].out_end; ++t) {
            if (!kFusion || Materialized(t, task)) ++ws_.live[static_cast<int64_t>(t) * nd_ + d];
          }
        });
    }
  }

  void OpFinish(int32_t task) {
    const int32_t d = tasks_[task].device;
    const int32_t lane = Lane(task);
    running_[lane] = -1;
    MarkDevice(lane);
    ++tasks_done_;
    ForEachMember(task, [&](int32_t v) { FinishNode(v, task, d); });
    if (gate_ != nullptr) [[unlikely]]
      Signal(task);
    if constexpr (kHost) HostOnFinish(task, d, lane);
  }

  // ---- counted gates (Decision::gate) -------------------------------------
  void SetupGates() {
    const int32_t n = m_.num_nodes;
    const std::vector<int32_t>& gate = dec_.gate;
    const std::vector<int32_t>& need = dec_.gate_need;
    const std::vector<int32_t>& signal = dec_.gate_signal;
    if (gate.size() != static_cast<size_t>(n) || need.size() != static_cast<size_t>(n) ||
        signal.size() != static_cast<size_t>(n)) {
      throw DecisionError("the decision's gates have " + std::to_string(gate.size()) + "/" +
                          std::to_string(need.size()) + "/" + std::to_string(signal.size()) +
                          " entries for a graph of " + std::to_string(n) + " nodes");
    }
    int32_t counters = 0;
    for (int32_t v = 0; v < n; ++v) counters = std::max({counters, gate[v] + 1, signal[v] + 1});
    Fill(ws_.gate_count, counters, 0);
    ws_.gate_parked.resize(static_cast<size_t>(counters));
    for (auto& q : ws_.gate_parked) q.Clear();
    gate_signal_ = signal.data();
    gate_count_ = ws_.gate_count.data();
    if constexpr (kFusion) {
      // A fused group waits for its members' gate, at their largest need.
      Fill(ws_.task_gate, n, -1);
      Fill(ws_.task_gate_need, n, 0);
      for (int32_t v = 0; v < n; ++v) {
        if (gate[v] < 0) continue;
        const int32_t t = Task(v);
        ws_.task_gate[t] = gate[v];
        ws_.task_gate_need[t] = std::max(ws_.task_gate_need[t], need[v]);
      }
      gate_ = ws_.task_gate.data();
      gate_need_ = ws_.task_gate_need.data();
    } else {
      gate_ = gate.data();
      gate_need_ = need.data();
    }
  }

  // A finished task adds its members' signals; waiting tasks whose need is
  // reached become ready, least need first.
  [[gnu::noinline]] void Signal(int32_t task) {
    ForEachMember(task, [&](int32_t v) {
      const int32_t g = gate_signal_[v];
      if (g < 0) return;
      const int32_t count = ++gate_count_[g];
      ServiceQueue& parked = ws_.gate_parked[static_cast<size_t>(g)];
      while (!parked.empty() && -parked.FrontHeap().priority <= count) EnqueueTask(parked.PopHeap(), task);
    });
  }

  // Hands node v's outputs to their consumers (locally or through
  // transfers), releases v's control successors and its inputs.
  void FinishNode(int32_t v, int32_t task, int32_t d) {
    const EngineModel::NodeInfo& node = m_.nodes[v];
    const EngineModel::Consumer* consumers = m_.consumers.data();
    TaskState* tasks = tasks_;
    const bool track = track_;
    const bool reuse = reuse_;
    int32_t held = 0;  // alias outputs that something reads: they keep v's inputs allocated
    for (int32_t t = node.out_begin; t < node.out_end; ++t) {
      const EngineModel::TensorInfo& tensor = m_.tensors[t];
      int32_t users = 0;
      bool internal = false;
      const int32_t stamp = t + 1;  // each tensor is fanned out once per run
      for (int32_t i = tensor.cons_begin; i < tensor.cons_end; ++i) {
        const int32_t c = consumers[i].node;
        const int32_t ct = Task(c);
        if (kFusion && ct == task) {
          internal = true;
          continue;
        }
        const int32_t cd = tasks[c].device;
        if (cd == d) {
          ++users;
          if (--tasks[ct].pending == 0) MakeReady(ct, task);
        } else if (!reuse) {
          ++ws_.transfers[NewTransfer(t, d, cd, i, task)].refs;
          ++users;
        } else {
          if (seen_[cd] != stamp) {
            seen_[cd] = stamp;
            seen_transfer_[cd] = NewTransfer(t, d, cd, -1, task);
            ++users;
          }
          ++ws_.transfers[seen_transfer_[cd]].refs;
        }
      }
      if (track) {
        const bool alias = Aliased(t);
        const int64_t resident = alias ? 0 : tensor.bytes;
        if (users > 0) {
          copies_[t] = CopyState{resident, users, d};
          held += alias ? 1 : 0;
        } else if (!internal) {
          Free(d, resident, t);  // nothing reads it: freed when its producer ends
        }
      }
    }
    for (int32_t i = node.ctrl_begin; i < node.ctrl_end; ++i) {
      const int32_t ct = Task(m_.ctrl[i]);
      if (kFusion && ct == task) continue;
      if (--tasks[ct].pending == 0) MakeReady(ct, task);
      if constexpr (kHost) {
        if (exec_ == Execution::kGraph && tasks[ct].device != d) HostInputReady(ct, task);
      }
    }
    if (track) {
      if (held > 0) {
        held_[v] = held;  // released with its last alias output (ReleaseCopy)
      } else {
        ReleaseInputs(v, task, d);
      }
    }
  }

  // Node v (of `task`, on device d) no longer needs its inputs.
  void ReleaseInputs(int32_t v, int32_t task, int32_t d) {
    const EngineModel::NodeInfo& node = m_.nodes[v];
    for (int32_t k = node.in_begin; k < node.in_end; ++k) {
      const EngineModel::Input& in = m_.inputs[k];
      if (kFusion && Task(in.producer) == task) continue;
      CopyState& local = copies_[in.tensor];
      if (local.device == d) {
        if (--local.refs == 0) ReleaseCopy(in.tensor);
      } else {
        Transfer& tr = ws_.transfers[in_copy_[k]];
        if (--tr.refs == 0) Free(d, tr.bytes, in.tensor);
      }
    }
  }

  // The last user of tensor t's copy on its producer's device is done. An
  // alias frees nothing itself; the last of its node's live aliases lets the
  // node's inputs go (which may be aliases in turn).
  void ReleaseCopy(int32_t t) {
    const CopyState& copy = copies_[t];
    Free(copy.device, copy.bytes, t);
    if (Aliased(t)) [[unlikely]] {
      const int32_t v = m_.tensors[t].producer;
      if (--held_[v] == 0) ReleaseInputs(v, Task(v), copy.device);
    }
  }

  // Creates the transfer of tensor t to device dst (for the consumer entry
  // `slot`, or -1 for every consumer there) and queues its first hop.
  int32_t NewTransfer(int32_t t, int32_t src, int32_t dst, int32_t slot, int32_t cause) {
    const int32_t x = static_cast<int32_t>(ws_.transfers.size());
    const int32_t route = m_.route_off[src * nd_ + dst];
    const auto hops = static_cast<int16_t>(m_.route_off[src * nd_ + dst + 1] - route);
    const double priority = xprio_ != nullptr ? xprio_[static_cast<int64_t>(t) * nd_ + dst] : 0.0;
    ws_.transfers.push_back(
        Transfer{t, src, dst, slot, 0, m_.tensors[t].bytes, route, hops, 0, priority, now_, -1, cause});
    Enqueue(x, m_.route_links[route]);
    return x;
  }

  void Enqueue(int32_t x, int32_t link) {
    Transfer& tr = ws_.transfers[x];
    tr.queued = now_;
    if (xprio_ != nullptr) {
      link_queue_[link].PushHeap(tr.priority, x, now_);
    } else {
      link_queue_[link].PushFifo(x, now_);
    }
    MarkLink(link);
  }

  void HopFinish(int32_t x) {
    Transfer& tr = ws_.transfers[x];
    const int32_t link = m_.route_links[tr.route + tr.hop];
    link_busy_[link] = 0;
    MarkLink(link);
    for (int32_t i = m_.link_res_off[link]; i < m_.link_res_off[link + 1]; ++i) {
      const int32_t r = m_.link_res[i];
      res_busy_[r] = 0;
      for (int32_t j = m_.res_links_off[r]; j < m_.res_links_off[r + 1]; ++j) MarkLink(m_.res_links[j]);
    }
    if (tr.hop == 0 && track_ && --copies_[tr.tensor].refs == 0) {
      ReleaseCopy(tr.tensor);  // the data has left the source device
    }
    const int32_t cause = kFull ? m_.num_nodes + tr.record : -1;
    if (tr.hop + 1 < tr.hops) {
      ++tr.hop;
      tr.cause = cause;
      Enqueue(x, m_.route_links[tr.route + tr.hop]);
      return;
    }
    // Arrived: the consumers on the destination device may become ready.
    const EngineModel::TensorInfo& tensor = m_.tensors[tr.tensor];
    const int32_t begin = tr.slot >= 0 ? tr.slot : tensor.cons_begin;
    const int32_t end = tr.slot >= 0 ? tr.slot + 1 : tensor.cons_end;
    const int32_t dst = tr.dst;
    for (int32_t i = begin; i < end; ++i) {
      const EngineModel::Consumer& c = m_.consumers[i];
      if (tasks_[c.node].device != dst) continue;
      in_copy_[c.input] = x;
      const int32_t ct = Task(c.node);
      if (--tasks_[ct].pending == 0) MakeReady(ct, cause);
      if constexpr (kHost) {
        if (exec_ == Execution::kGraph) HostInputReady(ct, cause);
      }
    }
  }

  bool ResourcesFree(int32_t link) const {
    for (int32_t i = m_.link_res_off[link]; i < m_.link_res_off[link + 1]; ++i) {
      if (res_busy_[m_.link_res[i]]) return false;
    }
    return true;
  }

  void DispatchLinks() {
    // Candidates: idle links with waiting transfers, served in the order of
    // their head transfers so that links competing for one shared resource
    // get it first-come first-served (or by transfer priority). Starting a
    // hop marks no link, so the list is complete while it is walked.
    int32_t* dirty = ws_.dirty_links.data();
    size_t k = 0;
    for (size_t i = 0; i < num_dirty_links_; ++i) {
      const int32_t l = dirty[i];
      link_dirty_[l] = 0;
      if (!link_busy_[l] && !link_queue_[l].empty()) dirty[k++] = l;
    }
    num_dirty_links_ = 0;
    if (k > 1) {
      auto& heads = ws_.link_heads;
      heads.clear();
      for (size_t i = 0; i < k; ++i) heads.push_back(Head(dirty[i]));
      for (size_t i = 1; i < k; ++i) {  // insertion sort: a handful of links
        const ServiceQueue::Entry e = heads[i];
        const int32_t l = dirty[i];
        size_t j = i;
        for (; j > 0 && ServiceQueue::ServedAfter(heads[j - 1], e); --j) {
          heads[j] = heads[j - 1];
          dirty[j] = dirty[j - 1];
        }
        heads[j] = e;
        dirty[j] = l;
      }
    }
    for (size_t i = 0; i < k && !out_.stopped; ++i) {
      const int32_t l = dirty[i];
      if (!ResourcesFree(l)) continue;
      ServiceQueue& q = link_queue_[l];
      StartHop(xprio_ != nullptr ? q.PopHeap() : q.PopFifo(), l);
    }
  }

  // The head transfer of a link's queue as (priority, queued time, transfer).
  ServiceQueue::Entry Head(int32_t l) const {
    const ServiceQueue& q = link_queue_[l];
    if (xprio_ != nullptr) return q.FrontHeap();
    const int32_t x = q.FrontFifo();
    return ServiceQueue::Entry{0.0, ws_.transfers[x].queued, x};
  }

  void StartHop(int32_t x, int32_t link) {
    Transfer& tr = ws_.transfers[x];
    const int64_t bytes = tr.bytes;
    const double duration = m_.link_latency[link] + static_cast<double>(bytes) / m_.link_bandwidth[link];
    link_busy_[link] = 1;
    if constexpr (kFull) {
      ws_.link_busy_time[link] += duration;
      ws_.link_bytes[link] += bytes;
      ++ws_.link_hops[link];
    }
    for (int32_t i = m_.link_res_off[link]; i < m_.link_res_off[link + 1]; ++i) {
      const int32_t r = m_.link_res[i];
      res_busy_[r] = 1;
      if constexpr (kFull) {
        ws_.res_busy_time[r] += duration;
        ws_.res_bytes[r] += bytes;
        ++ws_.res_hops[r];
      }
    }
    const bool last_hop = tr.hop + 1 == tr.hops;
    if (last_hop && track_ && bytes > 0) Alloc(tr.dst, bytes, -1, tr.tensor);  // the received copy
    ws_.events.Push(now_ + duration, EventKind::kHopFinish, x);
    if constexpr (kFull) {
      const bool waited = now_ > tr.queued;
      const int32_t cause = waited ? Blocker(link) : tr.cause;
      tr.record = static_cast<int32_t>(ws_.hop_recs.size());
      ws_.hop_recs.push_back(
          Workspace::HopRec{x, link, tr.hop, tr.queued, now_, now_ + duration, cause, waited});
      ws_.link_last_hop[link] = tr.record;
      for (int32_t i = m_.link_res_off[link]; i < m_.link_res_off[link + 1]; ++i) {
        ws_.res_last_hop[m_.link_res[i]] = tr.record;
      }
      if (last_hop && track_) ++ws_.live[static_cast<int64_t>(tr.tensor) * nd_ + tr.dst];
    }
  }

  // The hop that held `link` or one of its resources until now (the reason a
  // queued transfer started late), as a cause code.
  int32_t Blocker(int32_t link) const {
    int32_t best = ws_.link_last_hop[link];
    double best_end = best >= 0 ? ws_.hop_recs[best].end : -1.0;
    for (int32_t i = m_.link_res_off[link]; i < m_.link_res_off[link + 1]; ++i) {
      const int32_t h = ws_.res_last_hop[m_.link_res[i]];
      if (h >= 0 && ws_.hop_recs[h].end > best_end) {
        best = h;
        best_end = ws_.hop_recs[h].end;
      }
    }
    return best >= 0 ? m_.num_nodes + best : -1;
  }

  // ---- the host (kHost) ---------------------------------------------------
  // Host threads: process p owns threads [p * tpp, (p + 1) * tpp). A thread
  // is idle (nothing it may dispatch), busy (dispatching thread_task until
  // its kHostFinish), or blocked: in a launch whose device queue is full, or
  // waiting for a synchronizing task to finish.
  enum HostState : uint8_t { kIdle = 0, kBusy = 1, kBlockedQueue = 2, kBlockedSync = 3 };

  int32_t ProcessOf(int32_t device) const {
    return per_device_ ? device : 0;
  }

  void SetupHost() {
    const int32_t n = m_.num_nodes;
    const HostSetup& host = e_.host();
    exec_ = host.execution;
    per_device_ = host.processes == Processes::kPerDevice;
    in_order_ = exec_ != Execution::kGraph;
    nproc_ = per_device_ ? nd_ : 1;
    tpp_ = exec_ == Execution::kGraph ? opt_.host_threads : 1;
    nthreads_ = nproc_ * tpp_;
    queue_cap_ = exec_ == Execution::kCaptured ? std::numeric_limits<int32_t>::max() : opt_.launch_queue;
    fast_order_ = !kFusion && tprio_ == nullptr;
    const int32_t nc = m_.num_classes;
    const int32_t* device_class = m_.device_class.data();

    // Dispatch cost per task: the op's own (eager: the host table's;
    // graph: a launch or a dispatch; captured: none), plus a copy call for
    // each input it is the first to read on its device from another device,
    // plus, across processes, a send call on the producer's side.
    double* cost = nullptr;
    if (exec_ == Execution::kEager && !kFusion && nc == 1) {
      ws_.host_cost.assign(m_.host_time.begin(), m_.host_time.end());  // sources cost 0 (EngineModel)
      cost = ws_.host_cost.data();
    } else {
      ws_.host_cost.assign(static_cast<size_t>(n), 0.0);
      cost = ws_.host_cost.data();
      if (exec_ != Execution::kCaptured) {
        for (int32_t v = 0; v < n; ++v) {
          const int32_t t = Task(v);
          const int32_t c = nc == 1 ? 0 : device_class[tasks_[t].device];
          double own = 0.0;
          if (exec_ == Execution::kEager) {
            own = m_.host_time[static_cast<size_t>(v) * nc + c];
          } else if (!m_.host_source[static_cast<size_t>(v)]) {
            const HostCosts& hc = m_.host_costs[static_cast<size_t>(c)];
            own = m_.host_has_work[static_cast<size_t>(v)] ? hc.graph_op : hc.graph_view;
          }
          cost[t] = std::max(cost[t], own);  // a fused group: one dispatch, its costliest member's
        }
      }
    }
    if (exec_ != Execution::kCaptured && nd_ > 1) AddCopyCalls(cost);

    Fill(ws_.thread_task, nthreads_, -1);
    Fill(ws_.thread_state, nthreads_, uint8_t{kIdle});
    Fill(ws_.thread_busy, nthreads_, 0.0);
    Fill(ws_.thread_clock, nthreads_, 0.0);
    ws_.launch_time.resize(static_cast<size_t>(n));  // written at each task's launch, before it is read
    launch_time_ = exec_ == Execution::kEager ? ws_.launch_time.data() : nullptr;
    Fill(ws_.thread_cause, nthreads_, -1);
    Fill(ws_.wait_next, nthreads_, -1);
    Fill(ws_.dirty_thread_words, (static_cast<size_t>(nthreads_) + 63) / 64, uint64_t{0});
    assert(nthreads_ <= 64 * 64);
    dirty_thread_summary_ = 0;
    Fill(ws_.outstanding, nd_, 0);
    Fill(ws_.last_launched, nlanes_, -1);
    Fill(ws_.wait_head, nd_, -1);
    Fill(ws_.wait_tail, nd_, -1);
    // stream_next and sync_waiter are written before they are read
    // (HostOnFinish), so they need no clearing.
    ws_.stream_next.resize(static_cast<size_t>(n));
    ws_.sync_waiter.resize(static_cast<size_t>(n));
    if constexpr (kFull) {
      Fill(ws_.launch_cause, n, -1);
      ws_.host_recs.clear();
    }
    // Raw views of the host's per-run arrays (sized above; none is resized during the run).
    sync_ = m_.has_host_sync && exec_ != Execution::kCaptured;
    host_cost_ = ws_.host_cost.data();
    host_sync_ = m_.host_sync.data();
    outstanding_ = ws_.outstanding.data();
    last_launched_ = ws_.last_launched.data();
    stream_next_ = ws_.stream_next.data();
    sync_waiter_ = ws_.sync_waiter.data();
    wait_head_ = ws_.wait_head.data();
    wait_tail_ = ws_.wait_tail.data();
    wait_next_ = ws_.wait_next.data();
    thread_task_ = ws_.thread_task.data();
    thread_state_ = ws_.thread_state.data();
    thread_clock_ = ws_.thread_clock.data();
    thread_busy_ = ws_.thread_busy.data();
    // Eager and captured: each process dispatches its tasks in one global
    // program order: node id order, or with priorities or fusion groups a
    // list schedule of the whole graph (highest priority first among the
    // tasks whose predecessors are scheduled, ties by id). One order for
    // every process, so that streams that wait on each other's copies
    // cannot wait in a cycle. Graph execution: a queue of the tasks whose
    // same-device predecessors are dispatched and whose inputs from other
    // devices have arrived (TensorFlow's executor and its Recv).
    ws_.proc_cursor.assign(static_cast<size_t>(nproc_), 0);
    identity_order_ = exec_ != Execution::kGraph && fast_order_ && nproc_ == 1;
    if (identity_order_) {
      // One process, node id order, every node a task: the order is 0..n-1.
      ws_.proc_off.assign({0, n});
    } else if (exec_ != Execution::kGraph) {
      const int32_t* order = nullptr;
      if (!fast_order_) {
        ListSchedule();
        order = ws_.scratch.data();
      }
      ws_.proc_off.assign(static_cast<size_t>(nproc_) + 1, 0);
      int32_t tasks = 0;
      for (int32_t v = 0; v < n; ++v) {
        if (Task(v) != v) continue;
        ++ws_.proc_off[ProcessOf(tasks_[v].device) + 1];
        ++tasks;
      }
      for (int32_t p = 0; p < nproc_; ++p) ws_.proc_off[p + 1] += ws_.proc_off[p];
      ws_.proc_order.resize(static_cast<size_t>(tasks));
      ws_.proc_cursor.assign(ws_.proc_off.begin(), ws_.proc_off.end() - 1);
      for (int32_t k = 0; k < tasks; ++k) {
        const int32_t v = order != nullptr ? order[k] : k;
        ws_.proc_order[ws_.proc_cursor[ProcessOf(tasks_[v].device)]++] = v;
      }
      ws_.proc_cursor.assign(ws_.proc_off.begin(), ws_.proc_off.end() - 1);
    } else {
      ws_.host_pending.assign(static_cast<size_t>(n), 0);
      int32_t* hp = ws_.host_pending.data();
      for (int32_t v = 0; v < n; ++v) {
        const int32_t t = Task(v);
        const EngineModel::NodeInfo& node = m_.nodes[v];
        for (int32_t k = node.in_begin; k < node.in_end; ++k) {
          if (Task(m_.inputs[k].producer) != t) ++hp[t];
        }
        for (int32_t k = m_.ctrl_in_off[v]; k < m_.ctrl_in_off[v + 1]; ++k) {
          if (Task(m_.ctrl_in[k]) != t) ++hp[t];
        }
      }
      ws_.host_ready.resize(static_cast<size_t>(nproc_));
      for (auto& q : ws_.host_ready) q.Clear();
      for (int32_t v = 0; v < n; ++v) {
        if (Task(v) == v && hp[v] == 0) PushHostReady(v);
      }
    }

    ws_.events.Reserve(static_cast<size_t>(nd_ + m_.num_links + nthreads_) + 1);

    proc_cursor_ = ws_.proc_cursor.data();
    proc_order_ = ws_.proc_order.data();
    proc_off_ = ws_.proc_off.data();

    if (exec_ == Execution::kCaptured) {
      // One graph launch per device of the process, then every kernel is
      // queued at once.
      const int32_t devices_per_process = per_device_ ? 1 : nd_;
      for (int32_t p = 0; p < nproc_; ++p) {
        const int32_t first_device = per_device_ ? p : 0;
        const double launch = m_.host_costs[static_cast<size_t>(m_.device_class[first_device])].launch_call;
        StartHostOp(p * tpp_, -1, launch * devices_per_process);
      }
    } else {
      for (int32_t th = 0; th < nthreads_; ++th) MarkThread(th);
    }
  }

  // Adds the copy calls to the dispatch costs: for each tensor and each
  // device other than its producer's that reads it, one copy call to the
  // first task reading it there (consumer lists ascend by node id), and,
  // across processes, a send call to the producer. One pass over the
  // nodes' inputs in node order; a (tensor, device) pair is counted once
  // through a per-tensor device mask, cleared again afterwards.
  void AddCopyCalls(double* cost) {
    const int32_t n = m_.num_nodes;
    const int32_t nc = m_.num_classes;
    const int32_t* device_class = m_.device_class.data();
    const int32_t* place = dec_.placement.data();
    const int32_t* input_off = m_.input_off.data();
    const EngineModel::Input* inputs = m_.inputs.data();
    if (nd_ > 64) {
      AddCopyCallsByTensor(cost);
      return;
    }
    if (ws_.copy_mask.size() != static_cast<size_t>(m_.num_tensors)) ws_.copy_mask.assign(m_.num_tensors, 0);
    uint64_t* mask = ws_.copy_mask.data();
    ws_.copy_touched.clear();
    for (int32_t v = 0; v < n; ++v) {
      const int32_t dv = place[v];
      for (int32_t k = input_off[v]; k < input_off[v + 1]; ++k) {
        const int32_t u = inputs[k].producer;
        const int32_t du = place[u];
        if (du == dv) [[likely]]
          continue;
        const int32_t t = inputs[k].tensor;
        const uint64_t bit = uint64_t{1} << dv;
        if (mask[t] & bit) continue;
        if (mask[t] == 0) ws_.copy_touched.push_back(t);
        mask[t] |= bit;
        cost[Task(v)] += m_.host_costs[static_cast<size_t>(nc == 1 ? 0 : device_class[dv])].copy;
        if (ProcessOf(dv) != ProcessOf(du)) {
          cost[Task(u)] += m_.host_costs[static_cast<size_t>(nc == 1 ? 0 : device_class[du])].copy;
        }
      }
    }
    for (const int32_t t : ws_.copy_touched) mask[t] = 0;
  }

  // The same count, tensor by tensor (any number of devices).
  void AddCopyCallsByTensor(double* cost) {
    const int32_t nc = m_.num_classes;
    const int32_t* device_class = m_.device_class.data();
    const int32_t* place = dec_.placement.data();
    const EngineModel::Consumer* consumers = m_.consumers.data();
    for (int32_t tensor = 0; tensor < m_.num_tensors; ++tensor) {
      const EngineModel::TensorInfo& info = m_.tensors[tensor];
      const int32_t u = info.producer;
      const int32_t du = place[u];
      const int32_t stamp = -1 - tensor;  // FinishNode stamps tensor + 1
      for (int32_t i = info.cons_begin; i < info.cons_end; ++i) {
        const int32_t c = consumers[i].node;
        const int32_t dc = place[c];
        if (dc == du || seen_[dc] == stamp) [[likely]]
          continue;
        seen_[dc] = stamp;
        cost[Task(c)] += m_.host_costs[static_cast<size_t>(nc == 1 ? 0 : device_class[dc])].copy;
        if (ProcessOf(dc) != ProcessOf(du)) {
          cost[Task(u)] += m_.host_costs[static_cast<size_t>(nc == 1 ? 0 : device_class[du])].copy;
        }
      }
    }
  }

  void MarkThread(int32_t th) {
    ws_.dirty_thread_words[static_cast<size_t>(th >> 6)] |= uint64_t{1} << (th & 63);
    dirty_thread_summary_ |= uint64_t{1} << (th >> 6);
  }

  // The program order of eager and captured execution with priorities or
  // fusion groups, into ws_.scratch: a list schedule of the tasks (Kahn's
  // algorithm; among the tasks whose predecessors are scheduled, the
  // highest priority first, then the smallest id).
  void ListSchedule() {
    const int32_t n = m_.num_nodes;
    std::vector<int32_t>& indeg = ws_.host_pending;
    indeg.assign(static_cast<size_t>(n), 0);
    for (int32_t v = 0; v < n; ++v) {
      const int32_t t = Task(v);
      const EngineModel::NodeInfo& node = m_.nodes[v];
      for (int32_t k = node.in_begin; k < node.in_end; ++k) indeg[t] += Task(m_.inputs[k].producer) != t;
      for (int32_t k = m_.ctrl_in_off[v]; k < m_.ctrl_in_off[v + 1]; ++k)
        indeg[t] += Task(m_.ctrl_in[k]) != t;
    }
    ws_.host_ready.resize(std::max<size_t>(ws_.host_ready.size(), 1));
    ServiceQueue& heap = ws_.host_ready[0];
    heap.Clear();
    const auto key = [&](int32_t t) { return tprio_ != nullptr ? tprio_[t] : 0.0; };
    for (int32_t v = 0; v < n; ++v) {
      if (Task(v) == v && indeg[v] == 0) heap.PushHeap(key(v), v, 0.0);
    }
    ws_.scratch.resize(static_cast<size_t>(n));
    int32_t done = 0;
    // Counted gates (Decision::gate) order the program too: a gated task
    // comes after as many of its counter's signal tasks as it needs, so that
    // an in-order stream never holds it in front of the tasks it waits for.
    // Tasks whose inputs are scheduled but whose gate is not reached wait
    // in gate_parked (a heap by -need) until enough signals are scheduled.
    const bool gated = gate_ != nullptr;
    if (gated) {
      Fill(ws_.gate_list_count, static_cast<int32_t>(ws_.gate_count.size()), 0);
      for (auto& q : ws_.gate_parked) q.Clear();
    }
    auto available = [&](int32_t t) {
      if (gated) {
        const int32_t g = gate_[t];
        if (g >= 0 && ws_.gate_list_count[static_cast<size_t>(g)] < gate_need_[t]) {
          ws_.gate_parked[static_cast<size_t>(g)].PushHeap(-static_cast<double>(gate_need_[t]), t, 0.0);
          return;
        }
      }
      heap.PushHeap(key(t), t, 0.0);
    };
    if (gated) {  // the sources pushed above: re-sort them through their gates
      std::vector<int32_t>& sources = ws_.members_scratch;
      sources.clear();
      while (!heap.empty()) sources.push_back(heap.PopHeap());
      for (const int32_t t : sources) available(t);
    }
    while (!heap.empty()) {
      const int32_t t = heap.PopHeap();
      ws_.scratch[static_cast<size_t>(done++)] = t;
      ForEachMember(t, [&](int32_t v) {
        const EngineModel::NodeInfo& node = m_.nodes[v];
        for (int32_t o = node.out_begin; o < node.out_end; ++o) {
          const EngineModel::TensorInfo& info = m_.tensors[o];
          for (int32_t i = info.cons_begin; i < info.cons_end; ++i) {
            const int32_t ct = Task(m_.consumers[i].node);
            if (ct != t && --indeg[ct] == 0) available(ct);
          }
        }
        for (int32_t i = node.ctrl_begin; i < node.ctrl_end; ++i) {
          const int32_t ct = Task(m_.ctrl[i]);
          if (ct != t && --indeg[ct] == 0) available(ct);
        }
        if (gated && gate_signal_[v] >= 0) {
          const int32_t g = gate_signal_[v];
          const int32_t count = ++ws_.gate_list_count[static_cast<size_t>(g)];
          ServiceQueue& parked = ws_.gate_parked[static_cast<size_t>(g)];
          while (!parked.empty() && -parked.FrontHeap().priority <= count) {
            const int32_t ready = parked.PopHeap();
            heap.PushHeap(key(ready), ready, 0.0);
          }
        }
      });
    }
    if (gated) {
      for (auto& q : ws_.gate_parked) q.Clear();
    }
    if (done != tasks_total_) {
      throw DecisionError(std::to_string(tasks_total_ - done) + " of " + std::to_string(tasks_total_) +
                              " kernels can never run",
                          {}, "a fusion group is not convex: a path leaves the group and comes back into it");
    }
  }

  // Graph execution: a task whose inputs are all there to dispatch.
  void PushHostReady(int32_t task) {
    ws_.host_ready[static_cast<size_t>(ProcessOf(tasks_[task].device))].PushFifo(task, now_);
    const int32_t p = ProcessOf(tasks_[task].device);
    for (int32_t th = p * tpp_; th < (p + 1) * tpp_; ++th) {
      if (thread_state_[th] == kIdle) MarkThread(th);
    }
  }

  // Graph execution: one input of `task` is there (a same-device
  // predecessor dispatched, an input from another device arrived, a control
  // predecessor on another device finished); `cause` its cause code.
  void HostInputReady(int32_t task, int32_t cause) {
    if (--ws_.host_pending[static_cast<size_t>(task)] != 0) return;
    PushHostReady(task);
    if constexpr (kFull) {
      const int32_t p = ProcessOf(tasks_[task].device);
      for (int32_t th = p * tpp_; th < (p + 1) * tpp_; ++th) {
        if (thread_state_[th] == kIdle) ws_.thread_cause[static_cast<size_t>(th)] = cause;
      }
    }
  }

  // The next task process p dispatches, or -1.
  int32_t NextHostTask(int32_t p) {
    if (exec_ != Execution::kGraph) {
      int32_t& cursor = proc_cursor_[p];
      if (identity_order_) return cursor < proc_off_[1] ? cursor++ : -1;
      return cursor < proc_off_[p + 1] ? proc_order_[cursor++] : -1;
    }
    ServiceQueue& q = ws_.host_ready[static_cast<size_t>(p)];
    return q.empty() ? -1 : q.PopFifo();
  }

  void DispatchHosts() {
    uint64_t summary = dirty_thread_summary_;
    dirty_thread_summary_ = 0;
    while (summary != 0) {
      const int32_t w = std::countr_zero(summary);
      summary &= summary - 1;
      uint64_t bits = ws_.dirty_thread_words[static_cast<size_t>(w)];
      ws_.dirty_thread_words[static_cast<size_t>(w)] = 0;
      while (bits != 0) {
        const int32_t th = w * 64 + std::countr_zero(bits);
        bits &= bits - 1;
        if (!out_.stopped) HostRun(th);
      }
    }
  }

  // An idle thread dispatches until it starts a costly dispatch, blocks, or
  // has nothing to dispatch. Ops without host cost launch at once.
  void HostRun(int32_t th) {
    if (thread_state_[th] != kIdle) return;
    const int32_t p = tpp_ == 1 ? th : th / tpp_;
    if (launch_time_ != nullptr) {
      RunAhead(th, p);
      return;
    }
    for (;;) {
      const int32_t task = NextHostTask(p);
      if (task < 0) return;  // idle; PushHostReady of this process marks its threads again
      const double cost = host_cost_[task];
      if (cost > 0.0) {
        StartHostOp(th, task, cost);
        return;
      }
      thread_task_[th] = task;
      if constexpr (kFull)
        ws_.launch_cause[static_cast<size_t>(task)] = ws_.thread_cause[static_cast<size_t>(th)];
      if (!Launch(th, task, now_)) return;
    }
  }

  // Eager execution: the thread dispatches in program order on its own
  // clock, ahead of the event loop, launching each task at the end of its
  // dispatch (Launch with that time; the task becomes ready no earlier,
  // MakeReady). It runs ahead as long as what it does is already decided:
  // it stops at a synchronizing task (until the task finishes) and at a
  // launch into a queue that is full now. Launches counted ahead only add
  // to a queue, so a queue with room now has room then; a full one may free
  // a slot before the dispatch ends, which the device's next kernel finish
  // tells (HostOnFinish). The result is the event-by-event one's; events
  // remain only for launches whose inputs are there before them.
  void RunAhead(int32_t th, int32_t p) {
    const size_t t = static_cast<size_t>(th);
    double clock = std::max(thread_clock_[t], now_);
    double busy = 0.0;
    for (;;) {
      const int32_t task = NextHostTask(p);
      if (task < 0) break;  // done: eager program order never grows
      const double cost = host_cost_[task];
      if constexpr (kFull) {
        if (cost > 0.0) {
          RecordHostOp(th, task, clock, cost);
        } else {
          ws_.launch_cause[static_cast<size_t>(task)] = ws_.thread_cause[t];
        }
      }
      clock += cost;
      busy += cost;
      thread_task_[t] = task;
      if (!Launch(th, task, clock)) break;
    }
    thread_clock_[t] = clock;
    thread_busy_[t] += busy;
  }

  void StartHostOp(int32_t th, int32_t task, double cost) {
    thread_task_[th] = task;
    thread_state_[th] = kBusy;
    thread_busy_[th] += cost;
    ws_.events.Push(now_ + cost, EventKind::kHostFinish, th);
    if constexpr (kFull) RecordHostOp(th, task, now_, cost);
  }

  void RecordHostOp(int32_t th, int32_t task, double start, double cost) {
    const int32_t rec = static_cast<int32_t>(ws_.host_recs.size());
    ws_.host_recs.push_back(
        Workspace::HostRec{task, th, start, start + cost, ws_.thread_cause[static_cast<size_t>(th)]});
    ws_.thread_cause[static_cast<size_t>(th)] = HostCause(rec);
    if (task >= 0) ws_.launch_cause[static_cast<size_t>(task)] = HostCause(rec);
  }

  void HostFinish(int32_t th) {
    thread_state_[th] = kIdle;
    const int32_t task = thread_task_[th];
    if (task >= 0) {
      if (!Launch(th, task, now_)) return;
    } else {
      // A captured graph's launch: every task of the process is queued.
      const int32_t p = th / tpp_;
      for (int32_t t = NextHostTask(p); t >= 0; t = NextHostTask(p)) {
        if constexpr (kFull)
          ws_.launch_cause[static_cast<size_t>(t)] = ws_.thread_cause[static_cast<size_t>(th)];
        LaunchNow(th, t, now_);
      }
      return;
    }
    MarkThread(th);
  }

  bool InQueue(int32_t task) const {
    return tasks_[task].time > 0.0;
  }

  // Thread th launches `task` at time `at` (now, or ahead of the loop in
  // eager execution): false when it blocks (a full launch queue, or a
  // synchronizing task).
  [[gnu::always_inline]] bool Launch(int32_t th, int32_t task, double at) {
    const int32_t d = tasks_[task].device;
    if (InQueue(task) && outstanding_[d] >= queue_cap_) {
      thread_state_[th] = kBlockedQueue;
      wait_next_[th] = -1;
      if (wait_tail_[d] >= 0) {
        wait_next_[wait_tail_[d]] = th;
      } else {
        wait_head_[d] = th;
      }
      wait_tail_[d] = th;
      return false;
    }
    LaunchNow(th, task, at);
    if (sync_ && host_sync_[task]) {
      thread_state_[th] = kBlockedSync;
      sync_waiter_[task] = th;
      return false;
    }
    return true;
  }

  [[gnu::always_inline]] void LaunchNow(int32_t th, int32_t task, double at) {
    const int32_t d = tasks_[task].device;
    if (launch_time_ != nullptr) launch_time_[task] = at;
    if (InQueue(task)) ++outstanding_[d];
    if (in_order_) {
      const int32_t lane = Lane(task);
      const int32_t prev = last_launched_[lane];
      if (prev >= 0) {
        stream_next_[prev] = task;
        ++tasks_[task].pending;
      }
      last_launched_[lane] = task;
    }
    if (exec_ == Execution::kGraph) Dispatched(task);
    (void)th;
    if (--tasks_[task].pending == 0)
      MakeReady(task, kFull ? ws_.launch_cause[static_cast<size_t>(task)] : -1);
  }

  // Graph execution: the same-device successors of a dispatched task may
  // become dispatchable.
  void Dispatched(int32_t task) {
    const int32_t d = tasks_[task].device;
    const int32_t cause = kFull ? ws_.launch_cause[static_cast<size_t>(task)] : -1;
    ForEachMember(task, [&](int32_t v) {
      const EngineModel::NodeInfo& node = m_.nodes[v];
      for (int32_t t = node.out_begin; t < node.out_end; ++t) {
        const EngineModel::TensorInfo& info = m_.tensors[t];
        for (int32_t i = info.cons_begin; i < info.cons_end; ++i) {
          const int32_t ct = Task(m_.consumers[i].node);
          if (ct != task && tasks_[ct].device == d) HostInputReady(ct, cause);
        }
      }
      for (int32_t i = node.ctrl_begin; i < node.ctrl_end; ++i) {
        const int32_t ct = Task(m_.ctrl[i]);
        if (ct != task && tasks_[ct].device == d) HostInputReady(ct, cause);
      }
    });
  }

  // Eager, the usual case of a host far ahead of its GPUs: thread th is
  // blocked on device d's full launch queue, a kernel of d ended, and the
  // thread's next task after the one it waits to launch goes to d too. The
  // freed slot takes the waiting task, which fills the queue again, so the
  // thread dispatches the next task and blocks on d once more: what waking
  // it (MarkThread, RunAhead) would do, without leaving and re-entering the
  // wait list. `waiting` launches at `at`. False, and nothing changed, in
  // any other case.
  bool Relaunch(int32_t th, int32_t waiting, int32_t d, double at) {
    if (sync_ && host_sync_[waiting]) return false;  // the thread then waits for it
    if (wait_next_[th] >= 0 || outstanding_[d] + 1 < queue_cap_) return false;
    const int32_t p = tpp_ == 1 ? th : th / tpp_;
    const int32_t cursor = proc_cursor_[p];
    if (cursor >= proc_off_[p + 1]) return false;
    const int32_t next = identity_order_ ? cursor : proc_order_[cursor];
    if (tasks_[next].device != d || !InQueue(next)) return false;
    LaunchNow(th, waiting, at);
    ++proc_cursor_[p];
    const double cost = host_cost_[next];
    if constexpr (kFull) {
      if (cost > 0.0) {
        RecordHostOp(th, next, at, cost);
      } else {
        ws_.launch_cause[static_cast<size_t>(next)] = ws_.thread_cause[static_cast<size_t>(th)];
      }
    }
    thread_clock_[th] = at + cost;
    thread_busy_[th] += cost;
    thread_task_[th] = next;
    return true;
  }

  // A kernel ended: its stream's next task may start; a thread blocked on
  // the device's queue or on this task may go on.
  void HostOnFinish(int32_t task, int32_t d, int32_t lane) {
    if (in_order_) {
      // The last launch on its stream has no next yet; any other has one.
      if (last_launched_[lane] == task) {
        last_launched_[lane] = -1;
      } else {
        const int32_t next = stream_next_[task];
        if (--tasks_[next].pending == 0) MakeReady(next, task);
      }
    }
    if (InQueue(task)) {
      --outstanding_[d];
      const int32_t th = wait_head_[d];
      if (th >= 0) {
        const int32_t waiting = thread_task_[th];
        // Eager: the thread may still be dispatching `waiting` (it ran
        // ahead); then the slot is free when the dispatch ends.
        const double at = launch_time_ != nullptr ? std::max(thread_clock_[th], now_) : now_;
        if constexpr (kFull) {
          if (at == now_) {  // the launch waited for this kernel's slot
            ws_.thread_cause[static_cast<size_t>(th)] = task;
            ws_.launch_cause[static_cast<size_t>(waiting)] = task;
          }
        }
        if (launch_time_ == nullptr || !Relaunch(th, waiting, d, at)) {
          wait_head_[d] = wait_next_[th];
          if (wait_head_[d] < 0) wait_tail_[d] = -1;
          thread_state_[th] = kIdle;
          if (launch_time_ != nullptr) thread_clock_[th] = at;
          if (Launch(th, waiting, at)) MarkThread(th);
        }
      }
    }
    // A synchronizing task always has its launching thread waiting (Launch).
    if (sync_ && host_sync_[task]) {
      const int32_t waiter = sync_waiter_[task];
      thread_state_[waiter] = kIdle;
      if constexpr (kFull) ws_.thread_cause[static_cast<size_t>(waiter)] = task;
      MarkThread(waiter);
    }
  }

  // ---- memory ------------------------------------------------------------
  // Inlined on the hot path; the out-of-memory report is out of line.
  [[gnu::always_inline]] void Alloc(int32_t d, int64_t bytes, int32_t node, int32_t tensor) {
    const int64_t mem = mem_[d] + bytes;
    mem_[d] = mem;
    if (mem > peak_[d]) {
      peak_[d] = mem;
      if (mem > m_.capacity[d] && out_.oom.device < 0) [[unlikely]]
        RecordOom(d, bytes, node, tensor);
    }
  }

  void Free(int32_t d, int64_t bytes, int32_t t) {
    mem_[d] -= bytes;
    if constexpr (kFull) --ws_.live[static_cast<int64_t>(t) * nd_ + d];
  }

  [[gnu::noinline]] void RecordOom(int32_t d, int64_t requested, int32_t node, int32_t tensor) {
    OomInfo& oom = out_.oom;
    oom.device = d;
    oom.time = now_;
    oom.capacity = m_.capacity[d];
    oom.requested = requested;
    oom.in_use = mem_[d] - requested;
    oom.persistent = ws_.persistent[d];
    oom.node = node;
    oom.tensor = tensor;
    if constexpr (kFull) {
      for (int32_t t = 0; t < m_.num_tensors; ++t) {
        const int32_t copies = ws_.live[static_cast<int64_t>(t) * nd_ + d];
        if (copies <= 0) continue;
        const bool received = tasks_[m_.tensors[t].producer].device != d;
        // A live alias on its producer's device holds no bytes of its own.
        const int64_t bytes = (copies - (!received && Aliased(t) ? 1 : 0)) * m_.tensors[t].bytes;
        if (bytes <= 0) continue;
        oom.live.push_back(LiveTensor{t, bytes, received});
      }
      const size_t keep = std::min(oom.live.size(), static_cast<size_t>(std::max(0, opt_.oom_live_tensors)));
      std::partial_sort(oom.live.begin(), oom.live.begin() + static_cast<std::ptrdiff_t>(keep),
                        oom.live.end(), [](const LiveTensor& a, const LiveTensor& b) {
                          return a.bytes != b.bytes ? a.bytes > b.bytes : a.tensor < b.tensor;
                        });
      oom.live.resize(keep);
    }
    if (stop_at_oom_) out_.stopped = true;
  }

  const Engine& e_;
  const EngineModel& m_;
  const SimOptions& opt_;
  const Decision& dec_;
  Workspace& ws_;
  RunOutcome out_;

  int32_t nd_ = 0;
  int32_t nlanes_ = 0;             // streams: nd_, or 2 * nd_ with collectives (lane d + nd_)
  const uint8_t* comm_ = nullptr;  // EngineModel::comm when the graph has collectives
  bool track_ = true;
  bool reuse_ = true;
  bool stop_at_oom_ = true;
  TaskState* tasks_ = nullptr;
  int32_t* running_ = nullptr;
  uint64_t* dirty_words_ = nullptr;
  uint64_t dirty_summary_ = 0;  // bit w: dirty_words_[w] != 0
  int64_t* mem_ = nullptr;
  int64_t* peak_ = nullptr;
  CopyState* copies_ = nullptr;
  int32_t* held_ = nullptr;
  int32_t* in_copy_ = nullptr;
  int32_t* seen_ = nullptr;
  int32_t* seen_transfer_ = nullptr;
  uint8_t* link_busy_ = nullptr;
  uint8_t* link_dirty_ = nullptr;
  uint8_t* res_busy_ = nullptr;
  ServiceQueue* ready_ = nullptr;
  ServiceQueue* link_queue_ = nullptr;
  const int32_t* task_of_ = nullptr;  // fusion only
  const int64_t* talloc_ = nullptr;   // fusion only
  const double* tprio_ = nullptr;     // null: FIFO ready queues
  const double* xprio_ = nullptr;     // null: FIFO link queues
  const int32_t* gate_ = nullptr;     // null: no counted gates (Decision::gate), else per task
  const int32_t* gate_need_ = nullptr;
  const int32_t* gate_signal_ = nullptr;  // per node
  int32_t* gate_count_ = nullptr;
  size_t num_dirty_links_ = 0;
  // The host (kHost).
  Execution exec_ = Execution::kNone;
  bool sync_ = false;  // some task makes its thread wait for it (never under captured)
  // Raw views of the host's per-run arrays (SetupHost; none is resized during the run).
  const double* host_cost_ = nullptr;
  const uint8_t* host_sync_ = nullptr;
  int32_t* outstanding_ = nullptr;
  int32_t* last_launched_ = nullptr;
  int32_t* stream_next_ = nullptr;
  int32_t* sync_waiter_ = nullptr;
  int32_t* wait_head_ = nullptr;
  int32_t* wait_tail_ = nullptr;
  int32_t* wait_next_ = nullptr;
  int32_t* thread_task_ = nullptr;
  uint8_t* thread_state_ = nullptr;
  double* thread_clock_ = nullptr;
  double* thread_busy_ = nullptr;
  int32_t* proc_cursor_ = nullptr;
  const int32_t* proc_order_ = nullptr;
  const int32_t* proc_off_ = nullptr;
  bool per_device_ = false;
  bool in_order_ = true;
  bool fast_order_ = true;
  int32_t nproc_ = 1;
  int32_t tpp_ = 1;
  int32_t nthreads_ = 0;
  int32_t queue_cap_ = 0;
  bool identity_order_ = false;    // eager/captured program order is 0..n-1 (NextHostTask)
  double* launch_time_ = nullptr;  // eager execution: Workspace::launch_time; else null
  uint64_t dirty_thread_summary_ = 0;
  double now_ = 0.0;
  int32_t tasks_total_ = 0;
  int32_t tasks_done_ = 0;
};

Engine::Engine(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
               const SimOptions& options)
    : graph_(graph),
      cluster_(cluster),
      cost_model_(cost_model),
      options_(options),
      host_(ResolveHost(options, cluster, cost_model)),
      model_(BuildEngineModel(graph, cluster, cost_model, host_.execution != Execution::kNone,
                              host_.execution == Execution::kEager)),
      max_load_(model_, cluster) {
  if (host_.execution == Execution::kCaptured) {
    for (int32_t v = 0; v < model_.num_nodes; ++v) {
      if (model_.host_sync[static_cast<size_t>(v)]) {
        throw ConfigError("execution captured cannot capture '" + graph.node(v).name + "' (" +
                              graph.op_type_name_of(v) + "): it makes the host wait for the device",
                          {}, "use execution eager, or remove the synchronizing op from the step");
      }
    }
  }
}

template <bool kFull>
RunOutcome Engine::Dispatch(const Decision& decision, Workspace& ws) const {
  const bool fusion = decision.has_fusion();
  if (host_.execution != Execution::kNone) {
    return fusion ? Run<kFull, true, true>(*this, decision, ws).Execute()
                  : Run<kFull, false, true>(*this, decision, ws).Execute();
  }
  return fusion ? Run<kFull, true, false>(*this, decision, ws).Execute()
                : Run<kFull, false, false>(*this, decision, ws).Execute();
}

Evaluation Engine::Evaluate(const Decision& decision, Workspace& ws) const {
  const RunOutcome out = Dispatch<false>(decision, ws);
  Evaluation eval;
  eval.feasible = out.oom.device < 0;
  eval.oom_device = out.oom.device;
  eval.step_time =
      eval.feasible || options_.infeasible_step_time <= 0.0 ? out.makespan : options_.infeasible_step_time;
  int64_t peak = 0;
  for (int64_t p : ws.peak) peak = std::max(peak, p);
  eval.peak_memory = static_cast<double>(peak);
  eval.host_busy = out.host_busy;
  if (options_.max_load) eval.max_load = max_load_.Evaluate(decision.placement);
  return eval;
}

SimResult Engine::Simulate(const Decision& decision, bool timeline, Workspace& ws) const {
  const RunOutcome out = Dispatch<true>(decision, ws);
  SimResult result = AssembleResult(model_, ws, out, timeline);
  result.execution = host_.execution;
  result.processes = host_.processes;
  result.max_load = max_load_.Evaluate(decision.placement);
  return result;
}

}  // namespace gosim::sim
