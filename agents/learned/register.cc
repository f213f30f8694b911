#include "agents/learned/register.h"

#include <mutex>

#include "agents/builtin.h"

namespace gosim::agents {

void RegisterLearnedAgents() {
  static std::once_flag once;
  std::call_once(once, [] {
    const RegisterFn add = [](const std::string& name, AgentFactory factory, std::string description) {
      RegisterAgent(name, std::move(factory), std::move(description));
    };
    // One call per learned agent family (each defined in its own folder).
    (void)add;
  });
}

}  // namespace gosim::agents
