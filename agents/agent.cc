#include "agents/agent.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "agents/builtin.h"
#include "core/registry.h"
#include "core/strings.h"

namespace gosim::agents {

double Objective::Score(const sim::Evaluation& evaluation, const sim::Cluster& cluster) const {
  if (!evaluation.feasible) return kInfeasibleBase + evaluation.step_time;
  switch (kind) {
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
  const std::vector<std::string> valid = {"step_time", "peak_memory", "weighted"};
  throw ConfigError("unknown objective '" + text + "'." + DidYouMean(text, valid), where,
                    "valid values are: " + Join(valid, ", "));
}

namespace {

using AgentRegistry = Registry<std::unique_ptr<Agent>, YamlMap&>;

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

}  // namespace

std::unique_ptr<Agent> MakeAgent(const std::string& name, YamlMap& options) {
  return MutableRegistry().Create(name, options, options.Where());
}

std::vector<std::string> AgentNames() {
  return MutableRegistry().Names();
}

void RegisterAgent(const std::string& name, AgentFactory factory, std::string description) {
  MutableRegistry().Register(name, std::move(factory), std::move(description));
}

std::string AgentDescription(const std::string& name) {
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
  RegisterBrkgaAgents(add);
  RegisterCpAgent(add);
}

}  // namespace gosim::agents
