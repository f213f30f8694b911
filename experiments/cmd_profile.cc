// `gosim profile --graph G [--cluster C] [--decision D.json] [--steps N] [--warmup W] [--out T.json.gz]`:
// runs a graph for real with LibTorch (every node on device 0 of the
// cluster, or placed by a decision; as calibration/hardware/ executes it:
// CUDA when available, else one CPU worker per device with the cluster's
// per-device share of the cores) and records a Kineto Chrome trace that
// `gosim calibrate` fits a profile to. With a decision the trace also holds
// the cross-device copies (memcpy events with their sizes), which the link
// fit reads. Only built with LibTorch (GOSIM_WITH_TORCH).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "calibration/hardware/executor.h"
#include "core/error.h"
#include "experiments/commands.h"
#include "experiments/experiment_config.h"
#include "experiments/graph_source.h"
#include "sim/cluster.h"
#include "sim/decision.h"

namespace gosim::cli {
namespace {

struct ProfileArgs {
  std::string graph;
  ShapeArgs shape;
  std::string cluster = "local";
  std::string decision;  // empty: every node on device 0
  std::string out = "profile_trace.json.gz";
  int steps = 10;
  int warmup = 3;
  int threads = 0;
  bool cpu = false;
};

int Profile(const ProfileArgs& args) {
  if (args.steps < 1 || args.warmup < 0) {
    throw ConfigError("--steps " + std::to_string(args.steps) + " --warmup " + std::to_string(args.warmup),
                      Location{"--steps"}, "give --steps >= 1 and --warmup >= 0");
  }
  const experiments::GraphEntry entry = experiments::ParseGraphArgument(
      args.graph, experiments::ParseShapeArguments(args.shape.dims, args.shape.input_shapes));
  const sim::Cluster cluster = experiments::LoadClusterAt(args.cluster, Location{"--cluster"});
  const graphs::Graph graph = experiments::MaterializeGraph(entry);
  const sim::Decision decision = args.decision.empty() ? sim::SingleDeviceDecision(graph, 0)
                                                       : sim::LoadDecision(args.decision, graph, cluster);
  calibration::hardware::ExecutorOptions options;
  options.num_devices = args.decision.empty() ? 1 : cluster.num_devices();
  options.allow_cuda = !args.cpu;
  // One device of the cluster: its share of the machine's cores.
  const int32_t cores = std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  options.intra_op_threads =
      args.threads > 0 ? args.threads : std::max<int32_t>(1, cores / cluster.num_devices());
  calibration::hardware::Executor executor(graph, options);
  const auto& plan = executor.plan();
  std::printf(
      "graph %s: %d nodes (%d without work, %d as an equivalent matmul/copy); backend %s, %d intra-op "
      "threads\n",
      graph.name().c_str(), graph.num_nodes(), plan.no_work, plan.fallbacks, executor.backend().c_str(),
      options.intra_op_threads);
  const calibration::hardware::Measurement m = executor.Profile(decision, args.warmup, args.steps, args.out);
  std::printf(
      "%d steps after %d warm-up: median %.3f ms (min %.3f, max %.3f); %lld cross-device copies per step\n",
      args.steps, args.warmup, m.median_step_time * 1e3,
      *std::min_element(m.step_times.begin(), m.step_times.end()) * 1e3,
      *std::max_element(m.step_times.begin(), m.step_times.end()) * 1e3, static_cast<long long>(m.copies));
  std::printf("aten ops:");
  for (const auto& [name, count] : plan.aten_ops) std::printf(" %s x%d", name.c_str(), count);
  std::printf(
      "\ntrace written to %s; fit a profile with: gosim calibrate --trace %s --out "
      "configs/calibrated/local.yaml --report\n",
      args.out.c_str(), args.out.c_str());
  return 0;
}

}  // namespace

void AddProfileCommand(CLI::App& root) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = root.add_subcommand("profile", TorchCommandDescription("profile"));
  InputFile(cmd->add_option("--graph", args->graph, "Graph file, or gen:NAME[:k=v,...]"))->required();
  AddShapeOptions(cmd, &args->shape);
  cmd->add_option("--cluster", args->cluster,
                  "Cluster preset or YAML whose device the run stands for (its share of the CPU cores)")
      ->capture_default_str();
  InputFile(
      cmd->add_option("--decision", args->decision,
                      "Decision JSON placing the nodes on the cluster's devices (default: all on device 0)"));
  cmd->add_option("--steps", args->steps, "Measured steps")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Warm-up steps (not recorded)")->capture_default_str();
  cmd->add_option("--out", args->out, "Trace file (.json or .json.gz)")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Intra-op threads (default: cores / cluster devices)");
  cmd->add_flag("--cpu", args->cpu, "Run on the CPU even when CUDA is available");
  Commands().push_back({cmd, [args] { return Profile(*args); }});
}

}  // namespace gosim::cli
