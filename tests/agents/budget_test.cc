// One budget, counted the same for everyone: every simulator evaluation an
// agent makes (warm starts, heuristic phases, schedule extraction, memory
// repair) is one it reports, and it never reports more than its budget.
// Each run gets a fresh Evaluator, whose own counter sees every simulation.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/learned_agents.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/decision.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;

// Options that keep each agent quick, and memory repair on where the agent
// has it (so its extra evaluations are exercised).
std::string Options(const std::string& name, bool repair) {
  if (name == "brkga" || name == "brkga_5k" || name == "tuned_brkga") return "{population: 10}";
  if (name == "cp") return "{time_limit: 5}";
  if (name == "m_sct") return repair ? "{lp_time_limit: 5, repair: true}" : "{lp_time_limit: 5}";
  return repair ? "{repair: true}" : "{}";
}

std::unique_ptr<Agent> MakeWithRepair(const std::string& name) {
  try {
    return testing::Make(name, Options(name, true));
  } catch (const ConfigError&) {  // a search agent: no `repair` option
    return testing::Make(name, Options(name, false));
  }
}

// A small NMT training graph (colocation groups) on 4 devices whose memory
// holds 55% of the single-device peak, so one device is out of memory and
// the agents' repair and colocation handling run.
struct TightProblem {
  graphs::Graph graph;
  int64_t capacity = 0;
};

TightProblem MakeTightProblem() {
  TightProblem out{graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test")};
  Fixture roomy(out.graph, MakeCluster(4));
  const sim::Evaluation one = roomy.evaluator->Evaluate(sim::SingleDeviceDecision(out.graph, 0));
  out.capacity = static_cast<int64_t>(one.peak_memory * 0.55);
  return out;
}

TEST_CASE("Every non-learned agent reports exactly the simulator evaluations it made, within its budget") {
  const TightProblem tight = MakeTightProblem();
  {
    Fixture check(tight.graph, MakeCluster(4, tight.capacity));
    REQUIRE_FALSE(check.evaluator->Evaluate(sim::SingleDeviceDecision(tight.graph, 0)).feasible);
  }
  int checked = 0;
  for (const std::string& name : AgentNames()) {
    if (IsLearnedAgent(name)) continue;  // tests/learned/budget_test.cc
    for (const int64_t budget : {1, 2, 3, 7, 40}) {
      CAPTURE(name);
      CAPTURE(budget);
      Fixture f(tight.graph, MakeCluster(4, tight.capacity));
      std::unique_ptr<Agent> agent = MakeWithRepair(name);
      AgentResult r;
      try {
        r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, budget, 5));
      } catch (const ConfigError& e) {
        // cp refuses graphs over its max_nodes; nothing may be simulated then.
        CHECK_MESSAGE(name == "cp", e.what());
        CHECK(f.evaluator->evaluations() == 0);
        continue;
      }
      CHECK(f.evaluator->evaluations() == r.evaluations);
      CHECK(r.evaluations >= 1);
      CHECK(r.evaluations <= budget);
      REQUIRE_FALSE(r.curve.empty());
      CHECK(r.curve.back().evaluations == r.evaluations);
      ++checked;
    }
  }
  CHECK(checked >= 16 * 5);
}

}  // namespace
}  // namespace gosim::agents
