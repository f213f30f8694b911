// `gosim optimize --graph G --cluster C --agent NAME [--budget N] ...`: one
// optimization problem, outside any experiment. Prints the simulator's
// summary of the best decision next to the single-device baseline; writes the
// decision (--out) and the timeline (--trace) when asked. When the agent
// found no feasible decision (every one ran out of memory or split a
// colocation group) it says so, writes no decision and exits with status 3
// (errors exit with 1, usage errors with 2).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agents/learned_agents.h"
#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "experiments/commands.h"
#include "experiments/experiment_config.h"
#include "experiments/graph_source.h"
#include "experiments/runner.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "sim/result.h"
#include "sim/timeline.h"

namespace gosim::cli {

namespace {

// Exit status when the agent found no feasible decision.
constexpr int kNoFeasibleDecision = 3;

struct OptimizeArgs {
  std::string graph;
  ShapeArgs shape;
  std::string cluster;
  std::string agent;
  std::string budget = "0";
  double wall_seconds = 0.0;
  uint64_t seed = 0;
  std::string objective = "step_time";
  double memory_weight = -1.0;
  double reference_step_time = -1.0;
  std::vector<std::string> agent_options;
  std::string cost_model = sim::kDefaultCostModel;
  std::vector<std::string> cost_model_options;
  std::vector<std::string> sim_options;
  std::string out;
  std::string trace;
  bool no_progress = false;
};

int Optimize(const OptimizeArgs& args) {
  if (agents::IsLearnedAgent(args.agent)) PrepareForLibTorch();  // may start the program again
  // Parse and validate everything before any work.
  const experiments::GraphEntry entry = experiments::ParseGraphArgument(
      args.graph, experiments::ParseShapeArguments(args.shape.dims, args.shape.input_shapes));
  YAML::Node options_node(YAML::NodeType::Map);
  for (const std::string& assignment : args.agent_options) ApplyOverride(options_node, assignment);
  YamlMap options(options_node, "--agent-option", "");
  YAML::Node cost_model_options(YAML::NodeType::Map);
  for (const std::string& assignment : args.cost_model_options) ApplyOverride(cost_model_options, assignment);
  const auto cost_model = sim::MakeCostModel(args.cost_model, cost_model_options, "--cost-model-option");
  YAML::Node sim_node(YAML::NodeType::Map);
  for (const std::string& assignment : args.sim_options) ApplyOverride(sim_node, assignment);
  YamlMap sim_map(sim_node, "--option", "");
  sim::SimOptions sim_options = experiments::ParseSimOptions(sim_map);
  const std::vector<std::string> names = agents::AgentNames();
  if (std::find(names.begin(), names.end(), args.agent) == names.end()) {
    throw ConfigError("unknown agent '" + args.agent + "'." + DidYouMean(args.agent, names),
                      Location{"--agent"}, "valid agents are: " + Join(names, ", "));
  }
  std::unique_ptr<agents::Agent> agent = agents::MakeAgent(args.agent, options);
  agents::Objective objective;
  objective.kind = agents::ParseObjectiveKind(args.objective, Location{"--objective"});
  sim_options.max_load = objective.kind == agents::ObjectiveKind::kMaxLoad;
  if (args.memory_weight >= 0.0) objective.memory_weight = args.memory_weight;
  if (args.reference_step_time > 0.0) objective.reference_step_time = args.reference_step_time;
  // Read as text: CLI11 would clamp a number above 2^63 silently.
  const agents::Budget budget{experiments::ParseBudgetEvaluations(args.budget, Location{"--budget"}),
                              args.wall_seconds};
  experiments::CheckBudget(budget, Location{"--wall-seconds"});
  // Outputs are written after the search: a folder that cannot take them
  // fails now, not after the budget is spent.
  if (!args.out.empty()) CheckWritable(args.out, "--out");
  if (!args.trace.empty()) CheckWritable(args.trace, "--trace");

  const graphs::Graph graph = experiments::MaterializeGraph(entry);
  const sim::Cluster cluster = experiments::LoadClusterFor(args.cluster, graph, Location{"--cluster"});
  const sim::Evaluator evaluator(graph, cluster, cost_model, sim_options);
  const sim::Evaluation baseline = evaluator.Evaluate(sim::SingleDeviceDecision(graph));
  const agents::Problem problem{graph, cluster, evaluator, objective, budget, args.seed};
  const experiments::SolveResult solved =
      experiments::Solve(*agent, problem, args.no_progress ? std::string() : args.agent);
  const sim::SimResult result = evaluator.Simulate(solved.result.best, !args.trace.empty());

  std::printf(
      "graph %s: %d nodes, %d edges; cluster %s: %d devices; agent %s, seed %llu, objective %s; cost model "
      "%s\n",
      graph.name().c_str(), graph.num_nodes(), graph.num_edges(), cluster.name().c_str(),
      cluster.num_devices(), args.agent.c_str(), static_cast<unsigned long long>(args.seed),
      experiments::ObjectiveKindName(objective.kind), cost_model->Describe(graph, cluster).c_str());
  std::printf("%lld evaluations in %s\n", static_cast<long long>(solved.result.evaluations),
              FormatSeconds(solved.wall_seconds).c_str());
  if (!solved.result.extra.empty()) {
    std::string figures;
    for (const auto& [key, value] : solved.result.extra) {
      char text[96];
      std::snprintf(text, sizeof(text), "%s%s %.6g", figures.empty() ? "" : ", ", key.c_str(), value);
      figures += text;
    }
    std::printf("agent figures: %s\n", figures.c_str());
  }
  std::printf("%s", sim::FormatSimResult(result, evaluator.simulated_graph(), cluster).c_str());
  std::printf("single device: step time %s, peak memory %s%s\n", FormatSeconds(baseline.step_time).c_str(),
              FormatBytes(baseline.peak_memory).c_str(),
              baseline.feasible ? "" : " (infeasible: out of memory)");
  if (!args.trace.empty()) {
    sim::WriteChromeTrace(args.trace, result, evaluator.simulated_graph(), cluster,
                          cost_model->Describe(graph, cluster));
    std::printf("timeline written to %s (open it in https://ui.perfetto.dev)\n", args.trace.c_str());
  }
  if (!solved.final.feasible) {
    // Never reported as a result: the summary above shows why it fails.
    std::printf("NO FEASIBLE DECISION: %s found none in %lld evaluations (the best one above %s); %s\n",
                args.agent.c_str(), static_cast<long long>(solved.result.evaluations),
                result.split ? "splits a colocation group" : "runs out of memory",
                result.split ? "enforce_colocation is on by default (--option enforce_colocation=false "
                               "simulates split groups as they are)"
                             : "try repair=true, another agent or a larger budget");
    if (!args.out.empty()) std::printf("no decision written to %s\n", args.out.c_str());
    return kNoFeasibleDecision;
  }
  if (objective.kind == agents::ObjectiveKind::kMaxLoad) {
    std::printf("max-load %s; single device %s (%+.1f%%)\n", FormatSeconds(result.max_load).c_str(),
                FormatSeconds(baseline.max_load).c_str(),
                baseline.max_load > 0.0 ? (result.max_load / baseline.max_load - 1.0) * 100.0 : 0.0);
  }
  if (baseline.feasible && solved.final.feasible && baseline.step_time > 0.0) {
    std::printf("step time vs single device: %+.1f%%\n",
                (solved.final.step_time / baseline.step_time - 1.0) * 100.0);
  }
  if (!args.out.empty()) {
    sim::DecisionInfo info;
    info.agent = args.agent;
    info.seed = static_cast<int64_t>(args.seed);
    info.budget = budget.evaluations;  // 0: the agent's default
    info.evaluations = solved.result.evaluations;
    info.objective = experiments::ObjectiveKindName(objective.kind);
    sim::SaveDecision(args.out, solved.result.best, graph, cluster, info);
    std::printf("decision written to %s\n", args.out.c_str());
  }
  return 0;
}

}  // namespace

void AddOptimizeCommand(CLI::App& root) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = root.add_subcommand("optimize", "Optimize one graph on one cluster with one agent");
  InputFile(
      cmd->add_option("--graph", args->graph, "Graph file, or gen:NAME[:k=v,...] for a generated graph"))
      ->required();
  AddShapeOptions(cmd, &args->shape);
  cmd->add_option(
         "--cluster", args->cluster,
         "Cluster preset (configs/clusters/NAME.yaml) or YAML file, optionally :gpus=N (p100x4_pcie:gpus=6)")
      ->required();
  cmd->add_option("--agent", args->agent, "Agent name (e.g. brkga, random_search, m_etf)")->required();
  cmd->add_option("--budget", args->budget,
                  "Simulator evaluations (0 = the agent's default, e.g. 5000 for random_search)")
      ->capture_default_str();
  cmd->add_option("--wall-seconds", args->wall_seconds, "Wall-clock budget in seconds (0 = no limit)");
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option(
         "--objective", args->objective,
         "step_time, peak_memory, weighted, max_load (msr-fiddle's time per sample of a pipeline) or "
         "throughput (seconds per micro-batch with --option micro_batches=M)")
      ->capture_default_str();
  cmd->add_option("--memory-weight", args->memory_weight, "Weighted objective: weight of peak / capacity");
  cmd->add_option("--reference-step-time", args->reference_step_time,
                  "Weighted objective: the step time in seconds that counts as 1.0");
  cmd->add_option("--agent-option", args->agent_options,
                  "An agent option key=value (repeatable; dotted keys and YAML values, e.g. population=64)");
  cmd->add_option("--cost-model", args->cost_model,
                  "Cost model: auto (measured, else the committed profile of the device kind, else "
                  "roofline), roofline, measured or calibrated")
      ->capture_default_str();
  cmd->add_option("--cost-model-option", args->cost_model_options,
                  "A cost-model option key=value (repeatable)");
  cmd->add_option("--option", args->sim_options, kSimOptionHelp);
  cmd->add_option("--out", args->out, "Write the best decision as JSON here (only when it is feasible)");
  cmd->add_option("--trace", args->trace, "Write the best decision's timeline (Chrome trace JSON) here");
  cmd->add_flag("--no-progress", args->no_progress, "No progress bar");
  Commands().push_back({cmd, [args] { return Optimize(*args); }});
}

}  // namespace gosim::cli
