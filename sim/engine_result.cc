// Turns the workspace of a finished full run into a SimResult: statistics,
// the critical path (walking start causes back from the last kernel) and the
// timeline.
#include <algorithm>

#include "sim/engine.h"

namespace gosim::sim {
namespace {

CriticalPath WalkCriticalPath(const EngineModel& m, const Workspace& ws) {
  CriticalPath path;
  if (ws.op_recs.empty()) return path;
  // The kernel that ended last (the smallest task id among equal ends).
  const Workspace::OpRec* last = &ws.op_recs.front();
  for (const auto& rec : ws.op_recs) {
    if (rec.end > last->end || (rec.end == last->end && rec.task < last->task)) last = &rec;
  }
  const auto reason = [](int32_t cause, bool waited) {
    if (cause == -1) return CriticalStep::Reason::kStart;
    return waited ? CriticalStep::Reason::kResource : CriticalStep::Reason::kData;
  };
  // Causes always point at records started earlier, so this terminates.
  // A cause code is a task, num_nodes + a hop record, or -2 - a host record.
  int32_t cur = last->task;
  while (cur != -1) {
    CriticalStep step;
    if (cur <= -2) {
      const Workspace::HostRec& rec = ws.host_recs[static_cast<size_t>(-2 - cur)];
      step = {CriticalStep::Kind::kHost, reason(rec.cause, false), rec.task, rec.thread, rec.start, rec.end};
      path.host_time += rec.end - rec.start;
      cur = rec.cause;
    } else if (cur < m.num_nodes) {
      const Workspace::OpRec& rec = ws.op_recs[ws.op_rec_of[cur]];
      step = {
          CriticalStep::Kind::kOp, reason(rec.cause, rec.waited), rec.task, rec.device, rec.start, rec.end};
      path.compute_time += rec.end - rec.start;
      cur = rec.cause;
    } else {
      const Workspace::HopRec& rec = ws.hop_recs[cur - m.num_nodes];
      step = {CriticalStep::Kind::kTransfer,
              reason(rec.cause, rec.waited),
              ws.transfers[rec.transfer].tensor,
              rec.link,
              rec.start,
              rec.end};
      path.transfer_time += rec.end - rec.start;
      cur = rec.cause;
    }
    path.steps.push_back(step);
  }
  std::reverse(path.steps.begin(), path.steps.end());
  path.length = path.steps.back().end - path.steps.front().start;
  return path;
}

ChannelStats Channel(int64_t bytes, double busy, int32_t hops, double step_time) {
  return ChannelStats{bytes, busy, step_time > 0.0 ? busy / step_time : 0.0, hops};
}

}  // namespace

SimResult AssembleResult(const EngineModel& m, const Workspace& ws, const RunOutcome& out, bool timeline) {
  SimResult r;
  r.feasible = out.oom.device < 0;
  r.completed = !out.stopped;
  r.step_time = out.makespan;
  if (!r.feasible) r.oom = out.oom;
  r.kernels = static_cast<int32_t>(ws.op_recs.size());
  r.transfers = static_cast<int32_t>(ws.transfers.size());
  for (const auto& tr : ws.transfers) r.transferred_bytes += tr.bytes;

  r.devices.resize(m.num_devices);
  for (int32_t d = 0; d < m.num_devices; ++d) {
    DeviceStats& s = r.devices[d];
    s.persistent_memory = ws.persistent[d];
    s.peak_memory = ws.peak[d];
    s.busy_time = ws.busy[d];
    s.comm_busy_time = ws.comm_busy.empty() ? 0.0 : ws.comm_busy[d];
    s.utilization = r.step_time > 0.0 ? s.busy_time / r.step_time : 0.0;
    s.kernels = ws.kernels[d];
  }
  for (int32_t l = 0; l < m.num_links; ++l) {
    r.links.push_back(Channel(ws.link_bytes[l], ws.link_busy_time[l], ws.link_hops[l], r.step_time));
  }
  for (int32_t x = 0; x < m.num_resources; ++x) {
    r.resources.push_back(Channel(ws.res_bytes[x], ws.res_busy_time[x], ws.res_hops[x], r.step_time));
  }
  r.critical_path = WalkCriticalPath(m, ws);
  r.host_busy = out.host_busy;
  if (!ws.thread_busy.empty() && !m.host_costs.empty()) {
    const auto threads = static_cast<int32_t>(ws.thread_busy.size());
    const int32_t processes = out.host_processes > 0 ? out.host_processes : 1;
    for (int32_t th = 0; th < threads; ++th) {
      const double busy = ws.thread_busy[static_cast<size_t>(th)];
      r.host_threads.push_back(HostThreadStats{th / std::max(1, threads / processes), busy,
                                               r.step_time > 0.0 ? busy / r.step_time : 0.0});
    }
  }

  if (timeline) {
    r.ops.reserve(ws.op_recs.size());
    for (const auto& rec : ws.op_recs) {
      const int32_t fused = out.fusion ? ws.group_size[rec.task] : 1;
      r.ops.push_back(OpRecord{rec.task, rec.device, fused, rec.ready, rec.start, rec.end});
    }
    r.transfer_hops.reserve(ws.hop_recs.size());
    for (const auto& rec : ws.hop_recs) {
      const auto& tr = ws.transfers[rec.transfer];
      r.transfer_hops.push_back(TransferRecord{tr.tensor, tr.src, tr.dst, rec.link, rec.hop, tr.bytes,
                                               rec.queued, rec.start, rec.end});
    }
    for (const auto& rec : ws.host_recs)
      r.host_ops.push_back(HostRecord{rec.task, rec.thread, rec.start, rec.end});
  }
  return r;
}

}  // namespace gosim::sim
