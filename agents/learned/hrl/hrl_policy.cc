#include "agents/learned/hrl/hrl_policy.h"

#include <Eigen/Core>

#include <algorithm>
#include <tuple>
#include <vector>

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

torch::Tensor LogitNoise(const torch::Tensor& logits, double fraction, Rng& rng) {
  if (fraction <= 0.0 || logits.numel() == 0) return {};
  const double rms = logits.detach().pow(2).mean().sqrt().item<double>();
  if (rms <= 0.0) return {};
  torch::Tensor noise = torch::empty(logits.sizes(), torch::kFloat32);
  float* data = noise.data_ptr<float>();
  for (int64_t i = 0; i < noise.numel(); ++i) data[i] = static_cast<float>(fraction * rms * rng.Normal());
  return noise;
}

torch::Tensor AddLogitNoise(const torch::Tensor& logits, double fraction, Rng& rng) {
  const torch::Tensor noise = LogitNoise(logits, fraction, rng);
  return noise.defined() ? logits + noise : logits;
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

namespace {

// One decoder step of the attention: tanh_values[k, g] = tanh(keys[k, g] +
// queries[k]) and scores[k, g] = v . tanh_values[k, g] (keys [K, G, A], or
// [1, G, A] shared by all samples; queries [K, A]; v [A]; outputs
// [K, G, A] and [K, G]; all contiguous). Eigen's vectorized tanh took a
// third of LibTorch's time on this shape, and the tanh was over half of a
// ColocRL step (docs/BENCHMARKS.md).
void AttentionStep(const torch::Tensor& keys, const torch::Tensor& queries, const torch::Tensor& v,
                   torch::Tensor& tanh_values, torch::Tensor& scores) {
  const int64_t k_count = queries.size(0), g_count = keys.size(1), a_count = keys.size(2);
  const bool shared = keys.size(0) == 1;
  using Row = Eigen::Map<const Eigen::ArrayXf>;
  const Row weights(v.data_ptr<float>(), a_count);
  float* out = tanh_values.data_ptr<float>();
  float* score = scores.data_ptr<float>();
  for (int64_t k = 0; k < k_count; ++k) {
    const Row query(queries.data_ptr<float>() + k * a_count, a_count);
    const float* key = keys.data_ptr<float>() + (shared ? 0 : k) * g_count * a_count;
    for (int64_t g = 0; g < g_count; ++g, key += a_count, out += a_count) {
      Eigen::Map<Eigen::ArrayXf> row(out, a_count);
      row = (Row(key, a_count) + query).tanh();
      *score++ = (row * weights).sum();
    }
  }
}

// The decoder's attention scores s[k, t, g] = v . tanh(keys[k, g] + q[k, t])
// (keys [K or 1, G, A], queries [K, T, A], v [1, A]) from what the sampling
// pass computed for the same queries (tanh_values [T, K, G, A], scores
// [T, K, G]): forward returns those scores as [K, T, G]; backward is one
// fused pass over the tanh values, where autograd would run an add, a tanh,
// a matrix-vector product and their backwards per decoder step and
// accumulate a [K, G, A] gradient per step.
struct AdditiveScores : torch::autograd::Function<AdditiveScores> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& keys,
                               const torch::Tensor& queries, const torch::Tensor& v,
                               const torch::Tensor& tanh_values, const torch::Tensor& scores) {
    ctx->save_for_backward({v, tanh_values});
    ctx->saved_data["keys_batch"] = keys.size(0);
    return scores.permute({1, 0, 2}).contiguous();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor v = saved[0].reshape({-1}).contiguous();
    const torch::Tensor& tanh_values = saved[1];
    const int64_t t_count = tanh_values.size(0), k_count = tanh_values.size(1);
    const int64_t g_count = tanh_values.size(2), a_count = tanh_values.size(3);
    const torch::Tensor grad = grad_outputs[0].contiguous();  // [K, T, G]
    const bool shared = ctx->saved_data["keys_batch"].toInt() == 1;
    torch::Tensor grad_keys = torch::zeros({shared ? 1 : k_count, g_count, a_count});
    torch::Tensor grad_queries = torch::zeros({k_count, t_count, a_count});
    std::vector<double> grad_v(static_cast<size_t>(a_count), 0.0);
    std::vector<float> partial_v(static_cast<size_t>(a_count));
    const float* __restrict vp = v.data_ptr<float>();
    const float* tv = tanh_values.data_ptr<float>();
    const float* gs = grad.data_ptr<float>();
    float* gk = grad_keys.data_ptr<float>();
    float* gq = grad_queries.data_ptr<float>();
    for (int64_t t = 0; t < t_count; ++t) {
      for (int64_t k = 0; k < k_count; ++k) {
        std::fill(partial_v.begin(), partial_v.end(), 0.0f);
        float* __restrict pv = partial_v.data();
        float* __restrict q = gq + (k * t_count + t) * a_count;
        for (int64_t g = 0; g < g_count; ++g) {
          const float s = gs[(k * t_count + t) * g_count + g];
          const float* __restrict x = tv + ((t * k_count + k) * g_count + g) * a_count;
          float* __restrict key = gk + ((shared ? 0 : k) * g_count + g) * a_count;
          for (int64_t a = 0; a < a_count; ++a) {
            const float d = s * vp[a] * (1.0f - x[a] * x[a]);
            key[a] += d;
            q[a] += d;
            pv[a] += s * x[a];
          }
        }
        for (int64_t a = 0; a < a_count; ++a) grad_v[static_cast<size_t>(a)] += pv[a];
      }
    }
    torch::Tensor grad_v_tensor = torch::empty({1, a_count});
    for (int64_t a = 0; a < a_count; ++a) {
      grad_v_tensor.data_ptr<float>()[a] = static_cast<float>(grad_v[static_cast<size_t>(a)]);
    }
    return {grad_keys, grad_queries, grad_v_tensor, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

// Two passes. Sampling runs the decoder step by step without autograd, as
// it must (the device chosen for group t is the decoder's input at t + 1),
// and keeps the attention's tanh values, its scores and the logit noise.
// Scoring then computes the log-probabilities and entropies of the sampled
// devices with autograd over all steps at once (the decoder LSTM over the
// known inputs, the attention from the kept tanh values): the same function
// and gradient as differentiating the step-by-step loop, with one large
// operation where the loop had G small ones (2.4x less CPU for ColocRL's
// step; docs/BENCHMARKS.md).
PlacerOutput PlacerImpl::forward(const torch::Tensor& inputs, const PlacerSampling& sampling, Rng& rng) {
  const int64_t k = inputs.size(0);
  const int64_t g = inputs.size(1);
  // Inputs expanded from one sample's (ColocRL's fixed groups) are encoded
  // once; the encoder states and attention keys then broadcast over samples.
  const bool shared = k > 1 && inputs.stride(0) == 0;
  torch::Tensor encoded = std::get<0>(encoder(shared ? inputs.narrow(0, 0, 1) : inputs));  // [K|1, G, 2H]
  torch::Tensor keys = attention_keys(encoded);                                            // [K|1, G, A]
  // context[k] = sum_g weights[k, g] encoded[k, g], for weights [K, G] or [K, T, G].
  const auto attend = [&](const torch::Tensor& weights) {
    if (shared) return torch::matmul(weights, encoded.select(0, 0));
    return weights.dim() == 2 ? torch::bmm(weights.unsqueeze(1), encoded).squeeze(1)
                              : torch::bmm(weights, encoded);
  };
  const torch::Tensor encoded_k = encoded.expand({k, g, encoded.size(2)});
  const int64_t a = keys.size(2);
  // The tanh values are the largest tensor ([G, K, G, A]); their buffer is
  // reused unless a graph that has not run backward yet still holds it.
  if (!tanh_cache_.defined() || tanh_cache_.use_count() > 1 ||
      tanh_cache_.sizes() != torch::IntArrayRef({g, k, g, a})) {
    tanh_cache_ = torch::empty({g, k, g, a});
  }
  torch::Tensor scores = torch::empty({g, k, g});
  torch::Tensor noise;
  torch::Tensor devices = torch::empty({k, g}, torch::kInt64);
  int64_t* chosen = devices.data_ptr<int64_t>();
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor v = attention_score->weight.reshape({-1}).contiguous();
    const torch::Tensor keys_data = keys.contiguous();
    torch::Tensor h = torch::zeros({k, hidden_size});
    torch::Tensor c = torch::zeros({k, hidden_size});
    torch::Tensor previous = torch::full({k}, num_devices, torch::kInt64);  // the start token
    for (int64_t t = 0; t < g; ++t) {
      torch::Tensor input = torch::cat({device_embedding(previous), encoded_k.select(1, t)}, 1);
      std::tie(h, c) = decoder(input, std::make_tuple(h, c));
      torch::Tensor tanh_t = tanh_cache_.select(0, t);
      torch::Tensor scores_t = scores.select(0, t);
      AttentionStep(keys_data, attention_query(h).contiguous(), v, tanh_t, scores_t);
      torch::Tensor weights = torch::softmax(scores_t, 1);         // [K, G]
      torch::Tensor context = attend(weights);                     // [K, 2H]
      torch::Tensor logits = output(torch::cat({h, context}, 1));  // [K, D]
      if (sampling.tanh_constant > 0.0) logits = sampling.tanh_constant * torch::tanh(logits);
      if (sampling.logits_noise > 0.0) {
        const torch::Tensor step_noise = LogitNoise(logits, sampling.logits_noise, *sampling.noise_rng);
        if (step_noise.defined()) {
          if (!noise.defined()) noise = torch::zeros({g, k, num_devices});
          noise.select(0, t).copy_(step_noise);
          logits = logits + step_noise;
        }
      }
      torch::Tensor probs = torch::log_softmax(logits, 1).exp().contiguous();
      const float* p = probs.data_ptr<float>();
      previous = torch::empty({k}, torch::kInt64);
      int64_t* pick = previous.data_ptr<int64_t>();
      for (int64_t i = 0; i < k; ++i) {
        pick[i] = SampleIndex(p + i * num_devices, num_devices, rng);
        chosen[i * g + t] = pick[i];
      }
    }
  }
  // Scoring: the decoder's inputs are now known (the start token, then the
  // device chosen for the previous group).
  torch::Tensor previous =
      torch::cat({torch::full({k, 1}, num_devices, torch::kInt64), devices.slice(1, 0, g - 1)}, 1);  // [K, G]
  torch::Tensor decoder_inputs = torch::cat({device_embedding(previous), encoded_k}, 2);
  torch::Tensor zeros = torch::zeros({1, k, hidden_size});
  torch::Tensor h = std::get<0>(torch::lstm(
      decoder_inputs, {zeros, zeros},
      {decoder->weight_ih, decoder->weight_hh, decoder->bias_ih, decoder->bias_hh},
      /*has_biases=*/true, /*num_layers=*/1, /*dropout=*/0.0, /*train=*/true, /*bidirectional=*/false,
      /*batch_first=*/true));  // [K, G, H]
  torch::Tensor all_scores =
      AdditiveScores::apply(keys, attention_query(h), attention_score->weight, tanh_cache_, scores);
  torch::Tensor weights = torch::softmax(all_scores, 2);       // [K, G, G]
  torch::Tensor context = attend(weights);                     // [K, G, 2H]
  torch::Tensor logits = output(torch::cat({h, context}, 2));  // [K, G, D]
  if (sampling.tanh_constant > 0.0) logits = sampling.tanh_constant * torch::tanh(logits);
  if (noise.defined()) logits = logits + noise.permute({1, 0, 2});
  torch::Tensor log_probs = torch::log_softmax(logits, 2);
  torch::Tensor entropy = -(log_probs.exp() * log_probs).sum(2).sum(1);
  torch::Tensor log_prob = log_probs.gather(2, devices.unsqueeze(2)).squeeze(2).sum(1);
  return PlacerOutput{devices, log_prob, entropy};
}

}  // namespace gosim::agents::hrl
