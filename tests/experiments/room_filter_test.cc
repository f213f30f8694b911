// REGAL's "room for improvement" selection: the rule, the per-split order
// and counts, the written suite, and the resumable cache.
#include "experiments/room_filter.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "graphs/suite.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;

RoomCandidate Candidate(double low, double high, bool low_feasible = true, bool high_feasible = true) {
  RoomCandidate c;
  c.low = low;
  c.high = high;
  c.low_feasible = low_feasible;
  c.high_feasible = high_feasible;
  return c;
}

TEST_CASE("room: kept when the high budget fits where the low did not, or is clearly better") {
  CHECK(HasRoom(Candidate(100, 80), 0.2));          // exactly 20% lower
  CHECK_FALSE(HasRoom(Candidate(100, 80.5), 0.2));  // 19.5%
  CHECK(HasRoom(Candidate(100, 95), 0.05));
  CHECK(HasRoom(Candidate(5e12, 100, false, true), 0.2));  // only the high budget fits
  CHECK_FALSE(HasRoom(Candidate(5e12, 4e12, false, false), 0.2));
  CHECK_FALSE(HasRoom(Candidate(100, 100), 0.0 + 1e-9));
}

// Eight small REGAL graphs, four per split.
std::string WriteSuite(const TempDir& dir) {
  const std::string path = dir / "pool.yaml";
  WriteFileAtomic(path,
                  "name: pool\n"
                  "graphs:\n"
                  "  - name: t_{seed}\n"
                  "    generator: regal_random\n"
                  "    params: {nodes: 16, weight_prob: 0.0, size_sigma: 0.3}\n"
                  "    seeds: {from: 0, count: 4}\n"
                  "    split: train\n"
                  "  - name: s_{seed}\n"
                  "    generator: regal_random\n"
                  "    params: {nodes: 16, weight_prob: 0.0, size_sigma: 0.3}\n"
                  "    seeds: {from: 100, count: 4}\n"
                  "    split: test\n");
  return path;
}

RoomFilterOptions Options(const std::string& suite, const std::string& cache) {
  RoomFilterOptions o;
  o.suite = suite;
  o.objective.kind = agents::ObjectiveKind::kPeakMemory;
  o.low_budget = 10;
  o.high_budget = 300;
  o.min_improvement = 0.05;
  o.keep = {{"train", 2}, {"test", 4}};
  o.cache = cache;
  return o;
}

TEST_CASE("room: per split in suite order, the written suite and the cache") {
  TempDir dir;
  const std::string suite_path = WriteSuite(dir);
  const RoomFilterOptions options = Options(suite_path, dir / "cache.csv");
  const RoomFilterResult result = FilterRoom(options);

  // Train stops right after its second kept graph (keep: 2), or examines
  // all four when fewer have room; test (keep: 4) examines all four. Walk
  // the train candidates in visiting order: none comes after the second
  // kept one, and the counts are the walk's.
  CHECK(result.examined.at("test") == 4);
  int64_t train_seen = 0, train_kept = 0;
  std::vector<std::string> train_names;
  for (const RoomCandidate& c : result.candidates) {
    if (c.split != "train") continue;
    CHECK(train_kept < 2);
    ++train_seen;
    train_kept += c.kept ? 1 : 0;
    train_names.push_back(c.name);
  }
  CHECK(train_seen == result.examined.at("train"));
  CHECK(train_kept == result.kept.at("train"));
  CHECK((train_kept == 2 || train_seen == 4));
  // In suite order: t_0, t_1, ...
  for (size_t i = 0; i < train_names.size(); ++i) CHECK(train_names[i] == "t_" + std::to_string(i));
  int64_t kept = 0;
  for (const RoomCandidate& c : result.candidates) {
    CHECK(c.kept == HasRoom(c, options.min_improvement));
    CHECK(c.high <= c.low * 1.5);  // 30x the budget does not do much worse
    kept += c.kept;
  }
  CHECK(kept == result.kept.at("train") + result.kept.at("test"));
  // On these graphs a 30x budget often finds a lower peak: something is kept.
  CHECK(kept > 0);

  // The written suite lists exactly the kept graphs, with their splits and
  // the same graphs.
  const std::string out = dir / "room.yaml";
  WriteFileAtomic(out, RoomSuiteYaml(options, result, "room", "test command"));
  const graphs::Suite room = graphs::LoadSuite(out);
  const graphs::Suite pool = graphs::LoadSuite(suite_path);
  REQUIRE(static_cast<int64_t>(room.entries.size()) == kept);
  for (const graphs::SuiteEntry& e : room.entries) {
    const graphs::SuiteEntry* original = pool.Find(e.name);
    REQUIRE(original != nullptr);
    CHECK(e.split == original->split);
    const graphs::Graph a = graphs::MaterializeGraph(e);
    const graphs::Graph b = graphs::MaterializeGraph(*original);
    CHECK(a.num_nodes() == b.num_nodes());
    CHECK(a.num_edges() == b.num_edges());
    CHECK(a.node(5).outputs[0].bytes == b.node(5).outputs[0].bytes);
  }

  // A rerun reads every candidate from the cache: identical results.
  const RoomFilterResult again = FilterRoom(options);
  REQUIRE(again.candidates.size() == result.candidates.size());
  for (size_t i = 0; i < again.candidates.size(); ++i) {
    CHECK(again.candidates[i].name == result.candidates[i].name);
    CHECK(again.candidates[i].low == result.candidates[i].low);
    CHECK(again.candidates[i].high == result.candidates[i].high);
  }
  // A cache written with other settings is refused.
  RoomFilterOptions other = options;
  other.high_budget = 200;
  CHECK_THROWS_AS(FilterRoom(other), ConfigError);
}

}  // namespace
}  // namespace gosim::experiments
