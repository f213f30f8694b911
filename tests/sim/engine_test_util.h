// Helpers for the engine tests: an exact linear cost model, tiny clusters
// built in code, graphs described in a few lines, and seeded random DAGs.
#ifndef GOSIM_TESTS_SIM_ENGINE_TEST_UTIL_H_
#define GOSIM_TESTS_SIM_ENGINE_TEST_UTIL_H_

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "graphs/graph.h"
#include "graphs/graph_builder.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"

namespace gosim::sim::testing {

// time = launch + flops / peak_fp32 + (bytes_read + bytes_written) / memory_bandwidth.
// With peak 1 FLOP/s and power-of-two-friendly numbers every time is exact.
class LinearCostModel : public CostModel {
 public:
  std::string name() const override { return "linear_test"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override {
    const graphs::Node& n = graph.node(node);
    return device.launch_overhead + n.flops / device.peak_flops_fp32 +
           static_cast<double>(n.bytes_read + n.bytes_written) / device.memory_bandwidth;
  }
  double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                    const DeviceSpec& device) const override {
    return device.launch_overhead + work.flops / device.peak_flops_fp32 +
           (work.bytes_read + work.bytes_written) / device.memory_bandwidth;
  }
};

inline std::shared_ptr<const CostModel> Linear() {
  return std::make_shared<LinearCostModel>();
}

inline DeviceSpec Device(const std::string& name, int64_t capacity = int64_t{1} << 40, double launch = 0.0,
                         double memory_bandwidth = 1e30) {
  DeviceSpec d;
  d.name = name;
  d.kind = "test";
  d.peak_flops_fp32 = 1.0;
  d.memory_bandwidth = memory_bandwidth;
  d.memory_capacity = capacity;
  d.launch_overhead = launch;
  return d;
}

inline LinkSpec Link(int32_t src, int32_t dst, double bandwidth, double latency = 0.0,
                     std::vector<int32_t> resources = {}) {
  LinkSpec l;
  l.src = src;
  l.dst = dst;
  l.bandwidth = bandwidth;
  l.latency = latency;
  l.resources = std::move(resources);
  return l;
}

// `n` identical devices, fully connected by direct links in both directions.
inline Cluster MeshCluster(int n, double bandwidth, double latency = 0.0, int64_t capacity = int64_t{1} << 40,
                           double launch = 0.0) {
  ClusterBuilder b("mesh" + std::to_string(n));
  for (int d = 0; d < n; ++d) b.AddDevice(Device("gpu" + std::to_string(d), capacity, launch));
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s != d) b.AddLink(Link(s, d, bandwidth, latency));
    }
  }
  return b.Build();
}

// One node of a hand-written graph.
struct N {
  std::string name;
  double flops = 1.0;                    // = seconds on the test devices
  std::vector<int64_t> outputs = {};     // bytes per output
  std::vector<std::string> inputs = {};  // "producer" (output 0), "producer:k", or "^producer" (control)
  int64_t persistent = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  std::vector<int32_t> aliases = {};  // indices of outputs that are aliases (graphs::TensorInfo::alias)
};

inline graphs::Graph MakeGraph(const std::vector<N>& nodes, const std::string& name = "test") {
  graphs::GraphBuilder b(name);
  for (const N& n : nodes) {
    graphs::NodeSpec s;
    s.name = n.name;
    s.op = "op";
    s.flops = n.flops;
    s.bytes_read = n.bytes_read;
    s.bytes_written = n.bytes_written;
    s.persistent_bytes = n.persistent;
    for (int64_t bytes : n.outputs)
      s.outputs.push_back(graphs::TensorInfo{bytes, {}, graphs::DType::kFloat32});
    for (int32_t k : n.aliases) s.outputs.at(static_cast<size_t>(k)).alias = true;
    b.AddNode(std::move(s));
  }
  for (const N& n : nodes) {
    for (const std::string& in : n.inputs) {
      if (!in.empty() && in[0] == '^') {
        b.AddControlEdge(in.substr(1), n.name);
        continue;
      }
      const size_t colon = in.find(':');
      const std::string src = in.substr(0, colon);
      const int k = colon == std::string::npos ? 0 : std::stoi(in.substr(colon + 1));
      b.AddEdge(src, n.name, k);
    }
  }
  return b.Build();
}

