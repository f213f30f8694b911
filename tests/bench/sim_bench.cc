// Simulator throughput: simulated nodes per second of Evaluator::Evaluate
// (roofline costs, memory tracking on, no timeline) on the DGX-1 preset (8x
// V100), for random layered training-like DAGs of 1k, 10k and 80k nodes and
// for the xl suite's GNMT training graph (92,828 nodes); plus batched
// evaluation on 1 and 2 threads; and the calibrated cost model's lookups
// against roofline's on an exported MobileNet-v2 (one H200). Figures and the
// command that produced them: docs/BENCHMARKS.md.
//
//   build-engine/bench/sim_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true     (one command line)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <tbb/task_arena.h>

#include "core/rng.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "graphs/graph_builder.h"
#include "graphs/io.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

constexpr int kDevices = 8;

using testing::LayeredGraph;

// The xl suite's graph (configs/suites/xl.yaml): 8-layer GNMT training,
// unrolled 150 steps each side, 92,828 nodes.
graphs::Graph GnmtXl() {
  return graphs::Generate(
      "gnmt", LoadYamlString("{layers: 8, hidden: 1024, seq_len: 150, batch: 128, training: true}"),
      "sim_bench");
}

struct Setup {
  graphs::Graph graph;
  Cluster cluster;
  std::unique_ptr<Evaluator> evaluator;
  std::vector<Decision> decisions;  // [0] is the one BM_Evaluate runs
};

// Pipeline-style placements: the topological order cut into 8 contiguous
// blocks (even cuts, then randomly jittered cuts), which keeps every
// decision feasible on 16 GB devices and transfers at block boundaries.
std::vector<Decision> BlockDecisions(const graphs::Graph& g, int count, uint64_t seed) {
  Rng rng(seed);
  std::vector<Decision> out;
  const int n = g.num_nodes();
  for (int i = 0; i < count; ++i) {
    std::vector<int> cuts;
    for (int d = 1; d < kDevices; ++d) {
      const double jitter = i == 0 ? 0.0 : rng.Uniform(-0.4, 0.4);
      cuts.push_back(static_cast<int>((d + jitter) * n / kDevices));
    }
    Decision dec;
    dec.placement.resize(static_cast<size_t>(n));
    for (int v = 0, d = 0; v < n; ++v) {
      while (d < kDevices - 1 && v >= cuts[static_cast<size_t>(d)]) ++d;
      dec.placement[static_cast<size_t>(v)] = d;
    }
    out.push_back(std::move(dec));
  }
  return out;
}

// GNMT's expert placement (Wu et al. 2016): encoder and decoder layer k on
// GPU k - 1, everything else (embeddings, attention, softmax) on GPU 0;
// variant i rotates the devices by i (and reverses them for i >= 8).
std::vector<Decision> LayerDecisions(const graphs::Graph& g, int count) {
  std::vector<Decision> out;
  for (int i = 0; i < count; ++i) {
    Decision dec;
    for (int v = 0; v < g.num_nodes(); ++v) {
      const std::string& scope = g.node(v).scope;
      const size_t pos = scope.find("layer_");
      int d = pos == std::string::npos ? 0 : (std::atoi(scope.c_str() + pos + 6) - 1) % kDevices;
      d = (d + i) % kDevices;
      if (i >= kDevices) d = kDevices - 1 - d;
      dec.placement.push_back(d);
    }
    out.push_back(std::move(dec));
  }
  return out;
}

Setup& GetSetup(const std::string& key) {
  static std::map<std::string, std::unique_ptr<Setup>> cache;
  auto& slot = cache[key];
  if (!slot) {
    slot = std::make_unique<Setup>();
    slot->graph = key == "gnmt" ? GnmtXl() : LayeredGraph(std::stoi(key), 1);
    slot->cluster = LoadCluster("dgx1_v100");
    SimOptions options;
    options.track_memory = true;
    options.stop_at_oom = false;  // always simulate the whole step
    slot->evaluator =
        std::make_unique<Evaluator>(slot->graph, slot->cluster, MakeCostModel("roofline"), options);
    slot->decisions = key == "gnmt" ? LayerDecisions(slot->graph, 16) : BlockDecisions(slot->graph, 16, 7);
  }
  return *slot;
}

