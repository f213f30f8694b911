#include "sim/decision.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "core/io.h"
#include "graphs/graph_builder.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"
#include "sim/result.h"

namespace gosim::sim {
namespace {

using graphs::NodeId;

graphs::NodeSpec Op(const std::string& name, const std::string& colocation = {}) {
  graphs::NodeSpec s;
  s.name = name;
  s.op = "MatMul";
  s.flops = 10;
  s.outputs.push_back(graphs::TensorInfo{8, {2}, graphs::DType::kFloat32});
  s.colocation = colocation;
  return s;
}

// a -> b -> c -> d and a -> x -> c; p1 -> p2, q1 -> q2, p1 -> q2, q1 -> p2.
// a and d share the colocation group "w".
// Adds TestGraph's nodes (each with `flops`) and edges to `b`.
void AddTestNodesAndEdges(graphs::GraphBuilder& b, double flops) {
  for (const char* name : {"a", "b", "c", "d", "x", "p1", "p2", "q1", "q2"}) {
    graphs::NodeSpec node = Op(name, (std::string(name) == "a" || std::string(name) == "d") ? "w" : "");
    node.flops = flops;
    b.AddNode(node);
  }
  for (auto [s, d] : {std::pair{"a", "b"},
                      {"b", "c"},
                      {"c", "d"},
                      {"a", "x"},
                      {"x", "c"},
                      {"p1", "p2"},
                      {"q1", "q2"},
                      {"p1", "q2"},
                      {"q1", "p2"}}) {
    b.AddEdge(s, d, 0);
  }
}

graphs::Graph TestGraph() {
  graphs::GraphBuilder b("test_graph");
  AddTestNodesAndEdges(b, Op("a", "").flops);
  return b.Build();
}

Cluster TwoDevices() {
  return ParseCluster(
      "name: two\n"
      "devices:\n"
      "  - {name: gpu, count: 2, kind: X, peak_flops_fp32: 1e12, memory_bandwidth: 1e11, memory_capacity: "
      "1e9}\n"
      "links:\n"
      "  - {src: gpu0, dst: gpu1, bidirectional: true, bandwidth: 1e10}\n",
      "two.yaml");
}

NodeId N(const graphs::Graph& g, const char* name) {
  return *g.FindNode(name);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

DecisionError ValidationError(const Decision& d, const graphs::Graph& g, const Cluster& c,
                              bool coloc = false) {
  try {
    ValidateDecision(d, g, c, coloc);
  } catch (const DecisionError& e) {
    return e;
  }
  FAIL("expected a DecisionError");
  return DecisionError("unreachable");
}

DecisionError JsonError(const std::string& json, const graphs::Graph& g, const Cluster& c) {
  try {
    ParseDecisionJson(json, "d.json", g, c);
  } catch (const DecisionError& e) {
    return e;
  }
  FAIL("expected a DecisionError for " << json);
  return DecisionError("unreachable");
}

// A full placement of TestGraph on gpu0 with `extra` placement entries.
std::string PlacementJson(const std::string& overrides = {}, const std::string& rest = {}) {
  std::string out = "{\n  \"format\": \"gosim.decision\",\n  \"version\": 1,\n  \"placement\": {\n";
  for (const char* name : {"a", "b", "c", "d", "x", "p1", "p2", "q1"})
    out += "    \"" + std::string(name) + "\": 0,\n";
  out += overrides.empty() ? "    \"q2\": \"gpu0\"\n" : overrides;
  out += "  }" + rest + "\n}\n";
  return out;
}

}  // namespace

TEST_CASE("SingleDeviceDecision places everything on one device and validates") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  const Decision d = SingleDeviceDecision(g, 1);
  CHECK(d.placement == std::vector<int32_t>(9, 1));
  CHECK_FALSE(d.has_priority());
  CHECK_FALSE(d.has_fusion());
  CHECK_FALSE(d.has_transfer_priority());
  CHECK_NOTHROW(ValidateDecision(d, g, c, true));
}

TEST_CASE("ValidateDecision rejects wrong sizes, devices and priorities") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  Decision d = SingleDeviceDecision(g);
  d.placement.pop_back();
  DecisionError e = ValidationError(d, g, c);
  CHECK(e.where().path == "placement");
  CHECK(Contains(e.what(), "placement has 8 entries but graph 'test_graph' has 9 nodes"));

