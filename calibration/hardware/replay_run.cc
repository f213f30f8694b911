#include "calibration/hardware/replay_run.h"

#include <algorithm>
#include <cmath>

#include "calibration/hardware/rank_stats.h"
#include "sim/evaluator.h"
#include "sim/result.h"

namespace gosim::calibration::hardware {

nlohmann::json RunReplay(const graphs::Graph& graph, const sim::Cluster& cluster,
                         std::shared_ptr<const sim::CostModel> cost_model,
                         const std::vector<sim::Decision>& decisions, const std::vector<std::string>& names,
                         const ReplayRunOptions& options, std::FILE* out) {
  ExecutorOptions exec_options;
  exec_options.num_devices = cluster.num_devices();
  exec_options.intra_op_threads = options.intra_op_threads;
  exec_options.allow_cuda = options.allow_cuda;
  Executor executor(graph, exec_options);
  const sim::Evaluator evaluator(graph, cluster, std::move(cost_model), sim::SimOptions{});

  std::fprintf(
      out,
      "graph %s: %d nodes; cluster %s: %d devices; backend %s; profile %s; median of %d rounds x %d steps "
      "after %d warm-up\n",
      graph.name().c_str(), graph.num_nodes(), cluster.name().c_str(), cluster.num_devices(),
      executor.backend().c_str(), options.profile_name.c_str(), options.rounds, options.repeats,
      options.warmup);
  std::fprintf(out, "%-44s %12s %12s %8s %7s %10s %12s\n", "decision", "measured ms", "simulated ms", "error",
               "copies", "peak MiB", "sim peak MiB");
  const size_t n = decisions.size();
  std::vector<sim::SimResult> sims;
  for (size_t i = 0; i < n; ++i) sims.push_back(evaluator.Simulate(decisions[i]));
  std::vector<std::vector<double>> steps(n);
  std::vector<Measurement> last(n);
  for (int32_t round = 0; round < std::max<int32_t>(1, options.rounds); ++round) {
    for (size_t i = 0; i < n; ++i) {
      last[i] = executor.Run(decisions[i], options.warmup, options.repeats);
      steps[i].insert(steps[i].end(), last[i].step_times.begin(), last[i].step_times.end());
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> measured, simulated, errors;
  for (size_t i = 0; i < n; ++i) {
    const sim::SimResult& sim = sims[i];
    const Measurement& m = last[i];
    const double median = Median(steps[i]);
    const double error = (sim.step_time - median) / median;
    measured.push_back(median);
    simulated.push_back(sim.step_time);
    errors.push_back(std::fabs(error));
    std::fprintf(out, "%-44s %12.2f %12.2f %+7.1f%% %7lld %10.1f %12.1f\n", names[i].c_str(), median * 1e3,
                 sim.step_time * 1e3, error * 100.0, static_cast<long long>(m.copies),
                 static_cast<double>(m.peak_memory_max) / (1 << 20),
                 static_cast<double>(sim.peak_memory()) / (1 << 20));
    std::fflush(out);
    rows.push_back({{"decision", names[i]},
                    {"measured_s", median},
                    {"measured_steps_s", steps[i]},
                    {"simulated_s", sim.step_time},
                    {"error", error},
                    {"copies", m.copies},
                    {"copied_bytes", m.copied_bytes},
                    {"peak_memory", m.peak_memory},
                    {"simulated_peak_memory", sim.peak_memory()}});
  }
  nlohmann::json summary = {
      {"graph", graph.name()},
      {"cluster", cluster.name()},
      {"backend", executor.backend()},
      {"profile", options.profile_name},
      {"rounds", options.rounds},
      {"repeats", options.repeats},
      {"warmup", options.warmup},
      {"intra_op_threads", executor.backend() == "cpu" ? exec_options.intra_op_threads : 0},
      {"decisions", rows}};
  if (decisions.size() >= 2) {
    const double median_error = Median(errors);
    const double tau = KendallTau(simulated, measured);
    std::fprintf(out, "median |error| %.1f%%, Kendall tau (simulated vs measured) %.3f over %zu decisions\n",
                 median_error * 100.0, tau, decisions.size());
    summary["median_abs_error"] = median_error;
    summary["kendall_tau"] = tau;
  }
  return summary;
}

}  // namespace gosim::calibration::hardware