// Roofline kernels with a host that dispatches every op in 10 us and a copy
// in 20 us: what the engine's host adds (execution eager, graph) against
// execution none on the same graphs, decisions and kernel times.
class HostedRoofline : public CostModel {
 public:
  HostedRoofline() : roofline_(MakeCostModel("roofline")) {}
  std::string name() const override { return "roofline_with_host"; }
  double NodeTime(const graphs::Graph& g, graphs::NodeId v, const DeviceSpec& d) const override {
    return roofline_->NodeTime(g, v, d);
  }
  double KernelTime(const graphs::Graph& g, const KernelWork& w, const DeviceSpec& d) const override {
    return roofline_->KernelTime(g, w, d);
  }
  bool HostModelled(const DeviceSpec&) const override { return true; }
  HostWork HostOf(const graphs::Graph&, graphs::NodeId, const DeviceSpec&) const override {
    return {10e-6, false};
  }
  HostCosts HostCostsOf(const DeviceSpec&) const override {
    HostCosts c;
    c.copy = 20e-6;
    c.graph_op = 10e-6;
    c.graph_view = 5e-6;
    c.launch_call = 10e-6;
    return c;
  }

 private:
  std::shared_ptr<const CostModel> roofline_;
};

// The same graphs and decisions as GetSetup, priced by HostedRoofline, under
// `execution` (one process drives the 8 devices) with a launch queue of
// `launch_queue` kernels per device.
Setup& GetHostSetup(const std::string& key, Execution execution, int launch_queue) {
  static std::map<std::tuple<std::string, Execution, int>, std::unique_ptr<Setup>> cache;
  auto& slot = cache[{key, execution, launch_queue}];
  if (!slot) {
    slot = std::make_unique<Setup>();
    slot->graph = key == "gnmt" ? GnmtXl() : LayeredGraph(std::stoi(key), 1);
    slot->cluster = LoadCluster("dgx1_v100");
    SimOptions options;
    options.track_memory = true;
    options.stop_at_oom = false;
    options.execution = execution;
    options.launch_queue = launch_queue;
    slot->evaluator =
        std::make_unique<Evaluator>(slot->graph, slot->cluster, std::make_shared<HostedRoofline>(), options);
    slot->decisions = key == "gnmt" ? LayerDecisions(slot->graph, 16) : BlockDecisions(slot->graph, 16, 7);
  }
  return *slot;
}

void Report(benchmark::State& state, const Setup& s, int64_t evaluations, bool feasible) {
  state.counters["nodes"] = s.graph.num_nodes();
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(evaluations) * s.graph.num_nodes(), benchmark::Counter::kIsRate);
  state.counters["feasible"] = feasible ? 1 : 0;
}

void BM_Evaluate(benchmark::State& state, const std::string& key) {
  Setup& s = GetSetup(key);
  const Decision& d = s.decisions[0];
  Evaluation e = s.evaluator->Evaluate(d);  // warm-up
  for (auto _ : state) {
    e = s.evaluator->Evaluate(d);
    benchmark::DoNotOptimize(e);
  }
  state.counters["step_ms"] = e.step_time * 1e3;
  state.counters["transfers"] = s.evaluator->Simulate(d).transfers;
  state.counters["edges"] = s.graph.num_edges();
  Report(state, s, state.iterations(), e.feasible);
}