  d = SingleDeviceDecision(g);
  d.placement[N(g, "d")] = 2;
  e = ValidationError(d, g, c);
  CHECK(e.where().path == "placement[" + std::to_string(N(g, "d")) + "]");
  CHECK(Contains(e.what(), "node 'd' is placed on device 2"));

  d = SingleDeviceDecision(g);
  d.priority.assign(9, 0.5);
  CHECK_NOTHROW(ValidateDecision(d, g, c));
  d.priority[4] = std::numeric_limits<double>::quiet_NaN();
  e = ValidationError(d, g, c);
  CHECK(e.where().path == "priority[4]");
  d.priority.resize(3);
  CHECK(ValidationError(d, g, c).where().path == "priority");

  d = SingleDeviceDecision(g);
  d.transfer_priority.assign(static_cast<size_t>(g.num_tensors()) * 2, 0.0);
  CHECK_NOTHROW(ValidateDecision(d, g, c));
  d.transfer_priority[5] = std::numeric_limits<double>::infinity();
  CHECK(ValidationError(d, g, c).where().path == "transfer_priority[5]");
  d.transfer_priority.resize(4);
  CHECK(Contains(ValidationError(d, g, c).what(), "expected tensors x devices = 9 x 2"));
}

TEST_CASE("Fusion groups must be on one device, connected and convex, and not deadlock") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  Decision d = SingleDeviceDecision(g);
  d.fusion_group.assign(9, -1);

  SUBCASE("a valid group") {
    d.fusion_group[N(g, "b")] = 7;
    d.fusion_group[N(g, "c")] = 7;
    d.fusion_group[N(g, "p1")] = 2;
    d.fusion_group[N(g, "p2")] = 2;
    CHECK_NOTHROW(ValidateDecision(d, g, c));
  }
  SUBCASE("across devices") {
    d.fusion_group[N(g, "b")] = 0;
    d.fusion_group[N(g, "c")] = 0;
    d.placement[N(g, "c")] = 1;
    const DecisionError e = ValidationError(d, g, c);
    CHECK(Contains(e.what(), "fusion group 0 spans devices: 'b' is on gpu0 but 'c' is on gpu1"));
    CHECK(e.where().path == "fusion_group[" + std::to_string(N(g, "c")) + "]");
  }
  SUBCASE("not connected") {
    d.fusion_group[N(g, "a")] = 1;
    d.fusion_group[N(g, "d")] = 1;
    CHECK(Contains(ValidationError(d, g, c).what(), "fusion group 1 is not connected: 'a' and 'd'"));
  }
  SUBCASE("not convex") {
    for (const char* name : {"a", "b", "c"}) d.fusion_group[N(g, name)] = 3;
    const DecisionError e = ValidationError(d, g, c);
    CHECK(Contains(e.what(), "fusion group 3 (with 'a') is not convex"));
    CHECK(Contains(e.what(), "through 'x'"));
  }
  SUBCASE("two groups that wait for each other") {
    d.fusion_group[N(g, "p1")] = 4;
    d.fusion_group[N(g, "p2")] = 4;
    d.fusion_group[N(g, "q1")] = 5;
    d.fusion_group[N(g, "q2")] = 5;
    const DecisionError e = ValidationError(d, g, c);
    CAPTURE(std::string(e.what()));
    CHECK(Contains(e.what(), "depend on each other in a cycle"));
    CHECK(Contains(e.what(), "4 ('p1')"));
    CHECK(Contains(e.what(), "5 ('q1')"));
  }
  SUBCASE("bad ids and sizes") {
    d.fusion_group[0] = -2;
    CHECK(Contains(ValidationError(d, g, c).what(), "has fusion group -2"));
    d.fusion_group.resize(2);
    CHECK(ValidationError(d, g, c).where().path == "fusion_group");
  }
}

TEST_CASE("Colocation groups are checked on request") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  Decision d = SingleDeviceDecision(g);
  d.placement[N(g, "d")] = 1;
  CHECK_NOTHROW(ValidateDecision(d, g, c));
  const DecisionError e = ValidationError(d, g, c, true);
  CHECK(Contains(e.what(), "colocation group 'w' is split: 'a' is on gpu0 but 'd' is on gpu1"));
  CHECK(e.where().path == "placement[" + std::to_string(N(g, "d")) + "]");
}

