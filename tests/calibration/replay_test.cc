#include "calibration/replay.h"

#include <doctest/doctest.h>

#include <map>

#include "calibration/fit.h"
#include "calibration/trace_reader.h"
#include "core/error.h"
#include "core/io.h"
#include "tests/shared_data.h"

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

TEST_CASE("a stream wait whose guessed source ran after the waiter waits on earlier work of that stream") {
  // Thread 10, no cuda_sync records: kernel a [13, 20) and kernel b [40, 60)
  // on stream 7, then cudaEventRecord and cudaStreamWaitEvent, then kernel c
  // [25, 30) on stream 20. The event is taken to mark b (the thread's last
  // launch), but c started before b did: the wait was on a, the latest
  // stream-7 activity launched before the wait that ended by c's start.
  const char* trace_text = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 1000, "dur": 100, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu_", "pid": 10, "tid": 10, "ts": 1009, "dur": 4,
   "args": {"External id": 1, "Input Dims": [[64]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1010, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1013, "dur": 7, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu_", "pid": 10, "tid": 10, "ts": 1013, "dur": 4,
   "args": {"External id": 2, "Input Dims": [[64]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1014, "dur": 2, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 1040, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 10, "tid": 10, "ts": 1017, "dur": 1, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 10, "tid": 10, "ts": 1019, "dur": 1, "args": {"correlation": 4}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 10, "tid": 10, "ts": 1020, "dur": 4,
   "args": {"External id": 3, "Input Dims": [[64], [64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1021, "dur": 2, "args": {"correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 20, "ts": 1025, "dur": 5, "args": {"device": 0, "stream": 20, "correlation": 5}}
]})";
  const Trace trace = ParseTrace(trace_text, "wait.json");
  const TraceSamples samples = ExtractSamples(trace);
  ReplayOptions measured;
  measured.measured_gpu = true;
  const StepGraph g = BuildStepGraph(trace, samples, 0, nullptr, measured);
  CHECK(g.edges.cross_stream == 1);  // a -> c, rather than the contradicted b -> c dropped
  CHECK(g.edges.dropped == 0);
}

TEST_CASE("replay errors") {
  const Trace trace = ParseTrace(kStepTrace, "step.json");
  const TraceSamples samples = ExtractSamples(trace);
  CHECK_THROWS_AS(BuildStepGraph(trace, samples, 3, nullptr, ReplayOptions{}), ConfigError);
  CHECK_THROWS_AS(BuildStepGraph(trace, samples, 0, nullptr, ReplayOptions{}), ConfigError);
}

TEST_CASE("steady state: a GPU-bound step keeps kernels queued across the step boundary") {
  // The CPU launches an 80 us kernel 10 us into a 50 us step and moves on:
  // from idle the step ends with the kernel at 90 us, in steady state each
  // step waits for the previous step's kernel, so the period is 80 us.
  const char* trace_text = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 1000, "dur": 50, "args": {}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 10, "tid": 10, "ts": 1050, "dur": 50, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1005, "dur": 10,
   "args": {"External id": 1, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1006, "dur": 4, "args": {"External id": 1, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1010, "dur": 80, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1055, "dur": 10,
   "args": {"External id": 2, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1056, "dur": 4, "args": {"External id": 2, "correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1090, "dur": 80, "args": {"device": 0, "stream": 7, "correlation": 2}}
]})";
  const Trace trace = ParseTrace(trace_text, "ahead.json");
  const TraceSamples samples = ExtractSamples(trace);
  CHECK(samples.kernel_gap == doctest::Approx(0.0));  // the second gemm queued, started as the first ended
  ReplayOptions measured;
  measured.measured_gpu = true;
  const StepGraph g = BuildStepGraph(trace, samples, 0, nullptr, measured);
  CHECK(g.measured_time == doctest::Approx(50e-6));   // ProfilerStep#1 to ProfilerStep#2
  CHECK(g.measured_drain == doctest::Approx(90e-6));  // to the end of its kernel
  CHECK(SimulateStepGraph(g).makespan == doctest::Approx(90e-6));
  CHECK(SimulateSteadyState(g) == doctest::Approx(80e-6));
  CHECK(SimulateSteadyState(g, 6) == doctest::Approx(80e-6));
  CHECK_THROWS_AS(SimulateSteadyState(g, 2), ConfigError);

  // The host side: per step, 50 us of CPU time on thread 10 (10 us up to the
  // end of the launch, a 40 us tail) with one call and one operator.
  REQUIRE(samples.cpu_rows.size() == 2);
  CHECK(samples.cpu_rows[0].seconds == doctest::Approx(50e-6));
  CHECK(samples.cpu_rows[0].calls == 1.0);
  CHECK(samples.cpu_rows[0].ops == 1.0);
  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {}, {1, 2});
  REQUIRE(profile.cpu.has_value());
  CHECK(profile.cpu->per_call + profile.cpu->per_op + profile.cpu->per_top_op == doctest::Approx(50e-6));
  CHECK(profile.cpu->samples == 2);
  // Predicting: the CPU costs per_call + per_op = 50 us per step, the gemm
  // its fit (two samples of one shape: their median, 80 us): GPU-bound again.
  ReplayOptions predict;
  predict.predict_cpu = true;
  const StepGraph p = BuildStepGraph(trace, samples, 0, &profile, predict);
  CHECK(p.predicted_gpu == doctest::Approx(80e-6));
  CHECK(SimulateSteadyState(p) == doctest::Approx(80e-6));
  // A profile without a cpu fit cannot predict.
  sim::DeviceProfile no_cpu = profile;
  no_cpu.cpu.reset();
  CHECK_THROWS_AS(BuildStepGraph(trace, samples, 0, &no_cpu, predict), ConfigError);
}

TEST_CASE("host side: waiting for another thread or for a full launch queue is not CPU work") {
  // Thread 10 runs the forward op and the optimizer op; thread 20 (the
  // autograd engine) runs the backward op in between, while thread 10
  // waits. Thread 20's launch blocks 50 us (the GPU's queue is full); the
  // median launch takes 4 us, so it counts 3 * 4 + 5 = 17 us.
  const char* trace_text = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 1000, "dur": 100, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1005, "dur": 10,
   "args": {"External id": 1, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1006, "dur": 4, "args": {"External id": 1, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1010, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 20, "ts": 1020, "dur": 60,
   "args": {"External id": 2, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 20, "ts": 1021, "dur": 50, "args": {"External id": 2, "correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1071, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 10, "tid": 10, "ts": 1085, "dur": 10,
   "args": {"External id": 3, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1086, "dur": 4, "args": {"External id": 3, "correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "add", "pid": 0, "tid": 7, "ts": 1090, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 3}}
]})";
  const Trace trace = ParseTrace(trace_text, "threads.json");
  const TraceSamples samples = ExtractSamples(trace);
  REQUIRE(samples.cpu_rows.size() == 2);
  std::map<double, TraceSamples::CpuRow> by_calls;
  for (const auto& r : samples.cpu_rows) by_calls[r.calls] = r;
  REQUIRE(by_calls.count(2.0) == 1);
  // Thread 10: 6 + 4 up to its first launch's end, 76 - 60 (thread 20 busy)
  // + 4 to the second, a 10 us tail: 40 us, not the 100 us the step lasts.
  CHECK(by_calls[2.0].seconds == doctest::Approx(40e-6));
  CHECK(by_calls[2.0].ops == 2.0);
  CHECK(by_calls[2.0].top_ops == 2.0);
  // Thread 20: its blocked launch counts its cap.
  REQUIRE(by_calls.count(1.0) == 1);
  CHECK(by_calls[1.0].seconds == doctest::Approx(17e-6));
  CHECK(by_calls[1.0].top_ops == 1.0);
}

TEST_CASE("real V100 ResNet-50 steps: the steady-state replay fed measured times gives the period" *
          doctest::test_suite("shared_data")) {
  const std::string path = gosim::testing::SharedDataFile("traces/kineto_v100_resnet50.json.gz");
  if (path.empty()) return;
  const Trace trace = ReadTrace(path);
  const TraceSamples samples = ExtractSamples(trace);
  // Fit on steps 16-19, replay held-out step 21.
  const sim::DeviceProfile profile = FitProfile(samples, FitOptions{}, {0, 1, 2, 3}, {16, 17, 18, 19});
  const ReplayResult r = ReplayStep(trace, samples, 5, profile);
  CHECK(r.step_number == 21);
  CHECK(std::abs(r.check_error()) < 0.02);
  CHECK(r.edges.dropped == 0);
}

}  // namespace gosim::calibration
