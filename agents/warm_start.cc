#include "agents/warm_start.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "sim/result.h"

namespace gosim::agents {

bool WarmStartAgent::operator==(const WarmStartAgent& other) const {
  return name == other.name && file == other.file && path == other.path &&
         YAML::Dump(options) == YAML::Dump(other.options);
}

namespace {
// Search agents: seeding one with another would hide the budget.
const std::vector<std::string> kSearchAgents = {"brkga",
                                                "brkga_5k",
                                                "tuned_brkga",
                                                "random_search",
                                                "local_search",
                                                "role_sweep",
                                                "simulated_annealing",
                                                "regal",
                                                "hrl",
                                                "colocrl",
                                                "go",
                                                "cp"};
}  // namespace

const std::vector<std::string>& DefaultWarmStart() {
  static const std::vector<std::string> names = {"single_device", "m_etf"};
  return names;
}

std::vector<WarmStartAgent> ParseWarmStart(YamlMap& options, const std::string& owner,
                                           const std::vector<std::string>& fallback) {
  std::vector<WarmStartAgent> out;
  if (!options.Has("warm_start")) {
    for (const std::string& name : fallback) out.push_back({name, YAML::Node(), "", ""});
    return out;
  }
  const YAML::Node list = options.Node("warm_start");
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) {
    options.Fail("warm_start", owner + ": warm_start is a list of one-shot agents",
                 "e.g. [single_device, m_etf, {agent: human_expert, options: {exclude_devices: [cpu0]}}]");
  }
  const std::vector<std::string> valid = AgentNames();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = options.ChildPath("warm_start") + "[" + std::to_string(i) + "]";
    WarmStartAgent agent;
    agent.file = options.file();
    agent.path = path;
    if (list[i].IsMap()) {
      YamlMap entry(list[i], options.file(), path);
      agent.name = entry.Require<std::string>("agent");
      agent.options = YAML::Clone(entry.Node("options"));
      entry.Finish();
    } else {
      agent.name = YamlAs<std::string>(list[i], options.file(), path);
    }
    if (std::find(valid.begin(), valid.end(), agent.name) == valid.end() ||
        std::find(kSearchAgents.begin(), kSearchAgents.end(), agent.name) != kSearchAgents.end()) {
      options.Fail(
          "warm_start", owner + ": warm_start names unknown or unsuitable agent '" + agent.name + "'",
          "use one-shot baselines such as single_device, human_expert, m_etf, metis, heft; [] for none");
    }
    if (agent.options && !agent.options.IsNull()) {
      // Build it once now, so that a misspelt option stops the run before it starts.
      YamlMap check(agent.options, agent.file, agent.path + ".options");
      MakeAgent(agent.name, check);
    }
    out.push_back(std::move(agent));
  }
  return out;
}

WarmStartResult RunWarmStart(const std::string& owner, const std::vector<WarmStartAgent>& agents,
                             const Problem& problem, int64_t max_evaluations) {
  const auto start = std::chrono::steady_clock::now();
  WarmStartResult out;
  for (const WarmStartAgent& spec : agents) {
    if (out.evaluations >= max_evaluations) break;
    const YAML::Node node =
        spec.options && !spec.options.IsNull() ? YAML::Clone(spec.options) : YAML::Node(YAML::NodeType::Map);
    YamlMap options(node, spec.file.empty() ? "warm_start" : spec.file, spec.path);
    std::unique_ptr<Agent> agent = MakeAgent(spec.name, options);
    Problem one_shot = problem;
    one_shot.budget.evaluations = 1;
    one_shot.budget.wall_seconds = 0.0;
    try {
      AgentResult r = agent->Optimize(one_shot);
      out.evaluations += r.evaluations;
      if (r.best.placement.size() != static_cast<size_t>(problem.graph.num_nodes())) continue;
      out.seeds.push_back({spec.name, std::move(r)});
    } catch (const Error& e) {  // e.g. no expert rules for this graph: start without it
      GOSIM_LOG(Warn) << owner << ": warm start from " << spec.name << " skipped: " << e.what();
    }
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void MakeOrderExplicit(const Problem& problem, sim::Decision* decision) {
  const sim::SimResult run = problem.evaluator.Simulate(*decision, /*timeline=*/true);
  decision->priority.assign(static_cast<size_t>(problem.graph.num_nodes()), 0.0);
  // In a pipeline (SimOptions::micro_batches) the first micro-batch's ready
  // times order the nodes: its copies are the first to run.
  std::vector<bool> seen(static_cast<size_t>(problem.graph.num_nodes()), false);
  for (const sim::OpRecord& op : run.ops) {
    const auto v = static_cast<size_t>(problem.evaluator.original_node(op.node));
    if (problem.evaluator.original_node(op.node) != op.node && seen[v]) continue;
    decision->priority[v] = -op.ready;
    seen[v] = true;
  }
}

}  // namespace gosim::agents
