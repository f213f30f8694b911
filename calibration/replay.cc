// ReplayStep: simulate a rebuilt step graph with sim::Evaluator.
#include "calibration/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "graphs/graph_builder.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

namespace gosim::calibration {
namespace {

// Every replay node carries its duration as its one measured time.
class ReplayCostModel : public sim::CostModel {
 public:
  std::string name() const override { return "replay"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const sim::DeviceSpec&) const override {
    const graphs::Node& n = graph.node(node);
    return n.measured.empty() ? 0.0 : n.measured.front().seconds;
  }
  double KernelTime(const graphs::Graph&, const sim::KernelWork&, const sim::DeviceSpec&) const override {
    return 0.0;  // replay graphs are never fused
  }
};

}  // namespace

StepSimulation SimulateStepGraph(const StepGraph& step_graph) {
  sim::SimOptions options;
  options.track_memory = false;
  const sim::Evaluator evaluator(step_graph.graph, step_graph.cluster, std::make_shared<ReplayCostModel>(),
                                 options);
  const sim::SimResult result = evaluator.Simulate(step_graph.decision, /*timeline=*/true);
  StepSimulation out;
  out.makespan = result.step_time;
  for (const sim::OpRecord& op : result.ops) {
    if (op.node >= 0 && step_graph.gpu_node[static_cast<size_t>(op.node)])
      out.gpu_end = std::max(out.gpu_end, op.end);
  }
  return out;
}

double SimulateSteadyState(const StepGraph& step_graph, int copies) {
  if (copies < 3) throw ConfigError("a steady-state replay needs at least 3 copies of the step", {}, "");
  const graphs::Graph& g = step_graph.graph;
  const int32_t n = g.num_nodes();
  // Per device: its first and last node in measured time.
  std::vector<int32_t> first(static_cast<size_t>(step_graph.cluster.num_devices()), -1);
  std::vector<int32_t> last(first.size(), -1);
  const auto start = [&](int32_t v) { return step_graph.node_start[static_cast<size_t>(v)]; };
  for (int32_t v = 0; v < n; ++v) {
    const size_t d = static_cast<size_t>(step_graph.decision.placement[static_cast<size_t>(v)]);
    if (first[d] < 0 || start(v) < start(first[d])) first[d] = v;
    if (last[d] < 0 || start(v) >= start(last[d])) last[d] = v;
  }
  graphs::GraphBuilder builder(g.name() + "_steady", g.source());
  std::vector<std::vector<int32_t>> index(static_cast<size_t>(copies),
                                          std::vector<int32_t>(static_cast<size_t>(n)));
  for (int k = 0; k < copies; ++k) {
    for (int32_t v = 0; v < n; ++v) {
      graphs::NodeSpec spec;
      spec.name = std::to_string(k) + ":" + g.node(v).name;
      spec.op = g.op_type_name_of(v);
      spec.measured = g.node(v).measured;
      index[static_cast<size_t>(k)][static_cast<size_t>(v)] = builder.AddNode(std::move(spec));
    }
    for (int32_t v = 0; v < n; ++v) {
      for (const graphs::EdgeId e : g.out_edges(v)) {
        builder.AddControlEdge(index[static_cast<size_t>(k)][static_cast<size_t>(v)],
                               index[static_cast<size_t>(k)][static_cast<size_t>(g.edge(e).dst)]);
      }
    }
    if (k == 0) continue;
    for (size_t d = 0; d < first.size(); ++d) {
      if (first[d] < 0) continue;
      builder.AddControlEdge(index[static_cast<size_t>(k - 1)][static_cast<size_t>(last[d])],
                             index[static_cast<size_t>(k)][static_cast<size_t>(first[d])]);
    }
  }
  const graphs::Graph unrolled = builder.Build();
  sim::Decision decision;
  decision.placement.assign(static_cast<size_t>(unrolled.num_nodes()), 0);
  std::vector<int32_t> copy_of(static_cast<size_t>(unrolled.num_nodes()), 0);
  for (int k = 0; k < copies; ++k) {
    for (int32_t v = 0; v < n; ++v) {
      const auto id = unrolled.FindNode(std::to_string(k) + ":" + g.node(v).name);
      decision.placement[static_cast<size_t>(*id)] = step_graph.decision.placement[static_cast<size_t>(v)];
      copy_of[static_cast<size_t>(*id)] = k;
    }
  }
  sim::SimOptions options;
  options.track_memory = false;
  const sim::Evaluator evaluator(unrolled, step_graph.cluster, std::make_shared<ReplayCostModel>(), options);
  const sim::SimResult result = evaluator.Simulate(decision, /*timeline=*/true);
  std::vector<double> end(static_cast<size_t>(copies), 0.0);
  for (const sim::OpRecord& op : result.ops) {
    if (op.node < 0) continue;
    double& e = end[static_cast<size_t>(copy_of[static_cast<size_t>(op.node)])];
    e = std::max(e, op.end);
  }
  return (end[static_cast<size_t>(copies - 1)] - end[1]) / static_cast<double>(copies - 2);
}

ReplayResult ReplayStep(const Trace& trace, const TraceSamples& samples, int32_t step,
                        const sim::DeviceProfile& profile, const ReplayOptions& options) {
  ReplayOptions predicted = options;
  predicted.measured_gpu = false;
  const StepGraph graph = BuildStepGraph(trace, samples, step, &profile, predicted);
  ReplayOptions measured = options;
  measured.measured_gpu = true;
  const StepGraph check = BuildStepGraph(trace, samples, step, &profile, measured);
  ReplayResult r;
  r.step_number = graph.step_number;
  r.measured = graph.measured_time;
  const StepSimulation simulated = SimulateStepGraph(graph);
  r.simulated = SimulateSteadyState(graph);
  r.simulated_gpu_end = simulated.gpu_end;
  r.measured_gpu_end = graph.measured_gpu_end;
  r.check = SimulateSteadyState(check);
  r.measured_gpu = graph.measured_gpu;
  r.predicted_gpu = graph.predicted_gpu;
  r.nodes = graph.graph.num_nodes();
  r.edges = graph.edges;
  r.unpredicted = graph.unpredicted;
  return r;
}

std::string FormatReplay(const std::vector<ReplayResult>& results) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof(line), "  %-8s %11s %11s %8s %11s %8s %11s %8s %11s %11s %6s %s\n", "step",
                "measured", "simulated", "error", "check", "error", "GPU end", "error", "GPU meas.",
                "GPU pred.", "nodes", "edges (order/launch/stream/x-stream/sync/x-thread/dropped)");
  out += line;
  double abs_error = 0.0;
  double abs_check = 0.0;
  double abs_gpu_end = 0.0;
  for (const ReplayResult& r : results) {
    std::snprintf(
        line, sizeof(line),
        "  %-8lld %8.3f ms %8.3f ms %+7.1f%% %8.3f ms %+7.1f%% %8.3f ms %+7.1f%% %8.3f ms %8.3f ms %6d "
        "%lld/%lld/%lld/%lld/%lld/%lld/%lld\n",
        static_cast<long long>(r.step_number), 1e3 * r.measured, 1e3 * r.simulated, 100.0 * r.error(),
        1e3 * r.check, 100.0 * r.check_error(), 1e3 * r.measured_gpu_end, 100.0 * r.gpu_end_error(),
        1e3 * r.measured_gpu, 1e3 * r.predicted_gpu, r.nodes, static_cast<long long>(r.edges.cpu_order),
        static_cast<long long>(r.edges.launch), static_cast<long long>(r.edges.stream_order),
        static_cast<long long>(r.edges.cross_stream), static_cast<long long>(r.edges.sync),
        static_cast<long long>(r.edges.cross_thread), static_cast<long long>(r.edges.dropped));
    out += line;
    abs_error += std::fabs(r.error());
    abs_check += std::fabs(r.check_error());
    abs_gpu_end += std::fabs(r.gpu_end_error());
  }
  if (!results.empty()) {
    const double n = static_cast<double>(results.size());
    std::snprintf(
        line, sizeof(line),
        "  mean |error|: step time %.1f%% with calibrated GPU times, %.1f%% with measured GPU times "
        "(check); end of the last GPU activity %.1f%%\n",
        100.0 * abs_error / n, 100.0 * abs_check / n, 100.0 * abs_gpu_end / n);
    out += line;
  }
  return out;
}

}  // namespace gosim::calibration
