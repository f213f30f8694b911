#include "agents/brkga/brkga.h"

#include <doctest/doctest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "agents/brkga/chromosome.h"
#include "agents/brkga/sampler.h"
#include "agents/warm_start.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cost_model.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Fixture;
using testing::MakeCluster;

TEST_CASE("ChromosomeLayout follows REGAL's layout and decodes by max affinity") {
  // 2 nodes (1 output each), 3 devices: 6 affinity, 2 priority, 6 transfer genes.
  brkga::ChromosomeLayout layout(2, 2, 3, true, true);
  CHECK(layout.size() == 14);
  CHECK(layout.placement_gene(1, 2) == 5);
  CHECK(layout.priority_gene(1) == 7);
  CHECK(layout.transfer_gene(1, 0) == 11);
  std::vector<double> genes = {0.1,  0.9,  0.3,  // node 0 -> device 1
                               0.5,  0.5,  0.2,  // node 1: tie -> device 0
                               0.25, 0.75,       // priorities
                               0.1,  0.2,  0.3, 0.4, 0.5, 0.6};
  sim::Decision d;
  layout.Decode(genes, &d);
  CHECK(d.placement == std::vector<int32_t>{1, 0});
  CHECK(d.priority == std::vector<double>{0.25, 0.75});
  CHECK(d.transfer_priority == std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6});

  brkga::ChromosomeLayout bare(2, 2, 3, false, false);
  CHECK(bare.size() == 6);
  bare.Decode(std::span<const double>(genes.data(), 6), &d);
  CHECK(d.placement == std::vector<int32_t>{1, 0});
  CHECK(d.priority.empty());
  CHECK(d.transfer_priority.empty());
  // One device: no transfer genes.
  CHECK(brkga::ChromosomeLayout(2, 2, 1, true, true).size() == 4);
}

TEST_CASE("Samplers: uniform in [0,1), Beta with the requested mean, bad parameters rejected") {
  Rng rng(5);
  std::vector<double> genes(20000);
  brkga::UniformSampler().Sample(rng, genes);
  double mean = 0;
  for (double g : genes) {
    CHECK(g >= 0.0);
    CHECK(g < 1.0);
    mean += g;
  }
  CHECK(mean / genes.size() == doctest::Approx(0.5).epsilon(0.02));
  brkga::BetaSampler beta(std::vector<double>(genes.size(), 8.0), std::vector<double>(genes.size(), 2.0));
  beta.Sample(rng, genes);
  mean = 0;
  for (double g : genes) mean += g;
  CHECK(mean / genes.size() == doctest::Approx(0.8).epsilon(0.02));
  CHECK_THROWS_AS(brkga::BetaSampler({1.0}, {0.0}), Error);
  CHECK_THROWS_AS(brkga::BetaSampler({1.0, 1.0}, {1.0}), Error);
  std::vector<double> wrong(3);
  CHECK_THROWS_AS(beta.Sample(rng, wrong), Error);
}

brkga::BrkgaOptions SmallOptions(int64_t evaluations) {
  brkga::BrkgaOptions o;
  o.population = 30;
  o.evaluations = evaluations;
  return o;
}

TEST_CASE("RunBrkga spends exactly the budget, including a partial last generation") {
  Fixture f(testing::RandomLayeredGraph(4, 3, 3), MakeCluster(2));
  const Problem problem = f.MakeProblem();
  // 30 + k * 24: 100 = 30 + 2 * 24 + 22 (partial third generation).
  AgentResult r = brkga::RunBrkga(problem, SmallOptions(100), brkga::UniformSampler());
  CHECK(r.evaluations == 100);
  CHECK(r.extra.at("generations") == 4.0);
  Problem budgeted = f.MakeProblem(ObjectiveKind::kStepTime, 17);
  CHECK(brkga::RunBrkga(budgeted, SmallOptions(100), brkga::UniformSampler()).evaluations == 17);
}

// Every gene 0.5: the affinities tie, so every chromosome decodes to
// everything on device 0.
class DeviceZeroSampler : public brkga::GeneSampler {
 public:
  void Sample(Rng&, std::span<double> genes) const override { std::fill(genes.begin(), genes.end(), 0.5); }
};

