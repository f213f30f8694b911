// Registration of the learned (LibTorch) agents into the agent registry of
// agents/agent.h. The LibTorch plugin's entry point calls it
// (experiments/torch_plugin.cc); programs linked with gosim::learned (its
// tests) may call it directly. Every name it registers must be in
// kLearnedAgentNames (agents/learned_agents.h), or it throws StateError.
// This header does not include torch headers.
#ifndef GOSIM_AGENTS_LEARNED_REGISTER_H_
#define GOSIM_AGENTS_LEARNED_REGISTER_H_

namespace gosim::agents {

// Idempotent: a second call does nothing.
void RegisterLearnedAgents();

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_LEARNED_REGISTER_H_
