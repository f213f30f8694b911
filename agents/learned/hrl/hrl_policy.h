// The networks of HRL (Mirhoseini et al. 2018, "A Hierarchical Model for
// Device Placement", Sec. 2) and ColocRL (Mirhoseini et al. 2017, Sec. 3).
//
// Grouper (HRL only): a feed-forward network over per-op features (a learned
// op-type embedding concatenated with grouping.h's OpFeatures) with a softmax
// over the groups; each op's group is sampled independently.
//
// Placer (both): a sequence-to-sequence model over the groups in group-id
// order. A bidirectional LSTM encodes the group embeddings; an LSTM decoder
// emits one device per group, reading the embedding of the device it chose
// for the previous group and the encoder state of the current group, with
// content-based (Bahdanau) attention over all encoder states.
//
// Exploration as in the reference code (TensorFlow's grappler
// hierarchical_controller.py): the Placer's logits can be squashed to
// tanh_constant * tanh(logits), and Gaussian noise of a given fraction of the
// logits' RMS can be added to the Grouper's and the Placer's logits before
// sampling (the log-probabilities are those of the noisy logits, as there).
//
// Sampling uses a gosim::Rng (not torch's global generator) so that a run
// depends only on its seed; parameters are initialized from the same Rng.
#ifndef GOSIM_AGENTS_LEARNED_HRL_HRL_POLICY_H_
#define GOSIM_AGENTS_LEARNED_HRL_HRL_POLICY_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace gosim::agents::hrl {

struct GrouperImpl : torch::nn::Module {
  GrouperImpl(int64_t num_op_types, int64_t num_features, int64_t hidden, int64_t num_groups,
              int64_t type_embedding = 16);
  // op_types [N] int64, features [N, F] float -> group logits [N, G].
  torch::Tensor forward(const torch::Tensor& op_types, const torch::Tensor& features);

  torch::nn::Embedding type_embedding{nullptr};
  torch::nn::Linear hidden{nullptr};
  torch::nn::Linear output{nullptr};
};
TORCH_MODULE(Grouper);

// Adds Gaussian noise of standard deviation `fraction` x RMS(logits) (the
// RMS taken without gradient) to `logits`, drawn from `rng`; `fraction` <= 0
// returns `logits` unchanged. Reference code: logits_std_noise.
torch::Tensor AddLogitNoise(const torch::Tensor& logits, double fraction, Rng& rng);
// The noise AddLogitNoise adds (undefined where it adds none).
torch::Tensor LogitNoise(const torch::Tensor& logits, double fraction, Rng& rng);

// Samples `samples` groupings from group logits [N, G] (shared by all
// samples, so noise, if any, is added by the caller): returns the group of
// every node per sample ([samples][N]), the log-probability of each sampled
// grouping ([samples], differentiable through `logits`) and the entropy of
// the grouping distribution (summed over nodes, differentiable).
struct GroupSamples {
  std::vector<std::vector<int32_t>> groups;
  torch::Tensor log_prob;
  torch::Tensor entropy;
};
GroupSamples SampleGroups(const torch::Tensor& logits, int64_t samples, Rng& rng);

struct PlacerOutput {
  torch::Tensor devices;   // [K, G] int64, the sampled device of every group
  torch::Tensor log_prob;  // [K], sum over groups, differentiable
  torch::Tensor entropy;   // [K], sum over groups of the decoder's entropy, differentiable
};

// How the Placer turns decoder outputs into device distributions.
struct PlacerSampling {
  double tanh_constant = 0.0;  // > 0: logits = tanh_constant * tanh(logits)
  double logits_noise = 0.0;   // > 0: AddLogitNoise fraction, drawn from *noise_rng
  Rng* noise_rng = nullptr;
};

struct PlacerImpl : torch::nn::Module {
  PlacerImpl(int64_t input_size, int64_t hidden, int64_t attention, int64_t num_devices,
             int64_t device_embedding);
  // inputs [K, G, E] (group embeddings of K samples) -> one device per group
  // per sample, sampled from the decoder's softmax with `rng`. Inputs
  // expanded from one sample's (stride 0 along K, ColocRL's fixed groups)
  // are encoded once.
  PlacerOutput forward(const torch::Tensor& inputs, const PlacerSampling& sampling, Rng& rng);

  int64_t hidden_size;
  int64_t num_devices;
  torch::nn::LSTM encoder{nullptr};
  torch::nn::LSTMCell decoder{nullptr};
  torch::nn::Embedding device_embedding{nullptr};  // num_devices + 1 (the start token)
  torch::nn::Linear attention_keys{nullptr};
  torch::nn::Linear attention_query{nullptr};
  torch::nn::Linear attention_score{nullptr};
  torch::nn::Linear output{nullptr};

 private:
  torch::Tensor tanh_cache_;  // the attention's tanh values of the last forward, [G, K, G, A]
};
TORCH_MODULE(Placer);

// Draws every parameter of `module` uniformly from [-scale, scale] with
// `rng` (TensorFlow's uniform initializer of the reference code); biases too.
void InitUniform(torch::nn::Module& module, double scale, Rng& rng);

// Index sampled from the probabilities of one row (sum ~ 1) with one draw.
int64_t SampleIndex(const float* probs, int64_t n, Rng& rng);

}  // namespace gosim::agents::hrl

#endif  // GOSIM_AGENTS_LEARNED_HRL_HRL_POLICY_H_
