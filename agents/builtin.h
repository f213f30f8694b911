// Registration of the built-in (non-learned) agents: one function per source
// file, called explicitly by the agent registry on first use, so that the
// linker never drops an agent from the static library.
#ifndef GOSIM_AGENTS_BUILTIN_H_
#define GOSIM_AGENTS_BUILTIN_H_

#include <functional>
#include <string>

#include "agents/agent.h"

namespace gosim::agents {

using RegisterFn =
    std::function<void(const std::string& name, AgentFactory factory, std::string description)>;

void RegisterBuiltinAgents(const RegisterFn& add);

// One per source file (defined there).
void RegisterSimpleAgents(const RegisterFn& add);       // simple_agents.cc
void RegisterExpertAgent(const RegisterFn& add);        // human_expert.cc
void RegisterPartitionAgents(const RegisterFn& add);    // partition_agents.cc
void RegisterBaechiAgents(const RegisterFn& add);       // baechi.cc
void RegisterHeftAgent(const RegisterFn& add);          // heft.cc
void RegisterLocalSearchAgents(const RegisterFn& add);  // local_search.cc
void RegisterRoleSweepAgent(const RegisterFn& add);     // role_sweep.cc
void RegisterBrkgaAgents(const RegisterFn& add);        // brkga/brkga_agent.cc
void RegisterCpAgent(const RegisterFn& add);            // cp.cc
void RegisterPipelineDpAgent(const RegisterFn& add);    // pipeline_dp.cc
void RegisterIlpAgent(const RegisterFn& add);           // ilp.cc
void RegisterPipelineAgent(const RegisterFn& add);      // pipeline_split.cc

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_BUILTIN_H_
