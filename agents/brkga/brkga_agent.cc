// The brkga and tuned_brkga agents: REGAL's "BRKGA 5K" and "Tuned BRKGA"
// baselines (Paliwal et al. 2020, Sec. 5 and Table 1), uniform sampling.
// They differ only in their default hyper-parameters; see docs/AGENTS.md for
// how the tuned values were chosen.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "agents/brkga/brkga.h"
#include "agents/builtin.h"
#include "core/error.h"
#include "core/log.h"
#include "sim/result.h"

namespace gosim::agents {
namespace {

// Gives `decision` (which has no priorities) the op priorities that
// reproduce its FIFO schedule: minus each op's ready time in a simulation of
// the decision. FIFO runs the earliest-ready op first, ties by lower id, as
// priority order does for equal priorities, so the schedule is the same.
// Transfers need nothing: equal transfer genes (Encode) keep the links FIFO.
// One simulator evaluation.
void MakeOrderExplicit(const Problem& problem, sim::Decision* decision) {
  const sim::SimResult run = problem.evaluator.Simulate(*decision, /*timeline=*/true);
  decision->priority.assign(static_cast<size_t>(problem.graph.num_nodes()), 0.0);
  for (const sim::OpRecord& op : run.ops) decision->priority[static_cast<size_t>(op.node)] = -op.ready;
}

class BrkgaAgent : public Agent {
 public:
  BrkgaAgent(std::string name, YamlMap& options, const brkga::BrkgaOptions& defaults)
      : name_(std::move(name)),
        warm_start_(ParseWarmStart(options)),
        options_(brkga::BrkgaOptions::Parse(options, defaults)) {}
  std::string name() const override { return name_; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    if (warm_start_.empty()) return brkga::RunBrkga(problem, options_, brkga::UniformSampler(), progress);
    // Warm start: each named one-shot agent's decision, encoded, joins
    // generation 0. Their evaluations are charged to this agent's budget.
    const brkga::ChromosomeLayout layout = brkga::LayoutFor(problem, options_);
    std::vector<std::vector<double>> initial;   // exact encodings of the seeds
    std::vector<std::vector<double>> variants;  // FIFO seeds in topological order
    int64_t used = 0;
    for (const std::string& agent_name : warm_start_) {
      YamlMap no_options = YamlMap::Root(YAML::Node(YAML::NodeType::Map), "warm_start");
      std::unique_ptr<Agent> agent = MakeAgent(agent_name, no_options);
      Problem one_shot = problem;
      one_shot.budget.evaluations = 1;
      AgentResult r;
      try {
        r = agent->Optimize(one_shot);
      } catch (const Error& e) {  // e.g. no expert rules for this graph: start without it
        GOSIM_LOG(Warn) << name_ << ": warm start from " << agent_name << " skipped: " << e.what();
        continue;
      }
      used += r.evaluations;
      if (r.best.placement.size() != static_cast<size_t>(problem.graph.num_nodes())) continue;
      if (layout.priority_genes() && !r.best.has_priority()) {
        // Two seeds from a FIFO decision: its exact order, and the same
        // placement in topological order (a different schedule, which gives
        // the first generations more to recombine).
        variants.emplace_back(layout.size());
        layout.Encode(r.best, variants.back());
        MakeOrderExplicit(problem, &r.best);
        ++used;
      }
      initial.emplace_back(layout.size());
      layout.Encode(r.best, initial.back());
    }
    // Exact seeds first (they survive the smallest budgets), at most a population.
    initial.insert(initial.end(), variants.begin(), variants.end());
    if (initial.size() > static_cast<size_t>(options_.population)) initial.resize(options_.population);
    Problem rest = problem;
    const int64_t budget = problem.budget.evaluations > 0 ? problem.budget.evaluations : options_.evaluations;
    rest.budget.evaluations = std::max<int64_t>(1, budget - used);
    AgentResult result = brkga::RunBrkga(rest, options_, brkga::UniformSampler(), progress, initial);
    result.extra["warm_start_evaluations"] = static_cast<double>(used);
    return result;
  }

 private:
  // `warm_start`: names of one-shot agents (e.g. [single_device, m_etf])
  // whose decisions seed the initial population; empty (REGAL's uniform
  // initialization) by default.
  static std::vector<std::string> ParseWarmStart(YamlMap& options) {
    const auto names = options.Get<std::vector<std::string>>("warm_start", {});
    const std::vector<std::string> valid = AgentNames();
    for (const std::string& n : names) {
      if (std::find(valid.begin(), valid.end(), n) == valid.end() || n == "brkga" || n == "tuned_brkga") {
        options.Fail("warm_start", "names unknown or unsuitable agent '" + n + "'",
                     "use one-shot baselines such as single_device, human_expert, m_etf, metis");
      }
    }
    return names;
  }

  std::string name_;
  std::vector<std::string> warm_start_;
  brkga::BrkgaOptions options_;
};

// Defaults of `tuned_brkga`, from the grid search recorded in docs/AGENTS.md.
brkga::BrkgaOptions TunedDefaults() {
  brkga::BrkgaOptions o;
  o.population = 50;
  o.elite_fraction = 0.3;
  o.mutant_fraction = 0.1;
  o.elite_bias = 0.6;
  return o;
}

}  // namespace

void RegisterBrkgaAgents(const RegisterFn& add) {
  add(
      "brkga", [](YamlMap& o) { return std::make_unique<BrkgaAgent>("brkga", o, brkga::BrkgaOptions{}); },
      "BRKGA over REGAL's chromosome, uniform keys, 5,000 evaluations (REGAL 'BRKGA 5K')");
  add(
      "tuned_brkga",
      [](YamlMap& o) { return std::make_unique<BrkgaAgent>("tuned_brkga", o, TunedDefaults()); },
      "BRKGA with hyper-parameters tuned by grid search (REGAL 'Tuned BRKGA')");
}

}  // namespace gosim::agents
