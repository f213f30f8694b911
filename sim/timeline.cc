// Chrome trace writer.
#include "sim/timeline.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"

namespace gosim::sim {
namespace {

using nlohmann::json;

constexpr int kDevicesPid = 1;
constexpr int kLinksPid = 2;
constexpr int kHostPid = 3;
constexpr double kMicros = 1e6;

json Meta(const char* name, int pid, int tid, json args) {
  json e{{"ph", "M"}, {"name", name}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

}  // namespace

std::string ChromeTraceJson(const SimResult& r, const graphs::Graph& graph, const Cluster& cluster,
                            const std::string& cost_model) {
  if (r.ops.empty() && r.kernels > 0) {
    throw Error("the simulation result has no timeline", {},
                "simulate with timeline = true (Evaluator::Simulate)");
  }
  json events = json::array();
  events.push_back(Meta("process_name", kDevicesPid, -1, {{"name", "devices"}}));
  events.push_back(Meta("process_sort_index", kDevicesPid, -1, {{"sort_index", 0}}));
  events.push_back(Meta("process_name", kLinksPid, -1, {{"name", "links"}}));
  events.push_back(Meta("process_sort_index", kLinksPid, -1, {{"sort_index", 1}}));
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    const DeviceSpec& spec = cluster.device(d);
    events.push_back(Meta("thread_name", kDevicesPid, d, {{"name", spec.name + " (" + spec.kind + ")"}}));
    events.push_back(Meta("thread_sort_index", kDevicesPid, d, {{"sort_index", d}}));
  }
  for (size_t l = 0; l < cluster.links().size(); ++l) {
    const int tid = static_cast<int>(l);
    events.push_back(Meta("thread_name", kLinksPid, tid, {{"name", cluster.links()[l].name}}));
    events.push_back(Meta("thread_sort_index", kLinksPid, tid, {{"sort_index", tid}}));
  }
  if (!r.host_threads.empty()) {
    events.push_back(Meta("process_name", kHostPid, -1, {{"name", "host"}}));
    events.push_back(Meta("process_sort_index", kHostPid, -1, {{"sort_index", -1}}));
    for (size_t t = 0; t < r.host_threads.size(); ++t) {
      const int tid = static_cast<int>(t);
      events.push_back(Meta(
          "thread_name", kHostPid, tid,
          {{"name", HostThreadName(tid) + " (process " + std::to_string(r.host_threads[t].process) + ")"}}));
      events.push_back(Meta("thread_sort_index", kHostPid, tid, {{"sort_index", tid}}));
    }
  }
  for (const HostRecord& h : r.host_ops) {
    events.push_back(json{{"ph", "X"},
                          {"cat", "host"},
                          {"name", h.node >= 0 ? graph.node(h.node).name : std::string("graph launch")},
                          {"pid", kHostPid},
                          {"tid", h.thread},
                          {"ts", h.start * kMicros},
                          {"dur", (h.end - h.start) * kMicros}});
  }
  for (const OpRecord& op : r.ops) {
    const graphs::Node& node = graph.node(op.node);
    json args{{"node", op.node},
              {"op", graph.op_type_name(node.op)},
              {"ready_us", op.ready * kMicros},
              {"flops", node.flops},
              {"bytes_written", node.bytes_written}};
    if (!node.scope.empty()) args["scope"] = node.scope;
    std::string name = node.name;
    if (op.fused_nodes > 1) {
      args["fused_nodes"] = op.fused_nodes;
      name = "fused:" + name + " +" + std::to_string(op.fused_nodes - 1);
    }
    events.push_back(json{{"ph", "X"},
                          {"cat", "op"},
                          {"name", std::move(name)},
                          {"pid", kDevicesPid},
                          {"tid", op.device},
                          {"ts", op.start * kMicros},
                          {"dur", (op.end - op.start) * kMicros},
                          {"args", std::move(args)}});
  }
  for (const TransferRecord& h : r.transfer_hops) {
    events.push_back(json{{"ph", "X"},
                          {"cat", "transfer"},
                          {"name", TensorName(graph, h.tensor)},
                          {"pid", kLinksPid},
                          {"tid", h.link},
                          {"ts", h.start * kMicros},
                          {"dur", (h.end - h.start) * kMicros},
                          {"args",
                           {{"bytes", h.bytes},
                            {"src", cluster.device(h.src_device).name},
                            {"dst", cluster.device(h.dst_device).name},
                            {"hop", h.hop},
                            {"queued_us", h.queued * kMicros}}}});
  }
  json trace{{"traceEvents", std::move(events)},
             {"displayTimeUnit", "ns"},
             {"otherData",
              {{"generator", "gosim"},
               {"graph", graph.name()},
               {"cluster", cluster.name()},
               {"step_time_s", r.step_time},
               {"feasible", r.feasible},
               {"execution", std::string(ExecutionName(r.execution))},
               {"processes", std::string(ProcessesName(r.processes))},
               {"host_busy_s", r.host_busy}}}};
  const std::string& described = cost_model.empty() ? r.cost_model : cost_model;
  if (!described.empty()) trace["otherData"]["cost_model"] = described;
  return DumpJson(trace);
}

void WriteChromeTrace(const std::string& path, const SimResult& result, const graphs::Graph& graph,
                      const Cluster& cluster, const std::string& cost_model) {
  WriteFileAtomic(path, ChromeTraceJson(result, graph, cluster, cost_model));
}

}  // namespace gosim::sim
