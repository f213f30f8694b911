// BRKGA speed: REGAL's "BRKGA 5K" (5,000 simulator evaluations) on a
// 1,000-node graph, the figure REGAL reports as 0.89 s (Table 2, TensorFlow
// test set). The graph is the `regal_random` generator's REGAL-style
// synthetic graph with exactly 1,000 nodes, on the DGX-1 preset (8x V100)
// and on a 2-GPU cluster (REGAL's setting), roofline cost model, objective
// step time; threads = 1 and 2. Also decoder throughput alone.
//
//   build-agents/bench/brkga_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true     (one command line)
// Figures: docs/BENCHMARKS.md ("BRKGA").
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/brkga/brkga.h"
#include "agents/brkga/chromosome.h"
#include "agents/brkga/sampler.h"
#include "core/rng.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

namespace gosim::agents {
namespace {

struct Setup {
  graphs::Graph graph;
  sim::Cluster cluster;
  std::unique_ptr<sim::Evaluator> evaluator;
};

Setup& GetSetup(const std::string& cluster) {
  static std::map<std::string, std::unique_ptr<Setup>> cache;
  std::unique_ptr<Setup>& s = cache[cluster];
  if (!s) {
    s = std::make_unique<Setup>();
    s->graph = graphs::Generate("regal_random", LoadYamlString("{nodes: 1000, seed: 1}"), "brkga_bench");
    s->cluster = sim::LoadCluster(cluster);
    s->evaluator = std::make_unique<sim::Evaluator>(s->graph, s->cluster, sim::MakeCostModel("roofline"));
  }
  return *s;
}

// One full BRKGA 5K run per iteration; args: threads.
void BM_Brkga5K(benchmark::State& state, const std::string& cluster) {
  Setup& s = GetSetup(cluster);
  brkga::BrkgaOptions options;
  options.threads = static_cast<int32_t>(state.range(0));
  double best = 0;
  for (auto _ : state) {
    Problem problem{s.graph, s.cluster, *s.evaluator, Objective{}, Budget{5000, 0.0}, 1};
    AgentResult r = brkga::RunBrkga(problem, options, brkga::UniformSampler());
    best = r.best_objective;
    benchmark::DoNotOptimize(r.best_objective);
  }
  state.counters["nodes"] = s.graph.num_nodes();
  state.counters["best_step_ms"] = best * 1e3;
  state.counters["evals_per_s"] =
      benchmark::Counter(5000.0 * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Brkga5K, dgx1_v100, std::string("dgx1_v100"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Brkga5K, k80x2, std::string("k80x2"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Decoding one chromosome (REGAL's layout, 8 devices) into a Decision.
void BM_Decode(benchmark::State& state) {
  Setup& s = GetSetup("dgx1_v100");
  const brkga::ChromosomeLayout layout(s.graph.num_nodes(), s.graph.num_tensors(), s.cluster.num_devices(),
                                       true, true);
  std::vector<double> genes(layout.size());
  Rng rng(3);
  brkga::UniformSampler().Sample(rng, genes);
  sim::Decision decision;
  for (auto _ : state) {
    layout.Decode(genes, &decision);
    benchmark::DoNotOptimize(decision.placement.data());
  }
  state.counters["genes"] = static_cast<double>(layout.size());
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gosim::agents

BENCHMARK_MAIN();
