// The `go` agent and its pre-training (`gosim train`, `agent: go`): GO
// (Zhou et al. 2020, "Transferable Graph Optimizers for ML Compilers"), the
// network of go_model.h trained with PPO (Schulman et al. 2017) against the
// simulator.
//
// PPO step (Sec. 3.5 of GO: PPO with a value baseline): sample K decisions
// of one graph in one forward pass each (no gradients), evaluate them in one
// Evaluator::EvaluateBatch call, then run `epochs` passes of the clipped
// surrogate objective over that batch, with the value baseline's squared
// error and an entropy bonus. Reward: -log(cost), cost = score / reference
// (reference: the first feasible score seen on that graph, so rewards are
// comparable across graphs); an infeasible decision (out of memory) costs
// `infeasible_penalty` (a multiple of the reference). The clipped ratio is
// taken per node (each node's decision is one action sharing the sample's
// advantage; docs/DEVIATIONS.md), or per action group when placement is
// grouped (`model: {action_groups: scope}`).
//
// Agent options (configs/agents/go.yaml, which equals the built-in
// defaults: tests/learned/go_options_test.cc): `checkpoint` (a pre-trained
// network; by default the committed configs/checkpoints/go.pt, run
// zero-shot; "" = a fresh random network), `evaluations` (the fine-tuning
// budget when the problem sets none; 0 or 1: zero-shot, one forward pass and
// one evaluation), `heads` (placement is required; [placement] alone is the
// GDP-style variant), the network's shape when there is no checkpoint, and
// the PPO settings. `preset: paper` starts from GO's paper setting instead
// (a fresh network, per-node placement, priority and fusion heads); keys
// given beside it still apply.
#ifndef GOSIM_AGENTS_LEARNED_GO_GO_AGENT_H_
#define GOSIM_AGENTS_LEARNED_GO_GO_AGENT_H_

#include <cstdint>
#include <string>

#include "agents/agent.h"
#include "agents/builtin.h"
#include "agents/learned/go/go_model.h"
#include "agents/warm_start.h"
#include "core/yaml.h"

namespace gosim::agents::learned::go {

struct PpoOptions {
  int64_t samples = 8;          // decisions per PPO step
  int64_t epochs = 4;           // passes over each batch
  double clip = 0.2;            // clipped ratio range [1 - clip, 1 + clip]
  double learning_rate = 1e-3;  // Adam
  double entropy_weight = 0.01;
  double value_weight = 0.5;
  double grad_clip = 1.0;            // global norm; 0 = off
  double infeasible_penalty = 10.0;  // cost of an infeasible decision, in references
  bool operator==(const PpoOptions&) const = default;
};

// The committed pre-trained network (configs/checkpoints/README.md), from
// the repository root: the `go` agent's default.
inline constexpr char kGoDefaultCheckpoint[] = "configs/checkpoints/go.pt";

// The `go` agent's built-in network settings: the runtime settings the
// committed checkpoint was trained with (placement head alone, one
// placement per scope group, segments of 256 nodes) on GoModelOptions'
// shape (used only for a fresh network; a checkpoint brings its own).
GoModelOptions DefaultAgentModel();

struct GoAgentOptions {
  std::string checkpoint = kGoDefaultCheckpoint;  // "": fresh network
  int64_t evaluations = 0;                        // fine-tuning budget; 0 or 1: zero-shot
  GoModelOptions model = DefaultAgentModel();     // shape (ignored when a checkpoint gives it) and heads
  PpoOptions ppo;
  int64_t torch_threads = 1;  // 0: leave LibTorch's setting
  // Role sweep: before PPO, up to this many single role moves from the
  // zero-shot decision, in the order of GoPolicyImpl::RankRoleMoves, are
  // evaluated (one evaluation each, from the same budget); 0: none.
  int64_t role_sweep = 0;
  // The sweep's roles: RoleKey::kScope (graph.roles, the roles of
  // `role_moves`) or kName (keyed by name, one op of each layer; built for
  // the sweep).
  RoleKey role_sweep_by = RoleKey::kScope;
  // Warm start by imitation (off by default): the decisions of these
  // one-shot agents are evaluated, then each as action groups (every group
  // on the device most of its ops have; all charged to the budget); when
  // the best of those beats the zero-shot decision, the network is trained
  // for `imitation_steps` Adam steps (PPO's learning rate) to take it,
  // before the role sweep and PPO. Both or neither: a warm start without
  // imitation steps is a ConfigError.
  std::vector<WarmStartAgent> warm_start;
  int64_t imitation_steps = 0;
  // With a warm start: imitation stops early once the policy's mean
  // entropy per action falls below this fraction of the network's before
  // imitation (0 = never; in [0, 1)), so that PPO keeps some exploration.
  double imitation_entropy_floor = 0.0;
  // True when the options set the network's shape (model.gnn_hidden, ...)
  // other than the defaults': with a checkpoint of another shape that is
  // refused, since the checkpoint's shape would silently win.
  bool shape_given = false;

