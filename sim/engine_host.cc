// Run, the host (kHost): the threads that dispatch every task before its
// kernel can start, their program order, launch queues and synchronizing
// ops (docs/SIMULATOR.md, "The host"; the class: sim/engine_run.h).
#include "sim/engine_run.h"

namespace gosim::sim {

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::SetupHost() {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::AddCopyCalls(double* cost) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::AddCopyCallsByTensor(double* cost) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::ListSchedule() {
  const int32_t n = m_.num_nodes;
  std::vector<int32_t>& indeg = ws_.host_pending;
  indeg.assign(static_cast<size_t>(n), 0);
  for (int32_t v = 0; v < n; ++v) {
    const int32_t t = Task(v);
    const EngineModel::NodeInfo& node = m_.nodes[v];
    for (int32_t k = node.in_begin; k < node.in_end; ++k) indeg[t] += Task(m_.inputs[k].producer) != t;
    for (int32_t k = m_.ctrl_in_off[v]; k < m_.ctrl_in_off[v + 1]; ++k) indeg[t] += Task(m_.ctrl_in[k]) != t;
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

template <bool kFull, bool kFusion, bool kHost>
inline int32_t Run<kFull, kFusion, kHost>::NextHostTask(int32_t p) {
  if (exec_ != Execution::kGraph) {
    int32_t& cursor = proc_cursor_[p];
    if (identity_order_) return cursor < proc_off_[1] ? cursor++ : -1;
    return cursor < proc_off_[p + 1] ? proc_order_[cursor++] : -1;
  }
  ServiceQueue& q = ws_.host_ready[static_cast<size_t>(p)];
  return q.empty() ? -1 : q.PopFifo();
}

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::DispatchHosts() {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::HostRun(int32_t th) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::RunAhead(int32_t th, int32_t p) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::StartHostOp(int32_t th, int32_t task, double cost) {
  thread_task_[th] = task;
  thread_state_[th] = kBusy;
  thread_busy_[th] += cost;
  ws_.events.Push(now_ + cost, EventKind::kHostFinish, th);
  if constexpr (kFull) RecordHostOp(th, task, now_, cost);
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::RecordHostOp(int32_t th, int32_t task, double start, double cost) {
  const int32_t rec = static_cast<int32_t>(ws_.host_recs.size());
  ws_.host_recs.push_back(
      Workspace::HostRec{task, th, start, start + cost, ws_.thread_cause[static_cast<size_t>(th)]});
  ws_.thread_cause[static_cast<size_t>(th)] = HostCause(rec);
  if (task >= 0) ws_.launch_cause[static_cast<size_t>(task)] = HostCause(rec);
}

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::HostFinish(int32_t th) {
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

template <bool kFull, bool kFusion, bool kHost>
inline bool Run<kFull, kFusion, kHost>::InQueue(int32_t task) const {
  return tasks_[task].time > 0.0;
}

template <bool kFull, bool kFusion, bool kHost>
inline bool Run<kFull, kFusion, kHost>::Launch(int32_t th, int32_t task, double at) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::LaunchNow(int32_t th, int32_t task, double at) {
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
  if (--tasks_[task].pending == 0) MakeReady(task, kFull ? ws_.launch_cause[static_cast<size_t>(task)] : -1);
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::Dispatched(int32_t task) {
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

template <bool kFull, bool kFusion, bool kHost>
inline bool Run<kFull, kFusion, kHost>::Relaunch(int32_t th, int32_t waiting, int32_t d, double at) {
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

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::HostOnFinish(int32_t task, int32_t d, int32_t lane) {
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

// The members other files call, for every Run (engine_run.h).
#define GOSIM_SIM_INSTANTIATE(F, U, H)             \
  template void Run<F, U, H>::SetupHost();         \
  template void Run<F, U, H>::DispatchHosts();     \
  template void Run<F, U, H>::HostFinish(int32_t); \
  template void Run<F, U, H>::HostOnFinish(int32_t, int32_t, int32_t);
GOSIM_SIM_FOR_EACH_RUN(GOSIM_SIM_INSTANTIATE)
#undef GOSIM_SIM_INSTANTIATE

}  // namespace gosim::sim
