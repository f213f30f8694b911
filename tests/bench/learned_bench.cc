// Learned-agent speed (issue 7): REGAL policy forward + backward (one
// REINFORCE update: GraphSAGE + head, log-probabilities of 4 sampled actions,
// Adam step) on 1k- and 10k-node `regal_random` graphs, and node-feature
// extraction; torch on 1 thread. Training throughput in simulator
// evaluations per second is what BM_Brkga5K (brkga_bench) measures for the
// BRKGA runs that dominate a REGAL step.
//
//   build-learn/bench/learned_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// Figures: docs/BENCHMARKS.md ("Learned agents").
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "agents/learned/common/features.h"
#include "agents/learned/common/gnn.h"
#include "agents/learned/regal/regal.h"
#include "core/rng.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"

namespace gosim::agents::learned {
namespace {

const graphs::Graph& GetGraph(int64_t nodes) {
  static std::map<int64_t, std::unique_ptr<graphs::Graph>> cache;
  std::unique_ptr<graphs::Graph>& g = cache[nodes];
  if (!g) {
    g = std::make_unique<graphs::Graph>(graphs::Generate(
        "regal_random", LoadYamlString("{nodes: " + std::to_string(nodes) + ", seed: 1}"), "learned_bench"));
  }
  return *g;
}

void BM_NodeFeatures(benchmark::State& state) {
  const graphs::Graph& g = GetGraph(state.range(0));
  for (auto _ : state) {
    NodeFeatures f = ComputeNodeFeatures(g);
    benchmark::DoNotOptimize(f.values.data());
  }
  state.counters["nodes"] = g.num_nodes();
}
BENCHMARK(BM_NodeFeatures)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_RegalPolicyUpdate(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const graphs::Graph& g = GetGraph(state.range(0));
  const GraphTensors t = ToTensors(ComputeNodeFeatures(g));
  RegalPolicyOptions options;
  RegalPolicy policy(options);
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(1e-3));
  const int64_t k = static_cast<int64_t>(options.levels.size());
  for (auto _ : state) {
    const torch::Tensor log_probs = policy->forward(t).reshape({-1, k});
    const torch::Tensor actions = torch::multinomial(log_probs.detach().exp(), 4, true);
    const torch::Tensor loss = -log_probs.gather(1, actions).sum() * 0.01;
    adam.zero_grad();
    loss.backward();
    adam.step();
    benchmark::DoNotOptimize(loss.item<float>());
  }
  state.counters["nodes"] = g.num_nodes();
}
BENCHMARK(BM_RegalPolicyUpdate)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_RegalPolicyInference(benchmark::State& state) {
  torch::set_num_threads(1);
  const graphs::Graph& g = GetGraph(state.range(0));
  const GraphTensors t = ToTensors(ComputeNodeFeatures(g));
  RegalPolicy policy(RegalPolicyOptions{});
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    RegalAction a = GreedyAction(policy->forward(t));
    benchmark::DoNotOptimize(a.data());
  }
  state.counters["nodes"] = g.num_nodes();
}
BENCHMARK(BM_RegalPolicyInference)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gosim::agents::learned

BENCHMARK_MAIN();
