#include "agents/learned/register.h"

#include <mutex>

#include "agents/builtin.h"
#include "agents/learned/go/go_agent.h"
#include "agents/learned/hrl/hrl_agent.h"
#include "agents/learned/mcm/mcm.h"
#include "agents/learned/regal/regal.h"
#include "agents/learned_agents.h"
#include "core/error.h"

namespace gosim::agents {

void RegisterLearnedAgents() {
  static std::once_flag once;
  std::call_once(once, [] {
    const RegisterFn add = [](const std::string& name, AgentFactory factory, std::string description) {
      // The registry loads the plugin only for the names it knows.
      if (!IsLearnedAgent(name)) {
        throw StateError("learned agent '" + name + "' is missing from kLearnedAgentNames",
                         Location{"agents/learned_agents.h"}, "add it there");
      }
      RegisterAgent(name, std::move(factory), std::move(description));
    };
    // One call per learned agent family (each defined in its own folder).
    hrl::RegisterHrlAgents(add);  // hrl/hrl_agent.h: hrl, colocrl
    learned::RegisterRegal(add);
    learned::go::RegisterGo(add);    // go/go_agent.h: go (agent and trainer)
    learned::mcm::RegisterMcm(add);  // mcm/mcm.h: mcm (agent and trainer)
  });
}

}  // namespace gosim::agents
