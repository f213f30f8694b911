// The learning state of HRL / ColocRL on one graph (hrl_agent.h describes
// the method): the Grouper (HRL only) and the Placer in one module, Adam,
// the moving-average baseline and the sampling RNG. One `Step` samples
// placements, has them evaluated, and makes one REINFORCE update. The agent
// (RunHrl) steps it within an evaluation budget; `gosim train` (hrl_train.cc)
// steps it for a number of policy steps with checkpoints, curves and resume.
#ifndef GOSIM_AGENTS_LEARNED_HRL_HRL_LEARNER_H_
#define GOSIM_AGENTS_LEARNED_HRL_HRL_LEARNER_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/colocation.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/hrl/hrl_agent.h"
#include "agents/learned/hrl/hrl_policy.h"
#include "core/rng.h"
#include "graphs/graph.h"
#include "sim/decision.h"
#include "sim/evaluator.h"

namespace gosim::agents::hrl {

// Grouper (undefined for ColocRL) and Placer as one module, so that one
// checkpoint holds both.
struct HrlNetImpl : torch::nn::Module {
  Grouper grouper{nullptr};
  Placer placer{nullptr};
};
TORCH_MODULE(HrlNet);

// The schedules of a run of `total_steps` policy steps (HrlOptions: the
// fractions, rounded to the nearest step): logit noise during steps
// [0, noise_steps); from step lr_decay_start on, the learning rate is
// multiplied by lr_decay once every lr_decay_every steps (staircase).
struct HrlSchedule {
  int64_t total_steps = 0;
  int64_t noise_steps = 0;
  int64_t lr_decay_start = 0;
  int64_t lr_decay_every = 1;  // >= 1
  static HrlSchedule For(const HrlOptions& options, int64_t total_steps);
  // The learning rate of policy step `step` (0-based).
  double LearningRate(const HrlOptions& options, int64_t step) const;
};

class HrlLearner {
 public:
  // Evaluates decisions (batched) into evaluations of the same size.
  using EvaluateFn = std::function<void(const std::vector<sim::Decision>&, std::vector<sim::Evaluation>&)>;
  // The score of a feasible evaluation under the objective (lower is better).
  using ScoreFn = std::function<double(const sim::Evaluation&)>;

  // `total_steps`: the policy steps the run will take, which the schedules
  // are fractions of (HrlSchedule).
  HrlLearner(const graphs::Graph& graph, int32_t devices, bool step_time_objective, const HrlOptions& options,
             uint64_t seed, int64_t total_steps);

  struct StepResult {
    double mean_cost = 0.0;  // cost behind the reward -sqrt(cost), mean over the samples
    double feasible_fraction = 0.0;
    int64_t samples = 0;
    bool noisy = false;          // whether logit noise was added (the noise phase)
    double learning_rate = 0.0;  // of this step's update
  };
  // One policy step of `k` samples.
  StepResult Step(int64_t k, const EvaluateFn& evaluate, const ScoreFn& score);

  // What must not change across a resume (graph size, groups, devices, shapes).
  std::string Signature() const;
  // Checkpoint state: the module, the optimizer, and the scalars/RNG below.
  HrlNet& net() { return net_; }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  void SaveState(learned::TrainingState* state) const;
  void LoadState(const learned::TrainingState& state);

  int32_t num_groups() const { return num_groups_; }
  const HrlSchedule& schedule() const { return schedule_; }
  // hrl: the Grouper's logits [N, G] before noise, with the locality prior
  // (options.locality_prior added to each op's prior group) when it is > 0;
  // with 0 they are the network's own logits (the paper's Grouper).
  torch::Tensor GroupLogits();
  // hrl: the prior group of every op (ColocRL's colocation groups merged
  // into at most num_groups() consecutive runs), whether or not the prior
  // is applied.
  const std::vector<int32_t>& prior_groups() const { return prior_groups_; }
  // The decisions and evaluations of the last Step.
  const std::vector<sim::Decision>& decisions() const { return decisions_; }
  const std::vector<sim::Evaluation>& evaluations() const { return evaluations_; }

 private:
  double CostOf(const sim::Evaluation& evaluation, const ScoreFn& score);

  const graphs::Graph& graph_;
  // The graph's colocation groups, kept on one device in every sampled
  // placement (a learned grouping may cut through them).
  ColocationUnits units_;
  int32_t devices_;
  bool step_time_objective_;
  HrlOptions options_;
  HrlSchedule schedule_;
  uint64_t seed_;
  Rng rng_;
  int64_t step_ = 0;  // policy steps taken (the logit-noise schedule)
  int32_t num_groups_ = 0;
  int64_t width_ = 0;
  std::vector<int32_t> fixed_groups_;
  torch::Tensor op_types_, op_features_, fixed_inputs_;
  std::vector<int32_t> prior_groups_;
  torch::Tensor group_prior_;  // [N, G] locality prior added to the Grouper's logits (undefined: none)
  HrlNet net_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  double baseline_ = 0.0;
  bool has_baseline_ = false;
  double score_unit_ = 0.0;
  std::vector<sim::Decision> decisions_;
  std::vector<sim::Evaluation> evaluations_;
};

}  // namespace gosim::agents::hrl

#endif  // GOSIM_AGENTS_LEARNED_HRL_HRL_LEARNER_H_
