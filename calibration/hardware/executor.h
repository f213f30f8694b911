// Executing a graph for real with LibTorch: `gosim profile` and `gosim replay`.
//
// Every node runs as real aten ops of its shapes (op_recipes.h): CUDA
// devices when LibTorch has CUDA (torch::cuda::is_available()), otherwise CPU
// "devices": one worker thread per cluster device, each with its own
// intra-op thread budget (the machine's cores split evenly between the
// devices). A decision places the nodes; each device serves its ready queue
// in the simulator's order (higher priority first, then ready time, then
// node id; FIFO by ready time without priorities, sim/decision.h). A data
// edge between devices is a real tensor copy, made once per (tensor,
// destination device) by the producer's worker right after the producer ran.
//
// This header does not include torch (only calibration/hardware/ may), so the
// gosim commands can use it.
#ifndef GOSIM_CALIBRATION_HARDWARE_EXECUTOR_H_
#define GOSIM_CALIBRATION_HARDWARE_EXECUTOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graphs/graph.h"
#include "sim/decision.h"

namespace gosim::calibration::hardware {

struct ExecutorOptions {
  int32_t num_devices = 1;       // cluster devices the decisions place nodes on
  int32_t intra_op_threads = 0;  // per CPU device; 0 = max(1, cores / num_devices)
  bool allow_cuda = true;        // use CUDA devices when LibTorch has them
  uint64_t seed = 1;             // for the constant operands
};

// One measured run of a decision.
struct Measurement {
  std::string backend;             // "cuda" or "cpu"
  int32_t intra_op_threads = 0;    // per CPU device
  std::vector<double> step_times;  // seconds, the measured repeats (warm-up excluded)
  double median_step_time = 0.0;   // seconds
  int64_t copies = 0;              // cross-device tensor copies per step
  int64_t copied_bytes = 0;        // per step
  // Per device: persistent bytes (the graph's weights and optimizer state of
  // the nodes placed there) + the live intermediate tensors, the maximum
  // over the step (tensor bytes accounted by the executor: each output from
  // its production to its last consumer on that device), median over repeats.
  std::vector<int64_t> peak_memory;
  int64_t peak_memory_max = 0;
};

// How the nodes are run (for reports).
struct PlanSummary {
  std::map<std::string, int32_t> aten_ops;  // recorded aten name -> nodes
  int32_t no_work = 0;                      // nodes without work (sources, views)
  int32_t fallbacks = 0;                    // ran as an equivalent matmul / copy
};

class Executor {
 public:
  // Plans every node (allocates their constant operands). `graph` must
  // outlive the executor. ConfigError when CUDA is in use and the cluster has
  // more devices than the machine.
  Executor(const graphs::Graph& graph, ExecutorOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `warmup` + `repeats` steps of the graph under `decision` and
  // measures them. DecisionError when the decision does not fit the graph or
  // the executor's devices.
  Measurement Run(const sim::Decision& decision, int32_t warmup, int32_t repeats);

  // Runs `warmup` + `steps` steps under `decision` and writes the measured
  // steps as a Kineto Chrome trace (plain, or gzipped when `path` ends in
  // .gz) that calibration/trace_reader.h reads: per node a cpu_op with the
  // recorded aten name, Input Dims and Input type on its worker thread, and a
  // "kernel" activity for the same span on its device (joined through
  // External id); per cross-device copy a gpu_memcpy ("Memcpy PtoP", the
  // kind the calibrated link fit `memcpy_ptop` reads) with its bytes;
  // one "ProfilerStep#k" annotation per step; deviceProperties naming the
  // device ("cpu" or the CUDA device's name).
  Measurement Profile(const sim::Decision& decision, int32_t warmup, int32_t steps, const std::string& path);

  const PlanSummary& plan() const;
  const std::string& backend() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gosim::calibration::hardware

#endif  // GOSIM_CALIBRATION_HARDWARE_EXECUTOR_H_
