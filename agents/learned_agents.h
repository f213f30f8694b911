// The names of the learned (LibTorch) agents, and loading them on demand.
//
// The learned agents live in the LibTorch plugin (core/plugin.h), which the
// agent registry loads the first time one of these names is used (MakeAgent,
// AgentDescription). So every caller of MakeAgent (the command line, the
// experiment runner, the Python module) gets them without linking LibTorch,
// and programs that never name one never load it. agents/learned/register.cc
// refuses to register a learned agent missing from this list.
#ifndef GOSIM_AGENTS_LEARNED_AGENTS_H_
#define GOSIM_AGENTS_LEARNED_AGENTS_H_

#include <algorithm>
#include <array>
#include <string_view>

namespace gosim::agents {

// Sorted; one entry per agent that agents/learned/ registers.
inline constexpr std::array<std::string_view, 5> kLearnedAgentNames = {"colocrl", "go", "hrl", "mcm",
                                                                       "regal"};

inline bool IsLearnedAgent(std::string_view name) {
  return std::find(kLearnedAgentNames.begin(), kLearnedAgentNames.end(), name) != kLearnedAgentNames.end();
}

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_LEARNED_AGENTS_H_
