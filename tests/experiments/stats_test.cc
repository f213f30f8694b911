#include "experiments/stats.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "experiments/experiment_config.h"
#include "experiments/summary.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;
using testing::TinyExperimentYaml;
using testing::WriteText;

TEST_CASE("The 95% t-interval uses Student's quantiles") {
  CHECK(TQuantile975(1) == doctest::Approx(12.706));
  CHECK(TQuantile975(4) == doctest::Approx(2.776));
  CHECK(TQuantile975(1000) == doctest::Approx(1.96));
  CHECK_FALSE(MeanInterval95({5.0}).has_value());
  // mean 2, sample sd 1, n 3: 2 +- 4.303 / sqrt(3)
  const Interval i = *MeanInterval95({1.0, 2.0, 3.0});
  CHECK(i.low == doctest::Approx(2.0 - 4.303 / std::sqrt(3.0)));
  CHECK(i.high == doctest::Approx(2.0 + 4.303 / std::sqrt(3.0)));
}

TEST_CASE("The paired bootstrap claims better or worse only when every resample agrees in sign") {
  // An agent 9-11% faster on each of 5 seeds: better, interval inside [-11, -9].
  const PairedComparison faster = PairedBootstrap({0.90, 0.89, 0.91, 0.895, 0.905}, {1, 1, 1, 1, 1});
  CHECK(faster.pairs == 5);
  CHECK(faster.verdict == -1);
  CHECK(faster.mean_pct == doctest::Approx(-10.0));
  CHECK(faster.pct_interval.low >= -11.0);
  CHECK(faster.pct_interval.high <= -9.0);
  // Deterministic: the same input gives the same interval.
  const PairedComparison again = PairedBootstrap({0.90, 0.89, 0.91, 0.895, 0.905}, {1, 1, 1, 1, 1});
  CHECK(again.pct_interval.low == faster.pct_interval.low);
  // Mixed signs: no claim, although the mean is negative.
  const PairedComparison mixed = PairedBootstrap({0.8, 1.1, 0.95, 1.05}, {1, 1, 1, 1});
  CHECK(mixed.mean_pct < 0.0);
  CHECK(mixed.verdict == 0);
  CHECK(mixed.pct_interval.low < 0.0);
  CHECK(mixed.pct_interval.high > 0.0);
  // Slower on every pair: worse. Two pairs, however clear: no claim.
  CHECK(PairedBootstrap({1.2, 1.3, 1.25}, {1, 1, 1}).verdict == 1);
  CHECK(PairedBootstrap({0.5, 0.5}, {1, 1}).verdict == 0);
}

TEST_CASE("Speedups are aggregated by geometric mean") {
  // 2x faster on one graph, 2x slower on another: no gain (the arithmetic
  // mean of the speedups, 1.25, would claim one).
  CHECK(*GeometricMean({2.0, 0.5}) == doctest::Approx(1.0));
  CHECK(*GeometricMean({2.0, 8.0}) == doctest::Approx(4.0));
  CHECK_FALSE(GeometricMean({}).has_value());
}

TEST_CASE(
    "The summary shows intervals, paired verdicts, geometric-mean speedups, evaluations and flags a slow "
    "reference") {
  TempDir dir;
  // random_search is the reference here, and made slower than single_device.
  const ExperimentConfig config = LoadExperiment(
      WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run", 3, "reference: random_search\n")));
  const std::vector<Cell> cells = ExpandGrid(config);
  REQUIRE(cells.size() == 6);
  ResultsLog log(dir / "results.jsonl");
  const double reference_ms[] = {12.0, 12.5, 11.5};
  for (const Cell& cell : cells) {
    CellRecord r;
    r.cell = cell.id;
    r.identity = cell.identity;
    r.feasible = true;
    const bool single = config.agents[static_cast<size_t>(cell.agent)].name == "single_device";
    r.step_time = (single ? 10.0 : reference_ms[cell.seed]) * 1e-3;
    r.best_objective = r.step_time;
    r.evaluations = single ? 1 : 40;
    r.pretrain_evaluations = single ? 0 : 1234;
    log.Append(r);
  }
  const Summary summary = Summarize(config, cells, log);
  REQUIRE(summary.entries.size() == 2);
  const SummaryEntry& one = summary.entries[0];
  const SummaryEntry& ref = summary.entries[1];
  CHECK(one.label == "single_device");
  CHECK(ref.reference_slower_than_single_device);
  REQUIRE(ref.interval.has_value());
  CHECK(ref.interval->low == doctest::Approx(12.0 - 4.303 * 0.5 / std::sqrt(3.0)));
  REQUIRE(one.paired.has_value());
  CHECK(one.paired->pairs == 3);
  CHECK(one.paired->verdict == -1);
  CHECK(*one.vs_reference_pct == doctest::Approx((10.0 / 12.0 - 1.0) * 100.0));
  const std::string table = summary.ToMarkdown();
  CHECK(table.find(": step time in ms") != std::string::npos);
  CHECK(table.find("10.000 +-0.000 (-16.7%, better)") != std::string::npos);
  CHECK(table.find("12.000 +-1.242 (ref; slower than single_device)") != std::string::npos);
  // Speedup 12 / 10; 1 evaluation per cell; no pre-training.
  CHECK(table.find("| 1.200x (1) | 1 | 0 | 3 |") != std::string::npos);
  CHECK(table.find("| (ref) | 40 | 1,234 | 3 |") != std::string::npos);
  CHECK(table.find("evals (pre-train)") != std::string::npos);
  CHECK(table.find("Note: random_search is slower than single_device on tiny_branches") != std::string::npos);
  const std::string csv = summary.ToCsv();
  CHECK(csv.find(",3,") != std::string::npos);
  CHECK(csv.find(",better,false") != std::string::npos);
  CHECK(csv.find(",true,1234\n") != std::string::npos);
  CHECK(csv.find(",false,0\n") != std::string::npos);
}

}  // namespace
TEST_CASE("The summary names the objective it shows: time per micro-batch for throughput, max-load") {
  TempDir dir;
  for (const auto& [objective, title] :
       {std::pair<std::string, std::string>{"throughput", "time per micro-batch"},
        {"max_load", "max-load"}}) {
    CAPTURE(objective);
    const ExperimentConfig config = LoadExperiment(
        WriteText(dir, objective + ".yaml",
                  TinyExperimentYaml(dir / ("run_" + objective), 1, "objective: " + objective + "\n")));
    const std::vector<Cell> cells = ExpandGrid(config);
    ResultsLog log(dir / ("results_" + objective + ".jsonl"));
    const std::string table = Summarize(config, cells, log).ToMarkdown();
    CHECK(table.find(": " + title + " in ms") != std::string::npos);
    CHECK(table.find("weighted score") == std::string::npos);
  }
}

}  // namespace gosim::experiments
