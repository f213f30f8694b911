#include "agents/learned/hrl/hrl_agent.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "agents/learned/hrl/grouping.h"
#include "agents/learned/hrl/hrl_policy.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "core/rng.h"

namespace gosim::agents::hrl {
namespace {

torch::Tensor ToTensor(const Matrix& m) {
  return torch::from_blob(const_cast<float*>(m.values.data()), {m.rows, m.cols}, torch::kFloat32).clone();
}

// Mean of the first (or last) tenth of `values`, at least one element.
double MeanOfTenth(const std::vector<double>& values, bool last) {
  if (values.empty()) return 0.0;
  const size_t count = std::max<size_t>(1, values.size() / 10);
  const auto begin = last ? values.end() - static_cast<std::ptrdiff_t>(count) : values.begin();
  return std::accumulate(begin, begin + static_cast<std::ptrdiff_t>(count), 0.0) / static_cast<double>(count);
}

class HrlAgent : public Agent {
 public:
  HrlAgent(YamlMap& options, bool learned_grouper) : options_(HrlOptions::Parse(options, learned_grouper)) {}
  std::string name() const override { return options_.learned_grouper ? "hrl" : "colocrl"; }
  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    return RunHrl(problem, options_, progress);
  }

 private:
  HrlOptions options_;
};

}  // namespace

HrlOptions HrlOptions::Parse(YamlMap& options, bool learned_grouper) {
  HrlOptions o;
  o.learned_grouper = learned_grouper;
  o.evaluations = GetInt(options, "evaluations", o.evaluations, 1, int64_t{1} << 40);
  o.samples_per_step = GetInt(options, "samples_per_step", o.samples_per_step, 1, 4096);
  if (learned_grouper) {
    o.groups = GetInt(options, "groups", o.groups, 0, 4096);
    o.grouper_hidden = GetInt(options, "grouper_hidden", o.grouper_hidden, 1, 4096);
  } else {
    o.max_groups = GetInt(options, "max_groups", o.max_groups, 1, 4096);
  }
  o.hidden = GetInt(options, "hidden", o.hidden, 1, 4096);
  o.attention = GetInt(options, "attention", o.attention, 1, 4096);
  o.device_embedding = GetInt(options, "device_embedding", o.device_embedding, 1, 4096);
  o.learning_rate = GetDouble(options, "learning_rate", o.learning_rate, 1e-8, 10.0);
  o.baseline_decay = GetDouble(options, "baseline_decay", o.baseline_decay, 0.0, 1.0);
  o.grad_clip = GetDouble(options, "grad_clip", o.grad_clip, 0.0, 1e9);
  o.infeasible_step_time = GetDouble(options, "infeasible_step_time", o.infeasible_step_time, 1e-9, 1e9);
  o.init_scale = GetDouble(options, "init_scale", o.init_scale, 0.0, 10.0);
  o.torch_threads = GetInt(options, "torch_threads", o.torch_threads, 0, 1024);
  options.Finish();
  return o;
}

