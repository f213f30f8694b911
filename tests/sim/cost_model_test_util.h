// Helpers of the cost-model tests (cost_model_test.cc: roofline, measured,
// auto and errors; calibrated_cost_model_test.cc: device profiles): a device
// and a graph whose expected times are exact powers of two, and a profile.
#ifndef GOSIM_TESTS_SIM_COST_MODEL_TEST_UTIL_H_
#define GOSIM_TESTS_SIM_COST_MODEL_TEST_UTIL_H_

#include <cmath>
#include <memory>
#include <string>

#include "core/yaml.h"
#include "graphs/graph_builder.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/cost_models.h"

namespace gosim::sim::cost_test {

using graphs::DType;
using graphs::NodeId;

// Powers of two everywhere, so that every expected time below is exact.
inline DeviceSpec Device(const std::string& kind = "X") {
  DeviceSpec d;
  d.name = "d0";
  d.kind = kind;
  d.peak_flops_fp32 = std::ldexp(1.0, 40);
  d.peak_flops_fp16 = std::ldexp(1.0, 43);
  d.memory_bandwidth = std::ldexp(1.0, 30);
  d.memory_capacity = int64_t{1} << 34;
  d.launch_overhead = std::ldexp(1.0, -16);
  return d;
}

inline graphs::NodeSpec Op(const std::string& name, const std::string& op, double flops, int64_t read,
                           int64_t written, int64_t out_bytes, DType dtype = DType::kFloat32) {
  graphs::NodeSpec s;
  s.name = name;
  s.op = op;
  s.flops = flops;
  s.bytes_read = read;
  s.bytes_written = written;
  if (out_bytes >= 0) s.outputs.push_back(graphs::TensorInfo{out_bytes, {}, dtype});
  return s;
}

// mm -> relu: 2^40 and 2^30 FLOPs, each reading and writing 2^29 bytes; h:
// an fp16 matmul; view: no work; m1 -> m2: measured, 2^20-byte tensors.
inline graphs::Graph CostGraph() {
  graphs::GraphBuilder b("costs");
  b.AddNode(Op("mm", "MatMul", std::ldexp(1.0, 40), int64_t{1} << 29, int64_t{1} << 29, int64_t{1} << 29));
  b.AddNode(Op("relu", "Relu", std::ldexp(1.0, 30), int64_t{1} << 29, int64_t{1} << 29, int64_t{1} << 29));
  b.AddNode(Op("h", "aten::mm", std::ldexp(1.0, 40), 0, 0, 64, DType::kFloat16));
  b.AddNode(Op("view", "aten::view", 0, 0, 0, 16));
  graphs::NodeSpec m1 = Op("m1", "Relu", std::ldexp(1.0, 30), 0, int64_t{1} << 20, int64_t{1} << 20);
  m1.measured = {{"V100", 1e-3}, {"any", 2e-3}};
  graphs::NodeSpec m2 =
      Op("m2", "Relu", std::ldexp(1.0, 30), int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20);
  m2.measured = {{"any", 3e-3}};
  b.AddNode(m1);
  b.AddNode(m2);
  b.AddEdge("mm", "relu", 0);
  b.AddEdge("m1", "m2", 0);
  return b.Build();
}

inline std::shared_ptr<const CostModel> Make(const std::string& name, const std::string& yaml) {
  return MakeCostModel(name, LoadYamlString(yaml, "exp.yaml"), "exp.yaml");
}

inline NodeId N(const graphs::Graph& g, const char* name) {
  return *g.FindNode(name);
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline Cluster ClusterOf(const DeviceSpec& device) {
  ClusterBuilder cb("one", "test");
  cb.AddDevice(device);
  return cb.Build();
}

// A100 profile of powers of two (matmul and elementwise classes, an fp16 mm
// type fit, a host-to-device copy fit).
inline constexpr const char* kProfile =
    "format: gosim.device_profile\n"
    "version: 1\n"
    "device_kind: A100\n"
    "source: {trace: t.json.gz, steps: [1, 2]}\n"
    "launch_overhead: 3.814697265625e-06\n"                                        // 2^-18
    "default: {intercept: 0.0, per_flop: 0.0, per_byte: 9.313225746154785e-10}\n"  // 2^-30
    "op_classes:\n"
    "  matmul: {intercept: 7.62939453125e-06, per_flop: 9.094947017729282e-13, per_byte: 0.0, samples: 4, "
    "mape: 0.25}\n"                                                                      // 2^-17, 2^-40
    "  elementwise: {intercept: 0.0, per_flop: 0.0, per_byte: 1.862645149230957e-09}\n"  // 2^-29
    "op_types:\n"
    "  aten::mm [fp16]: {intercept: 1.52587890625e-05, per_flop: 0.0, per_byte: 0.0}\n"  // 2^-16
    "links:\n"
    "  memcpy_htod: {latency: 8.0e-6, bandwidth: 1.2e10, samples: 30}\n";

}  // namespace gosim::sim::cost_test

#endif  // GOSIM_TESTS_SIM_COST_MODEL_TEST_UTIL_H_
