// ReplayStep: simulate a rebuilt step graph with sim::Evaluator.
#include "calibration/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

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
  r.simulated = simulated.makespan;
  r.simulated_gpu_end = simulated.gpu_end;
  r.measured_gpu_end = graph.measured_gpu_end;
  r.check = SimulateStepGraph(check).makespan;
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
