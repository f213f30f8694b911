// The hrl and colocrl agents: device placement by reinforcement learning on
// the problem's own graph, trained against the simulator within the
// evaluation budget.
//
// hrl: "A Hierarchical Model for Device Placement" (Mirhoseini et al., ICLR
//   2018). A Grouper assigns every op to one of min(256, 20 x devices) groups
//   (reference code), a seq2seq Placer assigns every group to a device
//   (hrl_policy.h). Grouper and Placer are trained jointly with REINFORCE:
//   the log-probability of a sample is the sum of the Grouper's and the
//   Placer's, the reward is -sqrt(step time), the baseline an exponential
//   moving average of the reward (decay 0.9, updated per sample), Adam with
//   gradient-norm clipping at 1.0 and the reference code's logit noise and
//   learning-rate decay, as fractions of the budget (HrlSchedule,
//   hrl_learner.h); an infeasible placement (out of memory) counts as a
//   step time of 100 s (reference code; option `infeasible_step_time`). A
//   locality prior (colocation groups merged into consecutive runs) is added
//   to the Grouper's logits (a deviation, docs/DEVIATIONS.md).
// colocrl: "Device Placement Optimization with Reinforcement Learning"
//   (Mirhoseini et al., ICML 2017). The same Placer and training over fixed
//   groups built from the graph's colocation groups (grouping.h).
//
// Each policy step samples `samples_per_step` placements, evaluates them in
// one Evaluator::EvaluateBatch call (the policy runs outside the parallel
// loop) and makes one gradient step. Everything depends only on the seed.
// The result is the best placement any sample reached, with its best-so-far
// curve; priorities are left empty (FIFO, TensorFlow's executor).
#ifndef GOSIM_AGENTS_LEARNED_HRL_HRL_AGENT_H_
#define GOSIM_AGENTS_LEARNED_HRL_HRL_AGENT_H_

#include <cstdint>

#include "agents/agent.h"
#include "agents/builtin.h"
#include "core/yaml.h"

namespace gosim::agents::hrl {

struct HrlOptions {
  bool learned_grouper = true;  // hrl: true; colocrl: false (colocation groups)
  int64_t evaluations = 2000;   // budget when the problem sets none
  int64_t samples_per_step = 16;
  int64_t groups = 0;           // hrl: 0 = min(256, 20 x devices)
  int64_t max_groups = 256;     // colocrl: cap on the colocation groups
  int64_t grouper_hidden = 64;  // hrl: width of the Grouper's hidden layer
  int64_t hidden = 64;          // LSTM width of the Placer (encoder per direction, decoder)
  int64_t attention = 64;
  int64_t device_embedding = 16;
  double learning_rate = 0.01;
  // The schedules are fractions of the run's policy steps T (the budget's
  // evaluations / samples_per_step, rounded up; `gosim train`: its `steps`),
  // so that a run of any budget goes through the same phases (HrlSchedule,
  // hrl_learner.h). hrl's defaults give the reference code's schedule at 48,000
  // evaluations of 32 samples (T = 1,500): decay from step 400 every 50
  // steps, noise during the first 750.
  double lr_decay = 1.0;  // learning rate x lr_decay every lr_decay_every_fraction x T steps ...
  double lr_decay_start_fraction =
      0.0;  // ... after lr_decay_start_fraction x T steps (reference: 0.95, 50, 400)
  double lr_decay_every_fraction = 0.05;
  double baseline_decay = 0.9;
  bool baseline_from_failing =
      true;  // the baseline starts at -sqrt(infeasible_step_time) (reference); else at the first reward
  double grad_clip = 1.0;
  double infeasible_step_time = 100.0;  // seconds
  double init_scale = 0.1;              // parameters start uniform in [-init_scale, init_scale]
  double locality_prior = 0.0;  // hrl: logit bonus of the group of an op's topological chunk; 0 = none
  double tanh_constant = 0.0;   // > 0: Placer logits squashed to tanh_constant * tanh(logits)
  double logits_noise = 0.0;    // noise on Grouper and Placer logits, fraction of their RMS
  double noise_fraction = 0.0;  // logit noise during the first noise_fraction x T policy steps
  double entropy_weight = 0.0;  // weight of the policy's entropy in the loss
  int64_t torch_threads = 1;    // LibTorch intra-op threads; 0 = leave LibTorch's setting

  // Reads and range-checks the options of agent hrl (`learned_grouper`) or
  // colocrl; keys of the other agent are unknown keys. Calls Finish().
  static HrlOptions Parse(YamlMap& options, bool learned_grouper);
};

// Trains on `problem` and returns the best placement found. extra:
// policy_steps, groups, first_mean_cost and last_mean_cost (the mean cost,
// i.e. step time with infeasible samples at infeasible_step_time, over the
// first and the last tenth of the policy steps), noise_steps and
// noise_evaluations (policy steps and evaluations with logit noise),
// lr_decay_start and lr_decay_every (the schedule in policy steps) and
// final_learning_rate (that of the last policy step).
AgentResult RunHrl(const Problem& problem, const HrlOptions& options, const ProgressFn& progress = {});

// Registers the agents `hrl` and `colocrl`, and their `gosim train` trainers
// (hrl_train.cc: one graph, checkpoints, curves, --resume).
void RegisterHrlAgents(const RegisterFn& add);
void RegisterHrlTrainers();

}  // namespace gosim::agents::hrl

#endif  // GOSIM_AGENTS_LEARNED_HRL_HRL_AGENT_H_
