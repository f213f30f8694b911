#include "sim/pipeline.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "graphs/graph_builder.h"

namespace gosim::sim {

PipelineGraph BuildPipelineGraph(const graphs::Graph& graph, int32_t micro_batches) {
  if (micro_batches < 2 || micro_batches > 4096) {
    throw ConfigError("micro_batches " + std::to_string(micro_batches) + " is out of range", {},
                      "give 2 to 4096 micro-batches (1 means no pipeline)");
  }
  if (static_cast<int64_t>(graph.num_nodes()) * micro_batches > (int64_t{1} << 30)) {
    throw ConfigError("a pipeline of " + std::to_string(micro_batches) + " copies of " +
                          std::to_string(graph.num_nodes()) + " nodes is too large",
                      {}, "use fewer micro-batches");
  }
  PipelineGraph out;
  out.micro_batches = micro_batches;
  out.original_nodes = graph.num_nodes();
  out.original_tensors = graph.num_tensors();
  const int32_t M = micro_batches;
  auto copied = [&graph](graphs::NodeId v) { return graph.node(v).phase != graphs::Phase::kUpdate; };
  graphs::GraphBuilder builder(graph.name() + "@" + std::to_string(M) + "mb", graph.source());
  // first[v]: the builder index of copy 0 (copies are consecutive).
  std::vector<int32_t> first(static_cast<size_t>(graph.num_nodes()));
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    const graphs::Node& node = graph.node(v);
    first[static_cast<size_t>(v)] = builder.num_nodes();
    for (int32_t k = 0; k < (copied(v) ? M : 1); ++k) {
      graphs::NodeSpec s;
      s.name = copied(v) ? node.name + "@" + std::to_string(k) : node.name;
      s.op = graph.op_type_name(node.op);
      s.flops = node.flops;
      s.bytes_read = node.bytes_read;
      s.bytes_written = node.bytes_written;
      s.outputs = node.outputs;
      s.persistent_bytes = k == 0 ? node.persistent_bytes : 0;
      if (node.colocation >= 0)
        s.colocation = graph.colocation_groups()[static_cast<size_t>(node.colocation)];
      s.scope = node.scope;
      s.phase = node.phase;
      s.measured = node.measured;
      builder.AddNode(std::move(s));
      out.origin.push_back(v);
      out.micro_batch.push_back(copied(v) ? k : -1);
    }
  }
  for (const graphs::Edge& e : graph.edges()) {
    const bool src_copied = copied(e.src), dst_copied = copied(e.dst);
    for (int32_t k = 0; k < M; ++k) {
      if (!src_copied && !dst_copied && k > 0) break;
      const int32_t src = first[static_cast<size_t>(e.src)] + (src_copied ? k : 0);
      const int32_t dst = first[static_cast<size_t>(e.dst)] + (dst_copied ? k : 0);
      if (e.is_control()) {
        builder.AddControlEdge(src, dst);
      } else {
        builder.AddEdge(src, dst, e.output_index);
      }
    }
  }
  out.graph = builder.Build();
  for (graphs::NodeId v = 0; v < out.graph.num_nodes(); ++v) {
    const graphs::NodeId o = out.origin[static_cast<size_t>(v)];
    for (int32_t k = 0; k < static_cast<int32_t>(out.graph.node(v).outputs.size()); ++k)
      out.origin_tensor.push_back(graph.tensor(o, k));
  }
  // Build keeps the insertion order, which is topological: copies follow
  // their original's order. Check that it did, since `origin` relies on it.
  for (graphs::NodeId v = 0; v < out.graph.num_nodes(); ++v) {
    const graphs::NodeId o = out.origin[static_cast<size_t>(v)];
    const int32_t k = out.micro_batch[static_cast<size_t>(v)];
    const std::string expect = k < 0 ? graph.node(o).name : graph.node(o).name + "@" + std::to_string(k);
    if (out.graph.node(v).name != expect) {
      throw ConfigError("pipeline graph of '" + graph.name() + "': node order changed while building", {},
                        "please report this graph");
    }
  }
  return out;
}

void ExpandDecision(const Decision& decision, const PipelineGraph& pipeline, Schedule schedule,
                    Decision* out) {
  const size_t n = pipeline.origin.size();
  const int32_t M = pipeline.micro_batches;
  const graphs::Graph& g = pipeline.graph;
  // The schedule's key of each copy; it dominates the decision's priority.
  auto key_of = [&](size_t v) {
    const int32_t k = pipeline.micro_batch[v];
    if (k < 0) return -1.0;  // updates last
    if (schedule == Schedule::kGPipe &&
        g.node(static_cast<graphs::NodeId>(v)).phase == graphs::Phase::kBackward)
      return static_cast<double>(k);        // the last micro-batch's backward first
    return static_cast<double>(2 * M - k);  // forwards (and streaming) in micro-batch order
  };
  auto span = [](const std::vector<double>& values, double* low) {
    double lo = 0.0, hi = 0.0;
    for (double p : values) {
      lo = std::min(lo, p);
      hi = std::max(hi, p);
    }
    *low = lo;
    return hi - lo + 1.0;
  };
  double low = 0.0;
  const double width = span(decision.priority, &low);
  out->placement.resize(n);
  out->priority.resize(n);
  for (size_t v = 0; v < n; ++v) {
    const auto o = static_cast<size_t>(pipeline.origin[v]);
    out->placement[v] = decision.placement[o];
    out->priority[v] = key_of(v) * width + (decision.has_priority() ? decision.priority[o] - low : 0.0);
  }
  out->fusion_group.clear();
  if (decision.has_fusion()) {
    int32_t groups = 0;
    for (int32_t f : decision.fusion_group) groups = std::max(groups, f + 1);
    out->fusion_group.resize(n);
    for (size_t v = 0; v < n; ++v) {
      const int32_t f = decision.fusion_group[static_cast<size_t>(pipeline.origin[v])];
      const int32_t k = pipeline.micro_batch[v];
      out->fusion_group[v] = f < 0 ? -1 : f + (k < 0 ? M : k) * groups;
    }
  }
  out->transfer_priority.clear();
  if (decision.has_transfer_priority()) {
    const auto tensors = static_cast<size_t>(pipeline.original_tensors);
    if (tensors == 0 || decision.transfer_priority.size() % tensors != 0) {
      throw DecisionError("transfer_priority has " + std::to_string(decision.transfer_priority.size()) +
                          " entries, not (tensors x devices) of the graph");
    }
    const size_t devices = decision.transfer_priority.size() / tensors;
    double tlow = 0.0;
    const double twidth = span(decision.transfer_priority, &tlow);
    out->transfer_priority.resize(static_cast<size_t>(g.num_tensors()) * devices);
    for (size_t v = 0; v < n; ++v) {
      const auto node = static_cast<graphs::NodeId>(v);
      for (int32_t k = 0; k < static_cast<int32_t>(g.node(node).outputs.size()); ++k) {
        const auto te = static_cast<size_t>(g.tensor(node, k));
        const auto to = static_cast<size_t>(pipeline.origin_tensor[te]);
        for (size_t d = 0; d < devices; ++d) {
          out->transfer_priority[te * devices + d] =
              key_of(v) * twidth + decision.transfer_priority[to * devices + d] - tlow;
        }
      }
    }
  }
}

}  // namespace gosim::sim
