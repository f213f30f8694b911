// Simulator options. Every semantic choice of the engine is one of these,
// with the default documented here and in docs/SIMULATOR.md.
#ifndef GOSIM_SIM_OPTIONS_H_
#define GOSIM_SIM_OPTIONS_H_

namespace gosim::sim {

struct SimOptions {
  // Track per-device memory and mark decisions that exceed capacity infeasible.
  bool track_memory = true;
  // Step time reported for an infeasible decision, in seconds. HRL's reference
  // code used a large constant (100 s); <= 0 means "the simulated step time".
  double infeasible_step_time = 100.0;
  // Stop simulating at the first out-of-memory event (faster for search).
  bool stop_at_oom = true;
  // Transfers to one destination device are made once per tensor and reused
  // by every consumer there (TensorFlow's Send/Recv). false = once per edge.
  bool reuse_transfers = true;
  // How many of the largest live tensors Simulate() lists when a device runs
  // out of memory (SimResult::oom->live).
  int oom_live_tensors = 8;
  // Nodes of one colocation group (a weight, its optimizer state and update
  // ops) must share a device: a decision that splits a group is infeasible,
  // like one that runs out of memory (Evaluation::split_group,
  // SimResult::split). false simulates such decisions as they are.
  bool enforce_colocation = true;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_OPTIONS_H_
