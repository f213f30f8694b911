// `gosim optimize --graph G --cluster C --agent NAME [--budget N] ...`: one
// optimization problem, outside any experiment. Prints the simulator's
// summary of the best decision next to the single-device baseline; writes the
// decision (--out) and the timeline (--trace) when asked.
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

struct OptimizeArgs {
  std::string graph;
  std::string cluster;
  std::string agent;
  int64_t budget = 0;
  double wall_seconds = 0.0;
  uint64_t seed = 0;
  std::string objective = "step_time";
  double memory_weight = -1.0;
  double reference_step_time = -1.0;
  std::vector<std::string> agent_options;
  std::string cost_model = "roofline";
  std::vector<std::string> cost_model_options;
  std::string out;
  std::string trace;
  bool no_progress = false;
};

int Optimize(const OptimizeArgs& args) {
  if (agents::IsLearnedAgent(args.agent)) PrepareForLibTorch();  // may start the program again
  // Parse and validate everything before any work.
  const experiments::GraphEntry entry = experiments::ParseGraphArgument(args.graph);
  YAML::Node options_node(YAML::NodeType::Map);
  for (const std::string& assignment : args.agent_options) ApplyOverride(options_node, assignment);
  YamlMap options(options_node, "--agent-option", "");
  YAML::Node cost_model_options(YAML::NodeType::Map);
  for (const std::string& assignment : args.cost_model_options) ApplyOverride(cost_model_options, assignment);
  const auto cost_model = sim::MakeCostModel(args.cost_model, cost_model_options, "--cost-model-option");
  const std::vector<std::string> names = agents::AgentNames();
  if (std::find(names.begin(), names.end(), args.agent) == names.end()) {
    throw ConfigError("unknown agent '" + args.agent + "'." + DidYouMean(args.agent, names),
                      Location{"--agent"}, "valid agents are: " + Join(names, ", "));
  }
  std::unique_ptr<agents::Agent> agent = agents::MakeAgent(args.agent, options);
  agents::Objective objective;
  objective.kind = agents::ParseObjectiveKind(args.objective, Location{"--objective"});
  if (args.memory_weight >= 0.0) objective.memory_weight = args.memory_weight;
  if (args.reference_step_time > 0.0) objective.reference_step_time = args.reference_step_time;
  if (args.budget < 0 || !(args.wall_seconds >= 0.0)) {
    throw ConfigError("a budget must be >= 0", Location{"--budget"},
                      "give --budget N (evaluations) and/or --wall-seconds S; 0 = the agent's default");
  }

  const sim::Cluster cluster = experiments::LoadClusterAt(args.cluster, Location{"--cluster"});
  const graphs::Graph graph = experiments::MaterializeGraph(entry);
  const sim::Evaluator evaluator(graph, cluster, cost_model);
  const sim::Evaluation baseline = evaluator.Evaluate(sim::SingleDeviceDecision(graph));
  const agents::Problem problem{graph,    cluster, evaluator, objective, {args.budget, args.wall_seconds},
                                args.seed};
  const experiments::SolveResult solved =
      experiments::Solve(*agent, problem, args.no_progress ? std::string() : args.agent);
  const sim::SimResult result = evaluator.Simulate(solved.result.best, !args.trace.empty());

  std::printf("graph %s: %d nodes, %d edges; cluster %s: %d devices; agent %s, seed %llu, objective %s\n",
              graph.name().c_str(), graph.num_nodes(), graph.num_edges(), cluster.name().c_str(),
              cluster.num_devices(), args.agent.c_str(), static_cast<unsigned long long>(args.seed),
              experiments::ObjectiveKindName(objective.kind));
  std::printf("%lld evaluations in %s\n", static_cast<long long>(solved.result.evaluations),
              FormatSeconds(solved.wall_seconds).c_str());
  std::printf("%s", sim::FormatSimResult(result, graph, cluster).c_str());
  std::printf("single device: step time %s, peak memory %s%s\n", FormatSeconds(baseline.step_time).c_str(),
              FormatBytes(baseline.peak_memory).c_str(),
              baseline.feasible ? "" : " (infeasible: out of memory)");
  if (baseline.feasible && solved.final.feasible && baseline.step_time > 0.0) {
    std::printf("step time vs single device: %+.1f%%\n",
                (solved.final.step_time / baseline.step_time - 1.0) * 100.0);
  }
  if (!args.out.empty()) {
    sim::SaveDecision(args.out, solved.result.best, graph, cluster);
    std::printf("decision written to %s\n", args.out.c_str());
  }
  if (!args.trace.empty()) {
    sim::WriteChromeTrace(args.trace, result, graph, cluster);
    std::printf("timeline written to %s (open it in https://ui.perfetto.dev)\n", args.trace.c_str());
  }
  return 0;
}

}  // namespace

void AddOptimizeCommand(CLI::App& root) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = root.add_subcommand("optimize", "Optimize one graph on one cluster with one agent");
  cmd->add_option("--graph", args->graph, "Graph file, or gen:NAME[:k=v,...] for a generated graph")
      ->required();
  cmd->add_option("--cluster", args->cluster, "Cluster preset (configs/clusters/NAME.yaml) or YAML file")
      ->required();
  cmd->add_option("--agent", args->agent, "Agent name (e.g. brkga, random_search, m_etf)")->required();
  cmd->add_option("--budget", args->budget,
                  "Simulator evaluations (0 = the agent's default, e.g. 5000 for random_search)")
      ->capture_default_str();
  cmd->add_option("--wall-seconds", args->wall_seconds, "Wall-clock budget in seconds (0 = no limit)");
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option("--objective", args->objective, "step_time, peak_memory or weighted")
      ->capture_default_str();
  cmd->add_option("--memory-weight", args->memory_weight, "Weighted objective: weight of peak / capacity");
  cmd->add_option("--reference-step-time", args->reference_step_time,
                  "Weighted objective: the step time in seconds that counts as 1.0");
  cmd->add_option("--agent-option", args->agent_options,
                  "An agent option key=value (repeatable; dotted keys and YAML values, e.g. population=64)");
  cmd->add_option("--cost-model", args->cost_model, "Cost model: roofline, measured or calibrated")
      ->capture_default_str();
  cmd->add_option("--cost-model-option", args->cost_model_options,
                  "A cost-model option key=value (repeatable)");
  cmd->add_option("--out", args->out, "Write the best decision as JSON here");
  cmd->add_option("--trace", args->trace, "Write the best decision's timeline (Chrome trace JSON) here");
  cmd->add_flag("--no-progress", args->no_progress, "No progress bar");
  Commands().push_back({cmd, [args] { return Optimize(*args); }});
}

}  // namespace gosim::cli
