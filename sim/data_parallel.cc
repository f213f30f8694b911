#include "sim/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "core/error.h"
#include "graphs/graph_builder.h"

namespace gosim::sim {
namespace {

std::string Rank(int32_t k) {
  return "rank" + std::to_string(k) + "/";
}

// One parameter: its update nodes and the gradient they read.
struct Param {
  std::vector<graphs::NodeId> updates;
  graphs::NodeId producer = -1;  // the gradient's producer (the last one, if several)
  int64_t bytes = 0;             // of its gradient
};

// The time of one ring all-reduce of `bytes` over devices 0..n-1.
double RingAllReduce(const Cluster& cluster, const CostModel& cost_model, int32_t n, int64_t bytes) {
  if (n < 2 || bytes <= 0) return 0.0;
  double latency = 0.0, bandwidth = std::numeric_limits<double>::infinity();
  for (int32_t k = 0; k < n; ++k) {
    double hop_latency = 0.0, hop_bandwidth = std::numeric_limits<double>::infinity();
    for (const int32_t l : cluster.Route(k, (k + 1) % n)) {
      const LinkSpec& link = cluster.links()[static_cast<size_t>(l)];
      const LinkCost c = cost_model.LinkCostOf(cluster, link);
      double bw = c.bandwidth;
      for (const int32_t r : link.resources)
        bw = std::min(bw, cluster.resources()[static_cast<size_t>(r)].bandwidth);
      hop_latency += c.latency;
      hop_bandwidth = std::min(hop_bandwidth, bw);
    }
    latency = std::max(latency, hop_latency);
    bandwidth = std::min(bandwidth, hop_bandwidth);
  }
  const double steps = 2.0 * (n - 1);
  return steps * (latency + static_cast<double>(bytes) / (static_cast<double>(n) * bandwidth));
}

}  // namespace

DataParallelStep BuildDataParallel(const graphs::Graph& g, const Cluster& cluster,
                                   const CostModel& cost_model, const DataParallelOptions& options) {
  const int32_t n = options.replicas > 0 ? options.replicas : cluster.num_devices();
  if (n > cluster.num_devices()) {
    throw ConfigError("data parallelism over " + std::to_string(n) +
                          " replicas needs as many devices; cluster '" + cluster.name() + "' has " +
                          std::to_string(cluster.num_devices()),
                      {}, "give fewer replicas or a larger cluster (NAME:gpus=N)");
  }
  if (cost_model.name() != "auto" && cost_model.name() != "measured") {
    throw ConfigError("a data-parallel step prices its all-reduces as measured times, which cost model '" +
                          cost_model.name() + "' ignores",
                      {}, "use --cost-model auto (the default) or measured");
  }
  if (options.bucket_bytes <= 0 || options.first_bucket_bytes <= 0) {
    throw ConfigError("bucket sizes must be > 0 bytes");
  }

  // Parameters: colocation groups with update nodes, and the gradients
  // (tensors produced in the backward phase) those read.
  std::map<int32_t, Param> params;  // by colocation group
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const graphs::Node& node = g.node(v);
    if (node.phase != graphs::Phase::kUpdate || node.colocation < 0) continue;
    if (node.flops <= 0.0 && node.bytes_read + node.bytes_written == 0) continue;
    Param& p = params[node.colocation];
    p.updates.push_back(v);
    for (const graphs::EdgeId e : g.in_edges(v)) {
      const graphs::Edge& edge = g.edge(e);
      if (edge.is_control() || g.node(edge.src).phase != graphs::Phase::kBackward) continue;
      if (edge.src > p.producer) {
        p.producer = edge.src;
        p.bytes = g.node(edge.src).outputs[static_cast<size_t>(edge.output_index)].bytes;
      }
    }
  }
  std::vector<std::pair<graphs::NodeId, int32_t>> ready;  // (gradient producer, group), in backward order
  for (const auto& [group, p] : params) {
    if (p.producer >= 0) ready.emplace_back(p.producer, group);
  }
  if (ready.empty()) {
    throw ConfigError(
        "graph '" + g.name() + "' has no parameter update reading a gradient", {},
        "give a training step exported with an optimizer (gosim.torch.export(..., optimizer=...))");
  }
  std::sort(ready.begin(), ready.end());

