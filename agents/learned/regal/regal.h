// REGAL (Paliwal et al., "REGAL: Transfer Learning for Fast Optimization of
// Computation Graphs", ICLR 2020; figures in ../shared/PAPERS.md).
//
// A GraphSAGE policy (common/gnn.h) maps every node to categorical
// distributions over quantized Beta parameters: for each of the node's
// devices + 1 genes (one device affinity per device, then the scheduling
// priority; Sec. 3 of the paper, the chromosome of agents/brkga/chromosome.h)
// an alpha and a beta, each chosen among `levels`. With `placement_genes`
// off the policy decides the priority gene only and the device affinities
// stay uniform (the paper's "scheduling only" ablation, which kept nearly all
// of REGAL's gain). With `memory_features` the GNN also reads four per-node
// memory features (RegalMemoryFeatures); with `skip_features` the head reads
// the input features beside the GNN's embedding. With
// `memory_priority_feature` off the first memory feature (the freed share
// over the allocated bytes, the input of the hand-made priority bias of
// docs/RESULTS.md) is left out, an ablation. With `graph_agnostic` the policy
// is REGAL's control GAS (Paliwal et al. 2020, Table 1): no GNN and no
// features, the head reads a constant, so every node of every graph gets
// the same learned distributions; it is trained exactly as REGAL is.
// BRKGA (agents/brkga/)
// then draws its initial population and every generation's mutants from
// those Beta distributions (a BetaSampler) instead of uniformly. Tensor
// (transfer) genes keep Beta(1, 1) (docs/DEVIATIONS.md).
//
// Training (TrainRegal, `gosim train` with `agent: regal`): REINFORCE
// (Sec. 4). Each step takes one training graph, samples `samples` actions
// from the policy, runs one BRKGA per action with the training budget, and
// rewards each with the relative improvement of its best objective over
// BRKGA with uniform keys at the same budget and the same BRKGA seed:
//   reward = (uniform - regal) / uniform.
// The baseline is the mean over the step's samples (of the rewards, or with
// `advantage_reference: mean` of the improvements over the step's mean
// uniform run; `normalize_advantage` divides by their standard deviation).
// Every `valid_every` steps the policy, decoded as `decode`, is scored on the
// validation graphs and the best one is kept as best.pt (model selection on
// the validation split); the test split is never trained on (zero-shot) and
// is scored only by the Table 1 evaluation.
//
// Inference (agent `regal`): loads a checkpoint, turns the policy's output
// into one Beta per gene (`decode`: expected or most likely levels) and runs
// BRKGA with the problem's budget.
#ifndef GOSIM_AGENTS_LEARNED_REGAL_REGAL_H_
#define GOSIM_AGENTS_LEARNED_REGAL_REGAL_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/brkga/brkga.h"
#include "agents/brkga/sampler.h"
#include "agents/builtin.h"
#include "agents/learned/common/gnn.h"
#include "agents/learned/common/train.h"

namespace gosim::agents::learned {

struct RegalPolicyOptions {
  GnnOptions gnn;
  int32_t num_devices = 2;  // the policy's output size depends on it
  // Quantized Beta parameter values the policy chooses from (> 0).
  std::vector<double> levels = {0.25, 0.5, 1.0, 2.0, 4.0, 8.0};
  // Whether the policy decides the device affinities too (else only the
  // priority gene; affinities keep Beta(1, 1)).
  bool placement_genes = true;
  // Whether the GNN reads RegalMemoryFeatures (gnn.extra_features is then
  // memory_feature_count()).
  bool memory_features = false;
  // With memory_features: whether the first of them (the freed share over
  // the allocated bytes) is read; false leaves kRegalMemoryFeatures - 1.
  bool memory_priority_feature = true;
  // GAS: the policy sees no graph (no GNN, no features; a constant input),
  // so its distributions are the same for every node of every graph.
  bool graph_agnostic = false;
  // Whether the head also reads the input float features directly (a skip
  // connection around the GNN), so that per-node outputs can follow a node's
  // own features at any scale without passing through the L2-normalized
  // embeddings.
  bool skip_features = false;

  int32_t genes_per_node() const { return (placement_genes ? num_devices : 0) + 1; }
  // Memory features the policy reads (gnn.extra_features): 0, or
  // kRegalMemoryFeatures with or without the priority one.
  int32_t memory_feature_count() const;
  // Index of the priority gene among a node's genes.
  int32_t priority_index() const { return placement_genes ? num_devices : 0; }
  // Everything the parameter shapes and the meaning of the outputs depend on.
  std::string Signature() const;
  // The inverse of Signature(); StateError naming `source` when malformed.
  static RegalPolicyOptions FromSignature(const std::string& signature, const std::string& source);
};

// Per-node memory features (scale-free, not standardized), in column order:
//   log((freed + 1) / (allocated + 1)): `allocated` = the node's output
//     bytes, `freed` = the bytes of its data inputs, each divided by the
//     number of consumer nodes of that tensor (the share that running the
//     node releases on average);
//   log((in + 1) / (allocated + 1)) with `in` all bytes of its data inputs;
//   log((last + 1) / (allocated + 1)) with `last` the bytes of the inputs
//     whose consumer with the highest id (latest in topological order) it is;
//   log(1 + consumers): consumer nodes of its outputs.
// These are what a memory-aware list scheduler weighs (run first what frees
// more than it allocates); REGAL's own feature list is not in our sources.
inline constexpr int kRegalMemoryFeatures = 4;
std::vector<float> RegalMemoryFeatures(const graphs::Graph& graph);  // [n x kRegalMemoryFeatures]

// The policy's input for `graph`: the common node features, plus the memory
// features when `options.memory_features` (all but the first without
// `options.memory_priority_feature`).
GraphTensors RegalTensors(const graphs::Graph& graph, const RegalPolicyOptions& options);

class RegalPolicyImpl : public torch::nn::Module {
 public:
  explicit RegalPolicyImpl(const RegalPolicyOptions& options);
  // Log-probabilities [n x genes_per_node x 2 x levels] (dim 2: alpha, beta).
  torch::Tensor forward(const GraphTensors& graph);
  const RegalPolicyOptions& options() const { return options_; }

 private:
  RegalPolicyOptions options_;
  GraphSage gnn_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(RegalPolicy);

// One action: a level index per (node, gene, alpha|beta), flattened in the
// order of the policy's output.
using RegalAction = std::vector<int64_t>;

// The BetaSampler of per-(node, gene) parameters `parameters` (alpha, beta
// pairs in the order of the policy's output) for a chromosome of `layout`;
// transfer genes Beta(1, 1). DecisionError when the sizes do not fit.
brkga::BetaSampler MakeSampler(const std::vector<double>& parameters, const RegalPolicyOptions& options,
                               const brkga::ChromosomeLayout& layout);
// The level values an action picks.
std::vector<double> ActionParameters(const RegalAction& action, const RegalPolicyOptions& options);
// The most likely level of every parameter.
RegalAction GreedyAction(const torch::Tensor& log_probs);
// Inference: "greedy" = the most likely levels; "mean" = each parameter's
// expected value under the policy (moves smoothly as training shifts
// probability, where the argmax may stay put).
std::vector<double> PolicyParameters(const torch::Tensor& log_probs, const RegalPolicyOptions& options,
                                     const std::string& decode);

// Trainer of `gosim train` for `agent: regal` (config keys in
// configs/experiments/regal_train.yaml).
void TrainRegal(const TrainRequest& request);

// Registers agent `regal` and its trainer.
void RegisterRegal(const RegisterFn& add);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_REGAL_REGAL_H_
