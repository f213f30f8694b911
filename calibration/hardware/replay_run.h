// The measured-vs-simulated comparison behind `gosim replay`: runs each
// decision on the hardware executor, simulates it with a calibrated cost
// model, prints a table and returns the results as JSON. Torch-free header.
#ifndef GOSIM_CALIBRATION_HARDWARE_REPLAY_RUN_H_
#define GOSIM_CALIBRATION_HARDWARE_REPLAY_RUN_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/hardware/executor.h"
#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"

namespace gosim::calibration::hardware {

struct ReplayRunOptions {
  int32_t repeats = 7;
  int32_t warmup = 2;
  // The decisions are measured round-robin in this many rounds (each round:
  // warm-up + repeats steps per decision), so that a change of the machine's
  // load between decisions affects them all alike; the step time is the
  // median over all rounds' measured steps.
  int32_t rounds = 3;
  int32_t intra_op_threads = 0;
  bool allow_cuda = true;
  std::string profile_name;  // for the report
};

// `decisions[i]` was read from `names[i]`. Prints one row per decision to
// `out` (and the median |error| and Kendall tau for two or more); returns
// {graph, cluster, backend, decisions: [{decision, measured_s,
// measured_steps_s, simulated_s, error, copies, copied_bytes, peak_memory,
// simulated_peak_memory}], median_abs_error, kendall_tau}.
nlohmann::json RunReplay(const graphs::Graph& graph, const sim::Cluster& cluster,
                         std::shared_ptr<const sim::CostModel> cost_model,
                         const std::vector<sim::Decision>& decisions, const std::vector<std::string>& names,
                         const ReplayRunOptions& options, std::FILE* out);

}  // namespace gosim::calibration::hardware

#endif  // GOSIM_CALIBRATION_HARDWARE_REPLAY_RUN_H_