  // GO as the paper runs it (`preset: paper`): a fresh network, one
  // placement per node, placement, priority and fusion heads, GoModelOptions'
  // defaults.
  static GoAgentOptions Paper();
  static GoAgentOptions Parse(YamlMap& options);
  bool operator==(const GoAgentOptions&) const = default;
};

// Reads the network shape and PPO keys shared by the agent and the trainer
// (`model: {...}`, `ppo: {...}`, `heads: [...]`).
// Keys absent from `model` keep `defaults`' values.
GoModelOptions ParseModelOptions(YamlMap& model, const GoModelOptions& defaults = {});
void ParseHeads(YamlMap& options, GoModelOptions* model);
PpoOptions ParsePpoOptions(YamlMap& ppo);

// The model options written in signature `signature` (GoModelOptions::
// Signature); StateError when it is not a GO signature.
// The settings a signature does not fix (segment, heads in use, action
// groups, moves, temperature: the runtime settings) are `runtime`'s.
GoModelOptions ModelOptionsFromSignature(const std::string& signature, const std::string& source,
                                         const GoModelOptions& runtime = {});

// Sample 0 of `actions` with the members of role group `role` of `roles`
// (graph.roles when null) moved to `device`; "fuse with the producer"
// choices whose producer ends on another device are dropped (a fusion
// group runs on one device). The role sweep's candidates.
GoActions MoveRole(const GoGraph& graph, const GoActions& actions, int64_t role, int64_t device,
                   const RoleGrouping* roles = nullptr);

// Turns sample `index` of `actions` into a decision for `graph`.
sim::Decision DecodeDecision(const GoGraph& graph, const GoActions& actions, int64_t index);

// One PPO update on a batch of K decisions already sampled from `policy`.
// rewards: [K]; old_log_prob: [K x n] (detached); old_value: [K]. Returns
// the mean loss of the last epoch.
struct PpoStats {
  double loss = 0.0;
  double entropy = 0.0;           // mean entropy per action (nats), last epoch
  double sampling_entropy = 0.0;  // the same, first epoch: the policy that drew the batch
  double clipped_fraction = 0.0;
};
PpoStats PpoUpdate(GoPolicy& policy, torch::optim::Optimizer& optimizer, const GoGraph& graph,
                   int64_t devices, const GoActions& actions, const torch::Tensor& old_log_prob,
                   const torch::Tensor& old_value, const torch::Tensor& rewards, const PpoOptions& options);

// Zero-shot or fine-tuned optimization of `problem` (extra: zero_shot_objective,
// ppo_steps, forward_seconds of the zero-shot pass).
AgentResult RunGo(const Problem& problem, const GoAgentOptions& options, const ProgressFn& progress = {});

// Registers the `go` agent and the `go` trainer.
void RegisterGo(const RegisterFn& add);

}  // namespace gosim::agents::learned::go

#endif  // GOSIM_AGENTS_LEARNED_GO_GO_AGENT_H_
