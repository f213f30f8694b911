#include "sim/msr.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "sim/engine.h"

namespace gosim::sim {

Cluster MsrCluster(const graphs::MsrProblem& problem) {
  ClusterBuilder builder("from-graph:" + problem.graph.name(), problem.graph.source());
  builder.SetDescription("the machine of msr-fiddle problem " + problem.graph.source() + ": " +
                         std::to_string(problem.accelerators) + " accelerators, " +
                         std::to_string(problem.cpus) + " CPU cores, transfers through CPU DRAM");
  HostSpec host;
  host.kind = "CPU DRAM (msr-fiddle)";
  host.execution = Execution::kNone;
  builder.SetHost(host);
  // Peaks and bandwidths only keep the builder's checks: every node of an
  // msr-fiddle graph carries measured times, which the cost model uses.
  auto add = [&](const std::string& name, const std::string& kind, DeviceRole role, double memory,
                 double link_bandwidth) {
    DeviceSpec d;
    d.name = name;
    d.kind = kind;
    d.role = role;
    d.peak_flops_fp32 = 1e12;
    d.memory_bandwidth = 1e11;
    d.memory_capacity = static_cast<int64_t>(std::min(memory, 9.0e18));
    builder.AddDevice(d);
    for (const bool up : {true, false}) {
      LinkSpec l;
      l.type = "pcie (msr-fiddle: through CPU DRAM)";
      l.src = up ? builder.num_devices() - 1 : Cluster::kHost;
      l.dst = up ? Cluster::kHost : builder.num_devices() - 1;
      l.bandwidth = link_bandwidth;
      l.latency = 0.0;
      builder.AddLink(l);
    }
  };
  for (int32_t i = 0; i < problem.accelerators; ++i)
    add("acc" + std::to_string(i), "msr_accelerator", DeviceRole::kAccelerator, problem.accelerator_memory,
        graphs::kMsrTransferBandwidth);
  // A CPU core's memory is the host's: no limit in their model, and moving
  // data to or from it costs only the accelerator's side.
  for (int32_t i = 0; i < problem.cpus; ++i)
    add("cpu" + std::to_string(i), "cpu", DeviceRole::kCpu, 1e18, 1e18);
  return builder.Build();
}

namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void SplitFail(const std::string& source, const std::string& path, const std::string& message,
                            const std::string& hint = "docs/FORMATS.md, 'msr-fiddle workloads'") {
  Location where(source);
  where.path = path;
  throw DecisionError(message, where, hint);
}

}  // namespace

Decision ParseMsrSplit(const std::string& text, const std::string& source, const graphs::Graph& graph,
                       const Cluster& cluster) {
  const std::string& graph_file = graph.source();
  if (graph_file.empty() || !graphs::IsMsrProblem(ReadFile(graph_file))) {
    SplitFail(source, "",
              "an msr-fiddle split names nodes by the ids of its problem file, and graph '" + graph.name() +
                  "' was not read from one",
              "give --graph the msr-fiddle problem file (e.g. LayerGraphs/bert24_training.json)");
  }
  const graphs::MsrProblem problem = graphs::ReadMsrProblem(ReadFile(graph_file), graph_file);
  std::unordered_map<int64_t, graphs::NodeId> node_of;
  for (const auto& [id, v] : problem.ids) {
    const std::optional<graphs::NodeId> ours = graph.FindNode(problem.graph.node(v).name);
    if (ours) node_of.emplace(id, *ours);
  }
  std::vector<int32_t> accelerators, cpus;
  for (int32_t d = 0; d < cluster.num_devices(); ++d)
    (cluster.device(d).role == DeviceRole::kCpu ? cpus : accelerators).push_back(d);

  const Json root =
      ParseJsonText<DecisionError, Json>(text, source, "fix the JSON syntax (a truncated file ends early)");
  if (!root.is_object()) SplitFail(source, "", "an msr-fiddle split must be a JSON object");
  constexpr int32_t kUnset = -1;
  std::vector<int32_t> placement(static_cast<size_t>(graph.num_nodes()), kUnset);
  for (const char* section : {"fpgas", "cpus"}) {
    const bool on_cpus = std::string(section) == "cpus";
    const std::vector<int32_t>& devices = on_cpus ? cpus : accelerators;
    const auto it = root.find(section);
    if (it == root.end()) SplitFail(source, section, std::string("missing \"") + section + "\"");
    if (!it->is_array())
      SplitFail(source, section, std::string(section) + " must be an array of {\"nodes\": [...]}");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string path = std::string(section) + "[" + std::to_string(i) + "]";
      const Json& entry = (*it)[i];
      if (!entry.is_object() || !entry.contains("nodes") || !entry["nodes"].is_array())
        SplitFail(source, path, "each entry must be an object with a \"nodes\" array of ids");
      if (entry["nodes"].empty()) continue;
      if (i >= devices.size()) {
        SplitFail(source, path,
                  "the split uses " + std::to_string(it->size()) + " " + (on_cpus ? "CPU" : "accelerator") +
                      " entries but cluster '" + cluster.name() + "' has " + std::to_string(devices.size()),
                  "use --cluster from-graph, or a cluster with as many devices of that role");
      }
      for (size_t k = 0; k < entry["nodes"].size(); ++k) {
        const Json& id_json = entry["nodes"][k];
        const std::string id_path = path + ".nodes[" + std::to_string(k) + "]";
        if (!id_json.is_number_integer())
          SplitFail(source, id_path, "a node id must be an integer, not " + id_json.dump());
        const int64_t id = id_json.get<int64_t>();
        const auto node = node_of.find(id);
        if (node == node_of.end())
          SplitFail(source, id_path, "no node has id " + std::to_string(id) + " in " + graph_file);
        int32_t& slot = placement[static_cast<size_t>(node->second)];
        if (slot != kUnset) SplitFail(source, id_path, "node id " + std::to_string(id) + " is placed twice");
        slot = devices[i];
      }
    }
  }
  // Left-out nodes follow their colocation group (a forward-only split of a
  // training graph: the backward node of a layer shares its colorClass).
  std::unordered_map<int32_t, int32_t> group_device;
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    const int32_t group = graph.node(v).colocation;
    const int32_t d = placement[static_cast<size_t>(v)];
    if (group < 0 || d == kUnset) continue;
    const auto [it, fresh] = group_device.emplace(group, d);
    if (!fresh && it->second != d) {
      SplitFail(source, "",
                "the split puts colorClass " + graph.colocation_groups()[static_cast<size_t>(group)] +
                    " on two devices, which their model forbids");
    }
  }
  int64_t missing = 0;
  std::string first_missing;
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    int32_t& d = placement[static_cast<size_t>(v)];
    if (d != kUnset) continue;
    const int32_t group = graph.node(v).colocation;
    const auto it = group < 0 ? group_device.end() : group_device.find(group);
    if (it != group_device.end()) {
      d = it->second;
    } else if (missing++ == 0) {
      first_missing = graph.node(v).name;
    }
  }
  if (missing > 0) {
    SplitFail(source, "",
              "the split places neither " + std::to_string(missing) +
                  " node(s) nor anything of their colorClass (first: " + first_missing + ")",
              "list every node, or at least one node of each colorClass");
  }
  Decision decision = SingleDeviceDecision(graph, 0);
  decision.placement = std::move(placement);
  ValidateDecision(decision, graph, cluster);
  return decision;
}

