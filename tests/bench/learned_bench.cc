// Learned-agent speed (issue 7): REGAL policy forward + backward (one
// REINFORCE update: GraphSAGE + head, log-probabilities of 4 sampled actions,
// Adam step) on 1k- and 10k-node `regal_random` graphs, and node-feature
// extraction; torch on 1 thread. Training throughput in simulator
// evaluations per second is what BM_Brkga5K (brkga_bench) measures for the
// BRKGA runs that dominate a REGAL step.
// HRL / ColocRL (BM_HrlTraining): one training step of the agent's defaults
// (32 / 16 sampled placements: Grouper forward and sampling, group
// embeddings, Placer forward and sampling, simulation on k80x2, backward,
// Adam) on one thread; counters: `policy_ms` (policy forward + backward +
// Adam per step, CPU), `sim_ms` (the simulator's share per step, CPU) and
// `evaluations/s` (training throughput per CPU second).
// BM_GoAttention: GO's segment-recurrent attention layer (go_model.h), forward
// and backward of one segment of L = 256 nodes with a memory of 256, at the
// paper tables' width (model 32, 4 heads, max_relative 256) for B = 16
// sampled decisions (arg) and 1, torch on 1 thread: the layer that takes most
// of a GO run's time (perf on a 1,000-evaluation run of a 1,300-node graph).
// BM_ConcurrentMatmul: the BLAS behind LibTorch called from 1 or 2
// threads at once (torch::mm of 256 x 64 by 64 x 64, torch on 1 thread),
// without (arg 0) and with (arg 1) agents/learned/common/torch_lock.h;
// counters `calls` and `wrong` (results that differ from a single-thread
// reference), summed over the threads.
//
//   build-learn/bench/learned_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// Figures: docs/BENCHMARKS.md ("Learned agents").
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <memory>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/features.h"
#include "agents/learned/common/gnn.h"
#include "agents/learned/common/parallel_linear.h"
#include "agents/learned/common/torch_lock.h"
#include "agents/learned/go/fused_attention.h"
#include "agents/learned/go/go_agent.h"
#include "agents/learned/go/go_graph.h"
#include "agents/learned/go/go_model.h"
#include "agents/learned/hrl/hrl_learner.h"
#include "agents/learned/regal/regal.h"
#include "core/allocator.h"
#include "core/data_path.h"
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

// The GNN's forward and backward (GnnOptions' defaults: 3 layers of 64) on
// the 10,000-node graph above. Args: 0 = the means by index_add over the
// edge index (the GraphTensors' adjacency removed), 1 = by the adjacency
// lists (MeanAggregate, the same numbers bit for bit); torch threads.
void BM_GraphSage(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(1)));
  torch::manual_seed(0);
  GraphTensors t = ToTensors(ComputeNodeFeatures(GetGraph(10000)));
  if (state.range(0) == 0) t.in = t.out = Adjacency{};
  GraphSage gnn(GnnOptions{});
  for (auto _ : state) {
    gnn->zero_grad();
    const torch::Tensor h = gnn->forward(t);
    h.sum().backward();
    benchmark::DoNotOptimize(h.data_ptr<float>());
  }
}
BENCHMARK(BM_GraphSage)->ArgsProduct({{0, 1}, {1, 2}})->Unit(benchmark::kMillisecond);

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

// CPU seconds of the calling thread.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// range(0): nodes; range(1): 1 = hrl, 0 = colocrl.
void BM_HrlTraining(benchmark::State& state) {
  // One thread for the simulator batch too, so that the benchmark's CPU time
  // is all the work and evaluations/s is per core.
  const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  torch::set_num_threads(1);
  const graphs::Graph& g = GetGraph(state.range(0));
  const sim::Cluster cluster = sim::LoadCluster("k80x2");
  const sim::Evaluator evaluator(g, cluster, sim::MakeCostModel("roofline"));
  const hrl::HrlOptions options = HrlDefaults(state.range(1) != 0);
  // The schedule of a run at the default budget (hrl: 1,500 policy steps).
  hrl::HrlLearner learner(g, cluster.num_devices(), true, options, 0,
                          options.evaluations / options.samples_per_step);
  double sim_seconds = 0.0;
  const auto evaluate = [&](const std::vector<sim::Decision>& d, std::vector<sim::Evaluation>& e) {
    const double start = ThreadCpuSeconds();
    evaluator.EvaluateBatch(d, e);
    sim_seconds += ThreadCpuSeconds() - start;
  };
  const auto score = [](const sim::Evaluation& e) { return e.step_time; };
  int64_t evaluations = 0;
  int64_t steps = 0;
  double total_seconds = 0.0;
  for (auto _ : state) {
    const double start = ThreadCpuSeconds();
    evaluations += learner.Step(options.samples_per_step, evaluate, score).samples;
    total_seconds += ThreadCpuSeconds() - start;
    ++steps;
  }
  state.counters["nodes"] = g.num_nodes();
  state.counters["groups"] = learner.num_groups();
  state.counters["samples"] = static_cast<double>(options.samples_per_step);
  // Per policy step, CPU: the simulator's share and the policy's (Grouper,
  // group embeddings, Placer, backward, Adam: everything else).
  state.counters["sim_ms"] = 1e3 * sim_seconds / static_cast<double>(std::max<int64_t>(1, steps));
  state.counters["policy_ms"] =
      1e3 * (total_seconds - sim_seconds) / static_cast<double>(std::max<int64_t>(1, steps));
  state.counters["evaluations/s"] =
      benchmark::Counter(static_cast<double>(evaluations), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HrlTraining)
    ->Args({1000, 1})
    ->Args({10000, 1})
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Unit(benchmark::kMillisecond);

void BM_GoAttention(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(1);
  const int64_t b = state.range(0), segment = 256, model = 32;
  go::RecurrentAttention layer(model, 4, 256);
  const torch::Tensor x = torch::randn({b, segment, model}, torch::requires_grad());
  const torch::Tensor memory = torch::randn({b, segment, model});
  for (auto _ : state) {
    layer->zero_grad();
    const torch::Tensor out = layer->forward(x, memory, torch::Tensor(), torch::Tensor());
    out.sum().backward();
    benchmark::DoNotOptimize(x.grad().data_ptr<float>());
  }
}
BENCHMARK(BM_GoAttention)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond);

