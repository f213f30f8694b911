// Simulator options. Every semantic choice of the engine is one of these,
// with the default documented here and in docs/SIMULATOR.md.
#ifndef GOSIM_SIM_OPTIONS_H_
#define GOSIM_SIM_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gosim::sim {

// How the framework drives the devices (docs/SIMULATOR.md, "The host").
enum class Execution : uint8_t {
  kAuto,      // the cluster's `host.execution`, else eager where the cost model prices the host, else none
  kNone,      // no host: kernels start when their inputs are ready (GPU-side only)
  kEager,     // PyTorch eager: one host thread per process dispatches every op in program order
  kGraph,     // a graph executor (TensorFlow): `host_threads` inter-op threads per process
  kCaptured,  // CUDA graphs: one launch per device per step; kernels keep their stream order
};
// Which process drives which device.
enum class Processes : uint8_t {
  kAuto,       // the cluster's `host.processes`, else one
  kOne,        // one process drives every device (naive model parallelism, TensorFlow's single executor)
  kPerDevice,  // one process per device (DDP, pipeline stages): copies between them are send/recv
};

// How a pipeline orders its micro-batches (sim/pipeline.h).
enum class Schedule : uint8_t {
  kStreaming,  // micro-batch order (inference)
  kGPipe,      // every forward, then every backward (last micro-batch first), then the updates
  k1F1B,  // per stage: warm-up forwards, then one backward, one forward, ...; micro-batches in flight bounded
};
std::string_view ScheduleName(Schedule schedule);
std::optional<Schedule> ParseSchedule(std::string_view text);

std::string_view ExecutionName(Execution execution);
std::string_view ProcessesName(Processes processes);
// nullopt for an unknown name.
std::optional<Execution> ParseExecution(std::string_view text);
std::optional<Processes> ParseProcesses(std::string_view text);

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
  // The host (docs/SIMULATOR.md, "The host"). The Evaluator resolves kAuto
  // once (Evaluator::execution()).
  Execution execution = Execution::kAuto;
  Processes processes = Processes::kAuto;
  // Inter-op threads per process under execution graph (>= 1).
  int host_threads = 4;
  // Kernels a device may have launched and not finished before a launch
  // blocks its host thread (CUDA's pending-launch queue; >= 1).
  int launch_queue = 1024;
  // Evaluate() also computes msr-fiddle's max-load (Evaluation::max_load,
  // sim/msr.h); set by whoever optimizes the max_load objective. Simulate()
  // always does.
  bool max_load = false;
  // Pipelines (sim/pipeline.h): this many micro-batches in flight over the
  // placement, simulated as one graph of copies; 1 = one step of the graph.
  // Evaluation::throughput is then the step over micro_batches.
  int micro_batches = 1;
  Schedule schedule = Schedule::kGPipe;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_OPTIONS_H_
