#include "agents/learned/hrl/hrl_learner.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "agents/learned/hrl/grouping.h"

namespace gosim::agents::hrl {
namespace {

torch::Tensor ToTensor(const Matrix& m) {
  return torch::from_blob(const_cast<float*>(m.values.data()), {m.rows, m.cols}, torch::kFloat32).clone();
}

}  // namespace

HrlSchedule HrlSchedule::For(const HrlOptions& options, int64_t total_steps) {
  HrlSchedule s;
  s.total_steps = std::max<int64_t>(0, total_steps);
  const auto steps = [&](double fraction) {
    return static_cast<int64_t>(std::llround(fraction * static_cast<double>(s.total_steps)));
  };
  s.noise_steps = options.logits_noise > 0.0 ? steps(options.noise_fraction) : 0;
  s.lr_decay_start = steps(options.lr_decay_start_fraction);
  s.lr_decay_every = std::max<int64_t>(1, steps(options.lr_decay_every_fraction));
  return s;
}

double HrlSchedule::LearningRate(const HrlOptions& options, int64_t step) const {
  if (options.lr_decay >= 1.0 || step < lr_decay_start) return options.learning_rate;
  return options.learning_rate *
         std::pow(options.lr_decay, static_cast<double>((step - lr_decay_start) / lr_decay_every));
}

HrlLearner::HrlLearner(const graphs::Graph& graph, int32_t devices, bool step_time_objective,
                       const HrlOptions& options, uint64_t seed, int64_t total_steps)
    : graph_(graph),
      units_(graph, /*enforce=*/true),
      devices_(devices),
      step_time_objective_(step_time_objective),
      options_(options),
      schedule_(HrlSchedule::For(options, total_steps)),
      seed_(seed),
      rng_(Rng::Derive(seed, {0x68726c00ULL + (options.learned_grouper ? 1 : 0)})) {
  // Groups: learned (HRL) or fixed colocation groups (ColocRL).
  if (options.learned_grouper) {
    // HRL reference code: min(256, 20 x devices) groups.
    num_groups_ = options.groups > 0 ? static_cast<int32_t>(options.groups) : std::min(256, 20 * devices);
  } else {
    fixed_groups_ = ColocationGroups(graph, static_cast<int32_t>(options.max_groups), &num_groups_);
  }
  width_ = GroupEmbeddingWidth(graph, num_groups_);
  net_ = HrlNet();
  if (options.learned_grouper) {
    net_->grouper =
        net_->register_module("grouper", Grouper(static_cast<int64_t>(graph.op_types().size()),
                                                 kOpFeatureCount, options.grouper_hidden, num_groups_));
    InitUniform(*net_->grouper, options.init_scale, rng_);
    op_types_ = torch::tensor(OpTypes(graph), torch::kInt64);
    op_features_ = ToTensor(OpFeatures(graph));
    // The prior group of an op: ColocRL's colocation groups merged into at
    // most G consecutive runs (grouping.h).
    int32_t runs = 0;
    prior_groups_ = ColocationGroups(graph, num_groups_, &runs);
    if (options.locality_prior > 0.0) {
      const int32_t n = graph.num_nodes();
      group_prior_ = torch::zeros({n, num_groups_});
      float* prior = group_prior_.data_ptr<float>();
      for (int32_t i = 0; i < n; ++i) {
        prior[static_cast<int64_t>(i) * num_groups_ + prior_groups_[static_cast<size_t>(i)]] =
            static_cast<float>(options.locality_prior);
      }
    }
  }
  net_->placer = net_->register_module(
      "placer", Placer(width_, options.hidden, options.attention, devices, options.device_embedding));
  InitUniform(*net_->placer, options.init_scale, rng_);
  parameters_ = net_->parameters();
  optimizer_ =
      std::make_unique<torch::optim::Adam>(parameters_, torch::optim::AdamOptions(options.learning_rate));
  if (!options.learned_grouper) {
    fixed_inputs_ = torch::zeros({1, num_groups_, width_});
    GroupEmbeddings(
        graph, fixed_groups_, num_groups_,
        std::span<float>(fixed_inputs_.data_ptr<float>(), static_cast<size_t>(num_groups_ * width_)));
  }
}

torch::Tensor HrlLearner::GroupLogits() {
  torch::Tensor logits = net_->grouper->forward(op_types_, op_features_);
  if (group_prior_.defined()) logits = logits + group_prior_;
  return logits;
}

std::string HrlLearner::Signature() const {
  auto kv = [](const char* key, int64_t value) { return std::string(key) + "=" + std::to_string(value); };
  return std::string("hrl/v2:") + kv("learned_grouper", options_.learned_grouper ? 1 : 0) + "," +
         kv("nodes", graph_.num_nodes()) + "," +
         kv("op_types", static_cast<int64_t>(graph_.op_types().size())) + "," + kv("devices", devices_) +
         "," + kv("groups", num_groups_) + "," + kv("grouper_hidden", options_.grouper_hidden) + "," +
         kv("hidden", options_.hidden) + "," + kv("attention", options_.attention) + "," +
         kv("device_embedding", options_.device_embedding);
}

void HrlLearner::SaveState(learned::TrainingState* state) const {
  state->rng = rng_.state();
  state->scalars["hrl/baseline"] = baseline_;
  state->scalars["hrl/has_baseline"] = has_baseline_ ? 1.0 : 0.0;
  state->scalars["hrl/score_unit"] = score_unit_;
  state->scalars["hrl/step"] = static_cast<double>(step_);
}

void HrlLearner::LoadState(const learned::TrainingState& state) {
  rng_.set_state(state.rng);
  baseline_ = state.scalars.at("hrl/baseline");
  has_baseline_ = state.scalars.at("hrl/has_baseline") != 0.0;
  score_unit_ = state.scalars.at("hrl/score_unit");
  step_ = static_cast<int64_t>(state.scalars.at("hrl/step"));
}

// The cost behind the reward -sqrt(cost): the step time in seconds (HRL's
// runtime); other objectives are scored relative to the first feasible
// sample. Infeasible samples cost infeasible_step_time.
double HrlLearner::CostOf(const sim::Evaluation& evaluation, const ScoreFn& score) {
  if (!evaluation.feasible) return options_.infeasible_step_time;
  if (step_time_objective_) return evaluation.step_time;
  const double s = score(evaluation);
  if (score_unit_ <= 0.0) score_unit_ = std::max(s, 1e-30);
  return s / score_unit_;
}

HrlLearner::StepResult HrlLearner::Step(int64_t k, const EvaluateFn& evaluate, const ScoreFn& score) {
  const int32_t n = graph_.num_nodes();
  // Logit noise draws from a stream of its own per step, so that a resumed
  // run draws the same noise.
  const bool noisy = step_ < schedule_.noise_steps;
  Rng noise_rng = Rng::Derive(seed_, {0x6e6f697365ULL, static_cast<uint64_t>(step_)});
  const double noise = noisy ? options_.logits_noise : 0.0;
  // Policy: sample k groupings and k placements (with autograd).
  GroupSamples group_samples;
  torch::Tensor inputs;
  if (options_.learned_grouper) {
    const torch::Tensor logits = GroupLogits();
    group_samples = SampleGroups(AddLogitNoise(logits, noise, noise_rng), k, rng_);
    inputs = torch::empty({k, num_groups_, width_});
    float* data = inputs.data_ptr<float>();
    for (int64_t i = 0; i < k; ++i) {
      GroupEmbeddings(
          graph_, group_samples.groups[static_cast<size_t>(i)], num_groups_,
          std::span<float>(data + i * num_groups_ * width_, static_cast<size_t>(num_groups_ * width_)));
    }
  } else {
    inputs = fixed_inputs_.expand({k, num_groups_, width_});  // encoded once (PlacerImpl::forward)
  }
  const PlacerSampling sampling{
      .tanh_constant = options_.tanh_constant, .logits_noise = noise, .noise_rng = &noise_rng};
  PlacerOutput placed = net_->placer->forward(inputs, sampling, rng_);

  // Simulator: every sample in one parallel batch.
  decisions_.assign(static_cast<size_t>(k), sim::Decision{});
  evaluations_.assign(static_cast<size_t>(k), sim::Evaluation{});
  const int64_t* chosen = placed.devices.data_ptr<int64_t>();
  for (int64_t i = 0; i < k; ++i) {
    const std::vector<int32_t>& group_of =
        options_.learned_grouper ? group_samples.groups[static_cast<size_t>(i)] : fixed_groups_;
    std::vector<int32_t>& placement = decisions_[static_cast<size_t>(i)].placement;
    placement.resize(static_cast<size_t>(n));
    for (int32_t node = 0; node < n; ++node) {
      placement[static_cast<size_t>(node)] =
          static_cast<int32_t>(chosen[i * num_groups_ + group_of[static_cast<size_t>(node)]]);
    }
    if (options_.learned_grouper) units_.KeepTogether(placement);
  }
  evaluate(decisions_, evaluations_);

  // REINFORCE with an exponential-moving-average baseline, updated after
  // every sample in sample order as the reference code does with one sample
  // per step: sample i's advantage is taken against the average of the
  // rewards before it.
  StepResult result;
  result.samples = k;
  std::vector<float> advantages(static_cast<size_t>(k));
  if (!has_baseline_ && options_.baseline_from_failing) {
    baseline_ = -std::sqrt(options_.infeasible_step_time);
    has_baseline_ = true;
  }
  for (int64_t i = 0; i < k; ++i) {
    const sim::Evaluation& e = evaluations_[static_cast<size_t>(i)];
    const double cost = CostOf(e, score);
    const double reward = -std::sqrt(cost);
    if (!has_baseline_) {
      baseline_ = reward;
      has_baseline_ = true;
    }
    advantages[static_cast<size_t>(i)] = static_cast<float>(reward - baseline_);
    baseline_ = options_.baseline_decay * baseline_ + (1.0 - options_.baseline_decay) * reward;
    result.mean_cost += cost / static_cast<double>(k);
    result.feasible_fraction += e.feasible ? 1.0 / static_cast<double>(k) : 0.0;
  }
  torch::Tensor log_prob = placed.log_prob;
  torch::Tensor entropy = placed.entropy;
  if (options_.learned_grouper) {
    log_prob = log_prob + group_samples.log_prob;
    entropy = entropy + group_samples.entropy;
  }
  torch::Tensor loss = -(torch::tensor(advantages) * log_prob).mean();
  if (options_.entropy_weight > 0.0) loss = loss - options_.entropy_weight * entropy.mean();
  // Staircase exponential decay of the learning rate (reference code).
  const double lr = schedule_.LearningRate(options_, step_);
  result.noisy = noisy;
  result.learning_rate = lr;
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }
  optimizer_->zero_grad();
  loss.backward();
  if (options_.grad_clip > 0.0) torch::nn::utils::clip_grad_norm_(parameters_, options_.grad_clip);
  optimizer_->step();
  ++step_;
  return result;
}

}  // namespace gosim::agents::hrl
