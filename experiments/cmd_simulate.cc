// `gosim simulate --graph G --cluster C [--decision D.json] [--trace T.json]
// [--json] [--cost-model NAME] [--cost-model-option k=v] [--option k=v]`:
// simulates one decision (everything on device 0 without --decision) and
// prints the simulator's summary, or the full result as JSON.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "experiments/commands.h"
#include "experiments/experiment_config.h"
#include "experiments/graph_source.h"
#include "sim/cost_model.h"
#include "sim/data_parallel.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "sim/result.h"
#include "sim/timeline.h"

namespace gosim::cli {
namespace {

struct SimulateArgs {
  std::string graph;
  ShapeArgs shape;
  std::string cluster;
  std::string decision;
  std::string trace;
  bool json = false;
  bool check_colocation = false;
  std::string cost_model = sim::kDefaultCostModel;
  std::vector<std::string> cost_model_options;
  std::vector<std::string> sim_options;
  int data_parallel = 0;    // replicas; 0 = off
  double bucket_mb = 25.0;  // DDP's bucket_cap_mb
  std::string objective;    // "" = step_time, and --json prints no objective fields
};

int Simulate(const SimulateArgs& args) {
  // Parse and validate every argument before loading anything large.
  const experiments::GraphEntry entry = experiments::ParseGraphArgument(
      args.graph, experiments::ParseShapeArguments(args.shape.dims, args.shape.input_shapes));
  YAML::Node cost_model_options(YAML::NodeType::Map);
  for (const std::string& assignment : args.cost_model_options) ApplyOverride(cost_model_options, assignment);
  const auto cost_model = sim::MakeCostModel(args.cost_model, cost_model_options, "--cost-model-option");
  YAML::Node sim_node(YAML::NodeType::Map);
  for (const std::string& assignment : args.sim_options) ApplyOverride(sim_node, assignment);
  YamlMap sim_map(sim_node, "--option", "");
  sim::SimOptions options = experiments::ParseSimOptions(sim_map);
  if (args.data_parallel < 0) {
    throw ConfigError("--data-parallel must be >= 1 replicas", Location{"--data-parallel"});
  }
  if (args.data_parallel > 0 && !args.decision.empty()) {
    throw ConfigError("--data-parallel places rank k on device k; it takes no --decision",
                      Location{"--data-parallel"}, "drop --decision");
  }
  if (!(args.bucket_mb > 0.0)) throw ConfigError("--bucket-mb must be > 0", Location{"--bucket-mb"});

  const agents::ObjectiveKind objective = agents::ParseObjectiveKind(
      args.objective.empty() ? "step_time" : args.objective, Location{"--objective"});
  if (objective == agents::ObjectiveKind::kWeighted) {
    throw ConfigError(
        "simulate prints step_time, peak_memory or max_load; weighted needs optimize's reference",
        Location{"--objective"}, "use gosim optimize --objective weighted");
  }
  graphs::Graph graph = experiments::MaterializeGraph(entry);
  const sim::Cluster cluster = experiments::LoadClusterFor(args.cluster, graph, Location{"--cluster"});
  sim::Decision decision;
  std::string decision_text = args.decision;
  if (args.data_parallel > 0) {
    // The graph is one rank's step; DDP's replicas, buckets and all-reduces
    // around it, a process per device unless --option processes says otherwise.
    sim::DataParallelOptions dp;
    dp.replicas = args.data_parallel;
    dp.bucket_bytes = static_cast<int64_t>(args.bucket_mb * (1 << 20));
    sim::DataParallelStep step = sim::BuildDataParallel(graph, cluster, *cost_model, dp);
    graph = std::move(step.graph);
    decision = std::move(step.decision);
    if (options.processes == sim::Processes::kAuto) options.processes = sim::Processes::kPerDevice;
    double ar = 0.0;
    for (double t : step.all_reduce_seconds) ar += t;
    decision_text = "data parallel over " + std::to_string(step.replicas) + " devices, " +
                    std::to_string(step.bucket_bytes.size()) + " gradient buckets, all-reduces " +
                    FormatSeconds(ar) + " in all";
  } else {
    decision = args.decision.empty() ? sim::SingleDeviceDecision(graph, 0)
                                     : sim::LoadDecision(args.decision, graph, cluster);
  }
  if (args.check_colocation) sim::ValidateDecision(decision, graph, cluster, true);
  if (decision.is_data_parallel() && !args.trace.empty()) {
    throw ConfigError(
        "a data-parallel decision's timeline is its DDP graph's", Location{"--trace"},
        "use --data-parallel " + std::to_string(decision.data_parallel) + " instead of --decision");
  }

  const sim::Evaluator evaluator(graph, cluster, cost_model, options);
  const sim::SimResult result = evaluator.Simulate(decision, !args.trace.empty());
  const std::string described = cost_model->Describe(graph, cluster);
  if (!args.trace.empty())
    sim::WriteChromeTrace(args.trace, result, evaluator.simulated_graph(), cluster, described);

  double objective_value = result.step_time;
  if (objective == agents::ObjectiveKind::kMaxLoad) objective_value = result.max_load;
  if (objective == agents::ObjectiveKind::kPeakMemory)
    objective_value = static_cast<double>(result.peak_memory());
  if (objective == agents::ObjectiveKind::kThroughput)
    objective_value = result.step_time / result.micro_batches;
  if (args.json) {
    const std::string text = sim::SimResultToJson(result, evaluator.simulated_graph(), cluster, described);
    if (args.objective.empty()) {
      std::printf("%s\n", text.c_str());
      return 0;
    }
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(text);
    json["objective"] = experiments::ObjectiveKindName(objective);
    json["objective_value"] = objective_value;
    std::printf("%s\n", json.dump(2).c_str());
    return 0;
  }
  std::printf(
      "graph %s: %d nodes, %d edges; cluster %s: %d devices; cost model %s; decision %s\n",
      graph.name().c_str(), graph.num_nodes(), graph.num_edges(), cluster.name().c_str(),
      cluster.num_devices(), described.c_str(),
      decision_text.empty() ? ("everything on " + cluster.device(0).name).c_str() : decision_text.c_str());
  std::printf("%s", sim::FormatSimResult(result, evaluator.simulated_graph(), cluster).c_str());
  if (result.data_parallel > 0) {
    std::printf("data parallel: %d replicas of the graph's batch, DDP step %s, %s per graph batch\n",
                result.data_parallel, FormatSeconds(result.ddp_step_time).c_str(),
                FormatSeconds(result.step_time).c_str());
  }
  if (result.micro_batches > 1) {
    std::printf("pipeline: %d micro-batches (%s), %s per micro-batch\n", result.micro_batches,
                std::string(sim::ScheduleName(options.schedule)).c_str(),
                FormatSeconds(result.step_time / result.micro_batches).c_str());
  }
  std::printf("max-load (msr-fiddle's time per sample of a pipeline): %s\n",
              FormatSeconds(result.max_load).c_str());
  if (!args.trace.empty()) {
    std::printf("timeline written to %s (open it in https://ui.perfetto.dev)\n", args.trace.c_str());
  }
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& root) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = root.add_subcommand("simulate", "Simulate one decision for a graph on a cluster");
  InputFile(
      cmd->add_option("--graph", args->graph, "Graph file, or gen:NAME[:k=v,...] for a generated graph"))
      ->required();
  AddShapeOptions(cmd, &args->shape);
  cmd->add_option(
         "--cluster", args->cluster,
         "Cluster preset (configs/clusters/NAME.yaml) or YAML file, optionally :gpus=N (p100x4_pcie:gpus=6)")
      ->required();
  InputFile(cmd->add_option("--decision", args->decision,
                            "Decision JSON (docs/FORMATS.md); without it everything runs on device 0"));
  cmd->add_option("--trace", args->trace, "Write the timeline as Chrome trace JSON here (opens in Perfetto)");
  cmd->add_flag("--json", args->json, "Print the full result as JSON instead of the summary");
  cmd->add_option(
      "--objective", args->objective,
      "What --json reports as objective_value: step_time (default), peak_memory, max_load "
      "(msr-fiddle's time per sample of a pipeline, seconds) or throughput (seconds per micro-batch "
      "with --option micro_batches=M)");
  cmd->add_option(
      "--data-parallel", args->data_parallel,
      "Simulate DDP: the graph is one rank's training step, replicated on N devices with bucketed "
      "gradient all-reduces overlapped with backward, a process per device (docs/SIMULATOR.md, "
      "\"Data parallelism\")");
  cmd->add_option("--bucket-mb", args->bucket_mb, "--data-parallel: gradient bucket size in MiB (DDP's 25)")
      ->capture_default_str();
  cmd->add_flag("--check-colocation", args->check_colocation,
                "Reject decisions that split a colocation group across devices");
  cmd->add_option("--cost-model", args->cost_model,
                  "Cost model: auto (measured, else the committed profile of the device kind, else "
                  "roofline), roofline, measured or calibrated")
      ->capture_default_str();
  cmd->add_option("--cost-model-option", args->cost_model_options,
                  "A cost-model option key=value (repeatable; e.g. profile=configs/calibrated/a100.yaml)");
  cmd->add_option("--option", args->sim_options, kSimOptionHelp);
  Commands().push_back({cmd, [args] { return Simulate(*args); }});
}

}  // namespace gosim::cli
