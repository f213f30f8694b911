// REGAL's "Tuned BRKGA" (Paliwal et al. 2020, Sec. 5): BRKGA whose
// hyper-parameters were tuned by grid search on training graphs. The grid
// search that chose tuned_brkga's defaults is in the two skipped test cases below;
// run it with
//   build/tests/agents/agents_tests -tc="BRKGA hyper-parameter grid*" --no-skip
// It prints one line per configuration (mean % improvement over the
// default BRKGA 5K on the training graphs). The regular test checks the
// chosen values on held-out graphs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "agents/agent.h"
#include "agents/brkga/brkga.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

namespace gosim::agents {
namespace {

// REGAL's setting: peak memory on two devices, 5,000 evaluations, graphs of
// REGAL's synthetic distribution (regal_random). Training seeds 1..6,
// held-out seeds 101..106.
struct Suite {
  sim::Cluster cluster = sim::LoadCluster("k80x2");
  std::vector<graphs::Graph> graphs;
  std::vector<std::unique_ptr<sim::Evaluator>> evaluators;

  explicit Suite(std::vector<int> seeds) {
    graphs.reserve(seeds.size());
    for (int seed : seeds) {
      graphs.push_back(
          graphs::Generate("regal_random", LoadYamlString("{seed: " + std::to_string(seed) + "}"), "tune"));
    }
    for (const graphs::Graph& g : graphs) {
      evaluators.push_back(std::make_unique<sim::Evaluator>(g, cluster, sim::MakeCostModel("roofline")));
    }
  }

  // Best peak memory per (graph, run seed).
  std::vector<double> Run(const brkga::BrkgaOptions& options, const std::vector<uint64_t>& run_seeds) const {
    std::vector<double> out;
    for (size_t g = 0; g < graphs.size(); ++g) {
      for (uint64_t seed : run_seeds) {
        Problem p{graphs[g],       cluster, *evaluators[g], Objective{ObjectiveKind::kPeakMemory},
                  Budget{5000, 0}, seed};
        out.push_back(brkga::RunBrkga(p, options, brkga::UniformSampler()).best_objective);
      }
    }
    return out;
  }
};

// Mean % improvement of `candidate` over `reference` (per pair).
double MeanImprovement(const std::vector<double>& reference, const std::vector<double>& candidate) {
  double sum = 0;
  for (size_t i = 0; i < reference.size(); ++i) sum += 100.0 * (reference[i] - candidate[i]) / reference[i];
  return sum / static_cast<double>(reference.size());
}

// The BRKGA options of an agent's defaults file (its `warm_start`, an agent
// option rather than a BRKGA one, left out: RunBrkga starts cold).
brkga::BrkgaOptions Options(const std::string& agent) {
  YAML::Node node = LoadYamlFile("configs/agents/" + agent + ".yaml");
  node.remove("warm_start");
  YamlMap m = YamlMap::Root(node, agent);
  return brkga::BrkgaOptions::Parse(m, brkga::BrkgaOptions{});
}

TEST_CASE("BRKGA hyper-parameter grid (REGAL's Tuned BRKGA)" * doctest::skip()) {
  const Suite train({1, 2, 3, 4, 5, 6});
  const std::vector<uint64_t> seeds = {0, 1};
  const std::vector<double> reference = train.Run(brkga::BrkgaOptions{}, seeds);
  double best = -1e300;
  std::string best_text;
  for (int population : {50, 100, 200}) {
    for (double elite : {0.1, 0.2, 0.3}) {
      for (double mutant : {0.1, 0.2, 0.3}) {
        for (double rho : {0.5, 0.6, 0.7, 0.8}) {
          brkga::BrkgaOptions o;
          o.population = population;
          o.elite_fraction = elite;
          o.mutant_fraction = mutant;
          o.elite_bias = rho;
          const double gain = MeanImprovement(reference, train.Run(o, seeds));
          char text[160];
          std::snprintf(text, sizeof(text), "population %d elite %.1f mutant %.1f rho %.1f: %+.3f%%",
                        population, elite, mutant, rho, gain);
          std::printf("%s\n", text);
          std::fflush(stdout);
          if (gain > best) {
            best = gain;
            best_text = text;
          }
        }
      }
    }
  }
  std::printf("best: %s\n", best_text.c_str());
  // The search is reproducible: the default configuration run again gives
  // the same objectives, so the gains above are differences between
  // configurations, not between runs.
  CHECK(train.Run(brkga::BrkgaOptions{}, seeds) == reference);
}

// Second stage: the grid's five best configurations on separate validation
// graphs (the grid's gains are within noise, so the choice is re-checked).
TEST_CASE("BRKGA tuning: validation of the grid's best configurations" * doctest::skip()) {
  const Suite validation({201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212});
  const std::vector<uint64_t> seeds = {3, 4};
  const std::vector<double> reference = validation.Run(brkga::BrkgaOptions{}, seeds);
  struct Config {
    int population;
    double elite, mutant, rho;
  };
  for (const Config& c : std::vector<Config>{{50, 0.3, 0.1, 0.6},
                                             {50, 0.2, 0.1, 0.6},
                                             {200, 0.1, 0.1, 0.8},
                                             {100, 0.2, 0.1, 0.7},
                                             {100, 0.2, 0.3, 0.8}}) {
    brkga::BrkgaOptions o;
    o.population = c.population;
    o.elite_fraction = c.elite;
    o.mutant_fraction = c.mutant;
    o.elite_bias = c.rho;
    const std::vector<double> candidate = validation.Run(o, seeds);
    const double gain = MeanImprovement(reference, candidate);
    std::printf("validation: population %d elite %.1f mutant %.1f rho %.1f: %+.3f%%\n", c.population, c.elite,
                c.mutant, c.rho, gain);
    std::fflush(stdout);
    // Every run finds a feasible placement (a peak within the devices'
    // memory), the premise of comparing peaks.
    for (const double peak : candidate) {
      CHECK(peak > 0.0);
      CHECK(peak < Objective::kInfeasibleBase);
    }
  }
}

// The grid and validation stages find no configuration that is better than
// BRKGA 5K's by more than the run-to-run noise (docs/AGENTS.md: held-out gain
// -0.18% over 12 graphs x 2 seeds). This checks that tuned_brkga is not
// significantly worse than BRKGA 5K on held-out graphs: the mean paired
// improvement must lie above -2 standard errors.
TEST_CASE("tuned_brkga is not significantly worse than BRKGA 5K on held-out graphs") {
  const Suite held_out({101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112});
  const std::vector<uint64_t> seeds = {7, 8};
  const std::vector<double> base = held_out.Run(Options("brkga_5k"), seeds);
  const std::vector<double> tuned = held_out.Run(Options("tuned_brkga"), seeds);
  const double n = static_cast<double>(base.size());
  const double mean = MeanImprovement(base, tuned);
  double squares = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double d = 100.0 * (base[i] - tuned[i]) / base[i] - mean;
    squares += d * d;
  }
  const double standard_error = std::sqrt(squares / (n - 1) / n);
  MESSAGE("tuned_brkga vs brkga_5k on held-out regal_random graphs: " << mean << "% (standard error "
                                                                      << standard_error << "%)");
  CHECK(mean > -2.0 * standard_error);
}

}  // namespace
}  // namespace gosim::agents