  // Buckets in the order gradients become ready.
  DataParallelStep out;
  out.replicas = n;
  std::vector<int32_t> bucket_of(g.colocation_groups().size(), -1);
  std::map<graphs::NodeId, std::vector<int32_t>> closes;    // producer -> buckets it completes
  std::map<graphs::NodeId, std::vector<int32_t>> produces;  // producer -> groups whose gradient it makes
  std::vector<std::vector<int32_t>> bucket_groups;
  int64_t filled = 0;
  for (const auto& [producer, group] : ready) {
    // The current bucket's cap: the first bucket's is smaller (DDP's 1 MiB).
    const int64_t cap = bucket_groups.size() == 1 ? options.first_bucket_bytes : options.bucket_bytes;
    if (bucket_groups.empty() || filled >= cap) {
      bucket_groups.emplace_back();
      out.bucket_bytes.push_back(0);
      filled = 0;
    }
    bucket_groups.back().push_back(group);
    bucket_of[static_cast<size_t>(group)] = static_cast<int32_t>(bucket_groups.size()) - 1;
    out.bucket_bytes.back() += params[group].bytes;
    filled += params[group].bytes;
    produces[producer].push_back(group);
  }
  for (size_t b = 0; b < bucket_groups.size(); ++b) {
    graphs::NodeId last = -1;
    for (const int32_t group : bucket_groups[b]) last = std::max(last, params[group].producer);
    closes[last].push_back(static_cast<int32_t>(b));
    out.all_reduce_seconds.push_back(RingAllReduce(cluster, cost_model, n, out.bucket_bytes[b]));
  }