TEST_CASE("The evaluator makes a decision that splits a colocation group infeasible by default") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  Decision together = SingleDeviceDecision(g);
  together.placement[N(g, "b")] = 1;  // not in a group: free to move
  Decision split = together;
  split.placement[N(g, "d")] = 1;  // 'd' leaves 'a', its group 'w' stays on gpu0

  const Evaluator enforced(g, c, MakeCostModel("roofline"));
  CHECK_FALSE(enforced.FindSplit(together.placement).has_value());
  const Evaluation ok = enforced.Evaluate(together);
  CHECK(ok.feasible);
  CHECK(ok.split_group == -1);
  const Evaluation bad = enforced.Evaluate(split);
  CHECK_FALSE(bad.feasible);
  CHECK(bad.split_group == 0);
  CHECK(bad.oom_device == -1);
  CHECK(bad.step_time == SimOptions{}.infeasible_step_time);
  std::vector<Evaluation> batch(2);
  const std::vector<Decision> both = {together, split};
  enforced.EvaluateBatch(both, batch);
  CHECK(batch[0].feasible);
  CHECK_FALSE(batch[1].feasible);
  CHECK(batch[1].split_group == 0);

  // The full result says which group and nodes, like an out-of-memory report.
  const SimResult full = enforced.Simulate(split);
  CHECK_FALSE(full.feasible);
  REQUIRE(full.split.has_value());
  CHECK(full.split->first == N(g, "a"));
  CHECK(full.split->other == N(g, "d"));
  CHECK(full.split->first_device == 0);
  CHECK(full.split->other_device == 1);
  const std::string text = FormatSimResult(full, g, c);
  CHECK(Contains(text, "INFEASIBLE (colocation group split)"));
  CHECK(Contains(text, "colocation group 'w' is split: 'a' is on gpu0 but 'd' is on gpu1"));
  const nlohmann::json j = nlohmann::json::parse(SimResultToJson(full, g, c));
  CHECK(j.at("colocation_split").at("group") == "w");
  CHECK(j.at("colocation_split").at("other_node") == "d");
  CHECK(j.at("colocation_split").at("other_device") == "gpu1");
  // The result names the cost model that priced it (the Evaluator's
  // description); a description given explicitly wins.
  CHECK(j.at("cost_model") == "roofline");
  const nlohmann::json named = nlohmann::json::parse(SimResultToJson(full, g, c, "roofline"));
  CHECK(named.at("cost_model") == "roofline");
  CHECK(named.at("cluster") == j.at("cluster"));

  // With infeasible_step_time <= 0 the simulated step time is kept.
  SimOptions simulated;
  simulated.infeasible_step_time = 0.0;
  const Evaluator ranked(g, c, MakeCostModel("roofline"), simulated);
  const Evaluation r = ranked.Evaluate(split);
  CHECK_FALSE(r.feasible);
  CHECK(r.step_time == ranked.Simulate(split).step_time);
  CHECK(r.step_time < 1.0);

  // Off: simulated as it is, and feasible.
  SimOptions off;
  off.enforce_colocation = false;
  const Evaluator free(g, c, MakeCostModel("roofline"), off);
  CHECK_FALSE(free.FindSplit(split.placement).has_value());
  CHECK(free.Evaluate(split).feasible);
  CHECK_FALSE(free.Simulate(split).split.has_value());
}

