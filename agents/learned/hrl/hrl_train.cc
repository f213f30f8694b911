// `gosim train` with `agent: hrl` or `agent: colocrl`: HRL / ColocRL trained
// on one graph of a suite for a number of policy steps, as the papers train
// (per model, for hours), with periodic atomic checkpoints (policy, Adam,
// baseline, RNG), training curves, the best placement so far, and an exact
// `--resume` (configs/experiments/hrl_train.yaml; docs/AGENTS.md).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "agents/agent.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/train.h"
#include "agents/learned/common/training_options.h"
#include "agents/learned/hrl/hrl_learner.h"
#include "agents/options_util.h"
#include "core/error.h"
#include "core/io.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "graphs/suite.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"

namespace gosim::agents::hrl {
namespace {

struct HrlTrainConfig {
  std::string suite;
  std::string graph;  // the suite entry's name
  std::string cluster = "k80x2";
  std::string cost_model = "roofline";
  ObjectiveKind objective = ObjectiveKind::kStepTime;
  uint64_t seed = 0;
  int64_t steps = 1000;  // policy steps of samples_per_step placements
  int64_t checkpoint_every = 20;
  HrlOptions options;
};

HrlTrainConfig ParseConfig(const learned::TrainRequest& request, bool learned_grouper) {
  YamlMap m = YamlMap::Root(request.config, request.config_file);
  HrlTrainConfig c;
  m.Require<std::string>("agent");
  m.Allow({"name", "description", "output"});
  c.suite = m.Require<std::string>("suite");
  c.graph = m.Require<std::string>("graph");
  c.cluster = m.Get<std::string>("cluster", c.cluster);
  c.cost_model = m.Get<std::string>("cost_model", c.cost_model);
  c.objective = ParseObjectiveKind(m.Get<std::string>("objective", "step_time"));
  c.seed = static_cast<uint64_t>(GetInt(m, "seed", 0, 0, int64_t{1} << 62));
  c.steps = GetInt(m, "steps", c.steps, 0, int64_t{1} << 40);
  c.checkpoint_every = GetInt(m, "checkpoint_every", c.checkpoint_every, 1, int64_t{1} << 40);
  {
    YamlMap options = m.Child("options");
    c.options = HrlOptions::Parse(options, learned_grouper);
  }
  m.Finish();
  return c;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void TrainHrl(const learned::TrainRequest& request, bool learned_grouper) {
  const HrlTrainConfig config = ParseConfig(request, learned_grouper);
  if (config.options.torch_threads > 0)
    torch::set_num_threads(static_cast<int>(config.options.torch_threads));
  const graphs::Suite suite = graphs::LoadSuite(config.suite);
  const graphs::SuiteEntry* entry = suite.Find(config.graph);
  if (entry == nullptr) {
    throw ConfigError("suite " + suite.path + " has no graph '" + config.graph + "'",
                      Location{request.config_file}, "the graphs are: " + Join(suite.Names(), ", "));
  }
  const graphs::Graph graph = graphs::MaterializeGraph(*entry);
  const sim::Cluster cluster = sim::LoadCluster(config.cluster);
  const auto cost_model = sim::MakeCostModel(config.cost_model, {}, request.config_file);
  sim::Evaluator evaluator(graph, cluster, cost_model, learned::TrainingSimOptions(config.objective));
  const Objective objective{.kind = config.objective};
  // The schedules are fractions of the run's `steps` (a resumed run keeps
  // its schedule only with the same `steps`).
  HrlLearner learner(graph, cluster.num_devices(), config.objective == ObjectiveKind::kStepTime,
                     config.options, config.seed, config.steps);

  const auto run_path = [&](const std::string& file) { return request.run_dir + "/" + file; };
  const std::string checkpoint = run_path("checkpoint.pt");
  const std::string best_path = run_path("best_decision.json");
  if (FileExists(checkpoint) && !request.resume) {
    throw ConfigError("run folder " + request.run_dir + " already holds a checkpoint", Location{checkpoint},
                      "pass --resume to continue that run, or choose another --run-dir");
  }
  learned::TrainingState state;
  int64_t evaluations = 0;
  double wall_before = 0.0;
  double best = std::numeric_limits<double>::infinity();  // best feasible score
  sim::Decision best_decision;
  if (request.resume && FileExists(checkpoint)) {
    state = learned::LoadCheckpoint(checkpoint, learned::kHrlCheckpoint, learner.Signature(), *learner.net(),
                                    &learner.optimizer());
    learner.LoadState(state);
    evaluations = static_cast<int64_t>(state.scalars.at("evaluations"));
    wall_before = state.scalars.at("wall_seconds");
    best = state.scalars.at("best");
    if (std::isfinite(best)) best_decision = sim::LoadDecision(best_path, graph, cluster);
    LogLine(LogLevel::kInfo, std::string(learned_grouper ? "hrl" : "colocrl") + ": resuming " + checkpoint +
                                 " at step " + std::to_string(state.step));
  }
  learned::WriteRunConfig(request);
  learned::TrainingCurves curves(run_path("curves.csv"), {"mean_cost", "feasible_fraction"},
                                 request.resume ? state.step : -1);
  const auto start = std::chrono::steady_clock::now();
  auto save = [&]() {
    // The best decision first: a checkpoint never names a best that is not on disk.
    if (std::isfinite(best)) sim::SaveDecision(best_path, best_decision, graph, cluster);
    learner.SaveState(&state);
    state.scalars["evaluations"] = static_cast<double>(evaluations);
    state.scalars["wall_seconds"] = wall_before + Seconds(start);
    state.scalars["best"] = best;
    learned::SaveCheckpoint(checkpoint, learned::kHrlCheckpoint, learner.Signature(), *learner.net(),
                            &learner.optimizer(), state);
  };
  const auto evaluate = [&](const std::vector<sim::Decision>& d, std::vector<sim::Evaluation>& e) {
    evaluator.EvaluateBatch(d, e);
  };
  const auto score = [&](const sim::Evaluation& e) { return objective.Score(e, cluster); };
  int64_t steps_here = 0;
  while (state.step < config.steps && (request.max_steps < 0 || steps_here < request.max_steps)) {
    const HrlLearner::StepResult r = learner.Step(config.options.samples_per_step, evaluate, score);
    evaluations += r.samples;
    for (size_t i = 0; i < learner.evaluations().size(); ++i) {
      const sim::Evaluation& e = learner.evaluations()[i];
      if (!e.feasible) continue;
      const double s = score(e);
      if (s < best) {
        best = s;
        best_decision = learner.decisions()[i];
      }
    }
    ++state.step;
    ++steps_here;
    learned::TrainingPoint point;
    point.step = state.step;
    point.reward = -std::sqrt(r.mean_cost);
    point.best_objective = std::isfinite(best) ? best : -1.0;
    point.wall_seconds = wall_before + Seconds(start);
    point.evaluations = evaluations;
    point.extra = {r.mean_cost, r.feasible_fraction};
    curves.Append(point);
    if (request.progress) {
      std::printf("%s step %lld/%lld: mean cost %.6g, feasible %.2f, best %.6g\n",
                  learned_grouper ? "hrl" : "colocrl", static_cast<long long>(state.step),
                  static_cast<long long>(config.steps), r.mean_cost, r.feasible_fraction,
                  point.best_objective);
      std::fflush(stdout);
    }
    if (state.step % config.checkpoint_every == 0 || state.step == config.steps) save();
  }
  if (steps_here == 0 && !FileExists(checkpoint)) save();
}

}  // namespace

void RegisterHrlTrainers() {
  learned::RegisterTrainer("hrl", [](const learned::TrainRequest& r) { TrainHrl(r, true); });
  learned::RegisterTrainer("colocrl", [](const learned::TrainRequest& r) { TrainHrl(r, false); });
}

}  // namespace gosim::agents::hrl