TEST_CASE("RunBrkga with a rescue owner (REGAL): never feasible, the reserve's rescue finds a fit") {
  // Three devices holding 45% of the one-device peak each; every
  // chromosome puts the graph on device 0, out of memory.
  const testing::TightProblem tight = testing::MakeTightProblem();
  Fixture f(tight.graph, MakeCluster(3, static_cast<int64_t>(tight.capacity / 0.55 * 0.45)));
  const int64_t budget = 400;
  const AgentResult plain = brkga::RunBrkga(f.MakeProblem(ObjectiveKind::kStepTime, budget),
                                            SmallOptions(budget), DeviceZeroSampler());
  CHECK_FALSE(plain.best_evaluation.feasible);
  CHECK(plain.evaluations == budget);
  CHECK(plain.extra.count("rescued") == 0);
  brkga::BrkgaOptions options = SmallOptions(budget);
  options.rescue_owner = "regal";
  const int64_t before = f.evaluator->evaluations();
  const AgentResult r =
      brkga::RunBrkga(f.MakeProblem(ObjectiveKind::kStepTime, budget), options, DeviceZeroSampler());
  CHECK(r.best_evaluation.feasible);
  CHECK(r.extra.at("rescued") == 1.0);
  CHECK(r.evaluations == f.evaluator->evaluations() - before);
  CHECK(r.evaluations <= budget);
  // Generations of 24 (30 less 6 elites) stopped with the reserve left.
  const int64_t reserve = RescueReserve(budget);
  CHECK(r.extra.at("evaluations_before_rescue") <= budget - reserve);
  CHECK(r.extra.at("evaluations_before_rescue") > budget - reserve - 24);
}

TEST_CASE("BRKGA results do not depend on the number of threads") {
  Fixture f(testing::RandomLayeredGraph(8, 5, 21), MakeCluster(3, int64_t{1} << 30, 1e10, 5e-6));
  const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 0, 99);
  AgentResult results[3];
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    results[0] = brkga::RunBrkga(problem, SmallOptions(600), brkga::UniformSampler());
  }
  {
    tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
    results[1] = brkga::RunBrkga(problem, SmallOptions(600), brkga::UniformSampler());
  }
  brkga::BrkgaOptions arena = SmallOptions(600);
  arena.threads = 2;
  results[2] = brkga::RunBrkga(problem, arena, brkga::UniformSampler());
  for (int i = 1; i < 3; ++i) {
    CHECK(results[i].best.placement == results[0].best.placement);
    CHECK(results[i].best.priority == results[0].best.priority);
    CHECK(results[i].best.transfer_priority == results[0].best.transfer_priority);
    CHECK(results[i].best_objective == results[0].best_objective);
    REQUIRE(results[i].curve.size() == results[0].curve.size());
    for (size_t k = 0; k < results[0].curve.size(); ++k) {
      CHECK(results[i].curve[k].evaluations == results[0].curve[k].evaluations);
      CHECK(results[i].curve[k].best_objective == results[0].curve[k].best_objective);
    }
  }
  // A different seed explores differently.
  const Problem other = f.MakeProblem(ObjectiveKind::kStepTime, 0, 100);
  AgentResult different = brkga::RunBrkga(other, SmallOptions(600), brkga::UniformSampler());
  CHECK(different.best.priority != results[0].best.priority);
}

TEST_CASE("A learned (Beta) sampler plugs into RunBrkga") {
  Fixture f(testing::IndependentChains(2, 3, 10'000'000), MakeCluster(2));
  const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 0, 5);
  brkga::BrkgaOptions options = SmallOptions(30);
  options.transfer_genes = false;
  const brkga::ChromosomeLayout layout = brkga::LayoutFor(problem, options);
  // Affinities that strongly favour the optimum (chain c on device c): the
  // very first population already contains it.
  std::vector<double> alpha(layout.size(), 1.0);
  std::vector<double> beta(layout.size(), 1.0);
  for (int v = 0; v < 6; ++v) {
    const int want = v < 3 ? 0 : 1;
    alpha[layout.placement_gene(v, want)] = 50.0;
    beta[layout.placement_gene(v, 1 - want)] = 50.0;
  }
  AgentResult r = brkga::RunBrkga(problem, options, brkga::BetaSampler(alpha, beta));
  CHECK(r.evaluations == 30);
  CHECK(r.best_objective == doctest::Approx(3e-3).epsilon(1e-9));
  CHECK(r.curve.front().evaluations == 1);
}

TEST_CASE("BRKGA beats random search at equal budget (seeded)") {
  // Layered graphs with costly transfers, where placement and order matter.
  int wins = 0;
  int cases = 0;
  for (uint64_t seed : {1, 2, 3}) {
    Fixture f(testing::RandomLayeredGraph(10, 6, seed), MakeCluster(4, int64_t{1} << 30, 2e9, 1e-5));
    for (ObjectiveKind kind : {ObjectiveKind::kStepTime, ObjectiveKind::kPeakMemory}) {
      const Problem problem = f.MakeProblem(kind, 2000, seed);
      // REGAL's comparison: both cold.
      const AgentResult ga = testing::Make("brkga_5k")->Optimize(problem);
      const AgentResult random = testing::Make("random_search", "{warm_start: []}")->Optimize(problem);
      CAPTURE(seed);
      CHECK(ga.evaluations == 2000);
      CHECK(random.evaluations == 2000);
      wins += ga.best_objective < random.best_objective;
      ++cases;
    }
  }
  CHECK(wins == cases);
}

}  // namespace
}  // namespace gosim::agents