TEST_CASE("Decision JSON round-trips exactly") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  Decision d = SingleDeviceDecision(g);
  d.placement[N(g, "x")] = 1;
  d.placement[N(g, "q2")] = 1;
  d.priority = {0.1, 1.0 / 3.0, -2.0, 0.0, 1e-300, 5.0, 6.0, 7.0, 8.0};
  d.transfer_priority.assign(static_cast<size_t>(g.num_tensors()) * 2, 0.0);
  d.transfer_priority[static_cast<size_t>(g.tensor(N(g, "a"), 0)) * 2 + 1] = 0.25;
  d.fusion_group.assign(9, -1);
  d.fusion_group[N(g, "b")] = 0;
  d.fusion_group[N(g, "c")] = 0;
  const std::string json = DecisionToJson(d, g, c);
  CHECK(Contains(json, "\"format\": \"gosim.decision\""));
  CHECK(Contains(json, "\"x\": \"gpu1\""));
  CHECK(Contains(json, "\"a:0\": {\n      \"gpu1\": 0.25"));
  const Decision back = ParseDecisionJson(json, "rt.json", g, c);
  CHECK(back.placement == d.placement);
  CHECK(back.priority == d.priority);
  CHECK(back.transfer_priority == d.transfer_priority);
  CHECK(back.fusion_group == d.fusion_group);
  CHECK(DecisionToJson(back, g, c) == json);

  const std::string path = (std::filesystem::temp_directory_path() / "gosim_decision_test.json.gz").string();
  SaveDecision(path, d, g, c);
  CHECK(LoadDecision(path, g, c).placement == d.placement);
  std::filesystem::remove(path);
}

TEST_CASE("Decision JSON accepts device names and indices") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  const Decision d = ParseDecisionJson(
      PlacementJson("    \"q2\": 1\n", ",\n  \"metadata\": {\"agent\": \"x\"}"), "d.json", g, c);
  CHECK(d.placement[N(g, "q2")] == 1);
  CHECK(d.placement[N(g, "a")] == 0);
  CHECK_FALSE(d.has_priority());
}

TEST_CASE("Bad decision files are DecisionErrors with the file and JSON path") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  SUBCASE("unknown node") {
    const DecisionError e = JsonError(PlacementJson("    \"q2\": 0,\n    \"qq2\": 0\n"), g, c);
    CHECK(e.where().file == "d.json");
    CHECK(e.where().path == "placement.qq2");
    CHECK(e.where().line == 14);
    CHECK(Contains(e.what(), "unknown node 'qq2'"));
    CHECK(Contains(e.what(), "Did you mean 'q2'?"));
  }
  SUBCASE("a node placed twice") {
    const DecisionError e = JsonError(PlacementJson("    \"q2\": 0,\n    \"a\": 1\n"), g, c);
    CHECK(std::string(e.what()) ==
          "d.json:14:5: key \"a\" appears twice in one object (remove one of the two: a JSON reader would "
          "silently keep only one value)");
  }
  SUBCASE("unknown device") {
    const DecisionError e = JsonError(PlacementJson("    \"q2\": \"gpu2\"\n"), g, c);
    CHECK(e.where().path == "placement.q2");
    CHECK(e.where().line == 13);
    CHECK(Contains(e.what(), "unknown device 'gpu2'"));
    CHECK(Contains(e.what(), "Did you mean 'gpu0'?"));
  }
  SUBCASE("device index out of range") {
    CHECK(
        Contains(JsonError(PlacementJson("    \"q2\": 2\n"), g, c).what(), "device index 2 is out of range"));
    CHECK(Contains(JsonError(PlacementJson("    \"q2\": true\n"), g, c).what(), "a name or an index"));
  }
  SUBCASE("missing nodes") {
    std::string json = PlacementJson();
    const std::string q2 = "0,\n    \"q2\": \"gpu0\"\n";
    REQUIRE(json.find(q2) != std::string::npos);
    json.replace(json.find(q2), q2.size(), "0\n");
    const DecisionError e = JsonError(json, g, c);
    CHECK(e.where().path == "placement");
    CHECK(Contains(e.what(), "placement misses 1 of 9 nodes: 'q2'"));
  }
  SUBCASE("fusion across devices") {
    const DecisionError e = JsonError(
        PlacementJson("    \"q2\": 1\n", ",\n  \"fusion\": [[\"a\", \"b\"], [\"q1\", \"q2\"]]"), g, c);
    CHECK(e.where().path == "fusion[1]");
    CHECK(e.where().line == 15);
    CHECK(Contains(e.what(), "fusion group 1 spans devices: 'q1' is on gpu0 but 'q2' is on gpu1"));
  }
  SUBCASE("node in two groups") {
    const DecisionError e =
        JsonError(PlacementJson({}, ",\n  \"fusion\": [[\"a\", \"b\"], [\"b\", \"c\"]]"), g, c);
    CHECK(e.where().path == "fusion[1][0]");
    CHECK(Contains(e.what(), "'b' is in fusion groups 0 and 1"));
  }
  SUBCASE("priorities must cover every node") {
    const DecisionError e = JsonError(PlacementJson({}, ",\n  \"priority\": {\"a\": 1}"), g, c);
    CHECK(Contains(e.what(), "priority misses 8 of 9 nodes"));
  }
  SUBCASE("bad transfer priority tensor") {
    const DecisionError e =
        JsonError(PlacementJson({}, ",\n  \"transfer_priority\": {\"a:1\": {\"gpu1\": 1}}"), g, c);
    CHECK(e.where().path == "transfer_priority.a:1");
    CHECK(Contains(e.what(), "is not an output of node 'a'"));
  }
  SUBCASE("unknown key") {
    const DecisionError e = JsonError(PlacementJson({}, ",\n  \"fussion\": []"), g, c);
    CHECK(e.where().path == "fussion");
    CHECK(Contains(e.what(), "Did you mean 'fusion'?"));
  }
  SUBCASE("wrong format and version") {
    std::string json = PlacementJson();
    CHECK(Contains(JsonError("{\"placement\": {}}", g, c).what(), "not a decision file"));
    json.replace(json.find("\"version\": 1"), 12, "\"version\": 2");
    CHECK(JsonError(json, g, c).where().path == "version");
  }
  SUBCASE("syntax errors carry the line") {
    const DecisionError e =
        JsonError("{\n  \"format\": \"gosim.decision\",\n  \"placement\": {\"a\": 0,,}\n}", g, c);
    CHECK(e.where().line == 3);
    CHECK(Contains(e.what(), "invalid JSON"));
    CHECK(JsonError("[1, 2]", g, c).where().file == "d.json");
    CHECK(Contains(
        JsonError("{\"format\": \"gosim.decision\", \"version\": 1, \"placement\": {\"a\"", g, c).what(),
        "invalid JSON"));
  }
}