// One evaluation with and without the host (docs/BENCHMARKS.md, "The
// host"): the none/eager pair runs in one process, so their ratio is what
// the host costs.
void BM_EvaluateHost(benchmark::State& state, const std::string& key, Execution execution,
                     int launch_queue = SimOptions{}.launch_queue) {
  Setup& s = GetHostSetup(key, execution, launch_queue);
  const Decision& d = s.decisions[0];
  Evaluation e = s.evaluator->Evaluate(d);  // warm-up
  for (auto _ : state) {
    e = s.evaluator->Evaluate(d);
    benchmark::DoNotOptimize(e);
  }
  state.counters["step_ms"] = e.step_time * 1e3;
  state.counters["host_ms"] = e.host_busy * 1e3;
  Report(state, s, state.iterations(), e.feasible);
}

void BM_EvaluateBatch(benchmark::State& state, const std::string& key) {
  Setup& s = GetSetup(key);
  const int threads = static_cast<int>(state.range(0));
  tbb::task_arena arena(threads);
  std::vector<Evaluation> out(s.decisions.size());
  bool feasible = true;
  arena.execute([&] { s.evaluator->EvaluateBatch(s.decisions, out); });  // warm-up every workspace
  for (auto _ : state) {
    arena.execute([&] { s.evaluator->EvaluateBatch(s.decisions, out); });
    benchmark::DoNotOptimize(out.data());
  }
  for (const auto& e : out) feasible = feasible && e.feasible;
  state.counters["threads"] = threads;
  Report(state, s, state.iterations() * static_cast<int64_t>(s.decisions.size()), feasible);
}

// Reference point: the least any list-scheduling simulation must do, one
// pass over the nodes and in-edges computing the longest path of kernel times.
void BM_LongestPathPass(benchmark::State& state, const std::string& key) {
  Setup& s = GetSetup(key);
  const graphs::Graph& g = s.graph;
  std::vector<double> time(static_cast<size_t>(g.num_nodes())), finish(time.size());
  const auto cost = MakeCostModel("roofline");
  for (int v = 0; v < g.num_nodes(); ++v)
    time[static_cast<size_t>(v)] = cost->NodeTime(g, v, s.cluster.device(0));
  double makespan = 0.0;
  for (auto _ : state) {
    makespan = 0.0;
    for (int v = 0; v < g.num_nodes(); ++v) {
      double ready = 0.0;
      for (graphs::EdgeId e : g.in_edges(v))
        ready = std::max(ready, finish[static_cast<size_t>(g.edge(e).src)]);
      finish[static_cast<size_t>(v)] = ready + time[static_cast<size_t>(v)];
      makespan = std::max(makespan, finish[static_cast<size_t>(v)]);
    }
    benchmark::DoNotOptimize(makespan);
  }
  Report(state, s, state.iterations(), true);
}

// The calibrated model's lookups against roofline's formula: the exported
// MobileNet-v2 training step (graphs/data/mobilenet_v2_train_b32.json.gz:
// depthwise and dense convolutions, batch norms, per-parameter SGD) on one
// H200, whose committed profile (configs/calibrated/h200.yaml) `auto` uses.
// Run from the repository root.
struct CostSetup {
  graphs::Graph graph;
  Cluster cluster;
  std::shared_ptr<const CostModel> cost;
  std::unique_ptr<Evaluator> evaluator;
  Decision fused;  // every single-consumer -> single-producer pair fused
};

CostSetup& GetCostSetup(const std::string& model) {
  static std::map<std::string, std::unique_ptr<CostSetup>> cache;
  auto& slot = cache[model];
  if (!slot) {
    slot = std::make_unique<CostSetup>();
    slot->graph = graphs::LoadGraph("graphs/data/mobilenet_v2_train_b32.json.gz");
    slot->cluster = LoadCluster("h200x8_nvswitch:gpus=1");
    slot->cost = MakeCostModel(model);
    slot->evaluator = std::make_unique<Evaluator>(slot->graph, slot->cluster, slot->cost, SimOptions{});
    const graphs::Graph& g = slot->graph;
    slot->fused = SingleDeviceDecision(g);
    slot->fused.fusion_group.assign(static_cast<size_t>(g.num_nodes()), -1);
    for (graphs::NodeId u = 0; u < g.num_nodes(); ++u) {
      if (g.out_edges(u).size() != 1) continue;
      const graphs::NodeId v = g.edge(g.out_edges(u)[0]).dst;
      auto& group = slot->fused.fusion_group;
      if (g.in_edges(v).size() != 1 || group[static_cast<size_t>(u)] >= 0 ||
          group[static_cast<size_t>(v)] >= 0)
        continue;
      group[static_cast<size_t>(u)] = group[static_cast<size_t>(v)] = u;
    }
    ValidateDecision(slot->fused, g, slot->cluster);
  }
  return *slot;
}

