// The GO policy network (Zhou et al. 2020, "Transferable Graph Optimizers for
// ML Compilers", Sec. 3): one forward pass gives a placement, a scheduling
// priority and a fusion decision for every node of a graph of any size.
//
//   1. GraphSAGE node embeddings (common/gnn.h), inductive (Sec. 3.1).
//   2. Scalable sequential attention (Sec. 3.2): the nodes in topological
//      order are cut into segments of `segment` nodes; every attention layer
//      of a segment attends to its own segment (causally) and to a cached,
//      gradient-stopped copy of that layer's input on the previous segment
//      (Transformer-XL segment-level recurrence, Dai et al. 2019), with
//      relative-position attention biases, so memory grows with the segment,
//      not with the graph.
//   3. Feature modulation (Sec. 3.3): the output of every attention and
//      feed-forward sublayer is scaled and shifted (FiLM) by vectors computed
//      from a graph embedding (the mean of the node embeddings), so that one
//      network serves many graphs.
//   4. Multi-task heads (Sec. 3.4): placement, then priority, then fusion;
//      each head has its own recurrent attention layer whose input is the
//      previous task's state plus an embedding of the previous task's
//      decision, so each task's decision conditions the next. The value
//      baseline is read from the graph embedding.
//
// Inputs besides GraphSAGE (docs/DEVIATIONS.md, "GO: learning in a small
// budget"): each node's topological position and the positions of its
// enclosing scopes (the first node of its scope prefix at depths 1-3, so a
// gradient op, which keeps its forward op's scope, sits beside its forward
// op), as raw values and Fourier features, join the GraphSAGE embedding
// before the attention trunk.
//
// Exploration (optional, `exploration_noise` > 0): every sampled decision
// draws one Gaussian perturbation of the placement logits (after NoisyNet,
// Fortunato et al. 2018), shared by all nodes of that decision: a random
// linear function of the node's normalized state and of its position
// features, a random device bias, and a random device preference per scope
// group (scope prefixes of 1 and 2 components, e.g. "encoder" and
// "encoder/layer_2"). A sample thus moves whole layers and regions of
// similar nodes together instead of scattering single nodes; the noise is
// part of the sample (GoActions::place_noise) and PPO re-scores each sample
// under its own noise. Greedy decisions use no noise.
//
// Colocation (`colocate`, default on): nodes of one colocation group (a
// variable and its optimizer update) take the device decided for the
// group's first node, as TensorFlow's placer enforces; only that node's
// placement counts in the log-probability and entropy.
//
// Group-level placement (`action_groups`, default `none` = GO's per-node
// decisions): the nodes are cut into action groups (scope groups such as a
// whole "encoder/layer_2", or contiguous topological chunks), the
// placement head's per-node logits are averaged over each group, and ONE
// device is drawn per group from that pooled categorical; its
// log-probability and entropy are the group's (carried by the group's
// first node; the other members add 0). Groups never split a colocation
// group. The network that computes the logits is unchanged, so a
// checkpoint serves either mode (docs/DEVIATIONS.md, "GO, group-level
// placement actions").
//
// Node moves (`node_moves` > 0, group mode only): after the group's device
// is drawn, every node (colocation leaders and free nodes) draws its own
// device from its per-node logits plus a stickiness bonus s on the group's
// device, so a single node can leave its group (HRL's final WaveNet
// placement, for one, moves only a few ops). s = log((D - 1) m / k) for D
// devices, m deciding nodes and k = `node_moves`: an untrained network
// (near-uniform node logits) moves about k nodes per decision, whatever the
// graph's size; the network learns to overcome s where moving pays. The
// group's device is part of the action (GoActions::group); a decision's
// log-probability is the group's plus every node's given its group.
//
// Role moves (`role_moves` > 0, scope groups only): between the groups'
// devices and the node moves, every role group (MakeRoleGrouping: e.g. the
// gradient ops of the skip convolutions of all of WaveNet's layers) draws
// "stay" (each member keeps its group's device) or a device that all its
// members move to. The device logits are the members' placement logits
// pooled (averaged) per device; the "stay" logit is the average over the
// members of each one's logit for its own group's device, plus
// s = log(D max(R - k, 1) / k) for D devices, R role groups and
// k = `role_moves`, so an untrained network (near-uniform logits) moves
// about k role groups per decision, and a network sure of its groups'
// devices keeps the roles with them. A move that no scope group and no
// single node can express (one kind of op in every layer) is then one
// action. The role's choice is part of the action (GoActions::role); its
// log-probability sits at the role's first node. With `role_calibration`
// the stickiness is one per role instead, set once per graph from the
// zero-shot pass (CalibrateRoles) so that every role moves with
// probability min(k / R, 1/2) at the start of fine-tuning whatever the
// network's confidence, and a "move" to the device all of a role's members
// are on already (no move at all) is masked; PPO then moves the logits as
// usual.
//
// Masking: devices >= the cluster's device count are masked out of the
// placement head (the network is built for `max_devices`); the fusion head
// may only fuse a node with its producer when the pair is eligible (a single
// producer with a single consumer, so the fused chains are always convex)
// and both are on the same device; the attention is causal within the
// segment and its memory.
#ifndef GOSIM_AGENTS_LEARNED_GO_GO_MODEL_H_
#define GOSIM_AGENTS_LEARNED_GO_GO_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agents/learned/common/gnn.h"
#include "agents/learned/go/go_graph.h"
#include "core/rng.h"
#include "graphs/graph.h"

