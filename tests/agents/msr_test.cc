// msr-fiddle's problems end to end: the reader, the machine of
// `--cluster from-graph`, their splits, max-load and pipeline_dp.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "core/error.h"
#include "core/io.h"
#include "core/yaml.h"
#include "graphs/json_format.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "sim/msr.h"
#include "tests/shared_data.h"

namespace gosim {
namespace {

// A training graph of three layers on two accelerators and a CPU core:
// forward 1 -> 2 -> 3, backward 6 -> 5 -> 4 (colorClass pairs them), and a
// skip edge 1 -> 3. Latencies in ms, costs in ms per source.
const char* kProblem = R"({
  "maxSizePerFPGA": 1e9, "maxFPGAs": 2, "maxCPUs": 1,
  "nodes": [
    {"id": 1, "name": "l1", "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1.0, "isBackwardNode": 0, "colorClass": 1, "size": 4e8},
    {"id": 2, "name": "l2", "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 2.0, "isBackwardNode": 0, "colorClass": 2, "size": 3e8},
    {"id": 3, "name": "l3", "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 3.0, "isBackwardNode": 0, "colorClass": 3, "size": 5e8},
    {"id": 4, "name": "l1grad", "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1.5, "isBackwardNode": 1, "colorClass": 1, "size": 0},
    {"id": 5, "name": "l2grad", "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 2.5, "isBackwardNode": 1, "colorClass": 2, "size": 0},
    {"id": 6, "name": "l3grad", "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 3.5, "isBackwardNode": 1, "colorClass": 3, "size": 0}
  ],
  "edges": [
    {"sourceId": 1, "destId": 2, "cost": 0.25, "size": 7},
    {"sourceId": 1, "destId": 3, "cost": 0.25},
    {"sourceId": 2, "destId": 3, "cost": 0.5},
    {"sourceId": 3, "destId": 6, "cost": 0.125},
    {"sourceId": 6, "destId": 5, "cost": 0.5},
    {"sourceId": 5, "destId": 4, "cost": 0.25}
  ]
})";

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string ErrorOf(const std::string& text) {
  try {
    graphs::ReadMsrProblem(text, "p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("msr-fiddle problem: nodes, times in seconds, colocation, transfer bytes, the machine") {
  const graphs::MsrProblem p = graphs::ReadMsrProblem(kProblem, "tiny_training.json");
  const graphs::Graph& g = p.graph;
  CHECK(g.name() == "tiny_training");
  REQUIRE(g.num_nodes() == 6);
  CHECK(g.num_edges() == 6);
  CHECK(p.accelerators == 2);
  CHECK(p.cpus == 1);
  CHECK(p.accelerator_memory == 1e9);
  const graphs::Node& l2 = g.node(*g.FindNode("l2"));
  REQUIRE(l2.measured.size() == 2);
  CHECK(l2.measured[0].device_kind == "any");
  CHECK(l2.measured[0].seconds == doctest::Approx(2e-3));
  CHECK(l2.measured[1].device_kind == "cpu");
  CHECK(l2.measured[1].seconds == doctest::Approx(10e-3));
  CHECK(l2.persistent_bytes == 300000000);
  REQUIRE(l2.outputs.size() == 1);
  CHECK(l2.outputs[0].bytes == 500000);  // 0.5 ms at 1 GB/s
  CHECK(g.node(*g.FindNode("l2grad")).phase == graphs::Phase::kBackward);
  CHECK(g.colocation_groups()[static_cast<size_t>(l2.colocation)] == "color2");
  CHECK(g.node(*g.FindNode("l1grad")).outputs.empty());  // no outgoing edge
  REQUIRE(p.ids.size() == 6);
  CHECK(g.node(p.ids[2].second).name == "l3");
  // Read through the ordinary JSON reader as well.
  CHECK(graphs::ReadGraphJson(kProblem, "x.json").num_nodes() == 6);

  const sim::Cluster c = sim::MsrCluster(p);
  REQUIRE(c.num_devices() == 3);
  CHECK(c.device(0).name == "acc0");
  CHECK(c.device(0).memory_capacity == 1000000000);
  CHECK(c.device(2).role == sim::DeviceRole::kCpu);
  CHECK(c.Route(0, 1).size() == 2);  // through the host
}

TEST_CASE("msr-fiddle problem: bad input is one line with the JSON path") {
  std::string text = kProblem;
  CHECK(ErrorOf(std::string(text).replace(text.find("\"cpuLatency\": 10"), 16, "\"cpuLatency\": -1"))
            .find("[nodes[0].cpuLatency]: must be >= 0") != std::string::npos);
  CHECK(
      ErrorOf(std::string(text).replace(text.find("\"id\": 2"), 7, "\"id\": 1")).find("node id 1 repeats") !=
      std::string::npos);
  CHECK(ErrorOf(std::string(text).replace(text.find("\"destId\": 3, \"cost\": 0.25"), 25,
                                          "\"destId\": 3, \"cost\": 0.75"))
            .find("node 1's edges disagree on the cost") != std::string::npos);
  CHECK(ErrorOf(std::string(text).replace(text.find("\"destId\": 2"), 11, "\"destId\": 9"))
            .find("[edges[0].destId]: no node has id 9") != std::string::npos);
  CHECK(ErrorOf(std::string(text).replace(text.find("\"supportedOnFpga\": 1"), 20, "\"supportedOnFpga\": 0"))
            .find("cannot run on an accelerator") != std::string::npos);
  CHECK(ErrorOf(R"({"maxFPGAs": 2, "maxCPUs": 0, "nodes": [], "edges": []})").find("maxSizePerFPGA") !=
        std::string::npos);
}

struct Setup {
  graphs::MsrProblem problem;
  std::string path;
  sim::Cluster cluster;
  std::shared_ptr<const sim::CostModel> cost_model = sim::MakeCostModel("auto");
  Setup()
      : problem(graphs::ReadMsrProblem(kProblem, WriteTemp("gosim_msr_tiny.json", kProblem))),
        cluster(sim::MsrCluster(problem)) {
    path = problem.graph.source();
  }
};

TEST_CASE("max-load of a split, by hand, and their split files") {
  Setup s;
  const graphs::Graph& g = s.problem.graph;
  sim::SimOptions options;
  options.max_load = true;
  const sim::Evaluator evaluator(g, s.cluster, s.cost_model, options);
  // Layers 1-2 (and their backward) on acc0, layer 3 on acc1.
  const std::string split_path =
      WriteTemp("gosim_msr_split.json", R"({"maxLoad": -1, "fpgas": [{"load": -1, "nodes": [1, 2]},
                                            {"load": -1, "nodes": [3]}], "cpus": [{"load": 0, "nodes": []}]})");
  const sim::Decision d = sim::LoadDecision(split_path, g, s.cluster);
  CHECK(d.placement[static_cast<size_t>(*g.FindNode("l2grad"))] == 0);  // from its colorClass
  CHECK(d.placement[static_cast<size_t>(*g.FindNode("l3grad"))] == 1);
  // acc0: 1 + 2 + 1.5 + 2.5 = 7 ms of layers, sends l1's and l2's outputs
  // (0.25 + 0.5), receives l3grad's (0.5): 8.25 ms. acc1: 3 + 3.5 = 6.5,
  // receives l1's and l2's (0.75), sends l3grad's (0.5): 7.75 ms.
  const sim::Evaluation e = evaluator.Evaluate(d);
  CHECK(e.feasible);
  CHECK(e.max_load == doctest::Approx(8.25e-3));
  CHECK(evaluator.Simulate(d).max_load == doctest::Approx(8.25e-3));
  // Without SimOptions::max_load the objective refuses rather than score 0.
  const sim::Evaluator plain(g, s.cluster, s.cost_model);
  agents::Objective objective;
  objective.kind = agents::ObjectiveKind::kMaxLoad;
  CHECK_THROWS_AS(objective.Score(plain.Evaluate(d), s.cluster), ConfigError);
  CHECK(objective.Score(e, s.cluster) == doctest::Approx(8.25e-3));

  CHECK_THROWS_WITH_AS(
      sim::LoadDecision(WriteTemp("gosim_msr_bad.json", R"({"fpgas": [{"nodes": [1, 1]}], "cpus": []})"), g,
                        s.cluster),
      doctest::Contains("node id 1 is placed twice"), DecisionError);
  CHECK_THROWS_WITH_AS(
      sim::LoadDecision(
          WriteTemp("gosim_msr_bad.json",
                    R"({"fpgas": [{"nodes": [1]}, {"nodes": [2]}, {"nodes": [3]}], "cpus": []})"),
          g, s.cluster),
      doctest::Contains("has 2"), DecisionError);
  CHECK_THROWS_WITH_AS(
      sim::LoadDecision(WriteTemp("gosim_msr_bad.json", R"({"fpgas": [{"nodes": [1, 2]}], "cpus": []})"), g,
                        s.cluster),
      doctest::Contains("places neither 2 node(s)"), DecisionError);
}

TEST_CASE("pipeline_dp finds the best contiguous split (brute force over every placement agrees)") {
  Setup s;
  const graphs::Graph& g = s.problem.graph;
  sim::SimOptions options;
  options.max_load = true;
  const sim::Evaluator evaluator(g, s.cluster, s.cost_model, options);
  agents::Objective objective;
  objective.kind = agents::ObjectiveKind::kMaxLoad;
  YAML::Node none(YAML::NodeType::Map);
  YamlMap map(none, "test", "");
  std::unique_ptr<agents::Agent> dp = agents::MakeAgent("pipeline_dp", map);
  const agents::Problem problem{g, s.cluster, evaluator, objective, agents::Budget{}, 1};
  const agents::AgentResult r = dp->Optimize(problem);
  CHECK(r.evaluations == 1);
  CHECK(r.best_evaluation.feasible);
  CHECK(r.extra.at("dp_max_load_s") == doctest::Approx(r.best_objective));
  // Every placement of the three colorClasses on the three devices (the
  // backward node follows its forward node); memory 100 bytes per
  // accelerator; the best contiguous one is the optimum here.
  double best = 1e30;
  const graphs::NodeId fwd[3] = {*g.FindNode("l1"), *g.FindNode("l2"), *g.FindNode("l3")};
  const graphs::NodeId bwd[3] = {*g.FindNode("l1grad"), *g.FindNode("l2grad"), *g.FindNode("l3grad")};
  for (int code = 0; code < 27; ++code) {
    sim::Decision d = sim::SingleDeviceDecision(g, 0);
    int rest = code;
    for (int k = 0; k < 3; ++k, rest /= 3) {
      d.placement[static_cast<size_t>(fwd[k])] = rest % 3;
      d.placement[static_cast<size_t>(bwd[k])] = rest % 3;
    }
    const sim::Evaluation e = evaluator.Evaluate(d);
    if (e.feasible) best = std::min(best, e.max_load);
  }
  CHECK(r.best_objective == doctest::Approx(best));

  // The integer program's space is every placement of the colorClasses: it
  // proves the same optimum here (no contiguity needed to reach it).
  YAML::Node ilp_options = YAML::Load("{time_limit: 60}");
  YamlMap ilp_map(ilp_options, "test", "");
  const agents::AgentResult ilp = agents::MakeAgent("ilp", ilp_map)->Optimize(problem);
  CHECK(ilp.evaluations == 1);
  CHECK(ilp.extra.at("optimal") == 1.0);
  CHECK(ilp.extra.at("gap") == doctest::Approx(0.0));
  CHECK(ilp.best_objective == doctest::Approx(best));
  CHECK(ilp.extra.at("model_max_load_s") == doctest::Approx(best));
  // Another objective is refused, not optimized as if it were max-load.
  agents::Problem steps = problem;
  steps.objective.kind = agents::ObjectiveKind::kStepTime;
  CHECK_THROWS_AS(agents::MakeAgent("ilp", ilp_map)->Optimize(steps), ConfigError);
}

// Their layer graphs (../shared): the DP's split is at least as good as the
// human experts' on every graph it solves in seconds, its own max-load is
// the simulator's, and their experts' splits are feasible.
TEST_CASE("pipeline_dp against the experts on msr-fiddle's layer graphs" *
          doctest::test_suite("shared_data")) {
  for (const char* name : {"bert24_inference", "bert24_training", "resnet50_inference", "resnet50_training",
                           "gnmt_inference", "gnmt_training"}) {
    CAPTURE(name);
    const std::string model = std::string(name).substr(0, std::string(name).rfind('_'));
    const std::vector<std::string> files =
        testing::SharedDataFiles({std::string("msr-fiddle/LayerGraphs/") + name + ".json",
                                  "msr-fiddle/human-experts/" + model + "_inference_expert.json"});
    if (files.empty()) return;
    const graphs::MsrProblem problem = graphs::ReadMsrProblem(ReadFile(files[0]), files[0]);
    const sim::Cluster cluster = sim::MsrCluster(problem);
    CHECK(cluster.num_devices() == 7);
    sim::SimOptions options;
    options.max_load = true;
    const sim::Evaluator evaluator(problem.graph, cluster, sim::MakeCostModel("auto"), options);
    const sim::Evaluation expert = evaluator.Evaluate(sim::LoadDecision(files[1], problem.graph, cluster));
    CHECK(expert.feasible);
    agents::Objective objective;
    objective.kind = agents::ObjectiveKind::kMaxLoad;
    YAML::Node none(YAML::NodeType::Map);
    YamlMap map(none, "test", "");
    const agents::Problem p{problem.graph, cluster, evaluator, objective, agents::Budget{}, 1};
    const agents::AgentResult r = agents::MakeAgent("pipeline_dp", map)->Optimize(p);
    CHECK(r.best_evaluation.feasible);
    CHECK(r.best_objective <= expert.max_load * (1 + 1e-12));
    CHECK(r.extra.at("dp_max_load_s") == doctest::Approx(r.best_objective).epsilon(1e-9));
  }
}

}  // namespace
}  // namespace gosim
