// Graph generation speed: time to generate (and build) each paper model
// in training mode, the 80k-node GNMT of configs/suites/xl.yaml among them,
// and REGAL-style random graphs. Counters: nodes of the graph and nodes/s.
//
//   build-gen/bench/generators_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true     (one command line)
#include <benchmark/benchmark.h>

#include <string>

#include "graphs/generators/generators.h"

namespace gosim::graphs {
namespace {

void BM_Generate(benchmark::State& state, const std::string& spec) {
  const auto [name, params] = ParseGeneratorSpec(spec);
  int64_t nodes = 0;
  for (auto _ : state) {
    Graph g = Generate(name, params, "bench");
    nodes = g.num_nodes();
    benchmark::DoNotOptimize(g);
    state.PauseTiming();  // freeing the graph is not part of generating it
    g = Graph();
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes_per_s"] = benchmark::Counter(
      static_cast<double>(nodes) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Generate, gnmt8_train_s150_xl, std::string("gnmt:layers=8,training=true,seq_len=150"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, gnmt8_train_s50, std::string("gnmt:layers=8,training=true"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, inception_v3_train, std::string("inception_v3:training=true"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, resnet50_train, std::string("resnet:depth=50,training=true"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, bert_base_train, std::string("bert:training=true"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, transformer_xl_train, std::string("transformer_xl:training=true"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, amoebanet_train, std::string("amoebanet:training=true"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Generate, regal_random, std::string("regal_random:seed=1"))
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace gosim::graphs

BENCHMARK_MAIN();