namespace gosim::agents::learned::go {

struct GoModelOptions {
  GnnOptions gnn{.hidden = 64, .layers = 2, .op_embedding = 16, .normalize = true};
  int64_t model = 64;                // width of the attention layers
  int64_t heads = 4;                 // attention heads (model % heads == 0)
  int64_t layers = 2;                // shared attention layers before the task heads
  int64_t segment = 128;             // nodes per segment
  int64_t max_relative = 256;        // relative distances >= this share one bias
  int64_t max_devices = 8;           // placement head width; clusters may have fewer
  int64_t priority_levels = 8;       // quantized scheduling priority levels
  bool film = true;                  // feature modulation on/off (ablation)
  int64_t position_frequencies = 3;  // Fourier features per position input (sin, cos of pi 2^j p)
  double exploration_noise = 0.0;    // initial scale of the per-sample placement noise; 0 = none
  bool colocate = true;              // colocation groups share one placement (runtime setting)
  ActionGroups action_groups = ActionGroups::kNone;  // one placement per group (runtime setting)
  double node_moves = 0.0;   // group mode: nodes an untrained network moves off their group (runtime setting)
  double temperature = 1.0;  // every head samples from softmax(logits / temperature) (runtime setting)
  double role_moves = 0.0;   // scope groups: roles an untrained network moves (runtime setting)
  bool role_calibration = false;  // role moves: per-role stickiness set from the zero-shot pass (runtime)
  bool placement = true;          // which heads decide (placement-only: GDP-style)
  bool priority = true;
  bool fusion = true;

  // Stored in checkpoints; a checkpoint of another shape is refused.
  std::string Signature() const;
  bool operator==(const GoModelOptions&) const = default;
};

// One multi-head attention layer with Transformer-XL segment recurrence,
// relative-position biases, pre-norm residual sublayers and FiLM.
class RecurrentAttentionImpl : public torch::nn::Module {
 public:
  RecurrentAttentionImpl(int64_t model, int64_t heads, int64_t max_relative);
  // x: [B x L x d] (one segment), memory: [B x M x d] (may have M = 0; the
  // caller detaches it), gamma / beta: [B x 2 x d] FiLM parameters (or
  // undefined tensors: no modulation). Query i (position M + i) attends to
  // keys 0 .. M + i. Returns [B x L x d]. `fused`: the attention by
  // FusedRelativeAttention (fused_attention.h) and the linear layers by
  // ParallelLinear (common/parallel_linear.h), equal up to rounding.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& gamma,
                        const torch::Tensor& beta, bool fused = false);

  // The attention weights for the same inputs ([B x H x L x (M + L)]), for tests.
  torch::Tensor AttentionWeights(const torch::Tensor& x, const torch::Tensor& memory);
  int64_t max_relative() const { return max_relative_; }
  const torch::Tensor& relative_bias() const { return relative_bias_; }