MaxLoadModel::MaxLoadModel(const EngineModel& model, const Cluster& cluster)
    : model_(model),
      cpu_(static_cast<size_t>(cluster.num_devices())),
      up_(static_cast<size_t>(cluster.num_devices())),
      down_(static_cast<size_t>(cluster.num_devices())) {
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    cpu_[static_cast<size_t>(d)] = cluster.device(d).role == DeviceRole::kCpu;
    up_[static_cast<size_t>(d)] = cluster.FindLink(d, Cluster::kHost);
    down_[static_cast<size_t>(d)] = cluster.FindLink(Cluster::kHost, d);
  }
}

double MaxLoadModel::RouteTime(int32_t src, int32_t dst, int64_t bytes) const {
  const auto n = static_cast<size_t>(model_.num_devices);
  double t = 0.0;
  const size_t pair = static_cast<size_t>(src) * n + static_cast<size_t>(dst);
  for (int32_t k = model_.route_off[pair]; k < model_.route_off[pair + 1]; ++k) {
    const auto link = static_cast<size_t>(model_.route_links[static_cast<size_t>(k)]);
    t += model_.link_latency[link] + static_cast<double>(bytes) / model_.link_bandwidth[link];
  }
  return t;
}

double MaxLoadModel::Evaluate(std::span<const int32_t> placement, std::span<double> loads) const {
  const auto devices = static_cast<size_t>(model_.num_devices);
  thread_local std::vector<double> load;
  thread_local std::vector<int32_t> seen;  // [device] the last tensor that charged its download
  load.assign(devices, 0.0);
  seen.assign(devices, -1);
  const auto classes = static_cast<size_t>(model_.num_classes);
  for (int32_t v = 0; v < model_.num_nodes; ++v) {
    const auto d = static_cast<size_t>(placement[static_cast<size_t>(v)]);
    load[d] += model_.op_time[static_cast<size_t>(v) * classes + static_cast<size_t>(model_.device_class[d])];
  }
  auto link_time = [&](int32_t link, int64_t bytes) {
    const auto l = static_cast<size_t>(link);
    return model_.link_latency[l] + static_cast<double>(bytes) / model_.link_bandwidth[l];
  };
  for (int32_t t = 0; t < model_.num_tensors; ++t) {
    const EngineModel::TensorInfo& info = model_.tensors[static_cast<size_t>(t)];
    const int32_t src = placement[static_cast<size_t>(info.producer)];
    bool sent = false;
    for (int32_t c = info.cons_begin; c < info.cons_end; ++c) {
      const int32_t dst = placement[static_cast<size_t>(model_.consumers[static_cast<size_t>(c)].node)];
      if (dst == src || seen[static_cast<size_t>(dst)] == t) continue;
      seen[static_cast<size_t>(dst)] = t;
      const bool direct = up_[static_cast<size_t>(src)] < 0 || down_[static_cast<size_t>(dst)] < 0;
      if (!cpu_[static_cast<size_t>(dst)]) {
        load[static_cast<size_t>(dst)] +=
            direct ? RouteTime(src, dst, info.bytes) : link_time(down_[static_cast<size_t>(dst)], info.bytes);
      }
      if (cpu_[static_cast<size_t>(src)]) continue;
      if (direct) {
        load[static_cast<size_t>(src)] += RouteTime(src, dst, info.bytes);
      } else if (!sent) {
        load[static_cast<size_t>(src)] += link_time(up_[static_cast<size_t>(src)], info.bytes);
      }
      sent = sent || !direct;
    }
  }
  double worst = 0.0;
  for (size_t d = 0; d < devices; ++d) worst = std::max(worst, load[d]);
  if (!loads.empty())
    std::copy(load.begin(), load.begin() + static_cast<std::ptrdiff_t>(std::min(devices, loads.size())),
              loads.begin());
  return worst;
}

}  // namespace gosim::sim
