// Small hand-built problems for the agent tests: a cluster of identical
// devices built in code, a cost model whose op time is FLOPs over peak
// (so hand-computed step times are exact), and graph shapes with known
// optima.
#ifndef GOSIM_TESTS_AGENTS_TEST_UTIL_H_
#define GOSIM_TESTS_AGENTS_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "graphs/graph.h"
#include "graphs/graph_builder.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

namespace gosim::agents::testing {

// 1 TFLOP/s devices: 1e9 FLOPs take 1 ms.
constexpr double kPeak = 1e12;

// Op time = FLOPs / fp32 peak; no launch overhead.
class FlopsCostModel : public sim::CostModel {
 public:
  std::string name() const override { return "test_flops"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node,
                  const sim::DeviceSpec& device) const override {
    return graph.node(node).flops / device.peak_flops_fp32;
  }
  double KernelTime(const graphs::Graph&, const sim::KernelWork& work,
                    const sim::DeviceSpec& device) const override {
    return work.flops / device.peak_flops_fp32;
  }
};

// `n` identical devices (kPeak, `capacity` bytes) fully connected by links of
// `bandwidth` bytes/s and `latency` seconds.
inline sim::Cluster MakeCluster(int n, int64_t capacity = int64_t{1} << 34, double bandwidth = 1e10,
                                double latency = 0.0) {
  sim::ClusterBuilder b("test" + std::to_string(n));
  for (int d = 0; d < n; ++d) {
    sim::DeviceSpec spec;
    spec.name = "gpu" + std::to_string(d);
    spec.kind = "test";
    spec.peak_flops_fp32 = kPeak;
    spec.memory_bandwidth = 1e12;
    spec.memory_capacity = capacity;
    b.AddDevice(spec);
  }
  for (int s = 0; s < n; ++s) {
    for (int t = 0; t < n; ++t) {
      if (s == t) continue;
      sim::LinkSpec link;
      link.src = s;
      link.dst = t;
      link.type = "test";
      link.bandwidth = bandwidth;
      link.latency = latency;
      b.AddLink(link);
    }
  }
  return b.Build();
}

inline graphs::NodeSpec Op(const std::string& name, double milliseconds, int64_t out_bytes = 4,
                           const std::string& scope = {}, int64_t persistent = 0) {
  graphs::NodeSpec s;
  s.name = name;
  s.op = "MatMul";
  s.flops = milliseconds * 1e-3 * kPeak;
  if (out_bytes > 0)
    s.outputs.push_back(graphs::TensorInfo{out_bytes, {out_bytes / 4}, graphs::DType::kFloat32});
  s.persistent_bytes = persistent;
  s.scope = scope;
  return s;
}

// `chains` independent chains of `length` ops of 1 ms each, scopes
// "chain_<c>/op_<i>"; ops of chain c are inserted consecutively.
inline graphs::Graph IndependentChains(int chains, int length, int64_t out_bytes = 4,
                                       int64_t persistent = 0) {
  graphs::GraphBuilder b("chains");
  for (int c = 0; c < chains; ++c) {
    int prev = -1;
    for (int i = 0; i < length; ++i) {
      const std::string name = "c" + std::to_string(c) + "_" + std::to_string(i);
      const int id = b.AddNode(
          Op(name, 1.0, out_bytes, "chain_" + std::to_string(c) + "/op_" + std::to_string(i), persistent));
      if (prev >= 0) b.AddEdge(prev, id, 0);
      prev = id;
    }
  }
  return b.Build();
}

// A layered random DAG (seeded) of `layers` x `width` ops with random
// durations, output sizes and persistent bytes; edges from each op to 1-3
// ops of the next layer.
graphs::Graph RandomLayeredGraph(int layers, int width, uint64_t seed);

// Everything a Problem refers to, kept alive together.
struct Fixture {
  graphs::Graph graph;
  sim::Cluster cluster;
  std::shared_ptr<const sim::CostModel> cost_model;
  std::unique_ptr<sim::Evaluator> evaluator;

  Fixture(graphs::Graph g, sim::Cluster c, sim::SimOptions options = {})
      : graph(std::move(g)), cluster(std::move(c)), cost_model(std::make_shared<FlopsCostModel>()) {
    evaluator = std::make_unique<sim::Evaluator>(graph, cluster, cost_model, options);
  }
  Problem MakeProblem(ObjectiveKind kind = ObjectiveKind::kStepTime, int64_t evaluations = 0,
                      uint64_t seed = 1) const {
    Problem p{graph, cluster, *evaluator, Objective{}, Budget{}, seed};
    p.objective.kind = kind;
    p.budget.evaluations = evaluations;
    return p;
  }
};

// Builds agent `name` from YAML text (empty = defaults).
std::unique_ptr<Agent> Make(const std::string& name, const std::string& yaml = "{}");

// Every colocation group of `graph` on one device in `placement`: checked
// from the graph alone, independently of the evaluator's FindSplit.
inline bool KeepsGroups(const graphs::Graph& graph, const std::vector<int32_t>& placement) {
  std::vector<int32_t> device(graph.colocation_groups().size(), -1);
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    const int32_t g = graph.node(v).colocation;
    if (g < 0) continue;
    int32_t& d = device[static_cast<size_t>(g)];
    if (d < 0) d = placement[static_cast<size_t>(v)];
    if (d != placement[static_cast<size_t>(v)]) return false;
  }
  return true;
}

// A small NMT training graph (colocation groups) on 4 devices whose memory
// holds 55% of the single-device peak, so one device is out of memory and
// the agents' repair and colocation handling run.
struct TightProblem {
  graphs::Graph graph;
  int64_t capacity = 0;
};

inline TightProblem MakeTightProblem() {
  TightProblem out{graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test")};
  Fixture roomy(out.graph, MakeCluster(4));
  const sim::Evaluation one = roomy.evaluator->Evaluate(sim::SingleDeviceDecision(out.graph, 0));
  out.capacity = static_cast<int64_t>(one.peak_memory * 0.55);
  return out;
}

}  // namespace gosim::agents::testing

#endif  // GOSIM_TESTS_AGENTS_TEST_UTIL_H_