 private:
  torch::Tensor Scores(const torch::Tensor& q, const torch::Tensor& k, int64_t m, int64_t l);
  int64_t model_;
  int64_t heads_;
  int64_t max_relative_;
  torch::nn::LayerNorm norm1_{nullptr};
  torch::nn::LayerNorm norm2_{nullptr};
  torch::nn::Linear qkv_{nullptr};
  torch::nn::Linear out_{nullptr};
  torch::nn::Linear ff1_{nullptr};
  torch::nn::Linear ff2_{nullptr};
  torch::Tensor relative_bias_;  // [heads x max_relative]
};
TORCH_MODULE(RecurrentAttention);

// Runs `layer` over the sequence x [B x n x d] segment by segment, each
// segment attending to the previous segment's (detached) input as memory.
// segment >= n gives plain causal full attention over the whole sequence.
torch::Tensor RunSegmented(RecurrentAttention& layer, const torch::Tensor& x, int64_t segment,
                           const torch::Tensor& gamma, const torch::Tensor& beta);

// Actions of B samples: [B x n] int64 each (undefined when the head is off).
struct GoActions {
  torch::Tensor device;
  torch::Tensor priority;
  torch::Tensor fuse;
  // Group mode: the device drawn per action group [B x G]; with node moves
  // a node's device may differ from its group's.
  torch::Tensor group;
  // Role moves: per role group [B x R], a device, or max_devices = "stay".
  torch::Tensor role;
  // Per-sample placement-head noise [B x max_devices x NoiseWidth()] when
  // the network explores with noise (sampled decisions only).
  torch::Tensor place_noise;
};

struct GoOutput {
  GoActions actions;
  torch::Tensor log_prob;  // [B x n]: sum over the active heads of log pi(action)
  torch::Tensor entropy;   // [B x n]: sum over the active heads of the entropy
  torch::Tensor value;     // [B]: the value baseline (same for every sample of a graph)
};

class GoPolicyImpl : public torch::nn::Module {
 public:
  explicit GoPolicyImpl(const GoModelOptions& options);

  // B = `samples` decisions for `graph` on a cluster of `devices` devices.
  // mode: kSample draws actions with `rng`; kGreedy takes the most likely
  // action of every head; kGiven scores `given` (PPO's re-evaluation).
  enum class Mode { kSample, kGreedy, kGiven };
  GoOutput forward(const GoGraph& graph, int64_t devices, int64_t samples, Mode mode, Rng* rng,
                   const GoActions* given = nullptr);
  const GoModelOptions& options() const { return options_; }
  // The current scale of the exploration noise (0 when off).
  double exploration_noise() const;
  // Noise values per sample and device for `graph`: state width + position
  // features + 1 (a device bias) + one per scope group of each depth.
  int64_t NoiseWidth(const GoGraph& graph) const;
  // Runtime settings that a checkpoint does not fix.
  void set_segment(int64_t segment) { options_.segment = segment; }
  // The action groups in use for `graph` (nullptr: per-node decisions).
  const ActionGrouping* Grouping(const GoGraph& graph) const;
  // The role groups in use for `graph` (nullptr: no role moves).
  const RoleGrouping* Roles(const GoGraph& graph) const;
  // Role calibration: sets graph->roles.stickiness so that, with the
  // groups on the devices of `home` (a decision of this network on
  // `graph`, e.g. its greedy one), each role draws a move with probability
  // min(k / R, 1/2) (k = `role_moves`, R role groups), however sure the
  // network is of its groups' devices. No-op without role moves.
  void CalibrateRoles(GoGraph* graph, const GoActions& home, int64_t devices);
  // The role groups' single moves from the placement `home` ([1 x n]
  // devices), most likely first: per role (MakeRoleGrouping, whether or
  // not `role_moves` is on) the device other than the one all its members
  // are on with the highest pooled placement logit, scored by that logit
  // minus the members' average logit for their own devices (the "stay"
  // logit without stickiness). For the role sweep of fine-tuning. `roles`:
  // graph.roles when null (else e.g. a grouping keyed by name).
  struct RoleMove {
    int64_t role = 0;
    int64_t device = 0;
    double score = 0.0;
  };
  std::vector<RoleMove> RankRoleMoves(const GoGraph& graph, const torch::Tensor& home, int64_t devices,
                                      const RoleGrouping* roles = nullptr);
  // Placement actions per sample: the number of groups when placement is
  // the only head and grouped without node moves, else the number of nodes
  // (PPO's per-action mean divides by it).
  int64_t ActionsPerSample(const GoGraph& graph) const;

