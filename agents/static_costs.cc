#include "agents/static_costs.h"

#include <algorithm>

namespace gosim::agents {

StaticCosts::StaticCosts(const sim::Evaluator& evaluator)
    : graph_(evaluator.graph()),
      num_nodes_(evaluator.graph().num_nodes()),
      num_devices_(evaluator.cluster().num_devices()) {
  const graphs::Graph& graph = evaluator.graph();
  const sim::Cluster& cluster = evaluator.cluster();
  const sim::CostModel& model = evaluator.cost_model();
  const size_t n = static_cast<size_t>(num_nodes_);
  const size_t d = static_cast<size_t>(num_devices_);
  node_time_.resize(n * d);
  mean_time_.resize(n);
  output_bytes_.resize(n);
  for (graphs::NodeId v = 0; v < num_nodes_; ++v) {
    double sum = 0.0;
    for (int32_t dev = 0; dev < num_devices_; ++dev) {
      const double t = model.NodeTime(graph, v, cluster.device(dev));
      node_time_[static_cast<size_t>(v) * d + dev] = t;
      sum += t;
    }
    mean_time_[static_cast<size_t>(v)] = num_devices_ > 0 ? sum / num_devices_ : 0.0;
    double bytes = 0.0;
    for (const graphs::TensorInfo& out : graph.node(v).outputs) bytes += static_cast<double>(out.bytes);
    output_bytes_[static_cast<size_t>(v)] = bytes;
  }
  capacity_.resize(d);
  for (int32_t dev = 0; dev < num_devices_; ++dev) {
    capacity_[static_cast<size_t>(dev)] = static_cast<double>(cluster.device(dev).memory_capacity);
  }
  latency_.assign(d * d, 0.0);
  seconds_per_byte_.assign(d * d, 0.0);
  int pairs = 0;
  for (int32_t s = 0; s < num_devices_; ++s) {
    for (int32_t t = 0; t < num_devices_; ++t) {
      if (s == t) continue;
      double latency = 0.0;
      double per_byte = 0.0;
      // Store-and-forward over the route's hops (the engine's model, see
      // docs/SIMULATOR.md); a hop runs at the slowest of its link and the
      // shared resources it occupies. Contention is not estimated.
      for (int32_t link : cluster.Route(s, t)) {
        const sim::LinkSpec& spec = cluster.links()[static_cast<size_t>(link)];
        latency += spec.latency;
        double bandwidth = spec.bandwidth;
        for (int32_t r : spec.resources)
          bandwidth = std::min(bandwidth, cluster.resources()[static_cast<size_t>(r)].bandwidth);
        if (bandwidth > 0) per_byte += 1.0 / bandwidth;
      }
      latency_[static_cast<size_t>(s) * d + t] = latency;
      seconds_per_byte_[static_cast<size_t>(s) * d + t] = per_byte;
      mean_latency_ += latency;
      mean_seconds_per_byte_ += per_byte;
      ++pairs;
    }
  }
  if (pairs > 0) {
    mean_latency_ /= pairs;
    mean_seconds_per_byte_ /= pairs;
  }
}

std::vector<graphs::NodeId> DfsTopologicalOrder(const graphs::Graph& graph) {
  const int32_t n = graph.num_nodes();
  std::vector<int32_t> missing(static_cast<size_t>(n));
  std::vector<graphs::NodeId> stack;
  for (graphs::NodeId v = n - 1; v >= 0; --v) {
    missing[static_cast<size_t>(v)] = graph.in_degree(v);
    if (missing[static_cast<size_t>(v)] == 0) stack.push_back(v);
  }
  std::vector<graphs::NodeId> order;
  order.reserve(static_cast<size_t>(n));
  std::vector<graphs::NodeId> ready;
  while (!stack.empty()) {
    const graphs::NodeId v = stack.back();
    stack.pop_back();
    order.push_back(v);
    ready.clear();
    for (graphs::EdgeId e : graph.out_edges(v)) {
      const graphs::NodeId w = graph.edge(e).dst;
      if (--missing[static_cast<size_t>(w)] == 0) ready.push_back(w);
    }
    // Push in decreasing id order so that the lowest id is popped first.
    std::sort(ready.begin(), ready.end(), std::greater<>());
    ready.erase(std::unique(ready.begin(), ready.end()), ready.end());
    stack.insert(stack.end(), ready.begin(), ready.end());
  }
  return order;
}

std::vector<double> UpwardRanks(const graphs::Graph& graph, const StaticCosts& costs,
                                std::span<const int32_t> placement) {
  const int32_t n = graph.num_nodes();
  std::vector<double> rank(static_cast<size_t>(n), 0.0);
  const bool placed = !placement.empty();
  for (graphs::NodeId v = n - 1; v >= 0; --v) {
    double tail = 0.0;
    for (graphs::EdgeId e : graph.out_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      const double bytes = static_cast<double>(edge.bytes);
      double comm = 0.0;
      if (!edge.is_control()) {
        comm = placed ? costs.CommTime(bytes, placement[static_cast<size_t>(v)],
                                       placement[static_cast<size_t>(edge.dst)])
                      : costs.MeanCommTime(bytes);
      }
      tail = std::max(tail, comm + rank[static_cast<size_t>(edge.dst)]);
    }
    const double w = placed ? costs.NodeTime(v, placement[static_cast<size_t>(v)]) : costs.MeanNodeTime(v);
    rank[static_cast<size_t>(v)] = w + tail;
  }
  return rank;
}

std::vector<double> PrioritiesFromOrder(std::span<const graphs::NodeId> order, int32_t num_nodes) {
  std::vector<double> priority(static_cast<size_t>(num_nodes), 0.0);
  const double total = static_cast<double>(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    priority[static_cast<size_t>(order[i])] = total - static_cast<double>(i);
  return priority;
}

}  // namespace gosim::agents