AgentResult RunHrl(const Problem& problem, const HrlOptions& options, const ProgressFn& progress) {
  SearchTracker tracker(problem, progress, options.evaluations);
  const graphs::Graph& graph = problem.graph;
  const int32_t n = graph.num_nodes();
  const int32_t devices = problem.cluster.num_devices();
  if (options.torch_threads > 0) torch::set_num_threads(static_cast<int>(options.torch_threads));
  Rng rng = Rng::Derive(problem.seed, {0x68726c00ULL + (options.learned_grouper ? 1 : 0)});

  // Groups: learned (HRL) or fixed colocation groups (ColocRL).
  int32_t num_groups = 0;
  std::vector<int32_t> fixed_groups;
  if (options.learned_grouper) {
    // HRL reference code: min(256, 20 x devices) groups.
    num_groups = options.groups > 0 ? static_cast<int32_t>(options.groups) : std::min(256, 20 * devices);
  } else {
    fixed_groups = ColocationGroups(graph, static_cast<int32_t>(options.max_groups), &num_groups);
  }
  const int64_t width = GroupEmbeddingWidth(graph, num_groups);

  Grouper grouper{nullptr};
  torch::Tensor op_types;
  torch::Tensor op_features;
  std::vector<torch::Tensor> parameters;
  if (options.learned_grouper) {
    grouper = Grouper(static_cast<int64_t>(graph.op_types().size()), kOpFeatureCount, options.grouper_hidden,
                      num_groups);
    InitUniform(*grouper, options.init_scale, rng);
    std::vector<int64_t> types = OpTypes(graph);
    op_types = torch::tensor(types, torch::kInt64);
    op_features = ToTensor(OpFeatures(graph));
    for (const torch::Tensor& p : grouper->parameters()) parameters.push_back(p);
  }
  Placer placer(width, options.hidden, options.attention, devices, options.device_embedding);
  InitUniform(*placer, options.init_scale, rng);
  for (const torch::Tensor& p : placer->parameters()) parameters.push_back(p);
  torch::optim::Adam optimizer(parameters, torch::optim::AdamOptions(options.learning_rate));

  torch::Tensor fixed_inputs;
  if (!options.learned_grouper) {
    fixed_inputs = torch::zeros({1, num_groups, width});
    GroupEmbeddings(
        graph, fixed_groups, num_groups,
        std::span<float>(fixed_inputs.data_ptr<float>(), static_cast<size_t>(num_groups * width)));
  }

  // The cost behind the reward -sqrt(cost): the step time in seconds
  // (HRL's runtime); other objectives are scored relative to the first
  // feasible sample. Infeasible samples cost infeasible_step_time.
  const bool step_time_objective = problem.objective.kind == ObjectiveKind::kStepTime;
  double score_unit = 0.0;
  auto cost_of = [&](const sim::Evaluation& evaluation) {
    if (!evaluation.feasible) return options.infeasible_step_time;
    if (step_time_objective) return evaluation.step_time;
    const double score = tracker.Score(evaluation);
    if (score_unit <= 0.0) score_unit = std::max(score, 1e-30);
    return score / score_unit;
  };

  std::vector<sim::Decision> decisions;
  std::vector<sim::Evaluation> evaluations;
  std::vector<double> step_costs;
  double baseline = 0.0;
  bool has_baseline = false;
  while (!tracker.Done()) {
    const int64_t k = std::min<int64_t>(options.samples_per_step, tracker.Remaining());
    if (k <= 0) break;
    // Policy: sample k groupings and k placements (with autograd).
    GroupSamples group_samples;
    torch::Tensor inputs;
    if (options.learned_grouper) {
      group_samples = SampleGroups(grouper->forward(op_types, op_features), k, rng);
      inputs = torch::empty({k, num_groups, width});
      float* data = inputs.data_ptr<float>();
      for (int64_t i = 0; i < k; ++i) {
        GroupEmbeddings(
            graph, group_samples.groups[static_cast<size_t>(i)], num_groups,
            std::span<float>(data + i * num_groups * width, static_cast<size_t>(num_groups * width)));
      }
    } else {
      inputs = fixed_inputs.expand({k, num_groups, width}).contiguous();
    }
    PlacerOutput placed = placer->forward(inputs, rng);

    // Simulator: every sample in one parallel batch.
    decisions.assign(static_cast<size_t>(k), sim::Decision{});
    evaluations.assign(static_cast<size_t>(k), sim::Evaluation{});
    const int64_t* chosen = placed.devices.data_ptr<int64_t>();
    for (int64_t i = 0; i < k; ++i) {
      const std::vector<int32_t>& group_of =
          options.learned_grouper ? group_samples.groups[static_cast<size_t>(i)] : fixed_groups;
      std::vector<int32_t>& placement = decisions[static_cast<size_t>(i)].placement;
      placement.resize(static_cast<size_t>(n));
      for (int32_t node = 0; node < n; ++node) {
        placement[static_cast<size_t>(node)] =
            static_cast<int32_t>(chosen[i * num_groups + group_of[static_cast<size_t>(node)]]);
      }
    }
    tracker.EvaluateBatch(decisions, evaluations);

    // REINFORCE with an exponential-moving-average baseline.
    std::vector<float> advantages(static_cast<size_t>(k));
    std::vector<double> rewards(static_cast<size_t>(k));
    double mean_reward = 0.0;
    double mean_cost = 0.0;
    for (int64_t i = 0; i < k; ++i) {
      const double cost = cost_of(evaluations[static_cast<size_t>(i)]);
      rewards[static_cast<size_t>(i)] = -std::sqrt(cost);
      mean_reward += rewards[static_cast<size_t>(i)] / static_cast<double>(k);
      mean_cost += cost / static_cast<double>(k);
    }
    step_costs.push_back(mean_cost);
    if (!has_baseline) {
      baseline = mean_reward;
      has_baseline = true;
    }
    for (int64_t i = 0; i < k; ++i) {
      advantages[static_cast<size_t>(i)] = static_cast<float>(rewards[static_cast<size_t>(i)] - baseline);
    }
    torch::Tensor log_prob = placed.log_prob;
    if (options.learned_grouper) log_prob = log_prob + group_samples.log_prob;
    const torch::Tensor loss = -(torch::tensor(advantages) * log_prob).mean();
    optimizer.zero_grad();
    loss.backward();
    if (options.grad_clip > 0.0) torch::nn::utils::clip_grad_norm_(parameters, options.grad_clip);
    optimizer.step();
    baseline = options.baseline_decay * baseline + (1.0 - options.baseline_decay) * mean_reward;
  }
  return tracker.Finish({{"policy_steps", static_cast<double>(step_costs.size())},
                         {"groups", static_cast<double>(num_groups)},
                         {"first_mean_cost", MeanOfTenth(step_costs, false)},
                         {"last_mean_cost", MeanOfTenth(step_costs, true)}});
}

void RegisterHrlAgents(const RegisterFn& add) {
  add(
      "hrl", [](YamlMap& o) { return std::make_unique<HrlAgent>(o, true); },
      "HRL: learned grouper + seq2seq placer trained with REINFORCE (Mirhoseini et al. 2018)");
  add(
      "colocrl", [](YamlMap& o) { return std::make_unique<HrlAgent>(o, false); },
      "ColocRL: seq2seq placer over colocation groups trained with REINFORCE (Mirhoseini et al. 2017)");
}

}  // namespace gosim::agents::hrl
