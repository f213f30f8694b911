// REGAL: the learning smoke test (reward improves on a tiny graph, seeded),
// the kill-and-resume test (same parameters as an uninterrupted run), and
// the agent's checkpoint errors.
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/train.h"
#include "agents/learned/regal/regal.h"
#include "agents/learned/register.h"
#include "agents/learned_agents.h"
#include "core/error.h"
#include "core/io.h"
#include "core/plugin.h"
#include "core/yaml.h"
#include "graphs/graph_builder.h"
#include "graphs/suite.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents::learned {
namespace {

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gosim_regal_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A suite of one tiny REGAL graph per split (the same graph for train and
// valid, another for test).
std::string WriteTinySuite(const std::string& dir) {
  const std::string path = dir + "/tiny.yaml";
  WriteFileAtomic(
      path,
      "name: tiny\n"
      "graphs:\n"
      "  - {name: tiny_train, generator: regal_random, params: {nodes: 14, seed: 3}, split: train}\n"
      "  - {name: tiny_valid, generator: regal_random, params: {nodes: 14, seed: 3}, split: valid}\n"
      "  - {name: tiny_test, generator: regal_random, params: {nodes: 14, seed: 4}, split: test}\n");
  return path;
}

TrainRequest TinyRequest(const std::string& dir, int64_t steps, int64_t checkpoint_every) {
  TrainRequest r;
  r.config = LoadYamlString(
      "agent: regal\n"
      "suite: " +
          WriteTinySuite(dir) +
          "\n"
          "cluster: k80x2\n"
          "objective: peak_memory\n"
          "seed: 1\n"
          "steps: " +
          std::to_string(steps) +
          "\n"
          "samples: 8\n"
          "learning_rate: 0.03\n"
          "checkpoint_every: " +
          std::to_string(checkpoint_every) +
          "\n"
          "valid_every: " +
          std::to_string(steps) +
          "\n"
          "policy: {hidden: 16, layers: 2, op_embedding: 4}\n"
          "brkga: {population: 10, evaluations: 30, threads: 1}\n",
      "tiny_config");
  r.config_file = "tiny_config";
  r.run_dir = dir + "/run";
  r.progress = false;
  std::filesystem::create_directories(r.run_dir);
  return r;
}

double MeanReward(const std::vector<TrainingPoint>& points, size_t from, size_t to) {
  double sum = 0.0;
  for (size_t i = from; i < to; ++i) sum += points[i].reward;
  return sum / static_cast<double>(to - from);
}

TEST_CASE("RegisterLearnedAgents registers exactly kLearnedAgentNames, without the LibTorch plugin") {
  RegisterLearnedAgents();  // would throw StateError for a name missing from the list
  for (std::string_view name : kLearnedAgentNames) {
    CHECK_MESSAGE(!AgentDescription(std::string(name)).empty(), name);
  }
  // Linked directly (as these tests are), the agents need no plugin.
  CHECK_FALSE(TorchPluginLoaded());
}

TEST_CASE("regal learns: the reward over uniform BRKGA grows on a tiny graph (seeded)") {
  RegisterLearnedAgents();
  const std::string dir = TempDir("smoke");
  const TrainRequest request = TinyRequest(dir, 60, 60);
  RunTraining(request);
  const std::vector<TrainingPoint> points = TrainingCurves::Read(request.run_dir + "/curves.csv");
  REQUIRE(points.size() == 60);
  const double first = MeanReward(points, 0, 15);
  const double last = MeanReward(points, 45, 60);
  MESSAGE("mean reward, first 15 steps: " << first << ", last 15 steps: " << last);
  CHECK(last > first);
  CHECK(last > 0.0);
  CHECK(points.back().evaluations > 60 * 8 * 30);

  // The trained checkpoint drives the `regal` agent.
  YAML::Node node = LoadYamlString("checkpoint: " + request.run_dir + "/best.pt\npopulation: 10\n");
  YamlMap options(node, "test", "");
  std::unique_ptr<Agent> agent = MakeAgent("regal", options);
  const graphs::Suite suite = graphs::LoadSuite(dir + "/tiny.yaml");
  const graphs::Graph graph = graphs::MaterializeGraph(*suite.EntriesOf("test").front());
  const sim::Cluster cluster = sim::LoadCluster("k80x2");
  const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel("roofline"));
  Objective objective;
  objective.kind = ObjectiveKind::kPeakMemory;
  const Problem problem{graph, cluster, evaluator, objective, Budget{100, 0.0}, 0};
  const AgentResult result = agent->Optimize(problem);
  CHECK(result.evaluations == 100);
  CHECK(result.best_evaluation.feasible);
  CHECK(result.best_objective == result.best_evaluation.peak_memory);
}

// REGAL's setting in miniature (configs/experiments/regal_train.yaml): graphs
// without weights, the memory features and the skip connection; validation
// on a graph it never trained on.
TEST_CASE("regal learns a priority bias that carries over to an unseen graph (seeded)") {
  RegisterLearnedAgents();
  const std::string dir = TempDir("memory");
  const std::string suite = dir + "/pool.yaml";
  const std::string params = "{nodes: 40, weight_prob: 0.0, size_sigma: 0.3, cost_sigma: 0.3}";
  WriteFileAtomic(suite,
                  "name: pool\n"
                  "graphs:\n"
                  "  - {name: \"t_{seed}\", generator: regal_random, params: " +
                      params +
                      ", seeds: {from: 1, count: 4}, split: train}\n"
                      "  - {name: \"v_{seed}\", generator: regal_random, params: " +
                      params + ", seeds: [9], split: valid}\n");
  TrainRequest r;
  r.config =
      LoadYamlString("agent: regal\nsuite: " + suite +
                         "\n"
                         "cluster: k80x2\n"
                         "objective: peak_memory\n"
                         "seed: 2\n"
                         "steps: 40\n"
                         "samples: 8\n"
                         "learning_rate: 0.02\n"
                         "normalize_advantage: true\n"
                         "advantage_reference: mean\n"
                         "valid_every: 20\n"
                         "valid_seeds: 4\n"
                         "policy: {hidden: 16, layers: 2, op_embedding: 4, genes: all, memory_features: "
                         "true, skip_features: true}\n"
                         "brkga: {population: 20, evaluations: 100, threads: 1}\n",
                     "memory_config");
  r.config_file = "memory_config";
  r.run_dir = dir + "/run";
  r.progress = false;
  std::filesystem::create_directories(r.run_dir);
  RunTraining(r);
  const std::vector<TrainingPoint> points = TrainingCurves::Read(r.run_dir + "/curves.csv");
  REQUIRE(points.size() == 40);
  const double first = MeanReward(points, 0, 10);
  const double last = MeanReward(points, 30, 40);
  MESSAGE("mean reward, first 10 steps: " << first << ", last 10 steps: " << last);
  CHECK(last > first);
  CHECK(last > 0.0);
  // The policy at step 40, scored on the unseen validation graph against
  // uniform BRKGA with the same seeds.
  const double valid = points.back().extra.at(1);
  MESSAGE("validation improvement at step 40: " << valid);
  CHECK(valid > 0.0);
}

TEST_CASE("regal training resumes exactly after a kill") {
  RegisterLearnedAgents();
  const std::string dir_a = TempDir("resume_a");
  const std::string dir_b = TempDir("resume_b");
  const TrainRequest uninterrupted = TinyRequest(dir_a, 6, 2);
  RunTraining(uninterrupted);

  TrainRequest killed = TinyRequest(dir_b, 6, 2);
  killed.max_steps = 3;  // stops after step 3; the last checkpoint is step 2
  RunTraining(killed);
  CHECK_THROWS_AS(RunTraining(killed), ConfigError);  // a checkpoint is there: --resume is required
  TrainRequest resumed = TinyRequest(dir_b, 6, 2);
  resumed.resume = true;
  RunTraining(resumed);

  RegalPolicyOptions options = RegalPolicyOptions::FromSignature(
      ReadCheckpointSignature(uninterrupted.run_dir + "/checkpoint.pt", kRegalCheckpoint), "a");
  RegalPolicy a(options), b(options);
  const TrainingState sa = LoadCheckpoint(uninterrupted.run_dir + "/checkpoint.pt", kRegalCheckpoint,
                                          options.Signature(), *a, nullptr);
  const TrainingState sb =
      LoadCheckpoint(resumed.run_dir + "/checkpoint.pt", kRegalCheckpoint, options.Signature(), *b, nullptr);
  CHECK(sa.step == 6);
  CHECK(sb.step == 6);
  const auto pb = b->named_parameters();
  for (const auto& p : a->named_parameters()) {
    INFO(p.key());
    CHECK(torch::equal(p.value(), pb[p.key()]));
  }
  const std::vector<TrainingPoint> ca = TrainingCurves::Read(uninterrupted.run_dir + "/curves.csv");
  const std::vector<TrainingPoint> cb = TrainingCurves::Read(resumed.run_dir + "/curves.csv");
  REQUIRE(ca.size() == 6);
  REQUIRE(cb.size() == 6);
  for (size_t i = 0; i < ca.size(); ++i) {
    CHECK(ca[i].step == cb[i].step);
    CHECK(ca[i].reward == cb[i].reward);
    CHECK(ca[i].best_objective == cb[i].best_objective);
  }
}

TEST_CASE(
    "regal agent: clear errors for a missing or incompatible checkpoint; the committed one by default") {
  RegisterLearnedAgents();
  const std::string dir = TempDir("errors");
  {
    YAML::Node node = LoadYamlString("checkpoint: " + dir + "/none.pt\n");
    YamlMap options(node, "test", "");
    CHECK_THROWS_AS(MakeAgent("regal", options), ConfigError);
  }
  {
    // No `checkpoint`: the committed configs/checkpoints/regal.pt, found from
    // any working directory (core/data_path.h).
    YAML::Node node = LoadYamlString("population: 10\n");
    YamlMap options(node, "test", "");
    CHECK_NOTHROW(MakeAgent("regal", options));
  }
  {
    // A checkpoint of another model (a bare GNN) is refused.
    GnnOptions o;
    GraphSage gnn(o);
    SaveCheckpoint(dir + "/gnn.pt", kRegalCheckpoint, o.Signature(), *gnn, nullptr, TrainingState{});
    YAML::Node node = LoadYamlString("checkpoint: " + dir + "/gnn.pt\n");
    YamlMap options(node, "test", "");
    CHECK_THROWS_AS(MakeAgent("regal", options), ConfigError);
  }
  {
    // Signatures round-trip, with and without the optional parts.
    RegalPolicyOptions o;
    o.num_devices = 4;
    o.levels = {0.5, 1.0, 3.0};
    CHECK(RegalPolicyOptions::FromSignature(o.Signature(), "x").Signature() == o.Signature());
    o.placement_genes = false;
    o.memory_features = true;
    o.gnn.extra_features = kRegalMemoryFeatures;
    const RegalPolicyOptions back = RegalPolicyOptions::FromSignature(o.Signature(), "x");
    CHECK(back.Signature() == o.Signature());
    CHECK_FALSE(back.placement_genes);
    CHECK(back.memory_features);
    CHECK(back.genes_per_node() == 1);
  }
}

// a -> b, a -> c, b -> d, c -> d with outputs of 100, 50, 200 and 10 bytes.
graphs::Graph MemoryDiamond() {
  graphs::GraphBuilder b("memory_diamond");
  auto node = [&](const std::string& name, int64_t bytes) {
    graphs::NodeSpec spec;
    spec.name = name;
    spec.op = "Add";
    spec.outputs.push_back({bytes, {bytes / 2}, graphs::DType::kFloat16});
    return b.AddNode(std::move(spec));
  };
  const int32_t a = node("a", 100), bn = node("b", 50), c = node("c", 200), d = node("d", 10);
  b.AddEdge(a, bn, 0);
  b.AddEdge(a, c, 0);
  b.AddEdge(bn, d, 0);
  b.AddEdge(c, d, 0);
  return b.Build();
}

TEST_CASE("regal memory features: freed share, inputs, last-consumer inputs, consumers") {
  const graphs::Graph g = MemoryDiamond();
  const std::vector<float> f = RegalMemoryFeatures(g);
  REQUIRE(f.size() == 4u * kRegalMemoryFeatures);
  auto at = [&](int v, int c) {
    return static_cast<double>(f[static_cast<size_t>(v) * kRegalMemoryFeatures + c]);
  };
  // a: allocates 100, reads nothing, 2 consumers.
  CHECK(at(0, 0) == doctest::Approx(std::log(1.0 / 101.0)));
  CHECK(at(0, 3) == doctest::Approx(std::log(3.0)));
  // b: a's 100 bytes shared by 2 consumers (50 freed on average); c, not b,
  // is a's last consumer.
  CHECK(at(1, 0) == doctest::Approx(0.0));
  CHECK(at(1, 1) == doctest::Approx(std::log(101.0 / 51.0)));
  CHECK(at(1, 2) == doctest::Approx(std::log(1.0 / 51.0)));
  // c: a's last consumer.
  CHECK(at(2, 2) == doctest::Approx(std::log(101.0 / 201.0)));
  // d: frees everything it reads (250 bytes), allocates 10, no consumer.
  CHECK(at(3, 0) == doctest::Approx(std::log(251.0 / 11.0)));
  CHECK(at(3, 2) == doctest::Approx(std::log(251.0 / 11.0)));
  CHECK(at(3, 3) == doctest::Approx(0.0));

  RegalPolicyOptions o;
  o.memory_features = true;
  o.gnn.extra_features = kRegalMemoryFeatures;
  const GraphTensors t = RegalTensors(g, o);
  CHECK(t.features.size(1) == kNumNodeFeatures + kRegalMemoryFeatures);
  RegalPolicy policy(o);
  CHECK(policy->forward(t).sizes() == torch::IntArrayRef{4, 3, 2, 6});
  o.placement_genes = false;
  RegalPolicy priority_only(o);
  CHECK(priority_only->forward(t).sizes() == torch::IntArrayRef{4, 1, 2, 6});
}

TEST_CASE(
    "regal without the memory-priority feature: one input column less, its checkpoint refuses REGAL's") {
  const graphs::Graph g = MemoryDiamond();
  RegalPolicyOptions with;
  with.memory_features = true;
  with.skip_features = true;
  with.gnn.extra_features = with.memory_feature_count();
  RegalPolicyOptions without = with;
  without.memory_priority_feature = false;
  without.gnn.extra_features = without.memory_feature_count();
  CHECK(with.memory_feature_count() == kRegalMemoryFeatures);
  CHECK(without.memory_feature_count() == kRegalMemoryFeatures - 1);
  const GraphTensors tw = RegalTensors(g, with);
  const GraphTensors to = RegalTensors(g, without);
  CHECK(tw.features.size(1) == kNumNodeFeatures + kRegalMemoryFeatures);
  CHECK(to.features.size(1) == tw.features.size(1) - 1);
  // The columns left are the other three memory features, unchanged.
  CHECK(torch::equal(to.features.slice(1, kNumNodeFeatures), tw.features.slice(1, kNumNodeFeatures + 1)));
  // The first column (the freed share) is what was dropped: d's is log(251 / 11).
  CHECK(tw.features[3][kNumNodeFeatures].item<double>() == doctest::Approx(std::log(251.0 / 11.0)));
  // Signatures differ and round-trip.
  CHECK(with.Signature() != without.Signature());
  const RegalPolicyOptions back = RegalPolicyOptions::FromSignature(without.Signature(), "x");
  CHECK(back.memory_features);
  CHECK_FALSE(back.memory_priority_feature);
  CHECK(back.Signature() == without.Signature());
  // Each policy runs on its own inputs; a checkpoint of one refuses the other.
  RegalPolicy pw(with), po(without);
  CHECK(po->forward(to).sizes() == torch::IntArrayRef{4, 3, 2, 6});
  const std::string dir = TempDir("no_priority");
  SaveCheckpoint(dir + "/no_priority.pt", kRegalCheckpoint, without.Signature(), *po, nullptr,
                 TrainingState{});
  CHECK_THROWS_AS(LoadCheckpoint(dir + "/no_priority.pt", kRegalCheckpoint, with.Signature(), *pw, nullptr),
                  StateError);
  CHECK_NOTHROW(LoadCheckpoint(dir + "/no_priority.pt", kRegalCheckpoint, without.Signature(), *po, nullptr));
}

// A graph of `n` nodes: a chain, or a star around node 0.
graphs::Graph ShapeGraph(int32_t n, bool chain) {
  graphs::GraphBuilder b(chain ? "chain" : "star");
  for (int32_t i = 0; i < n; ++i) {
    graphs::NodeSpec spec;
    spec.name = "n" + std::to_string(i);
    spec.op = i % 2 == 0 ? "MatMul" : "Relu";
    const int64_t bytes = 64 * (i + 1) * (chain ? 1 : 7);
    spec.outputs.push_back({bytes, {bytes / 4}, graphs::DType::kFloat32});
    b.AddNode(std::move(spec));
  }
  for (int32_t i = 1; i < n; ++i) b.AddEdge(chain ? i - 1 : 0, i, 0);
  return b.Build();
}

TEST_CASE("GAS: the same distributions for every node of two different graphs of the same size") {
  RegalPolicyOptions gas;
  gas.graph_agnostic = true;
  torch::manual_seed(3);
  RegalPolicy policy(gas);
  // Training moves the head away from its start: make it unequal across genes.
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : policy->parameters()) p.add_(torch::randn(p.sizes()));
  }
  const graphs::Graph chain = ShapeGraph(9, true), star = ShapeGraph(9, false);
  const torch::Tensor a = policy->forward(RegalTensors(chain, gas));
  const torch::Tensor b = policy->forward(RegalTensors(star, gas));
  CHECK(torch::equal(a, b));
  // Every node gets the same distributions, and they are not uniform.
  CHECK(torch::equal(a, a[0].unsqueeze(0).expand_as(a)));
  CHECK(a.max().item<double>() > a.min().item<double>() + 0.1);
  // The same policy without graph_agnostic tells the graphs apart.
  RegalPolicyOptions regal;
  RegalPolicy graph_policy(regal);
  CHECK_FALSE(torch::allclose(graph_policy->forward(RegalTensors(chain, regal)),
                              graph_policy->forward(RegalTensors(star, regal))));
  // GAS has no GNN parameters; its signature says so and round-trips.
  for (const auto& p : policy->named_parameters()) CHECK(p.key().rfind("head", 0) == 0);
  const RegalPolicyOptions back = RegalPolicyOptions::FromSignature(gas.Signature(), "x");
  CHECK(back.graph_agnostic);
  CHECK(back.Signature() == gas.Signature());
  CHECK(gas.Signature() != regal.Signature());
}

