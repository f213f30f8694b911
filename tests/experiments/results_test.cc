#include "experiments/results.h"

#include <doctest/doctest.h>

#include <string>

#include "core/io.h"
#include "experiments/cells.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;

CellRecord MakeRecord(const std::string& id, double step_time) {
  CellRecord r;
  r.cell = id;
  r.experiment = "tiny";
  r.graph = "g";
  r.nodes = 8;
  r.edges = 8;
  r.cluster = "two_gpus";
  r.devices = 2;
  r.agent = "random_search";
  r.label = "rs";
  r.seed = 3;
  r.budget = {40, 0.0};
  r.objective = "step_time";
  r.best_objective = step_time;
  r.feasible = true;
  r.step_time = step_time;
  r.peak_memory = 1.5e9;
  r.evaluations = 40;
  r.simulations = 41;
  r.pretrain_evaluations = 2304;
  r.pretrain_source = "sidecar configs/checkpoints/go.pt.json";
  r.wall_seconds = 0.25;
  r.extra = {{"bound", 0.001}};
  r.curve = {{1, 0.01, std::numeric_limits<double>::infinity()}, {2, 0.02, 0.5}, {40, 0.25, step_time}};
  r.decision = "decisions/x.json";
  r.finished_at = "2024-01-01T00:00:00Z";
  r.identity = {{"seed", 3}};
  return r;
}

TEST_CASE("A record survives the JSON round trip, infinity included") {
  const CellRecord r = MakeRecord("00000000000000aa", 0.125);
  const CellRecord back = CellRecord::FromJson(nlohmann::json::parse(r.ToJson().dump()), "x");
  CHECK(back.ToJson() == r.ToJson());
  CHECK(back.curve.size() == 3);
  CHECK(std::isinf(back.curve[0].best_objective));
  CHECK(back.curve[2].best_objective == 0.125);
  CHECK(back.extra.at("bound") == 0.001);
  CHECK(back.pretrain_evaluations == 2304);
  CHECK(back.pretrain_source == "sidecar configs/checkpoints/go.pt.json");
  // A line written before the pre-training column: not recorded, never 0.
  nlohmann::json old = nlohmann::json::parse(r.ToJson().dump());
  old.erase("pretrain_evaluations");
  old.erase("pretrain_source");
  CHECK(CellRecord::FromJson(old, "x").pretrain_evaluations == -1);
  CHECK_THROWS_AS(CellRecord::FromJson(nlohmann::json{{"format", "gosim.result"}}, "x"), StateError);
  CHECK_THROWS_AS(CellRecord::FromJson(nlohmann::json{{"format", "other"}}, "x"), StateError);
}

TEST_CASE("ResultsLog appends, finds, and reads back what it wrote") {
  TempDir dir;
  const std::string path = dir / "results.jsonl";
  {
    ResultsLog log(path);
    CHECK(log.records().empty());
    log.Append(MakeRecord("0000000000000001", 0.1));
    log.Append(MakeRecord("0000000000000002", 0.2));
    CHECK(log.Has("0000000000000001"));
    CHECK_FALSE(log.Has("0000000000000003"));
  }
  const ResultsLog log(path);
  REQUIRE(log.records().size() == 2);
  CHECK(log.Find("0000000000000002")->step_time == 0.2);
  CHECK(log.Find("0000000000000003") == nullptr);
  CHECK_FALSE(log.repaired_torn_line());
}

TEST_CASE("A torn last line is ignored and cut off; a good last line without newline is kept") {
  TempDir dir;
  const std::string path = dir / "results.jsonl";
  const std::string good = MakeRecord("0000000000000001", 0.1).ToJson().dump() + "\n";
  const std::string torn = MakeRecord("0000000000000002", 0.2).ToJson().dump().substr(0, 57);
  WriteFileAtomic(path, good + torn);
  {
    const ResultsLog log(path);
    CHECK(log.repaired_torn_line());
    REQUIRE(log.records().size() == 1);
    CHECK(log.records()[0].cell == "0000000000000001");
  }
  CHECK(ReadFile(path) == good);  // the fragment is gone, so appends start on a fresh line

  const std::string complete = MakeRecord("0000000000000003", 0.3).ToJson().dump();
  WriteFileAtomic(path, good + complete);
  const ResultsLog log(path);
  CHECK(log.records().size() == 2);
  CHECK(ReadFile(path) == good + complete + "\n");
}

TEST_CASE("A corrupt line in the middle is a StateError with its line number") {
  TempDir dir;
  const std::string path = dir / "results.jsonl";
  const std::string good = MakeRecord("0000000000000001", 0.1).ToJson().dump() + "\n";
  WriteFileAtomic(path, good + "{not json\n" + good);
  try {
    ResultsLog log(path);
    FAIL("expected a StateError");
  } catch (const StateError& e) {
    CHECK(e.where().line == 2);
    CHECK(e.where().file == path);
  }
}

TEST_CASE("A repeated cell id keeps the last record") {
  TempDir dir;
  const std::string path = dir / "results.jsonl";
  WriteFileAtomic(path, MakeRecord("0000000000000001", 0.1).ToJson().dump() + "\n" +
                            MakeRecord("0000000000000001", 0.4).ToJson().dump() + "\n");
  const ResultsLog log(path);
  CHECK(log.records().size() == 1);
  CHECK(log.Find("0000000000000001")->step_time == 0.4);
}

TEST_CASE("CompressCurve keeps changes, the first and the last point") {
  const std::vector<agents::CurvePoint> curve = {{1, 0.1, 5.0}, {2, 0.2, 5.0}, {3, 0.3, 4.0}, {4, 0.4, 4.0},
                                                 {5, 0.5, 4.0}, {6, 0.6, 3.0}, {7, 0.7, 3.0}};
  const std::vector<agents::CurvePoint> out = CompressCurve(curve);
  REQUIRE(out.size() == 4);
  CHECK(out[0].evaluations == 1);
  CHECK(out[1].evaluations == 3);
  CHECK(out[2].evaluations == 6);
  CHECK(out[3].evaluations == 7);
  CHECK(CompressCurve({}).empty());
}

TEST_CASE("CurvesCsv writes one row per point") {
  const std::string csv = CurvesCsv({MakeRecord("00000000000000aa", 0.125)});
  CHECK(csv ==
        "cell,graph,cluster,label,seed,evaluations,wall_seconds,best_objective\n"
        "00000000000000aa,g,two_gpus,rs,3,1,0.01,inf\n"
        "00000000000000aa,g,two_gpus,rs,3,2,0.02,0.5\n"
        "00000000000000aa,g,two_gpus,rs,3,40,0.25,0.125\n");
}

TEST_CASE("YamlToJson types plain scalars and keeps quoted ones as strings") {
  const YAML::Node node = YAML::Load("{b: 2, a: [1.5, true, '7', x, ~], c: {d: -3}}");
  const nlohmann::json json = YamlToJson(node);
  CHECK(json.dump() == R"({"a":[1.5,true,"7","x",null],"b":2,"c":{"d":-3}})");
}

TEST_CASE("HashHex is stable and sensitive") {
  CHECK(HashHex("abc").size() == 16);
  CHECK(HashHex("abc") == HashHex("abc"));
  CHECK(HashHex("abc") != HashHex("abd"));
  CHECK(SafeFileName("a b/c:d") == "a_b_c_d");
  CHECK(SafeFileName(".hidden") == "_.hidden");
}

}  // namespace
}  // namespace gosim::experiments
