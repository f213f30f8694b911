#include "agents/learned/register.h"

#include <mutex>

#include "agents/builtin.h"
#include "agents/learned/go/go_agent.h"
#include "agents/learned/hrl/hrl_agent.h"
#include "agents/learned/regal/regal.h"

namespace gosim::agents {

void RegisterLearnedAgents() {
  static std::once_flag once;
  std::call_once(once, [] {
    const RegisterFn add = [](const std::string& name, AgentFactory factory, std::string description) {
      RegisterAgent(name, std::move(factory), std::move(description));
    };
    // One call per learned agent family (each defined in its own folder).
    hrl::RegisterHrlAgents(add);  // hrl/hrl_agent.h: hrl, colocrl
    learned::RegisterRegal(add);
    learned::go::RegisterGo(add);  // go/go_agent.h: go (agent and trainer)
  });
}

}  // namespace gosim::agents
