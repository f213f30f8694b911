#include "calibration/replay.h"

#include <doctest/doctest.h>

#include "calibration/fit.h"
#include "calibration/trace_reader.h"
#include "core/error.h"

namespace gosim::calibration {
namespace {

// One step [0, 100) us on thread 10 (times below are ts - 1000):
//   cudaLaunchKernel [10, 15) -> mm kernel [16, 40) on stream 7
//   cudaLaunchKernel [32, 36) -> relu kernel [41, 45) (queued: the GPU was busy)
//   cudaStreamSynchronize [50, 60)
// Thread 11 (a second CPU thread, later in the step):
//   cudaLaunchKernel [70, 75) -> add kernel [76, 80) on stream 20
const char* kStepTrace = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 1000, "dur": 100, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1005, "dur": 25,
   "args": {"External id": 1, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1010, "dur": 5, "args": {"External id": 1, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1016, "dur": 24, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu_", "pid": 10, "tid": 10, "ts": 1030, "dur": 10,
   "args": {"External id": 2, "Input Dims": [[64, 64]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1032, "dur": 4, "args": {"External id": 2, "correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 1041, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 10, "tid": 10, "ts": 1050, "dur": 10, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 10, "tid": 11, "ts": 1068, "dur": 10,
   "args": {"External id": 3, "Input Dims": [[64], [64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1070, "dur": 5, "args": {"External id": 3, "correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "add", "pid": 0, "tid": 20, "ts": 1076, "dur": 4, "args": {"device": 0, "stream": 20, "correlation": 4}}
]})";

sim::DeviceProfile HandProfile() {
  sim::DeviceProfile p;
  p.device_kind = "test";
  sim::KernelFit mm;
  mm.intercept = 50e-6;
  sim::KernelFit relu;
  relu.intercept = 2e-6;
  sim::KernelFit add;
  add.intercept = 1e-6;
  p.op_types["aten::mm"] = mm;
  p.op_types["aten::relu_"] = relu;
  p.op_types["aten::add"] = add;
  return p;
}

}  // namespace

TEST_CASE("step graph of a hand-made trace, replayed with measured and with predicted GPU times") {
  const Trace trace = ParseTrace(kStepTrace, "step.json");
  const TraceSamples samples = ExtractSamples(trace);
  CHECK(samples.kernel_gap == doctest::Approx(1e-6));  // relu queued behind gemm: 41 - 40
  const sim::DeviceProfile profile = HandProfile();

  ReplayOptions measured;
  measured.measured_gpu = true;
  const StepGraph g = BuildStepGraph(trace, samples, 0, &profile, measured);
  CHECK(g.measured_time == doctest::Approx(100e-6));
  CHECK(g.gpu_nodes == 3);
  // Thread 10: 2 launches, the sync as entry + wait, the tail; thread 11: 1 launch.
  CHECK(g.cpu_nodes == 6);
  CHECK(g.edges.launch == 3);
  CHECK(g.edges.stream_order == 1);
  CHECK(g.edges.sync == 1);          // relu -> the wait of cudaStreamSynchronize
  CHECK(g.edges.cross_thread == 1);  // thread 11 starts after thread 10's sync
  CHECK(g.edges.dropped == 0);
  CHECK(g.cluster.num_devices() == 4);  // 2 threads + 2 streams
  // Measured GPU times (+1 us gap each) reproduce the step exactly:
  // gemm 15->40, relu 40->45, sync 36->50 then wait 50->60, tail 60->100.
  const StepSimulation check = SimulateStepGraph(g);
  CHECK(check.makespan == doctest::Approx(100e-6));
  CHECK(check.gpu_end == doctest::Approx(80e-6));  // add: 75 -> 80 (4 us + 1 us gap)

  // Predicted: gemm 50+1 us (15->66), relu 2+1 (66->69), the wait starts at
  // 69 and lasts its measured 10 us (-> 79), the tail 40 us (-> 119); thread
  // 11: 79 -> 94, add 2 us (94 -> 96).
  const StepGraph p = BuildStepGraph(trace, samples, 0, &profile, ReplayOptions{});
  const StepSimulation predicted = SimulateStepGraph(p);
  CHECK(predicted.makespan == doctest::Approx(119e-6));
  CHECK(predicted.gpu_end == doctest::Approx(96e-6));
  CHECK(p.predicted_gpu == doctest::Approx(53e-6));

  const ReplayResult r = ReplayStep(trace, samples, 0, profile);
  CHECK(r.measured == doctest::Approx(100e-6));
  CHECK(r.simulated == doctest::Approx(119e-6));
  CHECK(r.check == doctest::Approx(100e-6));
  CHECK(r.error() == doctest::Approx(0.19));
  CHECK(FormatReplay({r}).find("mean |error|") != std::string::npos);
}

TEST_CASE("replay errors") {
  const Trace trace = ParseTrace(kStepTrace, "step.json");
  const TraceSamples samples = ExtractSamples(trace);
  CHECK_THROWS_AS(BuildStepGraph(trace, samples, 3, nullptr, ReplayOptions{}), ConfigError);
  CHECK_THROWS_AS(BuildStepGraph(trace, samples, 0, nullptr, ReplayOptions{}), ConfigError);
}

TEST_CASE("real V100 ResNet-50 steps replay within 5%") {
  const Trace trace = ReadTrace(std::string(GOSIM_SHARED_DIR) + "/data/traces/kineto_v100_resnet50.json.gz");
  const TraceSamples samples = ExtractSamples(trace);
  // Fit on steps 16-19, replay held-out step 21.
  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {0, 1, 2, 3}, {16, 17, 18, 19});
  const ReplayResult r = ReplayStep(trace, samples, 5, profile);
  CHECK(r.step_number == 21);
  CHECK(r.measured == doctest::Approx(0.167125).epsilon(1e-4));
  CHECK(std::abs(r.check_error()) < 0.01);
  CHECK(std::abs(r.error()) < 0.05);
  CHECK(r.edges.dropped == 0);
}

}  // namespace gosim::calibration
