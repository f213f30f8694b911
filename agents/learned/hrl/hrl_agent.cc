#include "agents/learned/hrl/hrl_agent.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "agents/learned/common/torch_lock.h"
#include "agents/learned/hrl/hrl_learner.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "core/rng.h"

namespace gosim::agents::hrl {
namespace {

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
    const auto lock = learned::LockTorch();  // one LibTorch agent at a time (torch_lock.h)
    return RunHrl(problem, options_, progress);
  }

 private:
  HrlOptions options_;
};

}  // namespace

HrlOptions HrlOptions::Parse(YamlMap& options, bool learned_grouper) {
  HrlOptions o;
  o.learned_grouper = learned_grouper;
  if (learned_grouper) {
    // hrl's defaults (configs/agents/hrl.yaml; docs/DEVIATIONS.md): the
    // reference code's exploration and learning-rate schedule, the locality
    // prior, 32 samples per step at a lower learning rate.
    o.evaluations = 48000;
    o.samples_per_step = 32;
    o.learning_rate = 0.005;
    // The reference code's steps (decay from 400 every 50, noise for 750)
    // as fractions of our full run: 1,500 policy steps (48,000 evaluations
    // of 32).
    o.lr_decay = 0.95;
    o.lr_decay_start_fraction = 400.0 / 1500.0;
    o.lr_decay_every_fraction = 50.0 / 1500.0;
    o.logits_noise = 0.5;
    o.noise_fraction = 750.0 / 1500.0;
    o.locality_prior = 10.0;
  } else {
    // ColocRL (2017) does not say where its baseline starts; the first
    // reward keeps its earlier behaviour (docs/DEVIATIONS.md).
    o.baseline_from_failing = false;
  }
  // Keys of the schedules before they became fractions of the budget.
  for (const auto& [old_key, new_key] : {std::pair<const char*, const char*>{"noise_steps", "noise_fraction"},
                                         {"lr_decay_start", "lr_decay_start_fraction"},
                                         {"lr_decay_steps", "lr_decay_every_fraction"}}) {
    if (options.Has(old_key)) {
      options.Fail(
          old_key,
          std::string("'") + old_key + "' (policy steps) is gone: the schedule scales with the budget",
          std::string("give '") + new_key + "', a fraction of the run's policy steps (docs/AGENTS.md)");
    }
  }
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
  o.lr_decay = GetDouble(options, "lr_decay", o.lr_decay, 1e-6, 1.0);
  o.lr_decay_start_fraction =
      GetDouble(options, "lr_decay_start_fraction", o.lr_decay_start_fraction, 0.0, 1.0);
  o.lr_decay_every_fraction =
      GetDouble(options, "lr_decay_every_fraction", o.lr_decay_every_fraction, 1e-9, 1.0);
  o.baseline_decay = GetDouble(options, "baseline_decay", o.baseline_decay, 0.0, 1.0);
  o.baseline_from_failing =
      GetChoice(options, "baseline_start", o.baseline_from_failing ? "failing" : "first",
                {"failing", "first"}) == "failing";
  o.grad_clip = GetDouble(options, "grad_clip", o.grad_clip, 0.0, 1e9);
  o.infeasible_step_time = GetDouble(options, "infeasible_step_time", o.infeasible_step_time, 1e-9, 1e9);
  o.init_scale = GetDouble(options, "init_scale", o.init_scale, 0.0, 10.0);
  if (learned_grouper) o.locality_prior = GetDouble(options, "locality_prior", o.locality_prior, 0.0, 1e3);
  o.tanh_constant = GetDouble(options, "tanh_constant", o.tanh_constant, 0.0, 1e3);
  o.logits_noise = GetDouble(options, "logits_noise", o.logits_noise, 0.0, 100.0);
  o.noise_fraction = GetDouble(options, "noise_fraction", o.noise_fraction, 0.0, 1.0);
  o.entropy_weight = GetDouble(options, "entropy_weight", o.entropy_weight, 0.0, 1e3);
  o.torch_threads = GetInt(options, "torch_threads", o.torch_threads, 0, 1024);
  options.Finish();
  return o;
}

AgentResult RunHrl(const Problem& problem, const HrlOptions& options, const ProgressFn& progress) {
  SearchTracker tracker(problem, progress, options.evaluations);
  if (options.torch_threads > 0) torch::set_num_threads(static_cast<int>(options.torch_threads));
  // The run's policy steps, which the schedules are fractions of: the
  // evaluation budget in steps of samples_per_step, the last one partial.
  const int64_t total_steps =
      (tracker.budget_evaluations() + options.samples_per_step - 1) / options.samples_per_step;
  HrlLearner learner(problem.graph, problem.cluster.num_devices(),
                     problem.objective.kind == ObjectiveKind::kStepTime, options, problem.seed, total_steps);
  const auto evaluate = [&](const std::vector<sim::Decision>& d, std::vector<sim::Evaluation>& e) {
    tracker.EvaluateBatch(d, e);
  };
  const auto score = [&](const sim::Evaluation& e) { return tracker.Score(e); };
  std::vector<double> step_costs;
  int64_t noise_steps = 0, noise_evaluations = 0;
  double learning_rate = options.learning_rate;
  while (!tracker.Done()) {
    const int64_t k = std::min<int64_t>(options.samples_per_step, tracker.Remaining());
    if (k <= 0) break;
    const HrlLearner::StepResult r = learner.Step(k, evaluate, score);
    step_costs.push_back(r.mean_cost);
    noise_steps += r.noisy ? 1 : 0;
    noise_evaluations += r.noisy ? r.samples : 0;
    learning_rate = r.learning_rate;
  }
  const HrlSchedule& schedule = learner.schedule();
  return tracker.Finish({{"policy_steps", static_cast<double>(step_costs.size())},
                         {"groups", static_cast<double>(learner.num_groups())},
                         {"first_mean_cost", MeanOfTenth(step_costs, false)},
                         {"last_mean_cost", MeanOfTenth(step_costs, true)},
                         {"noise_steps", static_cast<double>(noise_steps)},
                         {"noise_evaluations", static_cast<double>(noise_evaluations)},
                         {"lr_decay_start", static_cast<double>(schedule.lr_decay_start)},
                         {"lr_decay_every", static_cast<double>(schedule.lr_decay_every)},
                         {"final_learning_rate", learning_rate}});
}

void RegisterHrlAgents(const RegisterFn& add) {
  add(
      "hrl", [](YamlMap& o) { return std::make_unique<HrlAgent>(o, true); },
      "HRL: learned grouper + seq2seq placer trained with REINFORCE (Mirhoseini et al. 2018)");
  add(
      "colocrl", [](YamlMap& o) { return std::make_unique<HrlAgent>(o, false); },
      "ColocRL: seq2seq placer over colocation groups trained with REINFORCE (Mirhoseini et al. 2017)");
  RegisterHrlTrainers();
}

}  // namespace gosim::agents::hrl
