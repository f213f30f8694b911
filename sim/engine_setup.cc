// Run, setup: the per-run arrays, fused groups and the task table (Setup,
// BuildGroups), the run as a whole (Execute) and the out-of-memory report.
// The class and its sections: sim/engine_run.h.
#include "sim/engine_run.h"

namespace gosim::sim {

template <bool kFull, bool kFusion, bool kHost>
RunOutcome Run<kFull, kFusion, kHost>::Execute() {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::Setup() {
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

template <bool kFull, bool kFusion, bool kHost>
inline void Run<kFull, kFusion, kHost>::BuildGroups() {
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

template <bool kFull, bool kFusion, bool kHost>
void Run<kFull, kFusion, kHost>::RecordOom(int32_t d, int64_t requested, int32_t node, int32_t tensor) {
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
    std::partial_sort(oom.live.begin(), oom.live.begin() + static_cast<std::ptrdiff_t>(keep), oom.live.end(),
                      [](const LiveTensor& a, const LiveTensor& b) {
                        return a.bytes != b.bytes ? a.bytes > b.bytes : a.tensor < b.tensor;
                      });
    oom.live.resize(keep);
  }
  if (stop_at_oom_) out_.stopped = true;
}

// The members other files call, for every Run (engine_run.h).
#define GOSIM_SIM_INSTANTIATE(F, U, H)         \
  template RunOutcome Run<F, U, H>::Execute(); \
  template void Run<F, U, H>::RecordOom(int32_t, int64_t, int32_t, int32_t);
GOSIM_SIM_FOR_EACH_RUN(GOSIM_SIM_INSTANTIATE)
#undef GOSIM_SIM_INSTANTIATE

}  // namespace gosim::sim