// A seeded random layered DAG: `n` nodes, flops in [1, 100), 0-2 outputs of
// [0, 1000) bytes, 1-3 data inputs from earlier nodes (mostly nearby), some
// control edges and persistent bytes.
inline graphs::Graph RandomDag(uint64_t seed, int n) {
  Rng rng(seed);
  graphs::GraphBuilder b("random" + std::to_string(seed));
  std::vector<int> num_outputs(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    graphs::NodeSpec s;
    s.name = "n" + std::to_string(v);
    s.op = rng.Bernoulli(0.5) ? "matmul" : "add";
    s.flops = std::floor(rng.Uniform(1.0, 100.0));
    s.persistent_bytes = rng.Bernoulli(0.3) ? rng.UniformInt(int64_t{0}, int64_t{500}) : 0;
    const int outs = static_cast<int>(rng.UniformInt(int64_t{0}, int64_t{2}));
    for (int k = 0; k < outs; ++k) {
      s.outputs.push_back(
          graphs::TensorInfo{rng.UniformInt(int64_t{0}, int64_t{999}), {}, graphs::DType::kFloat32});
    }
    num_outputs[static_cast<size_t>(v)] = outs;
    b.AddNode(std::move(s));
  }
  for (int v = 1; v < n; ++v) {
    const int fan_in = static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{3}));
    for (int k = 0; k < fan_in; ++k) {
      const int lo = std::max(0, v - 8);
      const int u = rng.Bernoulli(0.8) ? static_cast<int>(rng.UniformInt(int64_t{lo}, int64_t{v - 1}))
                                       : static_cast<int>(rng.UniformInt(int64_t{0}, int64_t{v - 1}));
      const int outs = num_outputs[static_cast<size_t>(u)];
      if (outs == 0 || rng.Bernoulli(0.1)) {
        b.AddControlEdge(u, v);
      } else {
        b.AddEdge(u, v, static_cast<int32_t>(rng.UniformInt(uint64_t(outs))));
      }
    }
  }
  return b.Build();
}

// A layered DAG shaped like a training step (the simulator benchmark's graph,
// also used by the saved reference runs): `n` nodes in layers of 16, each
// reading 1-3 tensors of the previous layer (sometimes two back), 0.25-8 MB
// activations, 10 MFLOP - 10 GFLOP per node, weights on a third of the nodes.
inline graphs::Graph LayeredGraph(int n, uint64_t seed) {
  constexpr int kWidth = 16;
  Rng rng(seed);
  graphs::GraphBuilder b("layered" + std::to_string(n));
  for (int v = 0; v < n; ++v) {
    graphs::NodeSpec s;
    s.name = "n" + std::to_string(v);
    s.op = rng.Bernoulli(0.3) ? "MatMul" : "Add";
    s.flops = std::exp(rng.Uniform(std::log(1e7), std::log(1e10)));
    const int64_t out = int64_t{1} << rng.UniformInt(int64_t{18}, int64_t{23});
    s.outputs.push_back(graphs::TensorInfo{out, {}, graphs::DType::kFloat32});
    s.bytes_written = out;
    s.bytes_read = 2 * out;
    s.persistent_bytes = rng.Bernoulli(0.33) ? (int64_t{1} << rng.UniformInt(int64_t{16}, int64_t{22})) : 0;
    b.AddNode(std::move(s));
  }
  for (int v = kWidth; v < n; ++v) {
    const int layer_start = (v / kWidth - 1) * kWidth;
    const int fan_in = static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{3}));
    for (int k = 0; k < fan_in; ++k) {
      int u = layer_start + static_cast<int>(rng.UniformInt(uint64_t{kWidth}));
      if (u >= kWidth && rng.Bernoulli(0.1)) u -= kWidth;
      b.AddEdge(u, v, 0);
    }
  }
  return b.Build();
}

}  // namespace gosim::sim::testing

#endif  // GOSIM_TESTS_SIM_ENGINE_TEST_UTIL_H_
