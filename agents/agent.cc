#include "agents/agent.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <sstream>

#include "agents/builtin.h"
#include "agents/learned_agents.h"
#include "core/plugin.h"
#include "core/registry.h"
#include "core/strings.h"

namespace gosim::agents {

double Objective::Score(const sim::Evaluation& evaluation, const sim::Cluster& cluster) const {
  if (kind == ObjectiveKind::kMaxLoad && evaluation.max_load < 0.0) {
    throw ConfigError("the max_load objective got an evaluation without a max-load", {},
                      "build the Evaluator with SimOptions::max_load = true (sim option max_load: true)");
  }
  if (!evaluation.feasible)
    return kInfeasibleBase + (kind == ObjectiveKind::kMaxLoad ? evaluation.max_load : evaluation.step_time);
  switch (kind) {
    case ObjectiveKind::kThroughput:
      return evaluation.throughput;
    case ObjectiveKind::kMaxLoad:
      return evaluation.max_load;
    case ObjectiveKind::kStepTime:
      return evaluation.step_time;
    case ObjectiveKind::kPeakMemory:
      return evaluation.peak_memory;
    case ObjectiveKind::kWeighted: {
      double capacity = 0.0;
      for (const sim::DeviceSpec& device : cluster.devices()) {
        const double c = static_cast<double>(device.memory_capacity);
        if (c > 0 && (capacity == 0.0 || c < capacity)) capacity = c;
      }
      const double memory_term = capacity > 0 ? evaluation.peak_memory / capacity : 0.0;
      return evaluation.step_time / reference_step_time + memory_weight * memory_term;
    }
  }
  return evaluation.step_time;
}

std::string Objective::ToString() const {
  switch (kind) {
    case ObjectiveKind::kStepTime:
      return "step_time";
    case ObjectiveKind::kPeakMemory:
      return "peak_memory";
    case ObjectiveKind::kMaxLoad:
      return "max_load";
    case ObjectiveKind::kThroughput:
      return "throughput";
    case ObjectiveKind::kWeighted: {
      std::ostringstream out;
      out << "weighted(memory_weight=" << memory_weight << ", reference_step_time=" << reference_step_time
          << ")";
      return out.str();
    }
  }
  return "unknown";
}

ObjectiveKind ParseObjectiveKind(const std::string& text, const Location& where) {
  if (text == "step_time") return ObjectiveKind::kStepTime;
  if (text == "peak_memory") return ObjectiveKind::kPeakMemory;
  if (text == "weighted") return ObjectiveKind::kWeighted;
  if (text == "max_load") return ObjectiveKind::kMaxLoad;
  if (text == "throughput") return ObjectiveKind::kThroughput;
  const std::vector<std::string> valid = {"step_time", "peak_memory", "weighted", "max_load", "throughput"};
  throw ConfigError("unknown objective '" + text + "'." + DidYouMean(text, valid), where,
                    "valid values are: " + Join(valid, ", "));
}

namespace {

using AgentRegistry = Registry<std::unique_ptr<Agent>, YamlMap&>;

// Readers share it; RegisterAgent (the LibTorch plugin registering its
// agents while other threads build theirs) takes it alone.
std::shared_mutex& RegistryMutex() {
  static std::shared_mutex mutex;
  return mutex;
}

AgentRegistry& MutableRegistry() {
  // Built-in agents are registered by explicit calls (no static initializers
  // that a static-library link could drop); the function-local static makes
  // the first use thread-safe.
  static AgentRegistry registry = [] {
    AgentRegistry r("agent");
    RegisterBuiltinAgents([&r](const std::string& name, AgentFactory factory, std::string description) {
      r.Register(name, std::move(factory), std::move(description));
    });
    return r;
  }();
  return registry;
}

// Loads the LibTorch plugin when `name` is a learned agent it has not
// registered yet (agents/learned_agents.h); IoError when it cannot.
void EnsureRegistered(const std::string& name) {
  if (!IsLearnedAgent(name)) return;
  {
    std::shared_lock lock(RegistryMutex());
    if (MutableRegistry().Contains(name)) return;
  }
  LoadTorchPlugin();
}

// Throws the registry's unknown-name error, but listing AgentNames(): the
// learned agents too, whether or not the plugin is loaded yet.
void CheckKnown(const std::string& name, const Location& where) {
  {
    std::shared_lock lock(RegistryMutex());
    if (MutableRegistry().Contains(name)) return;
  }
  const std::vector<std::string> names = AgentNames();
  throw ConfigError("unknown agent '" + name + "'." + DidYouMean(name, names), where,
                    "valid values are: " + Join(names, ", "));
}

}  // namespace

std::unique_ptr<Agent> MakeAgent(const std::string& name, YamlMap& options) {
  EnsureRegistered(name);
  CheckKnown(name, options.Where());
  AgentFactory factory;
  {
    std::shared_lock lock(RegistryMutex());
    factory = MutableRegistry().FactoryOf(name, options.Where());
  }
  return factory(options);  // outside the lock: factories may look up other agents
}

std::vector<std::string> AgentNames() {
  std::vector<std::string> names;
  {
    std::shared_lock lock(RegistryMutex());
    names = MutableRegistry().Names();
  }
  // The learned agents are valid names before the plugin is loaded.
  names.insert(names.end(), kLearnedAgentNames.begin(), kLearnedAgentNames.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

void RegisterAgent(const std::string& name, AgentFactory factory, std::string description) {
  AgentRegistry& registry = MutableRegistry();  // built-ins first, outside the lock
  std::unique_lock lock(RegistryMutex());
  registry.Register(name, std::move(factory), std::move(description));
}

std::string AgentDescription(const std::string& name) {
  EnsureRegistered(name);
  CheckKnown(name, {});
  std::shared_lock lock(RegistryMutex());
  return MutableRegistry().Description(name);
}

}  // namespace gosim::agents

namespace gosim::agents {

void RegisterBuiltinAgents(const RegisterFn& add) {
  RegisterSimpleAgents(add);
  RegisterExpertAgent(add);
  RegisterPartitionAgents(add);
  RegisterBaechiAgents(add);
  RegisterHeftAgent(add);
  RegisterLocalSearchAgents(add);
  RegisterRoleSweepAgent(add);
  RegisterBrkgaAgents(add);
  RegisterCpAgent(add);
  RegisterPipelineDpAgent(add);
  RegisterIlpAgent(add);
  RegisterPipelineAgent(add);
}

}  // namespace gosim::agents
