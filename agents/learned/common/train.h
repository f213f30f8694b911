// Training entry points of the learned agents, by agent name, for the
// `gosim train` command (experiments/cmd_train.cc). No torch here, so the
// command can include it.
//
// A training config is a YAML file whose `agent` key names the trainer
// (e.g. `agent: regal`); the rest is the trainer's own (see
// configs/experiments/regal_*.yaml). A run writes into `run_dir`: the config
// it ran with (config.yaml), checkpoints (checkpoint.pt, the latest; best.pt,
// the best on the validation split), curves.csv and a summary.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_TRAIN_H_
#define GOSIM_AGENTS_LEARNED_COMMON_TRAIN_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gosim::agents::learned {

struct TrainRequest {
  YAML::Node config;           // the whole config, overrides applied
  std::string config_file;     // for error locations
  std::string run_dir;         // output folder (created)
  bool resume = false;         // continue from run_dir/checkpoint.pt
  bool progress = true;        // print progress lines
  int64_t max_steps = -1;      // stop after this many steps in this process (-1: run to the end); tests
  bool evaluate_only = false;  // skip training; run the trainer's final evaluation (if it has one)
};

using TrainerFn = std::function<void(const TrainRequest& request)>;

// Adds a trainer for agent `name` (called by RegisterLearnedAgents).
void RegisterTrainer(const std::string& name, TrainerFn trainer);
std::vector<std::string> TrainerNames();
// Runs the trainer named by request.config["agent"]; ConfigError when the
// key is missing or names no trainer (with the valid names).
void RunTraining(const TrainRequest& request);

// Writes the config the run trains with (overrides applied) to
// run_dir/config.yaml, atomically.
void WriteRunConfig(const TrainRequest& request);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_TRAIN_H_