// The attention alone, as GO's long-graph trunk runs it with gradients: 16
// segments of 256 queries against 512 keys (memory + segment), 4 heads of 8,
// relative-position bias, keys after the query masked, from the layer's
// packed projection [16 x 512 x 96] to the heads side by side [16 x 256 x
// 32]. Arg 0: the unfused operations RecurrentAttention runs on other graphs
// (per-head q, k, v views, scaled scores plus the bias, softmax, weighted
// values, heads transposed back; autograd keeps the scores), arg 1:
// FusedRelativeAttention. Forward and backward, 1 thread.
void BM_GoAttentionCore(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(1);
  const int64_t b = 16, heads = 4, l = 256, m = 256, dh = 8, relative = 256, d = heads * dh;
  const torch::Tensor qkv = torch::randn({b, m + l, 3 * d}, torch::requires_grad());
  const torch::Tensor relative_bias = torch::randn({heads, relative}, torch::requires_grad());
  for (auto _ : state) {
    torch::Tensor out;
    if (state.range(0) == 1) {
      out = go::FusedRelativeAttention(qkv, heads, m, relative_bias);
    } else {
      auto part = [&](int64_t which, int64_t from) {
        return qkv.slice(2, which * d, (which + 1) * d)
            .slice(1, from)
            .view({b, m + l - from, heads, dh})
            .transpose(1, 2);
      };
      // bias[h][i][j] = relative_bias[h][min(m + i - j, relative - 1)], -inf for j > m + i.
      const torch::Tensor distance = (torch::arange(l).unsqueeze(1) + m - torch::arange(m + l).unsqueeze(0));
      const torch::Tensor bias = relative_bias.index_select(1, distance.clamp(0, relative - 1).flatten())
                                     .view({heads, l, m + l})
                                     .masked_fill(distance.lt(0), -std::numeric_limits<float>::infinity());
      const torch::Tensor scores = torch::matmul(part(0, m) * (1.0 / std::sqrt(static_cast<double>(dh))),
                                                 part(1, 0).transpose(-1, -2));
      out = torch::matmul(torch::softmax(scores + bias, -1), part(2, 0)).transpose(1, 2).reshape({b, l, d});
    }
    out.sum().backward();
    benchmark::DoNotOptimize(out.data_ptr<float>());
  }
}
BENCHMARK(BM_GoAttentionCore)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// GO's widest linear layer (the attention's projection, 32 -> 96) on the
// rows of one segment with its memory (512) and of a batch of 16 (8,192).
// Args: rows, 0 = torch's linear (the serial OpenBLAS here) or 1 =
// ParallelLinear, torch threads, 0 = forward only (no gradient) or 1 =
// forward and backward.
void BM_ParallelLinear(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const bool parallel = state.range(1) == 1, backward = state.range(3) == 1;
  torch::set_num_threads(static_cast<int>(state.range(2)));
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({rows, 32}, torch::requires_grad(backward));
  const torch::Tensor w = torch::randn({96, 32}, torch::requires_grad(backward));
  const torch::Tensor b = torch::randn({96}, torch::requires_grad(backward));
  for (auto _ : state) {
    const torch::Tensor y = parallel ? ParallelLinear(x, w, b) : torch::nn::functional::linear(x, w, b);
    if (backward) y.sum().backward();
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
}
BENCHMARK(BM_ParallelLinear)
    ->ArgsProduct({{512, 8192}, {0, 1}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// GO at the papers' scale (issue 35): the xl suite's GNMT-8 training graph
// (configs/suites/xl.yaml, 92.8k nodes) on dgx1_v100's 8 devices, the
// committed network (configs/checkpoints/go.pt) with the agent's runtime
// settings. BM_GoForwardXl: the zero-shot forward pass (greedy, no
// gradient). BM_GoPpoUpdateXl: one PPO update (PpoUpdate: `epochs` passes
// of the clipped objective over a batch of `samples` decisions, Adam),
// PpoOptions' defaults, the batch drawn once before timing. Arg: torch
// threads. Counter `max_rss_gb`: the process's peak resident memory so far
// (graph, network and every benchmark before; run one filter at a time for
// its own figure). Targets: forward <= 1 s, update <= 5 s, <= 4 GB.
struct GoXl {
  graphs::Graph graph;
  go::GoGraph inputs;
  go::GoPolicy policy{nullptr};
  static constexpr int64_t kDevices = 8;  // dgx1_v100
};

GoXl& GetGoXl() {
  static GoXl* xl = [] {
    auto* out = new GoXl;
    out->graph = graphs::Generate(
        "gnmt", LoadYamlString("{layers: 8, hidden: 1024, seq_len: 150, batch: 128, training: true}"),
        "learned_bench");
    out->inputs = go::MakeGoGraph(out->graph);
    const std::string checkpoint = ResolveDataPath(go::kGoDefaultCheckpoint);
    const go::GoModelOptions model = go::ModelOptionsFromSignature(
        ReadCheckpointSignature(checkpoint, kGoCheckpoint), checkpoint, go::DefaultAgentModel());
    out->policy = go::GoPolicy(model);
    LoadCheckpoint(checkpoint, kGoCheckpoint, model.Signature(), *out->policy, nullptr);
    return out;
  }();
  return *xl;
}

double MaxRssGb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e9;  // ru_maxrss is in KiB
}

void BM_GoForwardXl(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(0)));
  GoXl& xl = GetGoXl();
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    const go::GoOutput out =
        xl.policy->forward(xl.inputs, GoXl::kDevices, 1, go::GoPolicyImpl::Mode::kGreedy, nullptr);
    benchmark::DoNotOptimize(out.actions.device.data_ptr<int64_t>());
  }
  state.counters["nodes"] = xl.graph.num_nodes();
  state.counters["model"] = static_cast<double>(xl.policy->options().model);
  state.counters["layers"] = static_cast<double>(xl.policy->options().layers);
  state.counters["segment"] = static_cast<double>(xl.policy->options().segment);
  state.counters["max_rss_gb"] = MaxRssGb();
}
BENCHMARK(BM_GoForwardXl)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GoPpoUpdateXl(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(0)));
  GoXl& xl = GetGoXl();
  const go::PpoOptions ppo;
  Rng rng = Rng::Derive(1, {0x7070ULL});
  go::GoOutput sampled;
  {
    torch::NoGradGuard no_grad;
    sampled =
        xl.policy->forward(xl.inputs, GoXl::kDevices, ppo.samples, go::GoPolicyImpl::Mode::kSample, &rng);
  }
  const torch::Tensor rewards = torch::randn({ppo.samples});
  // A copy of the network, so that the forward benchmark keeps the committed weights.
  go::GoPolicy policy(xl.policy->options());
  {
    torch::NoGradGuard no_grad;
    const auto from = xl.policy->parameters();
    const auto to = policy->parameters();
    for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(ppo.learning_rate));
  for (auto _ : state) {
    const go::PpoStats stats = go::PpoUpdate(policy, adam, xl.inputs, GoXl::kDevices, sampled.actions,
                                             sampled.log_prob, sampled.value, rewards, ppo);
    benchmark::DoNotOptimize(stats.loss);
  }
  state.counters["nodes"] = xl.graph.num_nodes();
  state.counters["samples"] = static_cast<double>(ppo.samples);
  state.counters["epochs"] = static_cast<double>(ppo.epochs);
  state.counters["max_rss_gb"] = MaxRssGb();
}
BENCHMARK(BM_GoPpoUpdateXl)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

