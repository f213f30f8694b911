#include "calibration/trace_reader.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "calibration/samples.h"
#include "core/error.h"
#include "core/io.h"
#include "core/rng.h"
#include "gosim_source_dir.h"  // GOSIM_SOURCE_DIR
#include "tests/calibration/trace_test_data.h"
#include "tests/shared_data.h"

namespace gosim::calibration {
namespace {

int32_t FindOp(const Trace& trace, const std::string& name) {
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    if (trace.ops[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace

TEST_CASE("Kineto trace: ops, nesting, kernel join, steps, collectives") {
  const Trace t = ParseTrace(testing::kKinetoTrace, "small.json");
  CHECK(t.schema == TraceSchema::kKineto);
  CHECK(t.rank == 1);
  CHECK(t.world_size == 2);
  REQUIRE(t.devices.size() == 1);
  CHECK(t.devices[0].num_sms == 108);
  CHECK(t.DeviceKind() == "A100");
  CHECK(t.origin_us == 1000.0);
  REQUIRE(t.ops.size() == 8);
  CHECK(t.runtime.size() == 5);
  REQUIRE(t.activities.size() == 5);

  const int32_t step7 = FindOp(t, "ProfilerStep#7");
  const int32_t linear = FindOp(t, "aten::linear");
  const int32_t addmm = FindOp(t, "aten::addmm");
  const int32_t relu = FindOp(t, "aten::relu_");
  const int32_t to = FindOp(t, "aten::to");
  const int32_t comms = FindOp(t, "record_param_comms");
  const int32_t zero = FindOp(t, "aten::zero_");
  CHECK(t.ops[static_cast<size_t>(linear)].parent == step7);
  CHECK(t.ops[static_cast<size_t>(addmm)].parent == linear);
  CHECK(t.ops[static_cast<size_t>(comms)].parent == -1);
  CHECK(t.ops[static_cast<size_t>(zero)].parent == FindOp(t, "ProfilerStep#8"));
  CHECK(t.ops[static_cast<size_t>(step7)].annotation);
  CHECK_FALSE(t.ops[static_cast<size_t>(addmm)].annotation);
  CHECK(t.ops[static_cast<size_t>(linear)].sequence_number == 3);
  CHECK(TopLevelOp(t, addmm) == linear);
  CHECK(TopLevelOp(t, comms) == comms);

  const TraceOp& a = t.ops[static_cast<size_t>(addmm)];
  REQUIRE(a.inputs.size() == 5);
  CHECK(a.inputs[1].shape == std::vector<int64_t>{8, 16});
  CHECK(a.inputs[1].is_tensor);
  CHECK(a.inputs[1].dtype == graphs::DType::kFloat32);
  CHECK_FALSE(a.inputs[3].is_tensor);  // Scalar
  CHECK(a.start == doctest::Approx(10e-6));
  CHECK(a.duration == doctest::Approx(20e-6));

  // gemm: runtime External id; relu: enclosure; memcpy, NCCL, memset: External id.
  CHECK(t.activities[0].op == addmm);
  CHECK(t.activities[0].stream == 7);
  CHECK(t.activities[0].start == doctest::Approx(20e-6));
  CHECK(t.activities[1].op == relu);
  CHECK(t.activities[2].op == to);
  CHECK(t.activities[2].kind == ActivityKind::kMemcpy);
  CHECK(t.activities[2].copy == CopyKind::kDtoH);
  CHECK(t.activities[2].pageable);
  CHECK(t.activities[2].bytes == 1024);
  CHECK(t.activities[3].op == comms);
  CHECK(t.activities[4].kind == ActivityKind::kMemset);
  CHECK(t.activities[4].op == zero);
  CHECK(t.join.by_external_id == 4);
  CHECK(t.join.by_enclosure == 1);
  CHECK(t.join.unattributed == 0);
  CHECK(t.runtime[1].op == relu);

  REQUIRE(t.collectives.size() == 1);
  CHECK(t.collectives[0].name == "allreduce");
  CHECK(t.collectives[0].bytes == 4000);
  CHECK(t.collectives[0].group_size == 2);
  CHECK(t.collectives[0].op == comms);
  CHECK(t.activities[3].collective == 0);

  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].number == 7);
  CHECK(t.steps[1].number == 8);
  CHECK(t.steps[0].start == doctest::Approx(0.0));
  CHECK(t.steps[0].duration == doctest::Approx(100e-6));
  CHECK(StepAt(t, 99e-6) == 0);
  CHECK(StepAt(t, 100e-6) == 1);
  CHECK(StepAt(t, 151e-6) == -1);
  CHECK(t.threads[static_cast<size_t>(t.ops[static_cast<size_t>(comms)].thread)].name == "backward");
}

TEST_CASE("samples of the small Kineto trace") {
  const Trace t = ParseTrace(testing::kKinetoTrace, "small.json");
  const TraceSamples s = ExtractSamples(t);
  REQUIRE(s.ops.size() == 3);  // linear (gemm), relu_, zero_ (memset); aten::to only copies
  CHECK(s.ops[0].type == "aten::linear");
  CHECK(s.ops[0].time == doctest::Approx(10e-6));
  CHECK(s.ops[0].flops == 2.0 * 8 * 16 * 32 + 8 * 32);
  CHECK(s.ops[0].op_class == graphs::OpClass::kMatMul);
  CHECK(s.ops[0].step == 0);
  CHECK(s.ops[2].type == "aten::zero_");
  CHECK(s.ops[2].step == 1);
  REQUIRE(s.transfers.size() == 2);
  CHECK(s.transfers[0].link == "memcpy_dtoh");
  CHECK(s.transfers[0].bytes == 1024.0);
  CHECK(s.transfers[1].link == "nccl_allreduce");
  CHECK(s.transfers[1].bytes == 4000.0);
  CHECK(s.device_kind == "A100");
}

TEST_CASE("samples of a gosim profile trace: the node's recorded work replaces an approximate estimate") {
  // A stride-2 3x3 convolution [1, 3, 8, 8] -> [1, 4, 4, 4] (the output size is
  // not in its arguments: op_work.h assumes stride 1, 4x the FLOPs) and a
  // matmul whose arguments are complete (an equivalent matmul run for a node
  // of other work keeps the work of what ran).
  const std::string trace = R"json({"deviceProperties": [{"id": 0, "name": "cpu", "totalGlobalMem": 0}],
   "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
     "args": {"External id": 1, "Input Dims": [[1, 3, 8, 8], [4, 3, 3, 3]], "Input type": ["float", "float"],
              "gosim node": "conv", "gosim op type": "Conv2D", "gosim flops": 3456, "gosim bytes": 1024}},
    {"ph": "X", "cat": "kernel", "name": "cpu_kernel<aten::conv2d>", "pid": 0, "tid": "stream 7", "ts": 10,
     "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 1000000001, "External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 40, "dur": 20,
     "args": {"External id": 2, "Input Dims": [[64, 32], [32, 64]], "Input type": ["float", "float"],
              "gosim node": "conv1d_grad", "gosim op type": "Conv1DBackpropFilter", "gosim flops": 262144,
              "gosim bytes": 5000}},
    {"ph": "X", "cat": "kernel", "name": "cpu_kernel<aten::mm>", "pid": 0, "tid": "stream 7", "ts": 40,
     "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 1000000002, "External id": 2}}]})json";
  const Trace t = ParseTrace(trace, "profile.json");
  const TraceSamples s = ExtractSamples(t);
  REQUIRE(s.ops.size() == 2);
  CHECK(s.ops[0].type == "aten::conv2d");
  CHECK(s.ops[0].flops == 3456.0);
  CHECK(s.ops[0].bytes == 1024.0);
  CHECK_FALSE(s.ops[0].approximate);
  CHECK(s.ops[1].type == "aten::mm");
  CHECK(s.ops[1].flops == 2.0 * 64 * 32 * 64);
  CHECK(s.ops[1].bytes == 4.0 * (64 * 32 + 32 * 64 + 64 * 64));
  CHECK(s.ops[1].graph_bytes == 5000.0);
}

TEST_CASE("legacy Kineto trace") {
  const Trace t = ParseTrace(testing::kLegacyTrace, "legacy.json");
  CHECK(t.schema == TraceSchema::kKinetoLegacy);
  CHECK(t.DeviceKind() == "V100");
  REQUIRE(t.activities.size() == 1);
  CHECK(t.activities[0].op == FindOp(t, "aten::mm"));
  CHECK(t.activities[0].stream == 7);
  CHECK(t.join.by_external_id == 1);
  REQUIRE(t.steps.size() == 1);
  CHECK(t.steps[0].number == 3);
}

TEST_CASE("TensorFlow timeline") {
  const Trace t = ReadTrace(std::string(GOSIM_SOURCE_DIR) + "/tests/calibration/data/tf_timeline_small.json");
  CHECK(t.schema == TraceSchema::kTfTimeline);
  // The stream:all copy of MatMul is skipped because per-stream processes
  // exist; the executor's MatMul is an op without a kernel.
  REQUIRE(t.ops.size() == 5);
  CHECK(t.ops[1].name == "MatMul");
  CHECK(t.ops[1].node == "dense/MatMul");
  REQUIRE(t.activities.size() == 3);
  CHECK(t.activities[0].name == "MatMul");
  CHECK(t.activities[0].op == 2);
  CHECK(t.activities[0].stream == 7);
  CHECK(t.activities[0].start == doctest::Approx(20e-6));
  CHECK(t.activities[0].duration == doctest::Approx(40e-6));
  CHECK(t.activities[2].kind == ActivityKind::kMemcpy);
  CHECK(t.activities[2].copy == CopyKind::kDtoH);
  CHECK(t.join.by_activity_id == 3);
  const TraceSamples s = ExtractSamples(t);
  REQUIRE(s.ops.size() == 2);
  CHECK(s.ops[0].type == "MatMul");
  CHECK(s.ops[0].op_class == graphs::OpClass::kMatMul);
  CHECK(s.transfers.size() == 1);
}

TEST_CASE("step pattern: custom annotations, innermost matches, bad regex") {
  ReadOptions options;
  options.step_pattern = "^aten::(addmm|relu_)$";
  const Trace t = ParseTrace(testing::kKinetoTrace, "small.json", options);
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].name == "aten::addmm");
  CHECK(t.steps[0].number == 0);  // no number in the names: ordinals
  options.step_pattern = "ProfilerStep|aten::linear";
  const Trace nested = ParseTrace(testing::kKinetoTrace, "small.json", options);
  REQUIRE(nested.steps.size() == 2);  // step 7 encloses linear: the inner match wins
  CHECK(nested.steps[0].name == "aten::linear");
  options.step_pattern = "([";
  CHECK_THROWS_AS(ParseTrace(testing::kKinetoTrace, "small.json", options), ConfigError);
}

TEST_CASE("malformed traces are TraceErrors with a location") {
  CHECK_THROWS_AS(ParseTrace("{\"traceEvents\": [", "t.json"), TraceError);
  CHECK_THROWS_AS(ParseTrace("42", "t.json"), TraceError);
  CHECK_THROWS_AS(ParseTrace("{\"events\": []}", "t.json"), TraceError);
  CHECK_THROWS_AS(ParseTrace("{\"traceEvents\": {}}", "t.json"), TraceError);
  CHECK_THROWS_AS(
      ParseTrace("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"foo\", \"name\": \"x\"}]}", "t.json"),
      TraceError);
  try {
    ParseTrace(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -3}]})",
               "neg.json");
    FAIL("expected a TraceError");
  } catch (const TraceError& e) {
    CHECK(e.where().file == "neg.json");
    CHECK(e.where().path == "traceEvents[0].dur");
  }
  try {
    ParseTrace(testing::kKinetoTrace.substr(0, 300), "cut.json");
    FAIL("expected a TraceError");
  } catch (const TraceError& e) {
    CHECK(e.where().byte_offset == 300);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
  try {
    ParseTrace(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": "1", "dur": 1}]})",
               "s.json");
    FAIL("expected a TraceError");
  } catch (const TraceError& e) {
    CHECK(e.where().path == "traceEvents[0].ts");
  }
  CHECK_THROWS_AS(ReadTrace("/nonexistent/trace.json"), IoError);
}