TEST_CASE("regal training: GAS and the no-priority ablation train like REGAL; bad combinations refused") {
  RegisterLearnedAgents();
  for (const std::string policy :
       {"graph_agnostic: true", "memory_features: true, memory_priority_feature: false"}) {
    INFO(policy);
    const std::string dir = TempDir("variant");
    TrainRequest r = TinyRequest(dir, 4, 2);
    r.config["policy"] = LoadYamlString("{hidden: 16, layers: 2, op_embedding: 4, " + policy + "}");
    RunTraining(r);
    const std::vector<TrainingPoint> points = TrainingCurves::Read(r.run_dir + "/curves.csv");
    CHECK(points.size() == 4);
    const RegalPolicyOptions o = RegalPolicyOptions::FromSignature(
        ReadCheckpointSignature(r.run_dir + "/best.pt", kRegalCheckpoint), "best.pt");
    CHECK(o.graph_agnostic == (policy.find("graph_agnostic") != std::string::npos));
    CHECK(o.memory_feature_count() == (o.graph_agnostic ? 0 : kRegalMemoryFeatures - 1));
    // The agent runs it.
    YAML::Node node = LoadYamlString("checkpoint: " + r.run_dir + "/best.pt\npopulation: 10\n");
    YamlMap options(node, "test", "");
    CHECK(MakeAgent("regal", options)->name() == "regal");
  }
  for (const std::string policy :
       {"{graph_agnostic: true, memory_features: true}", "{graph_agnostic: true, skip_features: true}",
        "{memory_priority_feature: false}"}) {
    INFO(policy);
    const std::string dir = TempDir("variant_bad");
    TrainRequest r = TinyRequest(dir, 2, 2);
    r.config["policy"] = LoadYamlString(policy);
    CHECK_THROWS_AS(RunTraining(r), ConfigError);
  }
}

