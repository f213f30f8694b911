#include "sim/pipeline.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"
#include "graphs/graph_builder.h"

namespace gosim::sim {

bool RunsOnce(const graphs::Graph& graph, graphs::NodeId v) {
  const graphs::Node& node = graph.node(v);
  return node.phase == graphs::Phase::kUpdate || (node.persistent_bytes > 0 && node.flops == 0.0 &&
                                                  node.measured.empty() && graph.in_edges(v).empty());
}

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
  // Update nodes run once, after every micro-batch; so do weight reads
  // (RunsOnce): the weights are not re-materialized per micro-batch, every
  // copy of their consumers reads the one output.
  auto copied = [&graph](graphs::NodeId v) { return !RunsOnce(graph, v); };
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

OneFOneB OneFOneBStages(const Decision& decision, const PipelineGraph& pipeline) {
  const graphs::Graph& g = pipeline.graph;
  int32_t devices = 0;
  for (int32_t d : decision.placement) devices = std::max(devices, d + 1);
  OneFOneB out;
  out.in_flight.assign(static_cast<size_t>(devices), 1);
  out.backward_nodes.assign(static_cast<size_t>(devices), 0);
  // The first forward node of each device, in the original's (topological)
  // order: copy 0 of an original node precedes its other copies, and the
  // originals keep their order in the pipeline graph.
  std::vector<int32_t> first(static_cast<size_t>(devices), -1);
  for (size_t v = 0; v < pipeline.origin.size(); ++v) {
    if (pipeline.micro_batch[v] != 0) continue;
    const auto o = static_cast<size_t>(pipeline.origin[v]);
    const auto d = static_cast<size_t>(decision.placement[o]);
    const graphs::Phase phase = g.node(static_cast<graphs::NodeId>(v)).phase;
    if (phase == graphs::Phase::kBackward) {
      ++out.backward_nodes[d];
      out.any_backward = true;
    } else if (phase == graphs::Phase::kForward && first[d] < 0) {
      first[d] = static_cast<int32_t>(o);
    }
  }
  std::vector<int32_t> order;
  for (int32_t d = 0; d < devices; ++d) {
    if (first[static_cast<size_t>(d)] >= 0) order.push_back(d);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)];
  });
  out.stages = static_cast<int32_t>(order.size());
  for (int32_t s = 0; s < out.stages; ++s)
    out.in_flight[static_cast<size_t>(order[static_cast<size_t>(s)])] = out.stages - s;
  return out;
}

void ExpandDecision(const Decision& decision, const PipelineGraph& pipeline, Schedule schedule,
                    Decision* out) {
  const size_t n = pipeline.origin.size();
  const int32_t M = pipeline.micro_batches;
  const graphs::Graph& g = pipeline.graph;
  const OneFOneB stages = schedule == Schedule::k1F1B ? OneFOneBStages(decision, pipeline) : OneFOneB{};
  // The schedule's key of each copy; it dominates the decision's priority.
  auto key_of = [&](size_t v) {
    const int32_t k = pipeline.micro_batch[v];
    if (k < 0) {  // updates last, weight reads first
      const bool update = g.node(static_cast<graphs::NodeId>(v)).phase == graphs::Phase::kUpdate;
      return update ? -1.0 : static_cast<double>(4 * M + 2 * stages.stages + 1);
    }
    const bool backward = g.node(static_cast<graphs::NodeId>(v)).phase == graphs::Phase::kBackward;
    if (schedule == Schedule::k1F1B) {
      // The stage's 1F1B order, earliest slot first: warm-up forwards 0 ..
      // W-1, then backward j at slot W + 2j and forward k >= W at slot
      // W + 2 (k - W) + 1.
      const auto d = static_cast<size_t>(decision.placement[static_cast<size_t>(pipeline.origin[v])]);
      const int32_t w = stages.in_flight[d];
      const int32_t slot = backward ? w + 2 * k : (k < w ? k : w + 2 * (k - w) + 1);
      return static_cast<double>(4 * M + 2 * stages.stages - slot);
    }
    if (schedule == Schedule::kGPipe && backward)
      return static_cast<double>(k);        // the last micro-batch's first
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
  out->gate.clear();
  out->gate_need.clear();
  out->gate_signal.clear();
  if (schedule == Schedule::k1F1B && stages.any_backward) {
    // Forward k >= W of a stage waits until the stage has finished as many
    // backward kernels as micro-batches 0 .. k - W have (backwards run
    // earliest micro-batch first, so: until backward k - W is done there).
    out->gate.assign(n, -1);
    out->gate_need.assign(n, 0);
    out->gate_signal.assign(n, -1);
    for (size_t v = 0; v < n; ++v) {
      const int32_t k = pipeline.micro_batch[v];
      if (k < 0) continue;
      const int32_t d = decision.placement[static_cast<size_t>(pipeline.origin[v])];
      if (g.node(static_cast<graphs::NodeId>(v)).phase == graphs::Phase::kBackward) {
        out->gate_signal[v] = d;
        continue;
      }
      const int32_t w = stages.in_flight[static_cast<size_t>(d)];
      const int64_t per_micro_batch = stages.backward_nodes[static_cast<size_t>(d)];
      if (k < w || per_micro_batch == 0) continue;
      const int64_t need = (k - w + 1) * per_micro_batch;
      if (need > std::numeric_limits<int32_t>::max()) {
        throw ConfigError("a 1F1B pipeline of this size needs more than 2^31 backward kernels per stage", {},
                          "use fewer micro-batches");
      }
      out->gate[v] = d;
      out->gate_need[v] = static_cast<int32_t>(need);
    }
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
