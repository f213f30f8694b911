#include "agents/warm_start.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "agents/repair.h"
#include "agents/static_costs.h"
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
// Tried in this order when every named seed is out of memory.
constexpr const char* kFallbackPartitioners[] = {"metis", "scotch"};
// Simulator evaluations one seed's memory repair may use.
constexpr int64_t kRepairEvaluations = 64;
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

namespace {

// Runs one one-shot agent with a budget of one evaluation and appends its
// decision to `out` (skipped with a warning when it cannot handle the graph).
void RunSeed(const std::string& owner, const WarmStartAgent& spec, const Problem& problem,
             WarmStartResult& out) {
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
    if (r.best.placement.size() != static_cast<size_t>(problem.graph.num_nodes())) return;
    out.seeds.push_back({spec.name, std::move(r)});
  } catch (const Error& e) {  // e.g. no expert rules for this graph: start without it
    GOSIM_LOG(Warn) << owner << ": warm start from " << spec.name << " skipped: " << e.what();
  }
}

bool AnyFeasible(const WarmStartResult& out) {
  return std::any_of(out.seeds.begin(), out.seeds.end(),
                     [](const WarmStartSeed& s) { return s.result.best_evaluation.feasible; });
}

// Every named seed ran out of memory: the partitioners, which balance memory
// across devices, and then the memory repair of the seeds (best score first),
// before the search falls back on its random starts (docs/AGENTS.md, "Warm
// starts").
void FallBack(const std::string& owner, const std::vector<WarmStartAgent>& named, const Problem& problem,
              int64_t max_evaluations, WarmStartResult& out) {
  GOSIM_LOG(Info) << owner << ": every warm start is out of memory; trying metis, scotch and memory repair";
  const std::vector<std::string> registered = AgentNames();
  for (const char* partitioner : kFallbackPartitioners) {
    if (out.evaluations >= max_evaluations) return;
    const bool listed = std::any_of(named.begin(), named.end(),
                                    [&](const WarmStartAgent& a) { return a.name == partitioner; });
    if (listed || std::find(registered.begin(), registered.end(), partitioner) == registered.end()) continue;
    RunSeed(owner, {partitioner, YAML::Node(), "", ""}, problem, out);
    if (AnyFeasible(out)) return;
  }
  if (problem.cluster.num_devices() < 2) return;
  std::vector<size_t> order(out.seeds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto score = [&](size_t i) {
    return problem.objective.Score(out.seeds[i].result.best_evaluation, problem.cluster);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score(a) < score(b); });
  // A quarter of what is left, at most kRepairEvaluations per seed.
  const int64_t repair_budget = std::max<int64_t>(1, (max_evaluations - out.evaluations) / 4);
  const int64_t repair_end = out.evaluations + repair_budget;
  const StaticCosts costs(problem.evaluator);
  for (size_t i : order) {
    if (out.evaluations >= repair_end) return;
    RepairOptions repair;
    repair.keep_colocation = problem.evaluator.options().enforce_colocation;
    repair.max_evaluations = std::min<int64_t>(kRepairEvaluations, repair_end - out.evaluations);
    const AgentResult& seed = out.seeds[i].result;
    RepairResult r = RepairMemory(
        problem.graph, costs, seed.best,
        [&](const sim::Decision& d) { return problem.evaluator.Evaluate(d); }, repair, seed.best_evaluation);
    out.evaluations += r.evaluations;
    if (!r.feasible) continue;
    AgentResult repaired;
    repaired.best = std::move(r.decision);
    repaired.best_evaluation = r.evaluation;
    repaired.best_objective = problem.objective.Score(r.evaluation, problem.cluster);
    repaired.evaluations = r.evaluations;
    out.seeds.push_back({"repair:" + out.seeds[i].agent, std::move(repaired)});
    return;
  }
}

}  // namespace

WarmStartResult RunWarmStart(const std::string& owner, const std::vector<WarmStartAgent>& agents,
                             const Problem& problem, int64_t max_evaluations) {
  const auto start = std::chrono::steady_clock::now();
  WarmStartResult out;
  for (const WarmStartAgent& spec : agents) {
    if (out.evaluations >= max_evaluations) break;
    RunSeed(owner, spec, problem, out);
  }
  if (!agents.empty() && !AnyFeasible(out) && out.evaluations < max_evaluations)
    FallBack(owner, agents, problem, max_evaluations, out);
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void RecordWarmStart(const WarmStartResult& warm, SearchTracker& tracker) {
  tracker.Charge(warm.evaluations - static_cast<int64_t>(warm.seeds.size()));
  for (const WarmStartSeed& seed : warm.seeds) tracker.Record(seed.result.best, seed.result.best_evaluation);
}

int64_t RescueReserve(int64_t budget_evaluations) {
  // The two partitioners, the pipeline's decision and its repair, never
  // more than a quarter of the budget (a small budget keeps its samples).
  return std::min<int64_t>(kRepairEvaluations + 3, budget_evaluations / 4);
}

bool RescueInfeasible(const std::string& owner, SearchTracker& tracker) {
  if (tracker.has_best() && tracker.best_evaluation().feasible) return true;
  const Problem& problem = tracker.problem();
  if (!tracker.has_best() || tracker.Done() || problem.cluster.num_devices() < 2) return false;
  GOSIM_LOG(Info) << owner << ": no feasible decision; trying metis, scotch, pipeline and the memory repair";
  RepairOptions repair;
  repair.keep_colocation = problem.evaluator.options().enforce_colocation;
  const auto repair_from = [&](const sim::Decision& start, const sim::Evaluation& evaluation, int64_t keep) {
    repair.max_evaluations = std::min<int64_t>(kRepairEvaluations, tracker.Remaining() - keep);
    if (repair.max_evaluations <= 0) return false;
    return RepairMemory(
               problem.graph, StaticCosts(problem.evaluator), start,
               [&](const sim::Decision& d) { return tracker.Evaluate(d); }, repair, evaluation)
        .feasible;
  };
  // The partitioners first (one evaluation each; they balance memory), with
  // RunWarmStart's repair of them when both are out of memory: on the bench
  // suite's 14 valid models with 30% of one GPU's peak per device they fit
  // in one evaluation, the pipeline's stages in one to five.
  const std::vector<WarmStartAgent> partitioners = {{"metis", YAML::Node(), "", ""},
                                                    {"scotch", YAML::Node(), "", ""}};
  RecordWarmStart(RunWarmStart(owner, partitioners, problem, tracker.Remaining()), tracker);
  if (tracker.best_evaluation().feasible) return true;
  if (tracker.Done()) return false;
  // Then contiguous stages balanced by time under memory (the pipeline
  // agent) and their repair, keeping two evaluations back.
  const std::vector<WarmStartAgent> stages = {{"pipeline", YAML::Node(), "", ""}};
  const WarmStartResult staged = RunWarmStart(owner, stages, problem, 1);
  RecordWarmStart(staged, tracker);
  if (tracker.best_evaluation().feasible) return true;
  if (!staged.seeds.empty() &&
      repair_from(staged.seeds.front().result.best, staged.seeds.front().result.best_evaluation, 2))
    return true;
  if (tracker.Done()) return false;
  // Then the repair of the best decision with what is left.
  return repair_from(tracker.best(), tracker.best_evaluation(), 0);
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

bool OrderExplicitIsExact(const Problem& problem) {
  return problem.evaluator.options().micro_batches <= 1;
}

}  // namespace gosim::agents
