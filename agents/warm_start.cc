#include "agents/warm_start.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/error.h"
#include "core/log.h"

namespace gosim::agents {

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

std::vector<std::string> ParseWarmStart(YamlMap& options, const std::string& owner,
                                        const std::vector<std::string>& fallback) {
  if (!options.Has("warm_start")) return fallback;
  const auto names = options.Get<std::vector<std::string>>("warm_start", {});
  const std::vector<std::string> valid = AgentNames();
  for (const std::string& n : names) {
    if (std::find(valid.begin(), valid.end(), n) == valid.end() ||
        std::find(kSearchAgents.begin(), kSearchAgents.end(), n) != kSearchAgents.end()) {
      options.Fail(
          "warm_start", owner + ": warm_start names unknown or unsuitable agent '" + n + "'",
          "use one-shot baselines such as single_device, human_expert, m_etf, metis, heft; [] for none");
    }
  }
  return names;
}

WarmStartResult RunWarmStart(const std::string& owner, const std::vector<std::string>& agents,
                             const Problem& problem) {
  const auto start = std::chrono::steady_clock::now();
  WarmStartResult out;
  for (const std::string& name : agents) {
    YamlMap no_options = YamlMap::Root(YAML::Node(YAML::NodeType::Map), "warm_start");
    std::unique_ptr<Agent> agent = MakeAgent(name, no_options);
    Problem one_shot = problem;
    one_shot.budget.evaluations = 1;
    one_shot.budget.wall_seconds = 0.0;
    try {
      AgentResult r = agent->Optimize(one_shot);
      out.evaluations += r.evaluations;
      if (r.best.placement.size() != static_cast<size_t>(problem.graph.num_nodes())) continue;
      out.seeds.push_back({name, std::move(r)});
    } catch (const Error& e) {  // e.g. no expert rules for this graph: start without it
      GOSIM_LOG(Warn) << owner << ": warm start from " << name << " skipped: " << e.what();
    }
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace gosim::agents
