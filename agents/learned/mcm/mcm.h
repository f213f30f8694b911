// The multi-chip (MCM) partitioner: a graph policy proposes a chiplet per
// node, a constraint solver repairs the proposal to the nearest feasible
// partition, and the simulated throughput of the repaired partition is the
// reward (../shared/PAPERS.md, "Multi-chip partitioning with RL + constraint
// solver"; docs/AGENTS.md, "mcm"; deviations in docs/DEVIATIONS.md).
//
// The partition is a pipeline: the accelerators are ordered into stages
// along a path through the machine (StageOrder: from the first device, each
// next stage is the nearest unvisited device by route latency, lowest index
// on ties; on a mesh a snake through the rows), and a unit (a colocation
// group, or a node) on stage s runs on that stage's device. The solver
// (agents/stage_repair.h, COIN-OR CBC) keeps each stage's weights within
// its device memory (times `memory_fraction`, the rest left to activations
// in flight) and, with `acyclic`, every edge going forward. The simulator
// judges every repaired partition (an out-of-memory one is infeasible).
//
// Policy: GraphSAGE (common/gnn.h) over the common node features and a
// linear head to `bins` logits per node (positions along the pipeline,
// relative: bin b means stage floor(b K / bins) on a K-stage machine, so one
// policy serves meshes of any size); a unit's logits are its members' mean.
// Training: REINFORCE over a batch of samples per step, advantages
// normalized within the batch, reward -log(objective / reference) (the
// reference: the first feasible sample on that graph), an infeasible
// sample -log(infeasible_penalty), with an entropy bonus. With `reinforce:
// repaired` (default) the log-probability is of the repaired partition's
// bins (the action whose reward was measured), with `proposal` of the
// sampled proposal.
//
// Agent `mcm`: loads a pre-trained checkpoint (`checkpoint`, trained with
// `gosim train` `agent: mcm` on a train split) or starts from scratch, and
// fine-tunes on the problem's graph within its evaluation budget, returning
// the best partition seen. Controls as options: `solver: none` (the policy
// alone, invalid samples penalised), `policy: uniform` (the solver alone
// from uniformly random proposals, nothing learned).
#ifndef GOSIM_AGENTS_LEARNED_MCM_MCM_H_
#define GOSIM_AGENTS_LEARNED_MCM_MCM_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/builtin.h"
#include "agents/learned/common/gnn.h"
#include "agents/learned/common/train.h"
#include "agents/stage_repair.h"

namespace gosim::agents::learned::mcm {

struct McmPolicyOptions {
  GnnOptions gnn;
  int32_t bins = 16;  // pipeline positions the head chooses among
  std::string Signature() const;
  static McmPolicyOptions FromSignature(const std::string& signature, const std::string& source);
};

class McmPolicyImpl : public torch::nn::Module {
 public:
  explicit McmPolicyImpl(const McmPolicyOptions& options);
  // [n x bins] logits.
  torch::Tensor forward(const GraphTensors& graph);
  const McmPolicyOptions& options() const { return options_; }

 private:
  McmPolicyOptions options_;
  GraphSage gnn_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(McmPolicy);

// The accelerators of `cluster` in pipeline order (see above).
std::vector<int32_t> StageOrder(const sim::Cluster& cluster);

struct McmOptions {
  std::string checkpoint;  // pre-trained policy; empty = from scratch
  int64_t evaluations = 1000;
  int32_t samples_per_step = 16;
  double learning_rate = 1e-3;
  double entropy_weight = 0.01;
  double infeasible_penalty = 10.0;    // an infeasible sample scores as this many times the reference
  std::string solver = "cbc";          // cbc | none
  std::string policy = "gnn";          // gnn | uniform
  std::string reinforce = "repaired";  // repaired | proposal
  bool acyclic = true;
  double memory_fraction = 0.9;
  double solver_time_limit = 1.0;
  int64_t torch_threads = 0;
  McmPolicyOptions net;  // for a policy from scratch (a checkpoint brings its own)

  static McmOptions Parse(YamlMap& options);
};

// Trainer of `gosim train` for `agent: mcm` (configs/experiments/mcm_train.yaml).
void TrainMcm(const TrainRequest& request);

// Registers agent `mcm` and its trainer.
void RegisterMcm(const RegisterFn& add);

}  // namespace gosim::agents::learned::mcm

#endif  // GOSIM_AGENTS_LEARNED_MCM_MCM_H_