TEST_CASE("Decision files carry metadata: agent, seed, budget and the graph's digest") {
  const graphs::Graph g = TestGraph();
  const Cluster c = TwoDevices();
  DecisionInfo info;
  info.agent = "brkga";
  info.seed = 3;
  info.budget = 500;
  info.evaluations = 480;
  info.objective = "step_time";
  const std::string json = DecisionToJson(SingleDeviceDecision(g), g, c, info);
  const std::string digest = GraphDigest(g);
  CHECK(digest.size() == 16);
  CHECK(Contains(json,
                 "\"metadata\": {\n    \"agent\": \"brkga\",\n    \"seed\": 3,\n    \"budget\": 500,\n"
                 "    \"evaluations\": 480,\n    \"objective\": \"step_time\",\n    \"graph_digest\": \"" +
                     digest + "\"\n  }"));
  // Without an info only the digest is written.
  CHECK(Contains(DecisionToJson(SingleDeviceDecision(g), g, c), "\"metadata\": {\n    \"graph_digest\""));
  CHECK(ParseDecisionJson(json, "m.json", g, c).placement == SingleDeviceDecision(g).placement);

  // The digest follows names, ops and edges, not costs or the graph's name.
  graphs::GraphBuilder renamed("another_name");
  graphs::GraphBuilder extra_edge("test_graph");
  AddTestNodesAndEdges(renamed, 1e9);
  AddTestNodesAndEdges(extra_edge, Op("a", "").flops);
  extra_edge.AddEdge("a", "d", 0);
  const graphs::Graph same = renamed.Build(), other = extra_edge.Build();
  CHECK(GraphDigest(same) == digest);
  CHECK(GraphDigest(other) != digest);
  // A decision for a graph with the same names but another digest is read
  // (with a warning line), its placement intact.
  CHECK(ParseDecisionJson(json, "m.json", other, c).placement == SingleDeviceDecision(other).placement);

  for (const std::string& metadata :
       {std::string("\"metadata\": [1]"), std::string("\"metadata\": {\"graph_digest\": 7}")}) {
    CAPTURE(metadata);
    const std::string bad = PlacementJson("", ",\n  " + metadata);
    CHECK_THROWS_AS(ParseDecisionJson(bad, "bad.json", g, c), DecisionError);
  }
}

}  // namespace gosim::sim