void BM_ConcurrentMatmul(benchmark::State& state) {
  torch::set_num_threads(1);
  const bool locked = state.range(0) != 0;
  static const auto inputs = [] {
    torch::manual_seed(1);
    const torch::Tensor a = torch::randn({256, 64});
    const torch::Tensor b = torch::randn({64, 64});
    return std::array<torch::Tensor, 3>{a, b, torch::mm(a, b)};
  }();
  int64_t calls = 0, wrong = 0;
  for (auto _ : state) {
    torch::Tensor c;
    if (locked) {
      const auto lock = LockTorch();
      c = torch::mm(inputs[0], inputs[1]);
    } else {
      c = torch::mm(inputs[0], inputs[1]);
    }
    ++calls;
    if (!torch::equal(c, inputs[2])) ++wrong;
  }
  state.counters["calls"] = static_cast<double>(calls);
  state.counters["wrong"] = static_cast<double>(wrong);
}
BENCHMARK(BM_ConcurrentMatmul)->Arg(0)->Arg(1)->Threads(1)->Threads(2)->Iterations(20000)->UseRealTime();

}  // namespace
}  // namespace gosim::agents::learned

// gosim's own allocator settings (core/allocator.h), as in the gosim program.
int main(int argc, char** argv) {
  gosim::TuneAllocator(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