  graphs::GraphBuilder builder(g.name() + "_ddp" + std::to_string(n));
  const auto add = [&](graphs::NodeSpec spec, int32_t rank) {
    (void)rank;
    builder.AddNode(std::move(spec));
  };
  const auto group_name = [&](int32_t group) { return g.colocation_groups()[static_cast<size_t>(group)]; };
  bool copied_back = false;
  // DDP's finalize: once the backward pass is over, each averaged gradient
  // is copied back from its bucket (copy_bucket_to_grad), before the
  // optimizer's update reads it.
  const auto copy_back = [&] {
    copied_back = true;
    for (size_t b = 0; b < bucket_groups.size(); ++b) {
      const std::string bucket = "ddp/bucket" + std::to_string(b);
      for (const int32_t group : bucket_groups[b]) {
        for (int32_t k = 0; k < n; ++k) {
          graphs::NodeSpec s;
          s.name = Rank(k) + "ddp/" + group_name(group) + "/from_bucket";
          s.op = "aten::copy_";
          const int64_t bytes = params[group].bytes;
          s.bytes_read = bytes;
          s.bytes_written = bytes;
          s.outputs.push_back(graphs::TensorInfo{bytes, {}, graphs::DType::kFloat32});
          s.scope = Rank(k) + "ddp";
          s.phase = graphs::Phase::kBackward;
          const std::string name = s.name;
          add(std::move(s), k);
          builder.AddControlEdge(Rank(k) + bucket + "/all_reduce", name);
          for (const graphs::NodeId u : params[group].updates)
            builder.AddControlEdge(name, Rank(k) + g.node(u).name);
        }
      }
    }
  };
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const graphs::Node& node = g.node(v);
    const bool update_op = node.phase == graphs::Phase::kUpdate && params.count(node.colocation) > 0 &&
                           (node.flops > 0.0 || node.bytes_read + node.bytes_written > 0);
    if (!copied_back && update_op) copy_back();
    for (int32_t k = 0; k < n; ++k) {
      graphs::NodeSpec s;
      s.name = Rank(k) + node.name;
      s.op = g.op_type_name(node.op);
      s.flops = node.flops;
      s.bytes_read = node.bytes_read;
      s.bytes_written = node.bytes_written;
      s.outputs = node.outputs;
      s.persistent_bytes = node.persistent_bytes;
      s.colocation = node.colocation >= 0 ? Rank(k) + group_name(node.colocation) : "";
      s.scope = Rank(k) + node.scope;
      s.phase = node.phase;
      s.measured = node.measured;
      add(std::move(s), k);
    }
    if (const auto it = produces.find(v); it != produces.end()) {
      for (const int32_t group : it->second) {
        for (int32_t k = 0; k < n; ++k) {
          // DDP's mul_out: the gradient / world size into its bucket.
          graphs::NodeSpec s;
          s.name = Rank(k) + "ddp/" + group_name(group) + "/into_bucket";
          s.op = "aten::mul";
          const int64_t bytes = params[group].bytes;
          s.flops = static_cast<double>(bytes) / 4.0;
          s.bytes_read = bytes;
          s.bytes_written = bytes;
          s.outputs.push_back(graphs::TensorInfo{bytes, {}, graphs::DType::kFloat32});
          s.scope = Rank(k) + "ddp";
          s.phase = graphs::Phase::kBackward;
          add(std::move(s), k);
          builder.AddControlEdge(Rank(k) + node.name, Rank(k) + "ddp/" + group_name(group) + "/into_bucket");
        }
      }
    }
    if (const auto it = closes.find(v); it != closes.end()) {
      for (const int32_t b : it->second) {
        const std::string bucket = "ddp/bucket" + std::to_string(b);
        for (int32_t k = 0; k < n; ++k) {
          graphs::NodeSpec s;
          s.name = Rank(k) + bucket + "/ready";
          s.op = "nccl:bucket_ready";  // on the communication stream: it waits there for the bucket
          s.scope = Rank(k) + "ddp";
          s.phase = graphs::Phase::kBackward;
          add(std::move(s), k);
          for (const int32_t group : bucket_groups[static_cast<size_t>(b)]) {
            builder.AddControlEdge(Rank(k) + "ddp/" + group_name(group) + "/into_bucket",
                                   Rank(k) + bucket + "/ready");
          }
        }
        for (int32_t k = 0; k < n; ++k) {
          graphs::NodeSpec s;
          s.name = Rank(k) + bucket + "/all_reduce";
          s.op = "nccl:all_reduce";
          s.bytes_read = out.bucket_bytes[static_cast<size_t>(b)];
          s.bytes_written = out.bucket_bytes[static_cast<size_t>(b)];
          s.scope = Rank(k) + "ddp";
          s.phase = graphs::Phase::kBackward;
          s.measured.push_back(graphs::MeasuredTime{"any", out.all_reduce_seconds[static_cast<size_t>(b)]});
          add(std::move(s), k);
          for (int32_t j = 0; j < n; ++j)
            builder.AddControlEdge(Rank(j) + bucket + "/ready", Rank(k) + bucket + "/all_reduce");
        }
      }
    }
  }
  if (!copied_back) copy_back();
  for (const graphs::Edge& e : g.edges()) {
    for (int32_t k = 0; k < n; ++k) {
      if (e.is_control()) {
        builder.AddControlEdge(Rank(k) + g.node(e.src).name, Rank(k) + g.node(e.dst).name);
      } else {
        builder.AddEdge(Rank(k) + g.node(e.src).name, Rank(k) + g.node(e.dst).name, e.output_index);
      }
    }
  }
  out.graph = builder.Build();
  // Build keeps the insertion order (it is topological), so the placement
  // follows it.
  out.decision.placement.resize(static_cast<size_t>(out.graph.num_nodes()));
  for (graphs::NodeId v = 0; v < out.graph.num_nodes(); ++v) {
    const std::string& name = out.graph.node(v).name;
    out.decision.placement[static_cast<size_t>(v)] = std::stoi(name.substr(4, name.find('/') - 4));
  }
  return out;
}

}  // namespace gosim::sim
