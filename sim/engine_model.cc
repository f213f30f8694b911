// Precomputation of the decision-independent engine model.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "sim/engine.h"

namespace gosim::sim {
namespace {

bool SameClass(const DeviceSpec& a, const DeviceSpec& b) {
  return a.kind == b.kind && a.peak_flops_fp32 == b.peak_flops_fp32 &&
         a.peak_flops_fp16 == b.peak_flops_fp16 && a.peak_flops_fp64 == b.peak_flops_fp64 &&
         a.peak_flops_tf32 == b.peak_flops_tf32 && a.memory_bandwidth == b.memory_bandwidth &&
         a.launch_overhead == b.launch_overhead;
}

std::string LinkName(const Cluster& cluster, int32_t link) {
  const std::string& name = cluster.links()[static_cast<size_t>(link)].name;
  return name.empty() ? "link " + std::to_string(link) : name;
}

}  // namespace

HostSetup ResolveHost(const SimOptions& options, const Cluster& cluster, const CostModel& cost_model) {
  HostSetup setup;
  std::string unpriced;  // a device kind whose host the cost model does not price
  for (const DeviceSpec& d : cluster.devices()) {
    if (!cost_model.HostModelled(d)) {
      unpriced = d.kind;
      break;
    }
  }
  Execution e = options.execution;
  if (e == Execution::kAuto) e = cluster.host().execution;
  if (e == Execution::kAuto)
    e = unpriced.empty() && cluster.num_devices() > 0 ? Execution::kEager : Execution::kNone;
  if (e != Execution::kNone && !unpriced.empty()) {
    throw ConfigError("execution " + std::string(ExecutionName(e)) +
                          " needs the host's costs, but cost model '" + cost_model.name() +
                          "' has no host table for device kind '" + unpriced + "'",
                      {},
                      "use a preset whose kind has a calibrated profile with a host table (h100x8_nvswitch, "
                      "h200x8_nvswitch; docs/CALIBRATION.md), or execution=none (GPU-side only)");
  }
  if (options.host_threads < 1) {
    throw ConfigError("host_threads must be >= 1 (got " + std::to_string(options.host_threads) + ")");
  }
  if (options.launch_queue < 1) {
    throw ConfigError("launch_queue must be >= 1 (got " + std::to_string(options.launch_queue) + ")");
  }
  setup.execution = e;
  Processes p = options.processes;
  if (p == Processes::kAuto) p = cluster.host().processes;
  setup.processes = p == Processes::kAuto ? Processes::kOne : p;
  return setup;
}

EngineModel BuildEngineModel(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
                             bool host, bool eager) {
  EngineModel m;
  const int32_t n = graph.num_nodes();
  const int32_t num_devices = cluster.num_devices();
  m.num_nodes = n;
  m.num_tensors = graph.num_tensors();
  m.num_devices = num_devices;
  m.num_links = static_cast<int32_t>(cluster.links().size());
  m.num_resources = static_cast<int32_t>(cluster.resources().size());
  if (num_devices <= 0) {
    throw ConfigError("cluster '" + cluster.name() + "' has no devices", {}, "add at least one device");
  }
  if (num_devices > 64 * 64) {  // the engine's dirty-device bitset has a 64-bit summary of 64-bit words
    throw ConfigError("cluster '" + cluster.name() + "' has " + std::to_string(num_devices) +
                          " devices; the simulator handles at most 4096",
                      {}, "split the cluster");
  }

  // Device classes and kernel times.
  std::vector<int32_t> class_rep;
  m.device_class.resize(static_cast<size_t>(num_devices));
  for (int32_t d = 0; d < num_devices; ++d) {
    int32_t c = 0;
    while (c < static_cast<int32_t>(class_rep.size()) &&
           !SameClass(cluster.device(class_rep[c]), cluster.device(d)))
      ++c;
    if (c == static_cast<int32_t>(class_rep.size())) class_rep.push_back(d);
    m.device_class[static_cast<size_t>(d)] = c;
    m.capacity.push_back(cluster.device(d).memory_capacity);
  }
  m.num_classes = static_cast<int32_t>(class_rep.size());
  m.op_time.resize(static_cast<size_t>(n) * static_cast<size_t>(m.num_classes));
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t c = 0; c < m.num_classes; ++c) {
      const DeviceSpec& device = cluster.device(class_rep[static_cast<size_t>(c)]);
      double t = cost_model.NodeTime(graph, v, device);
      if (host && t > 0.0) t = std::max(0.0, t + cost_model.HostedLaunchDelta(graph, v, device));
      if (!std::isfinite(t) || t < 0.0) {
        throw ConfigError("cost model '" + cost_model.name() + "' gives time " + std::to_string(t) +
                              " s for node '" + graph.node(v).name + "' on device '" + device.name + "'",
                          {}, "check the node's FLOPs/bytes and the device's peak figures");
      }
      m.op_time[static_cast<size_t>(v) * static_cast<size_t>(m.num_classes) + static_cast<size_t>(c)] = t;
    }
  }

  if (host) {
    m.host_time.resize(static_cast<size_t>(n) * static_cast<size_t>(m.num_classes));
    m.host_sync.assign(static_cast<size_t>(n), 0);
    m.host_has_work.assign(static_cast<size_t>(n), 0);
    m.host_source.assign(static_cast<size_t>(n), 0);
    for (int32_t c = 0; c < m.num_classes; ++c) {
      const HostCosts costs = cost_model.HostCostsOf(cluster.device(class_rep[static_cast<size_t>(c)]));
      for (const double x :
           {costs.copy, costs.per_parameter, costs.launch_call, costs.graph_op, costs.graph_view}) {
        if (!std::isfinite(x) || x < 0.0) {
          throw ConfigError("cost model '" + cost_model.name() + "' gives a host cost of " +
                            std::to_string(x) + " s on device '" +
                            cluster.device(class_rep[static_cast<size_t>(c)]).name + "'");
        }
      }
      m.host_costs.push_back(costs);
    }
    // The first update node of each parameter (colocation group; a node
    // without one counts alone) carries the per-parameter host time.
    std::vector<uint8_t> group_seen(graph.colocation_groups().size(), 0);
    for (int32_t v = 0; v < n; ++v) {
      const graphs::Node& node = graph.node(v);
      bool first_update = false;
      if (eager && node.phase == graphs::Phase::kUpdate &&
          (node.flops > 0.0 || node.bytes_read + node.bytes_written > 0)) {
        if (node.colocation < 0) {
          first_update = true;
        } else if (!group_seen[static_cast<size_t>(node.colocation)]) {
          group_seen[static_cast<size_t>(node.colocation)] = 1;
          first_update = true;
        }
      }
      m.host_has_work[static_cast<size_t>(v)] = node.flops > 0.0 || node.bytes_read + node.bytes_written > 0;
      m.host_source[static_cast<size_t>(v)] =
          !m.host_has_work[static_cast<size_t>(v)] && graph.in_degree(v) == 0;
      for (int32_t c = 0; c < m.num_classes; ++c) {
        const DeviceSpec& device = cluster.device(class_rep[static_cast<size_t>(c)]);
        const HostWork work = cost_model.HostOf(graph, v, device);
        if (!std::isfinite(work.seconds) || work.seconds < 0.0) {
          throw ConfigError("cost model '" + cost_model.name() + "' gives host time " +
                                std::to_string(work.seconds) + " s for node '" + node.name + "' on device '" +
                                device.name + "'",
                            {}, "check the profile's host table");
        }
        if (work.sync) {
          m.host_sync[static_cast<size_t>(v)] = 1;
          m.has_host_sync = true;
        }
        // A source (an input, a parameter) is there before the step: nothing dispatches it.
        m.host_time[static_cast<size_t>(v) * static_cast<size_t>(m.num_classes) + static_cast<size_t>(c)] =
            m.host_source[static_cast<size_t>(v)]
                ? 0.0
                : work.seconds + (first_update ? m.host_costs[static_cast<size_t>(c)].per_parameter : 0.0);
      }
    }
  }

  m.comm.assign(static_cast<size_t>(n), 0);
  for (int32_t v = 0; v < n; ++v) {
    if (graph.op_type_name_of(v).starts_with("nccl:")) {
      m.comm[static_cast<size_t>(v)] = 1;
      m.has_comm = true;
    }
  }

  // Nodes, tensors, and per node the distinct input tensors and control
  // predecessors (in-edges are sorted by (src, output), so repeats are adjacent).
  const int32_t num_tensors = m.num_tensors;
  m.nodes.resize(static_cast<size_t>(n));
  m.tensors.resize(static_cast<size_t>(num_tensors));
  m.persistent.resize(static_cast<size_t>(n));
  m.deps.assign(static_cast<size_t>(n), 0);
  m.ctrl_in_off.assign(static_cast<size_t>(n) + 1, 0);
  m.input_off.assign(static_cast<size_t>(n) + 1, 0);
  std::vector<int32_t> cons_count(static_cast<size_t>(num_tensors) + 1, 0);
  for (int32_t v = 0; v < n; ++v) {
    const graphs::Node& node = graph.node(v);
    EngineModel::NodeInfo& info = m.nodes[static_cast<size_t>(v)];
    info.out_begin = graph.tensor_offset(v);
    info.out_end = info.out_begin + static_cast<int32_t>(node.outputs.size());
    info.out_bytes = 0;
    for (int32_t t = info.out_begin; t < info.out_end; ++t) {
      const graphs::TensorInfo& out = node.outputs[static_cast<size_t>(t - info.out_begin)];
      m.tensors[static_cast<size_t>(t)] = EngineModel::TensorInfo{out.bytes, 0, 0, v, out.alias ? 1 : 0};
      info.out_bytes += out.resident_bytes();
      m.has_alias = m.has_alias || out.alias;
    }
    m.persistent[static_cast<size_t>(v)] = node.persistent_bytes;
    info.in_begin = static_cast<int32_t>(m.inputs.size());
    int32_t last_tensor = -1;
    int32_t last_ctrl = -1;
    for (graphs::EdgeId e : graph.in_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      if (edge.is_control()) {
        if (edge.src != last_ctrl) m.ctrl_in.push_back(edge.src);
        last_ctrl = edge.src;
        continue;
      }
      const graphs::TensorId t = graph.tensor(edge.src, edge.output_index);
      if (t == last_tensor) continue;
      last_tensor = t;
      m.inputs.push_back(EngineModel::Input{t, edge.src});
      ++cons_count[static_cast<size_t>(t) + 1];
    }
    info.in_end = static_cast<int32_t>(m.inputs.size());
    m.input_off[static_cast<size_t>(v) + 1] = info.in_end;
    m.ctrl_in_off[static_cast<size_t>(v) + 1] = static_cast<int32_t>(m.ctrl_in.size());
    m.deps[static_cast<size_t>(v)] = info.in_end - info.in_begin + m.ctrl_in_off[static_cast<size_t>(v) + 1] -
                                     m.ctrl_in_off[static_cast<size_t>(v)];
  }
  for (int32_t v = 0; v < n; ++v) {
    if (m.deps[static_cast<size_t>(v)] == 0) m.sources.push_back(v);
  }
  for (int32_t t = 0; t < num_tensors; ++t) {
    cons_count[static_cast<size_t>(t) + 1] += cons_count[static_cast<size_t>(t)];
    m.tensors[static_cast<size_t>(t)].cons_begin = cons_count[static_cast<size_t>(t)];
    m.tensors[static_cast<size_t>(t)].cons_end = cons_count[static_cast<size_t>(t) + 1];
  }
  m.consumers.resize(m.inputs.size());
  {
    std::vector<int32_t> fill(cons_count.begin(), cons_count.end() - 1);
    for (int32_t v = 0; v < n; ++v) {  // ascending v gives ascending consumer lists
      const EngineModel::NodeInfo& info = m.nodes[static_cast<size_t>(v)];
      for (int32_t k = info.in_begin; k < info.in_end; ++k) {
        const int32_t pos = fill[static_cast<size_t>(m.inputs[static_cast<size_t>(k)].tensor)]++;
        m.consumers[static_cast<size_t>(pos)] = EngineModel::Consumer{v, k};
      }
    }
  }

  // Control successors (out-edges are sorted by destination).
  for (int32_t v = 0; v < n; ++v) {
    EngineModel::NodeInfo& info = m.nodes[static_cast<size_t>(v)];
    info.ctrl_begin = static_cast<int32_t>(m.ctrl.size());
    int32_t last = -1;
    for (graphs::EdgeId e : graph.out_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      if (!edge.is_control() || edge.dst == last) continue;
      last = edge.dst;
      m.ctrl.push_back(edge.dst);
    }
    info.ctrl_end = static_cast<int32_t>(m.ctrl.size());
  }

  // Links, resources and routes.
  const auto& links = cluster.links();
  const auto& resources = cluster.resources();
  m.link_res_off.assign(1, 0);
  std::vector<int32_t> res_count(static_cast<size_t>(m.num_resources) + 1, 0);
  for (int32_t l = 0; l < m.num_links; ++l) {
    const LinkSpec& link = links[static_cast<size_t>(l)];
    const LinkCost cost = cost_model.LinkCostOf(cluster, link);
    double bandwidth = cost.bandwidth;
    for (int32_t r : link.resources) {
      if (r < 0 || r >= m.num_resources) {
        throw ConfigError("link '" + LinkName(cluster, l) + "' names shared resource " + std::to_string(r) +
                              " but the cluster has " + std::to_string(m.num_resources),
                          {}, "fix the link's resources list");
      }
      bandwidth = std::min(bandwidth, resources[static_cast<size_t>(r)].bandwidth);
      m.link_res.push_back(r);
      ++res_count[static_cast<size_t>(r) + 1];
    }
    if (!(bandwidth > 0.0) || !std::isfinite(cost.latency) || cost.latency < 0.0) {
      throw ConfigError("link '" + LinkName(cluster, l) + "' has bandwidth " + std::to_string(bandwidth) +
                            " B/s and latency " + std::to_string(cost.latency) + " s",
                        {}, "links and shared resources need a positive bandwidth and a latency >= 0");
    }
    m.link_latency.push_back(cost.latency);
    m.link_bandwidth.push_back(bandwidth);
    m.link_res_off.push_back(static_cast<int32_t>(m.link_res.size()));
  }
  for (int32_t r = 0; r < m.num_resources; ++r)
    res_count[static_cast<size_t>(r) + 1] += res_count[static_cast<size_t>(r)];
  m.res_links_off = res_count;
  m.res_links.resize(m.link_res.size());
  {
    std::vector<int32_t> fill(res_count.begin(), res_count.end() - 1);
    for (int32_t l = 0; l < m.num_links; ++l) {
      for (int32_t k = m.link_res_off[static_cast<size_t>(l)]; k < m.link_res_off[static_cast<size_t>(l) + 1];
           ++k) {
        m.res_links[static_cast<size_t>(fill[static_cast<size_t>(m.link_res[static_cast<size_t>(k)])]++)] = l;
      }
    }
  }
  m.route_off.assign(1, 0);
  for (int32_t s = 0; s < num_devices; ++s) {
    for (int32_t d = 0; d < num_devices; ++d) {
      if (s != d) {
        const std::vector<int32_t>& route = cluster.Route(s, d);
        if (route.empty()) {
          throw ConfigError("cluster '" + cluster.name() + "' has no route from '" + cluster.device(s).name +
                                "' to '" + cluster.device(d).name + "'",
                            {}, "add a link (or a path through the host) between every pair of devices");
        }
        if (route.size() > static_cast<size_t>(std::numeric_limits<int16_t>::max())) {
          throw ConfigError("route from '" + cluster.device(s).name + "' to '" + cluster.device(d).name +
                            "' is too long");
        }
        for (int32_t l : route) {
          if (l < 0 || l >= m.num_links) throw ConfigError("route names unknown link " + std::to_string(l));
          m.route_links.push_back(l);
        }
      }
      m.route_off.push_back(static_cast<int32_t>(m.route_links.size()));
    }
  }
  return m;
}

}  // namespace gosim::sim
