// Registration of the learned (LibTorch) agents into the agent registry of
// agents/agent.h. Call once, before MakeAgent, from programs linked with
// gosim::learned (the gosim executable does so when built with LibTorch).
// This header does not include torch headers.
#ifndef GOSIM_AGENTS_LEARNED_REGISTER_H_
#define GOSIM_AGENTS_LEARNED_REGISTER_H_

namespace gosim::agents {

// Idempotent: a second call does nothing.
void RegisterLearnedAgents();

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_LEARNED_REGISTER_H_
