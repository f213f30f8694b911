// Learned-agent speed (issue 7): REGAL policy forward + backward (one
// REINFORCE update: GraphSAGE + head, log-probabilities of 4 sampled actions,
// Adam step) on 1k- and 10k-node `regal_random` graphs, and node-feature
// extraction; torch on 1 thread. Training throughput in simulator
// evaluations per second is what BM_Brkga5K (brkga_bench) measures for the
// BRKGA runs that dominate a REGAL step.
// HRL / ColocRL: one policy step of the agent's defaults (32 / 16 sampled
// placements: Grouper forward and sampling, group embeddings, Placer forward
// and sampling, backward, Adam) with the simulator replaced by a constant
// (BM_HrlPolicyStep: the policy's own cost), and the same step with the
// simulator on k80x2 (BM_HrlTraining: training throughput on one thread,
// counter `evaluations/s` per CPU second).
//
//   build-learn/bench/learned_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// Figures: docs/BENCHMARKS.md ("Learned agents").
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <map>
#include <memory>

#include "agents/learned/common/features.h"
#include "agents/learned/common/gnn.h"
#include "agents/learned/hrl/hrl_learner.h"
#include "agents/learned/regal/regal.h"
#include "core/rng.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

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

hrl::HrlOptions HrlDefaults(bool learned_grouper) {
  YamlMap none = YamlMap::Root(LoadYamlString("{}"), "learned_bench");
  return hrl::HrlOptions::Parse(none, learned_grouper);
}

// range(0): nodes; range(1): 1 = hrl, 0 = colocrl.
void BM_HrlPolicyStep(benchmark::State& state) {
  torch::set_num_threads(1);
  const graphs::Graph& g = GetGraph(state.range(0));
  const hrl::HrlOptions options = HrlDefaults(state.range(1) != 0);
  hrl::HrlLearner learner(g, 2, true, options, 0);
  const auto constant = [](const std::vector<sim::Decision>& d, std::vector<sim::Evaluation>& e) {
    for (size_t i = 0; i < d.size(); ++i) e[i].step_time = 1.0 + 0.01 * static_cast<double>(i);
  };
  const auto score = [](const sim::Evaluation& e) { return e.step_time; };
  for (auto _ : state) {
    benchmark::DoNotOptimize(learner.Step(options.samples_per_step, constant, score).mean_cost);
  }
  state.counters["nodes"] = g.num_nodes();
  state.counters["groups"] = learner.num_groups();
  state.counters["samples"] = static_cast<double>(options.samples_per_step);
}
BENCHMARK(BM_HrlPolicyStep)
    ->Args({1000, 1})
    ->Args({10000, 1})
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Unit(benchmark::kMillisecond);

void BM_HrlTraining(benchmark::State& state) {
  // One thread for the simulator batch too, so that the benchmark's CPU time
  // is all the work and evaluations/s is per core.
  const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  torch::set_num_threads(1);
  const graphs::Graph& g = GetGraph(state.range(0));
  const sim::Cluster cluster = sim::LoadCluster("k80x2");
  const sim::Evaluator evaluator(g, cluster, sim::MakeCostModel("roofline"));
  const hrl::HrlOptions options = HrlDefaults(state.range(1) != 0);
  hrl::HrlLearner learner(g, cluster.num_devices(), true, options, 0);
  const auto evaluate = [&](const std::vector<sim::Decision>& d, std::vector<sim::Evaluation>& e) {
    evaluator.EvaluateBatch(d, e);
  };
  const auto score = [](const sim::Evaluation& e) { return e.step_time; };
  int64_t evaluations = 0;
  for (auto _ : state) {
    evaluations += learner.Step(options.samples_per_step, evaluate, score).samples;
  }
  state.counters["nodes"] = g.num_nodes();
  state.counters["evaluations/s"] =
      benchmark::Counter(static_cast<double>(evaluations), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HrlTraining)
    ->Args({1000, 1})
    ->Args({10000, 1})
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gosim::agents::learned

BENCHMARK_MAIN();
