// The brkga and tuned_brkga agents: REGAL's "BRKGA 5K" and "Tuned BRKGA"
// baselines (Paliwal et al. 2020, Sec. 5 and Table 1), uniform sampling.
// They differ only in their default hyper-parameters; see docs/AGENTS.md for
// how the tuned values were chosen.
#include <memory>

#include "agents/brkga/brkga.h"
#include "agents/builtin.h"

namespace gosim::agents {
namespace {

class BrkgaAgent : public Agent {
 public:
  BrkgaAgent(std::string name, YamlMap& options, const brkga::BrkgaOptions& defaults)
      : name_(std::move(name)), options_(brkga::BrkgaOptions::Parse(options, defaults)) {}
  std::string name() const override { return name_; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    return brkga::RunBrkga(problem, options_, brkga::UniformSampler(), progress);
  }

 private:
  std::string name_;
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
