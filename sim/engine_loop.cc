// Run, the event loop: kernels on device streams, their inputs and outputs,
// pipeline gates, and transfers hop by hop over links (sim/engine_run.h).
#include "sim/engine_run.h"

namespace gosim::sim {

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::Loop() {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::Dispatch() {
  if constexpr (kHost) {
    // A dispatch can make work for another idle thread of its process.
    while (dirty_thread_summary_ != 0) DispatchHosts();
  }
  if (dirty_summary_ != 0) DispatchDevices();
  if (num_dirty_links_ > 0) DispatchLinks();
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::MarkLink(int32_t l) {
  if (!link_dirty_[l]) {
    link_dirty_[l] = 1;
    ws_.dirty_links[num_dirty_links_++] = l;
  }
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::DispatchDevices() {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::StartOp(int32_t task, int32_t lane) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::OpFinish(int32_t task) {
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

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::SetupGates() {
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

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::Signal(int32_t task) {
  ForEachMember(task, [&](int32_t v) {
    const int32_t g = gate_signal_[v];
    if (g < 0) return;
    const int32_t count = ++gate_count_[g];
    ServiceQueue& parked = ws_.gate_parked[static_cast<size_t>(g)];
    while (!parked.empty() && -parked.FrontHeap().priority <= count) EnqueueTask(parked.PopHeap(), task);
  });
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::FinishNode(int32_t v, int32_t task, int32_t d) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::ReleaseInputs(int32_t v, int32_t task, int32_t d) {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::ReleaseCopy(int32_t t) {
  const CopyState& copy = copies_[t];
  Free(copy.device, copy.bytes, t);
  if (Aliased(t)) [[unlikely]] {
    const int32_t v = m_.tensors[t].producer;
    if (--held_[v] == 0) ReleaseInputs(v, Task(v), copy.device);
  }
}

template <bool kFull, bool kFusion, bool kHost>
inline int32_t Run<kFull, kFusion, kHost>::NewTransfer(int32_t t, int32_t src, int32_t dst, int32_t slot,
                                                       int32_t cause) {
  const int32_t x = static_cast<int32_t>(ws_.transfers.size());
  const int32_t route = m_.route_off[src * nd_ + dst];
  const auto hops = static_cast<int16_t>(m_.route_off[src * nd_ + dst + 1] - route);
  const double priority = xprio_ != nullptr ? xprio_[static_cast<int64_t>(t) * nd_ + dst] : 0.0;
  ws_.transfers.push_back(
      Transfer{t, src, dst, slot, 0, m_.tensors[t].bytes, route, hops, 0, priority, now_, -1, cause});
  Enqueue(x, m_.route_links[route]);
  return x;
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::Enqueue(int32_t x, int32_t link) {
  Transfer& tr = ws_.transfers[x];
  tr.queued = now_;
  if (xprio_ != nullptr) {
    link_queue_[link].PushHeap(tr.priority, x, now_);
  } else {
    link_queue_[link].PushFifo(x, now_);
  }
  MarkLink(link);
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::HopFinish(int32_t x) {
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

template <bool kFull, bool kFusion, bool kHost>
inline bool Run<kFull, kFusion, kHost>::ResourcesFree(int32_t link) const {
  for (int32_t i = m_.link_res_off[link]; i < m_.link_res_off[link + 1]; ++i) {
    if (res_busy_[m_.link_res[i]]) return false;
  }
  return true;
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::DispatchLinks() {
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

template <bool kFull, bool kFusion, bool kHost>
inline ServiceQueue::Entry Run<kFull, kFusion, kHost>::Head(int32_t l) const {
  const ServiceQueue& q = link_queue_[l];
  if (xprio_ != nullptr) return q.FrontHeap();
  const int32_t x = q.FrontFifo();
  return ServiceQueue::Entry{0.0, ws_.transfers[x].queued, x};
}

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::StartHop(int32_t x, int32_t link) {
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

template <bool kFull, bool kFusion, bool kHost>
inline int32_t Run<kFull, kFusion, kHost>::Blocker(int32_t link) const {
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

// The members other files call, for every Run (engine_run.h).
#define GOSIM_SIM_INSTANTIATE(F, U, H) \
  template void Run<F, U, H>::Loop();  \
  template void Run<F, U, H>::SetupGates();
GOSIM_SIM_FOR_EACH_RUN(GOSIM_SIM_INSTANTIATE)
#undef GOSIM_SIM_INSTANTIATE

}  // namespace gosim::sim