TEST_CASE("seeded mutations and truncations fail only with gosim errors") {
  Rng rng(20240521);
  const std::string& base = testing::kKinetoTrace;
  const std::string alphabet = "{}[],:\"0123456789-.eE abcXtrufls";
  int parsed = 0;
  int rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string text = base;
    const int kind = static_cast<int>(rng.UniformInt(3));
    if (kind == 0) {
      text.resize(rng.UniformInt(text.size()));
    } else if (kind == 1) {
      const int edits = 1 + static_cast<int>(rng.UniformInt(4));
      for (int e = 0; e < edits; ++e)
        text[rng.UniformInt(text.size())] = alphabet[rng.UniformInt(alphabet.size())];
    } else {
      const size_t at = rng.UniformInt(text.size());
      text.erase(at, std::min<size_t>(1 + rng.UniformInt(40), text.size() - at));
    }
    try {
      const Trace t = ParseTrace(text, "mutated.json");
      ExtractSamples(t);
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL("non-gosim exception: " << e.what());
    }
  }
  CHECK(parsed + rejected == 400);
  CHECK(rejected > 100);
}

TEST_CASE("truncated and corrupted gzip traces are TraceErrors") {
  const std::string data = Gzip(testing::kKinetoTrace);
  const std::string dir = (std::filesystem::temp_directory_path() / "gosim_trace_test").string();
  std::filesystem::create_directories(dir);
  Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bytes = data;
    if (trial % 2 == 0) {
      bytes.resize(10 + rng.UniformInt(bytes.size() - 10));
    } else {
      for (int e = 0; e < 3; ++e) bytes[10 + rng.UniformInt(bytes.size() - 18)] ^= 0x5a;
    }
    const std::string path = dir + "/t" + std::to_string(trial) + ".json.gz";
    {
      std::FILE* f = std::fopen(path.c_str(), "wb");
      REQUIRE(f != nullptr);
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
    try {
      ReadTrace(path);
    } catch (const TraceError&) {
    } catch (const std::exception& e) {
      FAIL("expected a TraceError, got: " << e.what());
    }
  }
  std::filesystem::remove_all(dir);
}

