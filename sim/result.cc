// SimResult as JSON and as a readable summary.
#include "sim/result.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/strings.h"
#include "sim/cluster.h"

namespace gosim::sim {
namespace {

using nlohmann::json;

const char* ReasonName(CriticalStep::Reason reason) {
  switch (reason) {
    case CriticalStep::Reason::kStart:
      return "start";
    case CriticalStep::Reason::kData:
      return "data";
    case CriticalStep::Reason::kResource:
      return "resource";
  }
  return "?";
}

std::string StepName(const CriticalStep& step, const graphs::Graph& graph) {
  switch (step.kind) {
    case CriticalStep::Kind::kOp:
      return graph.node(step.id).name;
    case CriticalStep::Kind::kTransfer:
      return TensorName(graph, step.id);
    case CriticalStep::Kind::kHost:
      return step.id >= 0 ? graph.node(step.id).name : "(graph launch)";
  }
  return "?";
}

std::string StepWhere(const CriticalStep& step, const Cluster& cluster) {
  switch (step.kind) {
    case CriticalStep::Kind::kOp:
      return cluster.device(step.where).name;
    case CriticalStep::Kind::kTransfer:
      return cluster.links()[step.where].name;
    case CriticalStep::Kind::kHost:
      return HostThreadName(step.where);
  }
  return "?";
}

const char* StepKindName(CriticalStep::Kind kind) {
  switch (kind) {
    case CriticalStep::Kind::kOp:
      return "op";
    case CriticalStep::Kind::kTransfer:
      return "transfer";
    case CriticalStep::Kind::kHost:
      return "host";
  }
  return "?";
}

json ChannelJson(const ChannelStats& s, const std::string& name) {
  return json{{"name", name},
              {"bytes", s.bytes},
              {"busy_time", s.busy_time},
              {"utilization", s.utilization},
              {"transfers", s.transfers}};
}

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%5.1f%%", 100.0 * fraction);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string HostThreadName(int32_t thread) {
  return "host" + std::to_string(thread);
}

std::string DescribeHostSetup(Execution execution, Processes processes) {
  if (execution == Execution::kNone) return "host not modelled (execution none: GPU-side times only)";
  return "host: execution " + std::string(ExecutionName(execution)) + ", " +
         (processes == Processes::kOne ? "one process drives every device" : "one process per device");
}

std::string DescribeSplit(const ColocationSplit& split, const graphs::Graph& graph, const Cluster& cluster) {
  return "colocation group '" + graph.colocation_groups()[static_cast<size_t>(split.group)] +
         "' is split: '" + graph.node(split.first).name + "' is on " +
         cluster.device(split.first_device).name + " but '" + graph.node(split.other).name + "' is on " +
         cluster.device(split.other_device).name;
}

std::string TensorName(const graphs::Graph& graph, graphs::TensorId tensor) {
  const graphs::NodeId producer = graph.tensor_producer(tensor);
  return graph.node(producer).name + ":" + std::to_string(tensor - graph.tensor_offset(producer));
}

int64_t SimResult::peak_memory() const {
  int64_t peak = 0;
  for (const auto& d : devices) peak = std::max(peak, d.peak_memory);
  return peak;
}

std::string SimResultToJson(const SimResult& r, const graphs::Graph& graph, const Cluster& cluster,
                            const std::string& cost_model) {
  json j;
  j["format"] = "gosim.sim_result";
  j["version"] = 1;
  j["graph"] = graph.name();
  j["cluster"] = cluster.name();
  if (!cost_model.empty() || !r.cost_model.empty())
    j["cost_model"] = cost_model.empty() ? r.cost_model : cost_model;
  j["feasible"] = r.feasible;
  j["completed"] = r.completed;
  j["step_time"] = r.step_time;
  j["kernels"] = r.kernels;
  j["transfers"] = r.transfers;
  j["transferred_bytes"] = r.transferred_bytes;
  j["peak_memory"] = r.peak_memory();
  j["execution"] = std::string(ExecutionName(r.execution));
  j["processes"] = std::string(ProcessesName(r.processes));
  j["host_busy_s"] = r.host_busy;
  j["max_load_s"] = r.max_load;
  if (r.data_parallel > 0) {
    j["data_parallel"] = r.data_parallel;
    j["ddp_step_time_s"] = r.ddp_step_time;
  }
  if (r.micro_batches > 1) {
    j["micro_batches"] = r.micro_batches;
    j["time_per_micro_batch_s"] = r.step_time / r.micro_batches;
  }
  json hosts = json::array();
  for (size_t t = 0; t < r.host_threads.size(); ++t) {
    const HostThreadStats& h = r.host_threads[t];
    hosts.push_back(json{{"name", HostThreadName(static_cast<int32_t>(t))},
                         {"process", h.process},
                         {"busy_time", h.busy_time},
                         {"utilization", h.utilization}});
  }
  j["host_threads"] = std::move(hosts);
  json devices = json::array();
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    devices.push_back(json{{"name", cluster.device(static_cast<int32_t>(d)).name},
                           {"persistent_memory", s.persistent_memory},
                           {"peak_memory", s.peak_memory},
                           {"capacity", cluster.device(static_cast<int32_t>(d)).memory_capacity},
                           {"busy_time", s.busy_time},
                           {"comm_busy_time", s.comm_busy_time},
                           {"utilization", s.utilization},
                           {"kernels", s.kernels}});
  }
  j["devices"] = std::move(devices);
  json links = json::array();
  for (size_t l = 0; l < r.links.size(); ++l)
    links.push_back(ChannelJson(r.links[l], cluster.links()[l].name));
  j["links"] = std::move(links);
  json resources = json::array();
  for (size_t x = 0; x < r.resources.size(); ++x) {
    resources.push_back(ChannelJson(r.resources[x], cluster.resources()[x].name));
  }
  j["resources"] = std::move(resources);
  if (r.oom) {
    const OomInfo& o = *r.oom;
    json live = json::array();
    for (const auto& t : o.live) {
      live.push_back(
          json{{"tensor", TensorName(graph, t.tensor)}, {"bytes", t.bytes}, {"received", t.received}});
    }
    j["oom"] = json{{"device", cluster.device(o.device).name},
                    {"time", o.time},
                    {"capacity", o.capacity},
                    {"in_use", o.in_use},
                    {"requested", o.requested},
                    {"persistent", o.persistent},
                    {"node", o.node >= 0 ? json(graph.node(o.node).name) : json(nullptr)},
                    {"tensor", o.tensor >= 0 ? json(TensorName(graph, o.tensor)) : json(nullptr)},
                    {"live", std::move(live)}};
  } else {
    j["oom"] = nullptr;
  }
  if (r.split) {
    const ColocationSplit& x = *r.split;
    j["colocation_split"] = json{{"group", graph.colocation_groups()[static_cast<size_t>(x.group)]},
                                 {"node", graph.node(x.first).name},
                                 {"device", cluster.device(x.first_device).name},
                                 {"other_node", graph.node(x.other).name},
                                 {"other_device", cluster.device(x.other_device).name}};
  } else {
    j["colocation_split"] = nullptr;
  }
  json steps = json::array();
  for (const auto& s : r.critical_path.steps) {
    steps.push_back(json{{"kind", StepKindName(s.kind)},
                         {"name", StepName(s, graph)},
                         {"where", StepWhere(s, cluster)},
                         {"reason", ReasonName(s.reason)},
                         {"start", s.start},
                         {"end", s.end}});
  }
  j["critical_path"] = json{{"length", r.critical_path.length},
                            {"compute_time", r.critical_path.compute_time},
                            {"transfer_time", r.critical_path.transfer_time},
                            {"host_time", r.critical_path.host_time},
                            {"steps", std::move(steps)}};
  if (!r.ops.empty() || !r.transfer_hops.empty()) {
    json ops = json::array();
    for (const auto& op : r.ops) {
      ops.push_back(json{{"node", graph.node(op.node).name},
                         {"device", cluster.device(op.device).name},
                         {"fused_nodes", op.fused_nodes},
                         {"ready", op.ready},
                         {"start", op.start},
                         {"end", op.end}});
    }
    json hops = json::array();
    for (const auto& h : r.transfer_hops) {
      hops.push_back(json{{"tensor", TensorName(graph, h.tensor)},
                          {"src", cluster.device(h.src_device).name},
                          {"dst", cluster.device(h.dst_device).name},
                          {"link", cluster.links()[h.link].name},
                          {"hop", h.hop},
                          {"bytes", h.bytes},
                          {"queued", h.queued},
                          {"start", h.start},
                          {"end", h.end}});
    }
    json host_ops = json::array();
    for (const auto& h : r.host_ops) {
      host_ops.push_back(json{{"node", h.node >= 0 ? json(graph.node(h.node).name) : json(nullptr)},
                              {"thread", HostThreadName(h.thread)},
                              {"start", h.start},
                              {"end", h.end}});
    }
    j["timeline"] =
        json{{"ops", std::move(ops)}, {"transfers", std::move(hops)}, {"host", std::move(host_ops)}};
  }
  return DumpJson(j, 1);
}

