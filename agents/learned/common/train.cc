#include "agents/learned/common/train.h"

#include <map>

#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "core/yaml.h"

namespace gosim::agents::learned {

namespace {

std::map<std::string, TrainerFn>& Trainers() {
  static std::map<std::string, TrainerFn> trainers;
  return trainers;
}

}  // namespace

void RegisterTrainer(const std::string& name, TrainerFn trainer) {
  Trainers()[name] = std::move(trainer);
}

std::vector<std::string> TrainerNames() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : Trainers()) names.push_back(name);
  return names;
}

void RunTraining(const TrainRequest& request) {
  const YAML::Node agent = request.config["agent"];
  const std::vector<std::string> names = TrainerNames();
  if (!agent || !agent.IsScalar()) {
    throw ConfigError("missing key 'agent' (the agent to train)", Location{request.config_file},
                      "add e.g. `agent: regal`; trainable agents: " + Join(names, ", "));
  }
  const std::string name = agent.as<std::string>();
  const auto it = Trainers().find(name);
  if (it == Trainers().end()) {
    throw ConfigError("no trainer for agent '" + name + "'." + DidYouMean(name, names),
                      YamlLocation(agent, request.config_file, "agent"),
                      "trainable agents: " + Join(names, ", "));
  }
  it->second(request);
}

void WriteRunConfig(const TrainRequest& request) {
  YAML::Emitter emitter;
  emitter << request.config;
  WriteFileAtomic(request.run_dir + "/config.yaml", std::string(emitter.c_str()) + "\n");
}

}  // namespace gosim::agents::learned