// The YAML text of `node` without the keys in `drop` (a copy).
std::string WithoutKeys(const YAML::Node& node, const std::vector<std::string>& drop) {
  YAML::Node copy = YAML::Clone(node);
  for (const std::string& key : drop) copy.remove(key);
  YAML::Emitter out;
  out << copy;
  return out.c_str();
}

TEST_CASE("the GAS and no-priority training configs are REGAL's but for the policy option") {
  const YAML::Node regal = LoadYamlFile("configs/experiments/regal_train.yaml");
  struct Variant {
    const char* path;
    std::vector<std::string> policy_keys;  // the policy keys that may differ
  };
  for (const Variant& v :
       {Variant{"configs/experiments/regal_train_gas.yaml",
                {"memory_features", "skip_features", "graph_agnostic"}},
        Variant{"configs/experiments/regal_train_no_priority.yaml", {"memory_priority_feature"}}}) {
    INFO(v.path);
    const YAML::Node other = LoadYamlFile(v.path);
    CHECK_FALSE(other["evaluate"]);  // the grid evaluates it, on the test split
    CHECK(WithoutKeys(other, {"name", "policy", "evaluate"}) ==
          WithoutKeys(regal, {"name", "policy", "evaluate"}));
    CHECK(WithoutKeys(other["policy"], v.policy_keys) == WithoutKeys(regal["policy"], v.policy_keys));
  }
}

}  // namespace
}  // namespace gosim::agents::learned
