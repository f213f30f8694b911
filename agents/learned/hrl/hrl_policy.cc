#include "agents/learned/hrl/hrl_policy.h"

#include <algorithm>
#include <tuple>

namespace gosim::agents::hrl {

namespace F = torch::nn::functional;

int64_t SampleIndex(const float* probs, int64_t n, Rng& rng) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += probs[i];
  double u = rng.Uniform() * total;
  for (int64_t i = 0; i < n; ++i) {
    u -= probs[i];
    if (u < 0.0) return i;
  }
  // Rounding left u >= 0: the last index with positive probability.
  for (int64_t i = n - 1; i > 0; --i) {
    if (probs[i] > 0.0f) return i;
  }
  return 0;
}

void InitUniform(torch::nn::Module& module, double scale, Rng& rng) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : module.parameters()) {
    torch::Tensor values = torch::empty(p.sizes(), torch::kFloat32);
    float* data = values.data_ptr<float>();
    for (int64_t i = 0; i < values.numel(); ++i) data[i] = static_cast<float>(rng.Uniform(-scale, scale));
    p.copy_(values);
  }
}

GrouperImpl::GrouperImpl(int64_t num_op_types, int64_t num_features, int64_t hidden_size, int64_t num_groups,
                         int64_t type_embedding_size) {
  type_embedding = register_module(
      "type_embedding", torch::nn::Embedding(std::max<int64_t>(1, num_op_types), type_embedding_size));
  hidden = register_module("hidden", torch::nn::Linear(type_embedding_size + num_features, hidden_size));
  output = register_module("output", torch::nn::Linear(hidden_size, num_groups));
}

torch::Tensor GrouperImpl::forward(const torch::Tensor& op_types, const torch::Tensor& features) {
  torch::Tensor x = torch::cat({type_embedding(op_types), features}, 1);
  return output(torch::relu(hidden(x)));
}

torch::Tensor AddLogitNoise(const torch::Tensor& logits, double fraction, Rng& rng) {
  if (fraction <= 0.0 || logits.numel() == 0) return logits;
  const double rms = logits.detach().pow(2).mean().sqrt().item<double>();
  if (rms <= 0.0) return logits;
  torch::Tensor noise = torch::empty(logits.sizes(), torch::kFloat32);
  float* data = noise.data_ptr<float>();
  for (int64_t i = 0; i < noise.numel(); ++i) data[i] = static_cast<float>(fraction * rms * rng.Normal());
  return logits + noise;
}

GroupSamples SampleGroups(const torch::Tensor& logits, int64_t samples, Rng& rng) {
  const int64_t n = logits.size(0);
  const int64_t g = logits.size(1);
  torch::Tensor log_probs = torch::log_softmax(logits, 1);
  torch::Tensor probs = log_probs.detach().exp().contiguous();
  GroupSamples out;
  out.entropy = -(log_probs.exp() * log_probs).sum();
  const float* p = probs.data_ptr<float>();
  out.groups.assign(static_cast<size_t>(samples), std::vector<int32_t>(static_cast<size_t>(n)));
  torch::Tensor index = torch::empty({samples, n}, torch::kInt64);
  int64_t* idx = index.data_ptr<int64_t>();
  for (int64_t k = 0; k < samples; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t choice = SampleIndex(p + i * g, g, rng);
      out.groups[static_cast<size_t>(k)][static_cast<size_t>(i)] = static_cast<int32_t>(choice);
      idx[k * n + i] = choice;
    }
  }
  // log p(grouping k) = sum_i log_probs[i, group_k(i)].
  torch::Tensor picked = log_probs.unsqueeze(0).expand({samples, n, g}).gather(2, index.unsqueeze(2));
  out.log_prob = picked.squeeze(2).sum(1);
  return out;
}

PlacerImpl::PlacerImpl(int64_t input_size, int64_t hidden, int64_t attention, int64_t devices,
                       int64_t device_embedding_size)
    : hidden_size(hidden), num_devices(devices) {
  encoder = register_module(
      "encoder",
      torch::nn::LSTM(torch::nn::LSTMOptions(input_size, hidden).bidirectional(true).batch_first(true)));
  decoder = register_module("decoder", torch::nn::LSTMCell(device_embedding_size + 2 * hidden, hidden));
  device_embedding =
      register_module("device_embedding", torch::nn::Embedding(devices + 1, device_embedding_size));
  attention_keys = register_module(
      "attention_keys", torch::nn::Linear(torch::nn::LinearOptions(2 * hidden, attention).bias(false)));
  attention_query = register_module("attention_query", torch::nn::Linear(hidden, attention));
  attention_score = register_module("attention_score",
                                    torch::nn::Linear(torch::nn::LinearOptions(attention, 1).bias(false)));
  output = register_module("output", torch::nn::Linear(3 * hidden, devices));
}

PlacerOutput PlacerImpl::forward(const torch::Tensor& inputs, const PlacerSampling& sampling, Rng& rng) {
  const int64_t k = inputs.size(0);
  const int64_t g = inputs.size(1);
  torch::Tensor encoded = std::get<0>(encoder(inputs));  // [K, G, 2H]
  torch::Tensor keys = attention_keys(encoded);          // [K, G, A]
  torch::Tensor h = torch::zeros({k, hidden_size});
  torch::Tensor c = torch::zeros({k, hidden_size});
  torch::Tensor previous = torch::full({k}, num_devices, torch::kInt64);  // the start token
  torch::Tensor devices = torch::empty({k, g}, torch::kInt64);
  int64_t* chosen = devices.data_ptr<int64_t>();
  std::vector<torch::Tensor> log_probs;
  std::vector<torch::Tensor> entropies;
  log_probs.reserve(static_cast<size_t>(g));
  entropies.reserve(static_cast<size_t>(g));
  for (int64_t t = 0; t < g; ++t) {
    torch::Tensor input = torch::cat({device_embedding(previous), encoded.select(1, t)}, 1);
    std::tie(h, c) = decoder(input, std::make_tuple(h, c));
    torch::Tensor scores = attention_score(torch::tanh(keys + attention_query(h).unsqueeze(1))).squeeze(2);
    torch::Tensor weights = torch::softmax(scores, 1);                             // [K, G]
    torch::Tensor context = torch::bmm(weights.unsqueeze(1), encoded).squeeze(1);  // [K, 2H]
    torch::Tensor logits = output(torch::cat({h, context}, 1));                    // [K, D]
    if (sampling.tanh_constant > 0.0) logits = sampling.tanh_constant * torch::tanh(logits);
    if (sampling.logits_noise > 0.0)
      logits = AddLogitNoise(logits, sampling.logits_noise, *sampling.noise_rng);
    torch::Tensor step_log_probs = torch::log_softmax(logits, 1);
    entropies.push_back(-(step_log_probs.exp() * step_log_probs).sum(1));
    torch::Tensor probs = step_log_probs.detach().exp().contiguous();
    const float* p = probs.data_ptr<float>();
    torch::Tensor pick = torch::empty({k}, torch::kInt64);
    int64_t* pick_data = pick.data_ptr<int64_t>();
    for (int64_t i = 0; i < k; ++i) {
      pick_data[i] = SampleIndex(p + i * num_devices, num_devices, rng);
      chosen[i * g + t] = pick_data[i];
    }
    log_probs.push_back(step_log_probs.gather(1, pick.unsqueeze(1)).squeeze(1));
    previous = pick;
  }
  return PlacerOutput{devices, torch::stack(log_probs, 1).sum(1), torch::stack(entropies, 1).sum(1)};
}

}  // namespace gosim::agents::hrl