  // PPO's gradient in memory bounded by one segment (an 80k-node graph does
  // not fit otherwise): re-scores `given` ([B x n] actions) segment by
  // segment and back-propagates `segment_loss(start, end, log_prob,
  // entropy)` ([B x (end - start)] each) right after every segment, then
  // `value_loss(value)` ([B]) together with the GraphSAGE embeddings, whose
  // gradient the segments accumulated. Since each segment's memory is
  // gradient-stopped, the parameter gradients are those of back-propagating
  // the sum of the losses through `forward(..., kGiven)` (tested). Returns
  // the sum of the losses. With action groups a group's pooled logits span
  // segments, so the placement trunk (shared layers and placement layer,
  // batch 1) runs twice: once without gradient for the pooled logits and
  // states, which the segments' losses see as leaves, then again segment by
  // segment, back-propagating the gradients the leaves accumulated; memory
  // stays bounded by a segment either way.
  using SegmentLossFn = std::function<torch::Tensor(int64_t start, int64_t end, const torch::Tensor& log_prob,
                                                    const torch::Tensor& entropy)>;
  using ValueLossFn = std::function<torch::Tensor(const torch::Tensor& value)>;
  double BackwardBySegment(const GoGraph& graph, int64_t devices, const GoActions& given,
                           const SegmentLossFn& segment_loss, const ValueLossFn& value_loss);

