// `gosim replay --graph G --cluster C --decision D.json [--decision ...]
//  [--repeats K] [--warmup W] [--rounds R] [--profile P] [--out results.json]`:
// executes the graph under each decision on real devices
// (calibration/hardware/executor.h: CUDA devices when LibTorch has them,
// else one CPU worker thread per cluster device), measures the step time
// (median of K after W warm-up steps) and the peak memory, simulates the
// same decision with the calibrated profile P, and prints measured vs
// simulated with the error; with several decisions also the median absolute
// error and Kendall's tau between the two. Only built with LibTorch.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/hardware/replay_run.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/log.h"
#include "experiments/commands.h"
#include "experiments/experiment_config.h"
#include "experiments/graph_source.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"

namespace gosim::cli {
namespace {

struct ReplayArgs {
  std::string graph;
  ShapeArgs shape;
  std::string cluster;
  std::vector<std::string> decisions;
  std::string profile = "local";
  std::string out;
  int repeats = 7;
  int warmup = 2;
  int rounds = 3;
  int threads = 0;
  bool cpu = false;
};

int Replay(const ReplayArgs& args) {
  if (args.repeats < 1 || args.warmup < 0 || args.rounds < 1) {
    throw ConfigError(
        "--repeats " + std::to_string(args.repeats) + " --warmup " + std::to_string(args.warmup),
        Location{"--repeats"}, "give --repeats >= 1, --warmup >= 0 and --rounds >= 1");
  }
  const experiments::GraphEntry entry = experiments::ParseGraphArgument(
      args.graph, experiments::ParseShapeArguments(args.shape.dims, args.shape.input_shapes));
  const sim::Cluster cluster = experiments::LoadClusterAt(args.cluster, Location{"--cluster"});
  YAML::Node cost_options(YAML::NodeType::Map);
  cost_options["profile"] = args.profile;
  cost_options["fallback"] = "error";  // a device kind without a profile is an error, not a roofline guess
  const auto cost_model = sim::MakeCostModel("calibrated", cost_options, "--profile");
  const graphs::Graph graph = experiments::MaterializeGraph(entry);
  // Every decision is read and checked before anything runs.
  std::vector<sim::Decision> decisions;
  for (const std::string& path : args.decisions) {
    decisions.push_back(sim::LoadDecision(path, graph, cluster));
    if (decisions.back().has_fusion()) {
      GOSIM_LOG(Warn) << path << " fuses nodes; the executor runs them one by one (the simulator fuses them)";
    }
  }
  calibration::hardware::ReplayRunOptions options;
  options.repeats = args.repeats;
  options.warmup = args.warmup;
  options.rounds = args.rounds;
  options.intra_op_threads = args.threads;
  options.allow_cuda = !args.cpu;
  options.profile_name = args.profile;
  const nlohmann::json summary = calibration::hardware::RunReplay(graph, cluster, cost_model, decisions,
                                                                  args.decisions, options, stdout);
  if (!args.out.empty()) {
    WriteFileAtomic(args.out, DumpJson(summary, 2) + "\n");
    std::printf("results written to %s\n", args.out.c_str());
  }
  return 0;
}

}  // namespace

void AddReplayCommand(CLI::App& root) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* cmd = root.add_subcommand("replay", TorchCommandDescription("replay"));
  InputFile(cmd->add_option("--graph", args->graph, "Graph file, or gen:NAME[:k=v,...]"))->required();
  AddShapeOptions(cmd, &args->shape);
  cmd->add_option("--cluster", args->cluster, "Cluster preset or YAML (e.g. local), optionally :gpus=N")
      ->required();
  InputFile(cmd->add_option("--decision", args->decisions, "Decision JSON (repeatable)"))->required();
  cmd->add_option("--repeats", args->repeats, "Measured steps per decision (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Warm-up steps per decision and round")->capture_default_str();
  cmd->add_option("--rounds", args->rounds,
                  "Rounds over all decisions (round-robin; the median of all steps)")
      ->capture_default_str();
  cmd->add_option("--profile", args->profile, "Calibrated profile for the simulator (name or file)")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Write the results as JSON here");
  cmd->add_option("--threads", args->threads, "Intra-op threads per CPU device (default: cores / devices)");
  cmd->add_flag("--cpu", args->cpu, "Run on CPU devices even when CUDA is available");
  Commands().push_back({cmd, [args] { return Replay(*args); }});
}

}  // namespace gosim::cli
