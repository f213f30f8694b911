// Start-up and graph loading: the whole-process wall time of `gosim
// simulate` and of a constructive `gosim optimize --agent m_etf` on a
// 1000-node graph (targets < 0.3 s), of `gosim simulate` on the 92.8k-node
// GNMT of configs/suites/xl.yaml (gzip'd JSON and binary), and LoadGraph of
// that GNMT in this process (target < 1 s) as JSON, gzip'd JSON and the
// binary format of graphs/binary_format.h, and the gunzip alone. The input files
// are written once per run into a temporary folder.
//
//   build/bench/startup_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// GOSIM_BENCH_BINARY=PATH times another gosim program (e.g. an older build)
// in the process benchmarks. Run from the repository root.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/io.h"
#include "graphs/generators/generators.h"
#include "graphs/io.h"
#include "graphs/suite.h"

extern char** environ;

namespace gosim::graphs {
namespace {

// The input files, written on first use.
struct Inputs {
  std::string dir;
  std::string graph_1k;   // regal_random, 1000 nodes
  std::string gnmt_json;  // xl suite's gnmt8_s150, 92,828 nodes
  std::string gnmt_gz;
  std::string gnmt_binary;  // graphs/binary_format.h

  Inputs() {
    dir = (std::filesystem::temp_directory_path() / ("gosim_startup_bench_" + std::to_string(getpid())))
              .string();
    std::filesystem::create_directories(dir);
    graph_1k = dir + "/regal1k.json";
    SaveGraph(Generate("regal_random", YAML::Load("{nodes: 1000, seed: 1}"), "startup_bench"), graph_1k);
    const Suite xl = LoadSuite("configs/suites/xl.yaml");
    const Graph gnmt = MaterializeGraph(*xl.Find("gnmt8_s150"));
    gnmt_json = dir + "/gnmt8_s150.json";
    gnmt_gz = gnmt_json + ".gz";
    SaveGraph(gnmt, gnmt_json);
    SaveGraph(gnmt, gnmt_gz);
    gnmt_binary = dir + "/gnmt8_s150.gosimgraph";
    SaveGraph(gnmt, gnmt_binary);
  }
  ~Inputs() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

const Inputs& Files() {
  static const Inputs inputs;
  return inputs;
}

std::string Binary() {
  const char* other = std::getenv("GOSIM_BENCH_BINARY");
  return other != nullptr && *other != '\0' ? other : GOSIM_BINARY;
}

// Runs gosim with `args`, output to /dev/null; false when it fails.
bool RunGosim(const std::vector<std::string>& args) {
  const std::string binary = Binary();
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void BM_Process(benchmark::State& state, const std::vector<std::string>& args) {
  for (auto _ : state) {
    if (!RunGosim(args)) {
      state.SkipWithError(("gosim failed: " + Binary()).c_str());
      break;
    }
  }
}

void BM_SimulateProcess1k(benchmark::State& state) {
  BM_Process(state, {"simulate", "--graph", Files().graph_1k, "--cluster", "k80x2"});
}
void BM_OptimizeMetfProcess1k(benchmark::State& state) {
  BM_Process(state, {"optimize", "--graph", Files().graph_1k, "--cluster", "k80x2", "--agent", "m_etf",
                     "--no-progress"});
}
void BM_SimulateProcessGnmt92k(benchmark::State& state, int format) {
  const std::string& path = format == 0 ? Files().gnmt_gz : Files().gnmt_binary;
  BM_Process(state, {"simulate", "--graph", path, "--cluster", "dgx1_v100"});
}

// 0: JSON, 1: gzip'd JSON, 2: binary.
void BM_LoadGnmt92k(benchmark::State& state, int format) {
  const std::string& path = format == 0   ? Files().gnmt_json
                            : format == 1 ? Files().gnmt_gz
                                          : Files().gnmt_binary;
  int64_t nodes = 0;
  for (auto _ : state) {
    Graph g = LoadGraph(path);
    nodes = g.num_nodes();
    benchmark::DoNotOptimize(g);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}

void BM_GunzipGnmt92k(benchmark::State& state) {
  // The file's own bytes (ReadFile would inflate them).
  std::ifstream file(Files().gnmt_gz, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  for (auto _ : state) benchmark::DoNotOptimize(Gunzip(data, Files().gnmt_gz));
}

BENCHMARK(BM_SimulateProcess1k)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OptimizeMetfProcess1k)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SimulateProcessGnmt92k, json_gz, 0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SimulateProcessGnmt92k, binary, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LoadGnmt92k, json, 0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LoadGnmt92k, json_gz, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LoadGnmt92k, binary, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GunzipGnmt92k)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gosim::graphs

BENCHMARK_MAIN();
