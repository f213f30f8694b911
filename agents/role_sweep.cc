// role_sweep: GO's role sweep without a network, a non-learned control for
// the GO tables (agents/learned/go/go_agent.cc, "The role sweep").
//
// The moves are GO's: a role group (agents/roles.h, MakeRoleGroups, the
// same code GO's sweep uses: one kind of op in every repeated layer, keyed
// by scope or by name, spread over two or more scope groups) sent to one
// device, every other node unchanged. GO ranks these moves by its
// network's logits and evaluates the first k from its zero-shot decision;
// this agent has no network, so it starts from the best of its warm-start
// decisions (`warm_start`, default [single_device]: GO's committed network
// decides one GPU zero-shot on most graphs) and climbs: each round
// evaluates every move from the current decision (devices ascending, and
// for each the roles in order of their first node, skipping the device all
// of a role's members are on already), in one batch, and takes the best if
// it improves; it stops at a decision no move improves, or when the budget
// is spent.
// Every evaluation is counted: the warm start's and each move's.
//
// Options (configs/agents/role_sweep.yaml): `warm_start` (one-shot agents
// whose best decision is the start), `roles_by` (scope or name, as GO's
// `role_sweep_by`), `evaluations` (the budget when the problem sets none).
#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>

#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/roles.h"
#include "agents/search_tracker.h"
#include "agents/warm_start.h"
#include "core/error.h"

namespace gosim::agents {
namespace {

struct RoleSweepOptions {
  std::vector<WarmStartAgent> warm_start;
  RoleKey roles_by = RoleKey::kName;
  int64_t evaluations = 1000;
};

// Drops the fusion groups that a move left on two devices (a fused group
// runs on one device).
void DissolveSplitFusion(sim::Decision& d) {
  if (d.fusion_group.empty()) return;
  std::unordered_map<int32_t, int32_t> device;
  std::vector<int32_t> split;
  for (size_t v = 0; v < d.fusion_group.size(); ++v) {
    const int32_t g = d.fusion_group[v];
    if (g < 0) continue;
    const auto [it, inserted] = device.emplace(g, d.placement[v]);
    if (!inserted && it->second != d.placement[v]) split.push_back(g);
  }
  for (int32_t& g : d.fusion_group)
    if (std::find(split.begin(), split.end(), g) != split.end()) g = -1;
}

class RoleSweepAgent : public Agent {
 public:
  explicit RoleSweepAgent(YamlMap& options) {
    options_.warm_start = ParseWarmStart(options, "role_sweep", {"single_device"});
    if (options_.warm_start.empty()) {
      options.Fail("warm_start", "the role sweep needs a start decision",
                   "name at least one one-shot agent, e.g. warm_start: [single_device]");
    }
    const std::string by = GetChoice(options, "roles_by", "name", {"scope", "name"});
    options_.roles_by = by == "scope" ? RoleKey::kScope : RoleKey::kName;
    options_.evaluations = GetInt(options, "evaluations", options_.evaluations, 1, int64_t{1} << 40);
    options.Finish();
  }
  std::string name() const override { return "role_sweep"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress, options_.evaluations);
    const WarmStartResult warm = RunWarmStart(name(), options_.warm_start, problem, tracker.Remaining());
    if (warm.seeds.empty()) {
      throw ConfigError("role_sweep: no warm-start agent gave a decision for this graph", {},
                        "name another one-shot agent in warm_start, e.g. single_device");
    }
    // The seeds' evaluations, their memory repair's included (Record counts one each).
    RecordWarmStart(warm, tracker);
    const double start_objective = tracker.best_objective();

    const NodePartition roles =
        MakeRoleGroups(problem.graph, MakeScopeGroups(problem.graph), options_.roles_by);
    std::vector<std::vector<int32_t>> members(static_cast<size_t>(roles.count));
    for (size_t v = 0; v < roles.id.size(); ++v)
      if (roles.id[v] >= 0) members[static_cast<size_t>(roles.id[v])].push_back(static_cast<int32_t>(v));
    const int32_t devices = problem.cluster.num_devices();

    int64_t rounds = 0, moves = 0;
    bool local_optimum = false;
    std::vector<sim::Decision> candidates;
    std::vector<sim::Evaluation> evaluations;
    while (!tracker.Done() && tracker.has_best() && !local_optimum) {
      const sim::Decision current = tracker.best();
      const double current_objective = tracker.best_objective();
      candidates.clear();
      // Device-major: every role to the first other device before any role
      // to the next one, so that a budget shorter than a round still tries
      // each role once (the devices of a preset are mostly alike).
      std::vector<int32_t> home(members.size(), -1);  // the device all of a role's members are on, or -1
      for (size_t r = 0; r < members.size(); ++r) {
        const int32_t first = current.placement[static_cast<size_t>(members[r].front())];
        const bool together = std::all_of(members[r].begin(), members[r].end(), [&](int32_t v) {
          return current.placement[static_cast<size_t>(v)] == first;
        });
        if (together) home[r] = first;
      }
      for (int32_t d = 0; d < devices; ++d) {
        for (size_t r = 0; r < members.size(); ++r) {
          if (home[r] == d) continue;  // no move
          sim::Decision moved = current;
          for (const int32_t v : members[r]) moved.placement[static_cast<size_t>(v)] = d;
          DissolveSplitFusion(moved);
          candidates.push_back(std::move(moved));
        }
      }
      if (candidates.empty()) break;
      candidates.resize(std::min<size_t>(candidates.size(), static_cast<size_t>(tracker.Remaining())));
      evaluations.assign(candidates.size(), sim::Evaluation{});
      tracker.EvaluateBatch(candidates, evaluations);
      moves += static_cast<int64_t>(candidates.size());
      ++rounds;
      // The tracker keeps the best; a round without improvement ends the climb.
      local_optimum = !(tracker.best_objective() < current_objective);
    }
    return tracker.Finish({{"start_objective", start_objective},
                           {"role_groups", static_cast<double>(roles.count)},
                           {"rounds", static_cast<double>(rounds)},
                           {"moves", static_cast<double>(moves)},
                           {"local_optimum", local_optimum ? 1.0 : 0.0}});
  }

 private:
  RoleSweepOptions options_;
};

}  // namespace

void RegisterRoleSweepAgent(const RegisterFn& add) {
  add(
      "role_sweep", [](YamlMap& o) { return std::make_unique<RoleSweepAgent>(o); },
      "GO's role sweep without a network: hill climbing over role moves (one kind of op in every layer to "
      "one "
      "device) from a warm start; the control of the GO tables");
}

}  // namespace gosim::agents
