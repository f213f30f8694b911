// Warm starts for search agents: the decisions of a few one-shot agents
// (e.g. single_device and m_etf) that a search evaluates first, so that it
// never ends worse than the heuristics it was seeded with. Their evaluations
// are charged to the search's budget.
#ifndef GOSIM_AGENTS_WARM_START_H_
#define GOSIM_AGENTS_WARM_START_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/search_tracker.h"
#include "core/yaml.h"

namespace gosim::agents {

// One agent of a warm start: a one-shot agent's name and the options it is
// built with (a YAML mapping; null = its defaults).
struct WarmStartAgent {
  std::string name;
  YAML::Node options;
  std::string file;  // where `options` were written, for error messages
  std::string path;
  // Same agent, same options (compared as written YAML).
  bool operator==(const WarmStartAgent& other) const;
};

// What user-facing search agents (brkga, random_search) start from by
// default: the trivial decision and one memory-aware heuristic.
const std::vector<std::string>& DefaultWarmStart();

// Reads the `warm_start` option of agent `owner`: a list whose entries are
// one-shot agent names or mappings {agent: NAME, options: {...}} (e.g.
// {agent: human_expert, options: {exclude_devices: [cpu0]}}, the expert as
// a table runs it). Unknown names, search agents and invalid options are
// ConfigErrors (the options are checked by building the agent). `fallback`
// names when the key is absent; [] turns warm starting off.
std::vector<WarmStartAgent> ParseWarmStart(YamlMap& options, const std::string& owner,
                                           const std::vector<std::string>& fallback);

struct WarmStartSeed {
  std::string agent;
  AgentResult result;  // best decision and its evaluation
};

struct WarmStartResult {
  std::vector<WarmStartSeed> seeds;  // in the order named; agents that failed are skipped
  int64_t evaluations = 0;           // simulator evaluations the seeds cost
  double wall_seconds = 0.0;
};

// Runs each agent with its options and a budget of one evaluation, in order, while fewer than
// `max_evaluations` have been spent (so the seeds never cost more than the search's own budget; the agents
// left over are not run). An agent that cannot handle the graph (an Error,
// e.g. no expert rules) is skipped with a warning naming `owner`.
// When `agents` is not empty and every seed is out of memory, the memory-
// balancing partitioners metis and scotch are tried next (unless named
// already), and then the memory repair (agents/repair.h) of the seeds, best
// score first, with at most a quarter of what is left: a feasible result
// joins the seeds ("metis", "scotch", "repair:single_device"), so a search
// starts from a decision that fits before it draws random ones.
WarmStartResult RunWarmStart(const std::string& owner, const std::vector<WarmStartAgent>& agents,
                             const Problem& problem, int64_t max_evaluations);

// Charges a warm start's evaluations to `tracker` and records its seeds'
// decisions (Record counts one evaluation per seed, the rest is charged).
void RecordWarmStart(const WarmStartResult& warm, SearchTracker& tracker);

// The last resort of an agent that samples decisions (GO, REGAL): while it
// has no feasible decision, it keeps RescueReserve(budget) evaluations for
// RescueInfeasible, which, when the tracker's best decision is out of
// memory, spends what is left on the partitioners metis and scotch (and
// their repair, as RunWarmStart falls back), then on the pipeline agent's
// contiguous stages and their memory repair (agents/repair.h, at most 64
// evaluations, two kept back), then on the repair of the best decision, every
// evaluation charged and recorded. Returns true when the tracker then holds
// a feasible decision. A run that found one before never reaches it, so
// its result is what it was without the reserve.
int64_t RescueReserve(int64_t budget_evaluations);
bool RescueInfeasible(const std::string& owner, SearchTracker& tracker);

// Gives `decision` (which has no priorities) the op priorities that
// reproduce its FIFO schedule: minus each op's ready time in a simulation of
// the decision. FIFO runs the earliest-ready op first, ties by lower id, as
// priority order does for equal priorities, so the schedule is the same,
// except in a pipeline (SimOptions::micro_batches > 1), where one priority
// per node cannot order its copies as FIFO did: there the first
// micro-batch's order is taken, and the decision may score differently
// (OrderExplicitIsExact). One simulator evaluation, which the caller
// charges to its budget.
void MakeOrderExplicit(const Problem& problem, sim::Decision* decision);

// Whether MakeOrderExplicit's decision scores as the FIFO one did: true
// unless the Evaluator simulates a pipeline.
bool OrderExplicitIsExact(const Problem& problem);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_WARM_START_H_