 private:
  // The network over the segments in topological order, every layer of a
  // segment before the next segment (each layer's memory is its input on
  // the previous segment), calling `on_segment(start, end, log_prob,
  // entropy)` after each. Actions go to `actions` (pre-sized [B x n]).
  using SegmentFn = std::function<void(int64_t start, int64_t end, const torch::Tensor& log_prob,
                                       const torch::Tensor& entropy)>;
  // Group mode: the placement layer's states per segment ([1 x L x d]) and
  // the group-pooled placement logits ([B' x G x max_devices], B' = 1
  // without noise, unmasked).
  struct PlacementPass {
    std::vector<torch::Tensor> states;
    torch::Tensor pooled;
    torch::Tensor node_logits;  // role moves: the placement logits per node [B' x n x max_devices]
  };
  // `pass`: group mode only, a placement pass computed by the caller
  // (BackwardBySegment), else computed here. `whole`: when the segments
  // would only slice the groups' log-probabilities (group mode, placement
  // head alone, no node moves), one call on_segment(0, n, ...) instead.
  void Stream(const GoGraph& graph, const torch::Tensor& nodes, const torch::Tensor& graph_embedding,
              int64_t devices, int64_t samples, Mode mode, Rng* rng, const GoActions* given,
              GoActions* actions, const SegmentFn& on_segment, const PlacementPass* pass = nullptr,
              bool whole = false);
  // The shared layers and the placement layer over the segments at batch 1,
  // calling `on_segment(start, end, state, logits)` with the placement
  // layer's states [1 x (end - start) x d] and the logits
  // [B' x (end - start) x max_devices] (plus the sample's noise when `noise`
  // is defined) of each run of consecutive segments [start, end). A
  // segment's memory is the previous segment's detached layer inputs, so
  // given those the segments are independent: with gradients on a
  // LongGraph, up to 16 full segments run as one batch, layer by layer,
  // which computes what one segment at a time computes
  // (tests/learned/go_model_test.cc) with a fraction of the backward calls
  // (docs/BENCHMARKS.md, "GO at 92.8k nodes"). The first segment (no
  // memory) and a short last one run alone.
  using TrunkSegmentFn = std::function<void(int64_t start, int64_t end, const torch::Tensor& state,
                                            const torch::Tensor& logits)>;
  void PlacementTrunk(const GoGraph& graph, const torch::Tensor& nodes, const torch::Tensor& graph_embedding,
                      const torch::Tensor& noise, const TrunkSegmentFn& on_segment);
  // PlacementTrunk over the whole graph, its logits averaged over
  // `grouping`'s groups.
  PlacementPass RunPlacementPass(const GoGraph& graph, const ActionGrouping& grouping,
                                 const torch::Tensor& nodes, const torch::Tensor& graph_embedding,
                                 const torch::Tensor& noise);
  // Role moves (see the header comment), after the groups' devices are in
  // actions->device: draws (or takes) every role's choice from the node
  // logits [B' x n x max_devices], moves the members of the roles that
  // leave, and adds the roles' log-probabilities and entropies at their
  // first nodes of `log_prob` and `entropy` ([B x n]).
  // [1 x 1 x max_devices], true at the devices >= `devices` (not in the
  // cluster); undefined when the cluster has max_devices devices.
  torch::Tensor DeviceMask(int64_t devices) const;
  // The role groups' pooled device logits `moves` [B x R x max_devices]
  // (masked) and "stay" logits without stickiness `stay` [B x R], from the
  // node logits z [B x n x max_devices] and each node's home device [B x n].
  void RoleLogits(const RoleGrouping& roles, const torch::Tensor& z, const torch::Tensor& home,
                  const torch::Tensor& device_mask, bool mask_noops, torch::Tensor* moves,
                  torch::Tensor* stay) const;
  // RoleLogits of `roles` from the network's placement logits over the
  // whole graph (one pass, batch 1, no exploration noise), with the nodes on
  // `home` [1 x n] and no-op moves masked. For CalibrateRoles and
  // RankRoleMoves; the caller disables gradients.
  void RoleLogitsAt(const GoGraph& graph, const RoleGrouping& roles, const torch::Tensor& home,
                    int64_t devices, torch::Tensor* moves, torch::Tensor* stay);
  void MoveRoles(const RoleGrouping& roles, const torch::Tensor& node_logits, int64_t devices,
                 const torch::Tensor& device_mask, Mode mode, Rng* rng, const GoActions* given,
                 GoActions* actions, torch::Tensor* log_prob, torch::Tensor* entropy);
  int64_t SegmentLength(int64_t n) const;
  // At least 64 segments: PPO's update batches segments and back-propagates
  // the groups' losses once (equal up to rounding; shorter graphs, those of
  // the paper tables, keep the one-segment-at-a-time order bit for bit).
  bool LongGraph(int64_t n) const;
  torch::Tensor Value(const torch::Tensor& graph_embedding, int64_t samples);
  // Draws (or takes) actions from logits [B x n x k] (masked entries are
  // -inf); returns the actions and adds log-probabilities and entropies.
  // `weight` ([L] float, may be undefined = all 1) scales each node's
  // log-probability and entropy (0 for colocation followers).
  torch::Tensor Decide(const torch::Tensor& logits, Mode mode, Rng* rng, const torch::Tensor& given,
                       torch::Tensor* log_prob, torch::Tensor* entropy,
                       const torch::Tensor& weight = torch::Tensor());
  // The node inputs of the attention trunk: GraphSAGE embeddings [n x g]
  // joined with the position features.
  torch::Tensor NodeInputs(const GoGraph& graph, const torch::Tensor& nodes) const;
  // The noise term of the placement logits [B x L x max_devices] for states
  // h [B x L x d], the segment's position features [L x p], nodes
  // [start, end) of `graph` and per-sample noise [B x max_devices x NoiseWidth(graph)].
  torch::Tensor PlacementNoise(const GoGraph& graph, int64_t start, int64_t end, const torch::Tensor& h,
                               const torch::Tensor& positions, const torch::Tensor& noise);
  torch::Tensor FilmOf(size_t layer, const torch::Tensor& graph_embedding, bool shift, int64_t batch);

  GoModelOptions options_;
  GraphSage gnn_{nullptr};
  torch::nn::Linear input_{nullptr};
  std::vector<RecurrentAttention> trunk_;
  RecurrentAttention place_layer_{nullptr};
  RecurrentAttention priority_layer_{nullptr};
  RecurrentAttention fusion_layer_{nullptr};
  torch::nn::Linear place_head_{nullptr};
  torch::nn::Linear priority_head_{nullptr};
  torch::nn::Linear fusion_head_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};
  torch::nn::Embedding priority_embedding_{nullptr};
  torch::nn::Linear film_{nullptr};  // graph embedding -> (gamma, beta) of every attention layer
  torch::nn::Linear value_{nullptr};
  torch::nn::Linear value_out_{nullptr};
  torch::Tensor noise_log_scale_;  // log of the exploration noise's scale (learned)
};
TORCH_MODULE(GoPolicy);

}  // namespace gosim::agents::learned::go

#endif  // GOSIM_AGENTS_LEARNED_GO_GO_MODEL_H_