std::string FormatSimResult(const SimResult& r, const graphs::Graph& graph, const Cluster& cluster) {
  std::ostringstream out;
  out << "graph " << graph.name() << " (" << graph.num_nodes() << " nodes) on " << cluster.name() << "\n";
  out << "step time " << FormatSeconds(r.step_time)
      << (r.feasible    ? ""
          : !r.oom      ? "  INFEASIBLE (colocation group split)"
          : r.split     ? "  INFEASIBLE (out of memory; colocation group split)"
          : r.completed ? "  INFEASIBLE (out of memory)"
                        : "  INFEASIBLE (stopped at out of memory)")
      << "\n";
  out << r.kernels << " kernels, " << r.transfers << " transfers ("
      << FormatBytes(static_cast<double>(r.transferred_bytes)) << ")\n";
  out << DescribeHostSetup(r.execution, r.processes);
  if (r.execution != Execution::kNone) {
    out << "; busiest host thread " << FormatSeconds(r.host_busy) << " ("
        << Percent(r.step_time > 0.0 ? r.host_busy / r.step_time : 0.0) << " of the step)";
  }
  out << "\n\n";
  out << Pad("device", 14) << Pad("peak memory", 14) << Pad("capacity", 14) << Pad("busy", 14)
      << "utilization\n";
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    const DeviceSpec& spec = cluster.device(static_cast<int32_t>(d));
    out << Pad(spec.name, 14) << Pad(FormatBytes(static_cast<double>(s.peak_memory)), 14)
        << Pad(FormatBytes(static_cast<double>(spec.memory_capacity)), 14)
        << Pad(FormatSeconds(s.busy_time), 14) << Percent(s.utilization)
        << (s.peak_memory > spec.memory_capacity ? "  OOM" : "") << "\n";
  }
  bool any_link = false;
  for (size_t l = 0; l < r.links.size(); ++l) {
    const ChannelStats& s = r.links[l];
    if (s.transfers == 0) continue;
    if (!any_link)
      out << "\n"
          << Pad("link", 22) << Pad("bytes", 14) << Pad("busy", 14) << Pad("utilization", 13) << "hops\n";
    any_link = true;
    out << Pad(cluster.links()[l].name, 22) << Pad(FormatBytes(static_cast<double>(s.bytes)), 14)
        << Pad(FormatSeconds(s.busy_time), 14) << Pad(Percent(s.utilization), 13) << s.transfers << "\n";
  }
  if (!any_link) out << "\nno communication\n";
  const CriticalPath& cp = r.critical_path;
  out << "\ncritical path " << FormatSeconds(cp.length) << ": " << cp.steps.size() << " steps, compute "
      << FormatSeconds(cp.compute_time) << ", transfers " << FormatSeconds(cp.transfer_time)
      << (r.execution != Execution::kNone ? ", host " + FormatSeconds(cp.host_time) : std::string())
      << (cp.steps.size() > 10 ? "; the last 10:" : "") << "\n";
  const size_t shown = std::min<size_t>(cp.steps.size(), 10);
  for (size_t i = cp.steps.size() - shown; i < cp.steps.size(); ++i) {
    const CriticalStep& s = cp.steps[i];
    out << "  " << Pad(FormatSeconds(s.start), 12) << ".. " << Pad(FormatSeconds(s.end), 12)
        << Pad(StepKindName(s.kind), 9) << StepName(s, graph) << " on " << StepWhere(s, cluster) << " ("
        << ReasonName(s.reason) << ")\n";
  }
  if (r.split) out << "\ninfeasible: " << DescribeSplit(*r.split, graph, cluster) << "\n";
  if (r.oom) {
    const OomInfo& o = *r.oom;
    out << "\nout of memory on " << cluster.device(o.device).name << " at " << FormatSeconds(o.time)
        << ": needed " << FormatBytes(static_cast<double>(o.requested)) << " with "
        << FormatBytes(static_cast<double>(o.in_use)) << " of "
        << FormatBytes(static_cast<double>(o.capacity)) << " in use ("
        << FormatBytes(static_cast<double>(o.persistent)) << " persistent)";
    if (o.node >= 0) out << " starting " << graph.node(o.node).name;
    if (o.tensor >= 0) out << " receiving " << TensorName(graph, o.tensor);
    out << "\n";
    for (const auto& t : o.live) {
      out << "  " << Pad(TensorName(graph, t.tensor), 40) << FormatBytes(static_cast<double>(t.bytes))
          << (t.received ? " (received)" : "") << "\n";
    }
  }
  return out.str();
}

}  // namespace gosim::sim