// Every node's time on the H200: what an Evaluator computes once, per device
// class, when it is built.
void BM_NodeTimes(benchmark::State& state, const std::string& model) {
  CostSetup& s = GetCostSetup(model);
  const DeviceSpec& device = s.cluster.device(0);
  double total = 0.0;
  for (auto _ : state) {
    total = 0.0;
    for (graphs::NodeId v = 0; v < s.graph.num_nodes(); ++v) total += s.cost->NodeTime(s.graph, v, device);
    benchmark::DoNotOptimize(total);
  }
  state.counters["sum_ms"] = total * 1e3;
  state.counters["nodes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * s.graph.num_nodes(), benchmark::Counter::kIsRate);
}

// One evaluation of the fused decision: the engine prices every fused group
// with KernelTime on each evaluation, so this is where a slow lookup shows.
void BM_EvaluateFused(benchmark::State& state, const std::string& model) {
  CostSetup& s = GetCostSetup(model);
  Evaluation e = s.evaluator->Evaluate(s.fused);
  for (auto _ : state) {
    e = s.evaluator->Evaluate(s.fused);
    benchmark::DoNotOptimize(e);
  }
  int64_t fused = 0;
  for (const int32_t group : s.fused.fusion_group) fused += group >= 0 ? 1 : 0;
  state.counters["step_ms"] = e.step_time * 1e3;
  state.counters["fused_nodes"] = static_cast<double>(fused);
  state.counters["nodes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * s.graph.num_nodes(), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_LongestPathPass, layered80k, std::string("80000"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Evaluate, layered1k, std::string("1000"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Evaluate, layered10k, std::string("10000"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Evaluate, layered80k, std::string("80000"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Evaluate, gnmt, std::string("gnmt"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EvaluateHost, layered80k_none, std::string("80000"), Execution::kNone)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EvaluateHost, layered80k_eager, std::string("80000"), Execution::kEager)
    ->Unit(benchmark::kMillisecond);
// The host never blocked: a launch queue no run fills (docs/BENCHMARKS.md).
BENCHMARK_CAPTURE(BM_EvaluateHost, layered80k_eager_unbounded_queue, std::string("80000"), Execution::kEager,
                  1 << 30)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EvaluateHost, gnmt_none, std::string("gnmt"), Execution::kNone)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EvaluateHost, gnmt_eager, std::string("gnmt"), Execution::kEager)
    ->Unit(benchmark::kMillisecond);
// Batches of 16 decisions: nodes/s per wall-clock second (UseRealTime), and
// per CPU second of the whole process (MeasureProcessCPUTime; equal figures
// for 1 and 2 threads mean the workers add no overhead, whatever else runs).
BENCHMARK_CAPTURE(BM_NodeTimes, mobilenet_roofline, std::string("roofline"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_NodeTimes, mobilenet_calibrated, std::string("auto"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_EvaluateFused, mobilenet_roofline, std::string("roofline"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_EvaluateFused, mobilenet_calibrated, std::string("auto"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_EvaluateBatch, layered80k, std::string("80000"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_EvaluateBatch, gnmt, std::string("gnmt"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_EvaluateBatch, gnmt_cpu, std::string("gnmt"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace gosim::sim

BENCHMARK_MAIN();