// The real traces of ../shared/data/traces (not in a public clone: the
// cases skip there, tests/shared_data.h); the AlexNet one is also committed
// (calibration/data), and read from there below.
TEST_CASE("real traces: both schemas, joins and steps" * doctest::test_suite("shared_data")) {
  const std::vector<std::string> paths = gosim::testing::SharedDataFiles(
      {"traces/kineto_v100_resnet50.json.gz", "traces/hta_a100_resnet50_ddp.json.gz",
       "traces/hta_a100_recsys_rank3.json.gz"});
  if (paths.empty()) return;
  const Trace v100 = ReadTrace(paths[0]);
  CHECK(v100.schema == TraceSchema::kKinetoLegacy);
  CHECK(v100.DeviceKind() == "V100");
  CHECK(v100.ops.size() == 23646);
  CHECK(v100.runtime.size() == 11923);
  CHECK(v100.activities.size() == 9096);
  CHECK(v100.join.by_external_id == 9096);
  REQUIRE(v100.steps.size() == 6);
  CHECK(v100.steps.front().number == 16);
  CHECK(v100.steps.back().number == 21);
  CHECK(v100.steps[1].duration == doctest::Approx(0.149046));

  const Trace ddp = ReadTrace(paths[1]);
  CHECK(ddp.schema == TraceSchema::kKineto);
  CHECK(ddp.DeviceKind() == "A100");
  CHECK(ddp.world_size == 2);
  CHECK(ddp.join.by_external_id == 3774);
  REQUIRE(ddp.steps.size() == 3);
  CHECK(ddp.collectives.size() == 21);
  CHECK(ddp.collectives[0].name == "allreduce");
  CHECK(ddp.collectives[0].bytes == 4 * 6637568);

  // This trace's runtime External ids are the correlation ids: every kernel
  // is joined through the enclosing op; NCCL sizes come from nccl:* annotations.
  const Trace recsys = ReadTrace(paths[2]);
  CHECK(recsys.join.by_external_id == 0);
  CHECK(recsys.join.by_enclosure == 9450);
  CHECK(recsys.steps.size() == 6);
  CHECK(recsys.collectives.size() == 60);
  CHECK(recsys.collectives[0].name == "alltoall");
  CHECK(recsys.collectives[0].bytes == 290422784);
}

TEST_CASE("the committed real trace (A100 AlexNet): syncs, steps by annotation, joins by enclosure") {
  ReadOptions alexnet_steps;
  alexnet_steps.step_pattern = "\\|forward\\]$";
  const Trace alexnet =
      ReadTrace(std::string(GOSIM_SOURCE_DIR) + "/calibration/data/hta_a100_alexnet.json.gz", alexnet_steps);
  CHECK(alexnet.schema == TraceSchema::kKineto);
  CHECK(alexnet.DeviceKind() == "A100");
  CHECK(alexnet.syncs.size() == 41);
  CHECK(alexnet.steps.size() == 2);
  CHECK(alexnet.join.by_enclosure == 98);
}

}  // namespace gosim::calibration