namespace gosim::agents {
namespace {

TEST_CASE("BRKGA beats random search at equal budget on paper graphs (seeded)") {
  const sim::Cluster cluster = sim::LoadCluster("p100x4_pcie");
  const std::vector<std::pair<std::string, std::string>> specs = {
      {"nmt", "{layers: 2, seq_len: 4, hidden: 512, vocab: 4000}"},
      {"bert", "{layers: 2, hidden: 256, heads: 4, seq_len: 64}"},
      {"wavenet", "{dilations: [1, 2, 4, 8], samples: 4000}"},
      {"inception_v3", "{batch: 8}"}};
  for (const auto& [name, params] : specs) {
    const graphs::Graph graph = graphs::Generate(name, LoadYamlString(params), "test");
    const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel("roofline"));
    Problem problem{graph, cluster, evaluator, Objective{}, Budget{1000, 0.0}, 17};
    const AgentResult ga = testing::Make("brkga_5k")->Optimize(problem);
    const AgentResult random = testing::Make("random_search", "{warm_start: []}")->Optimize(problem);
    CAPTURE(name);
    CAPTURE(graph.num_nodes());
    CHECK(ga.best_evaluation.feasible);
    CHECK(ga.best_objective < random.best_objective);
  }
}

}  // namespace
}  // namespace gosim::agents

namespace gosim::agents {
namespace {

TEST_CASE("Encode gives a chromosome that decodes to the same placement and order") {
  const brkga::ChromosomeLayout layout(4, 4, 3, true, true);
  sim::Decision d;
  d.placement = {2, 0, 1, 2};
  d.priority = {5.0, -1.0, 7.0, 0.0};
  std::vector<double> genes(layout.size());
  layout.Encode(d, genes);
  sim::Decision back;
  layout.Decode(genes, &back);
  CHECK(back.placement == d.placement);
  // Priorities keep their order, in (0, 1).
  CHECK(back.priority[1] < back.priority[3]);
  CHECK(back.priority[3] < back.priority[0]);
  CHECK(back.priority[0] < back.priority[2]);
  for (double g : genes) {
    CHECK(g > 0.0);
    CHECK(g < 1.0);
  }
  // No priorities: topological order, earlier nodes first.
  d.priority.clear();
  layout.Encode(d, genes);
  layout.Decode(genes, &back);
  CHECK(back.priority[0] > back.priority[1]);
  CHECK(back.priority[2] > back.priority[3]);
}

TEST_CASE("A warm-started BRKGA is never worse than its seeds and spends exactly the budget") {
  const sim::Cluster cluster = sim::LoadCluster("p100x4_pcie");
  const graphs::Graph graph =
      graphs::Generate("nmt", LoadYamlString("{layers: 2, seq_len: 4, hidden: 512, vocab: 4000}"), "test");
  const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel("roofline"));
  Problem problem{graph, cluster, evaluator, Objective{}, Budget{300, 0.0}, 3};
  double best_seed = std::numeric_limits<double>::infinity();
  for (const char* name : {"single_device", "metis", "m_etf"}) {
    best_seed = std::min(best_seed, testing::Make(name)->Optimize(problem).best_objective);
  }
  const AgentResult warm =
      testing::Make("brkga", "{warm_start: [single_device, metis, m_etf]}")->Optimize(problem);
  CHECK(warm.best_evaluation.feasible);
  CHECK(warm.best_objective <= best_seed);
  // One evaluation per seed agent and one to make its FIFO order explicit.
  CHECK(warm.extra.at("warm_start_evaluations") == 6);
  CHECK(warm.extra.at("warm_start_seeds") == 3);
  // The seeds' evaluations count: the total is the budget, and the curve
  // starts after them.
  CHECK(warm.evaluations == 300);
  CHECK(warm.curve.back().evaluations == 300);
  CHECK(warm.curve.front().evaluations > 6);
  // The encoded seeds decode to decisions as good as the seeds themselves
  // (exact FIFO order), so a warm start with a zero-generation budget keeps them.
  Problem tiny = problem;
  tiny.budget.evaluations = 9;
  const AgentResult kept =
      testing::Make("brkga", "{warm_start: [single_device, metis, m_etf]}")->Optimize(tiny);
  CHECK(kept.best_objective == best_seed);
  CHECK(kept.evaluations == 9);
  // The default warm start: single_device and m_etf; brkga_5k is cold.
  const AgentResult by_default = testing::Make("brkga")->Optimize(problem);
  CHECK(by_default.extra.at("warm_start_seeds") == 2);
  CHECK(by_default.evaluations == 300);
  CHECK(by_default.best_objective <= testing::Make("m_etf")->Optimize(problem).best_objective);
  CHECK(testing::Make("brkga_5k")->Optimize(problem).extra.count("warm_start_seeds") == 0);
  CHECK_THROWS_AS(testing::Make("brkga", "{warm_start: [brkga]}"), ConfigError);
  CHECK_THROWS_AS(testing::Make("brkga", "{warm_start: [singel_device]}"), ConfigError);
}

}  // namespace
}  // namespace gosim::agents
