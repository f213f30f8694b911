// Shared learning infrastructure: node features, the GraphSAGE network,
// checkpoints and training curves.
#include <cmath>
#include <filesystem>
#include <string>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/features.h"
#include "agents/learned/common/gnn.h"
#include "agents/learned/common/rollout.h"
#include "core/error.h"
#include "core/io.h"
#include "graphs/graph_builder.h"
#include "graphs/op_class.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents::learned {
namespace {

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gosim_learned_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// a -> b, a -> c, b -> d, c -> d (a diamond), with one duplicate edge a -> b.
graphs::Graph Diamond() {
  graphs::GraphBuilder b("diamond");
  auto node = [&](const std::string& name, const std::string& op, double flops, int outputs) {
    graphs::NodeSpec spec;
    spec.name = name;
    spec.op = op;
    spec.flops = flops;
    for (int k = 0; k < outputs; ++k) spec.outputs.push_back({4096, {32, 32}, graphs::DType::kFloat32});
    return b.AddNode(std::move(spec));
  };
  const int32_t a = node("a", "MatMul", 1e9, 2);
  const int32_t bn = node("b", "Relu", 0.0, 1);
  const int32_t c = node("c", "Conv2D", 4e9, 1);
  const int32_t d = node("d", "Add", 0.0, 1);
  b.AddEdge(a, bn, 0);
  b.AddEdge(a, bn, 1);
  b.AddEdge(a, c, 0);
  b.AddEdge(bn, d, 0);
  b.AddEdge(c, d, 0);
  return b.Build();
}

TEST_CASE("node features: shapes, op classes, merged edges, per-graph standardization") {
  const graphs::Graph g = Diamond();
  const NodeFeatures f = ComputeNodeFeatures(g);
  CHECK(f.num_nodes == 4);
  CHECK(FeatureNames().size() == static_cast<size_t>(kNumNodeFeatures));
  REQUIRE(f.values.size() == 4u * kNumNodeFeatures);
  CHECK(f.op_class[0] == static_cast<int64_t>(graphs::OpClass::kMatMul));
  CHECK(f.op_class[2] == static_cast<int64_t>(graphs::OpClass::kConv));
  // The two a -> b edges are one message-passing edge.
  CHECK(f.edge_src == std::vector<int64_t>{0, 0, 1, 2});
  CHECK(f.edge_dst == std::vector<int64_t>{1, 2, 3, 3});
  auto at = [&](int v, int c) { return f.values[static_cast<size_t>(v) * kNumNodeFeatures + c]; };
  // log_flops (column 0) is standardized: zero mean, unit variance.
  double mean = 0.0, sq = 0.0;
  for (int v = 0; v < 4; ++v) mean += at(v, 0) / 4.0;
  for (int v = 0; v < 4; ++v) sq += (at(v, 0) - mean) * (at(v, 0) - mean) / 4.0;
  CHECK(mean == doctest::Approx(0.0).epsilon(1e-5));
  CHECK(sq == doctest::Approx(1.0).epsilon(1e-4));
  CHECK(at(2, 0) > at(0, 0));  // 4 GFLOPs > 1 GFLOP
  // Positions: topological position and depth in [0, 1]; d is last and deepest.
  CHECK(at(3, 12) == doctest::Approx(1.0));
  CHECK(at(3, 13) == doctest::Approx(1.0));
  CHECK(at(0, 14) == doctest::Approx(1.0));  // a has the largest height
  CHECK(at(0, 17) == 1.0f);                  // forward phase one-hot
}

TEST_CASE("MeanAggregate averages neighbours with index_add") {
  const graphs::Graph g = Diamond();
  const GraphTensors t = ToTensors(ComputeNodeFeatures(g));
  const torch::Tensor h = torch::arange(8, torch::kFloat32).view({4, 2});  // rows (0,1) (2,3) (4,5) (6,7)
  const torch::Tensor in = MeanAggregate(h, t.edge_src, t.edge_dst, t.inv_in);
  // d's predecessors are b and c: mean of (2,3) and (4,5).
  CHECK(in[3][0].item<float>() == doctest::Approx(3.0));
  CHECK(in[3][1].item<float>() == doctest::Approx(4.0));
  CHECK(in[0][0].item<float>() == 0.0f);  // a has no predecessors
  const torch::Tensor out = MeanAggregate(h, t.edge_dst, t.edge_src, t.inv_out);
  CHECK(out[0][0].item<float>() == doctest::Approx(3.0));  // a's successors b, c
}

TEST_CASE("MeanAggregate over the adjacency: index_add's numbers bit for bit, forward and gradient") {
  // A random multigraph of 3,000 nodes: duplicate edges, self-loops, nodes
  // without neighbours, and rows enough for two threads.
  torch::manual_seed(11);
  const int64_t n = 3000, e = 12000, h = 24;
  std::vector<int64_t> src(e), dst(e);
  const torch::Tensor pairs =
      torch::randint(0, n - 100, {2, e}, torch::kInt64);  // the last 100 nodes: no edges
  for (int64_t i = 0; i < e; ++i) {
    src[static_cast<size_t>(i)] = pairs[0][i].item<int64_t>();
    dst[static_cast<size_t>(i)] = pairs[1][i].item<int64_t>();
  }
  const Adjacency in = MakeAdjacency(src, dst, n, true), out = MakeAdjacency(src, dst, n, false);
  const torch::Tensor s = torch::tensor(src), d = torch::tensor(dst);
  const torch::Tensor ones = torch::ones({e}), zeros = torch::zeros({n});
  const torch::Tensor inv_in = (1.0 / zeros.index_add(0, d, ones).clamp_min(1.0)).unsqueeze(1);
  const torch::Tensor inv_out = (1.0 / zeros.index_add(0, s, ones).clamp_min(1.0)).unsqueeze(1);
  const torch::Tensor values = torch::randn({n, h}), probe = torch::randn({n, h});
  const int before = torch::get_num_threads();
  for (const int threads : {1, 2}) {
    torch::set_num_threads(threads);
    for (const bool forward_edges : {true, false}) {
      CAPTURE(threads);
      CAPTURE(forward_edges);
      const torch::Tensor a = values.clone().requires_grad_(true), b = values.clone().requires_grad_(true);
      const torch::Tensor ours =
          forward_edges ? MeanAggregate(a, in, out, inv_in) : MeanAggregate(a, out, in, inv_out);
      const torch::Tensor theirs =
          forward_edges ? MeanAggregate(b, s, d, inv_in) : MeanAggregate(b, d, s, inv_out);
      (ours * probe).sum().backward();
      (theirs * probe).sum().backward();
      CHECK(torch::equal(ours, theirs));
      CHECK(torch::equal(a.grad(), b.grad()));
    }
  }
  torch::set_num_threads(before);
  CHECK_THROWS_AS(MeanAggregate(values.slice(0, 0, 10), in, out, inv_in), ConfigError);
  CHECK_THROWS_AS(MeanAggregate(values.to(torch::kDouble), in, out, inv_in), ConfigError);
  CHECK_THROWS_AS(MakeAdjacency({0, 5}, {1, 2}, 3, true), StateError);
  CHECK_THROWS_AS(MakeAdjacency({0, 1}, {1}, 3, true), StateError);
  // An adjacency that would read outside its tensors is refused.
  Adjacency bad = in;
  bad.nbr = in.nbr.clone();
  bad.nbr[0] = n;
  CHECK_THROWS_AS(MeanAggregate(values, bad, out, inv_in), ConfigError);
  bad = in;
  bad.ptr = in.ptr.clone();
  bad.ptr[n] = e + 1;
  CHECK_THROWS_AS(MeanAggregate(values, bad, out, inv_in), ConfigError);
}

TEST_CASE("GraphSage: the adjacency path gives index_add's embeddings and gradients bit for bit") {
  torch::manual_seed(12);
  GnnOptions o;
  o.hidden = 16;
  o.layers = 3;
  GraphSage gnn(o);
  const GraphTensors with = ToTensors(ComputeNodeFeatures(Diamond()));
  GraphTensors without = with;  // no adjacency: the index_add path
  without.in = Adjacency{};
  without.out = Adjacency{};
  auto run = [&](const GraphTensors& t) {
    gnn->zero_grad();
    const torch::Tensor h = gnn->forward(t);
    (h * h.detach().sin()).sum().backward();
    std::vector<torch::Tensor> out = {h.detach()};
    for (const auto& p : gnn->parameters()) out.push_back(p.grad().clone());
    return out;
  };
  const std::vector<torch::Tensor> a = run(with), b = run(without);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::equal(a[i], b[i]));
  }
}

TEST_CASE("GraphSage: output shape, gradients reach every parameter") {
  torch::manual_seed(1);
  GnnOptions o;
  o.hidden = 8;
  o.layers = 2;
  o.op_embedding = 4;
  GraphSage gnn(o);
  const GraphTensors t = ToTensors(ComputeNodeFeatures(Diamond()));
  const torch::Tensor h = gnn->forward(t);
  CHECK(h.size(0) == 4);
  CHECK(h.size(1) == 8);
  h.pow(2).sum().backward();
  for (const auto& p : gnn->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
  }
}

TEST_CASE("checkpoints: exact round trip, signature check, missing file") {
  const std::string dir = TempDir("checkpoint");
  torch::manual_seed(3);
  GnnOptions o;
  o.hidden = 8;
  o.layers = 1;
  GraphSage a(o);
  torch::optim::Adam adam(a->parameters(), torch::optim::AdamOptions(1e-2));
  const GraphTensors t = ToTensors(ComputeNodeFeatures(Diamond()));
  a->forward(t).sum().backward();
  adam.step();
  TrainingState state;
  state.step = 7;
  state.rng = {1, 2, 3, 0xffffffffffffffffULL};
  state.scalars = {{"baseline", 0.25}, {"evaluations", 1234}};
  SaveCheckpoint(dir + "/c.pt", kGoCheckpoint, o.Signature(), *a, &adam, state);
  CHECK(ReadCheckpointSignature(dir + "/c.pt", kGoCheckpoint) == o.Signature());

  torch::manual_seed(99);
  GraphSage b(o);
  torch::optim::Adam adam_b(b->parameters(), torch::optim::AdamOptions(1e-2));
  const TrainingState loaded = LoadCheckpoint(dir + "/c.pt", kGoCheckpoint, o.Signature(), *b, &adam_b);
  CHECK(loaded.step == 7);
  CHECK(loaded.rng == state.rng);
  CHECK(loaded.scalars == state.scalars);
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  for (const auto& p : pa) CHECK(torch::equal(p.value(), pb[p.key()]));
  // The optimizer state came back too: one more identical step keeps them equal.
  a->zero_grad();
  b->zero_grad();
  a->forward(t).sum().backward();
  b->forward(t).sum().backward();
  adam.step();
  adam_b.step();
  for (const auto& p : pa) CHECK(torch::equal(p.value(), pb[p.key()]));

  GnnOptions other = o;
  other.hidden = 16;
  GraphSage c(other);
  CHECK_THROWS_AS(LoadCheckpoint(dir + "/c.pt", kGoCheckpoint, other.Signature(), *c, nullptr), StateError);
  CHECK_THROWS_AS(LoadCheckpoint(dir + "/missing.pt", kGoCheckpoint, o.Signature(), *c, nullptr), IoError);
  WriteFileAtomic(dir + "/junk.pt", "not a checkpoint");
  CHECK_THROWS_AS(LoadCheckpoint(dir + "/junk.pt", kGoCheckpoint, o.Signature(), *c, nullptr), StateError);
}

// The one-line error of a refused checkpoint, or "" when it loads.
std::string LoadError(const std::string& path, const CheckpointKind& kind, const GnnOptions& o) {
  GraphSage model(o);
  try {
    LoadCheckpoint(path, kind, o.Signature(), *model, nullptr);
  } catch (const StateError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("checkpoints: another network version, another agent or an old format is refused in one line") {
  const std::string dir = TempDir("checkpoint_version");
  GnnOptions o;
  o.hidden = 8;
  o.layers = 1;
  GraphSage a(o);
  SaveCheckpoint(dir + "/go.pt", kGoCheckpoint, o.Signature(), *a, nullptr, TrainingState{});
  CHECK(LoadError(dir + "/go.pt", kGoCheckpoint, o).empty());

  // Written by a build whose GO network had another version.
  const CheckpointKind future{"go", kGoCheckpoint.network_version + 1};
  SaveCheckpoint(dir + "/future.pt", future, o.Signature(), *a, nullptr, TrainingState{});
  const std::string version = LoadError(dir + "/future.pt", kGoCheckpoint, o);
  CHECK(version.find("go network version " + std::to_string(future.network_version)) != std::string::npos);
  CHECK(version.find("is version " + std::to_string(kGoCheckpoint.network_version)) != std::string::npos);
  CHECK(version.find("configs/checkpoints/go.pt") != std::string::npos);
  CHECK(version.find(dir + "/future.pt") != std::string::npos);
  CHECK(version.find('\n') == std::string::npos);
  CHECK_THROWS_AS(ReadCheckpointSignature(dir + "/future.pt", kGoCheckpoint), StateError);

  // Another agent's network of the same shape.
  const std::string agent = LoadError(dir + "/go.pt", kRegalCheckpoint, o);
  CHECK(agent.find("holds a go network") != std::string::npos);
  CHECK(agent.find("not a regal one") != std::string::npos);
  CHECK(agent.find('\n') == std::string::npos);

  // A file of the first format (no agent, no network version).
  torch::serialize::OutputArchive old;
  torch::serialize::OutputArchive model_archive;
  a->save(model_archive);
  old.write("model", model_archive);
  old.write("gosim_version", torch::tensor(int64_t{1}));
  old.save_to(dir + "/old.pt");
  const std::string format = LoadError(dir + "/old.pt", kGoCheckpoint, o);
  CHECK(format.find("format version 1, this build reads version 2") != std::string::npos);
  CHECK(format.find("train it again") != std::string::npos);
  CHECK(format.find('\n') == std::string::npos);
}

TEST_CASE("training curves: append, read back, truncate on resume") {
  const std::string dir = TempDir("curves");
  const std::string path = dir + "/curves.csv";
  {
    TrainingCurves curves(path, {"entropy"}, -1);
    for (int64_t s = 1; s <= 5; ++s) curves.Append({s, 0.1 * s, 100.0 - s, 0.5 * s, 10 * s, {1.0}});
    CHECK_THROWS_AS(curves.Append({6, 0, 0, 0, 0, {}}), StateError);
  }
  CHECK(TrainingCurves::Read(path).size() == 5);
  {
    TrainingCurves resumed(path, {"entropy"}, 3);  // a run resumed at step 3
    resumed.Append({4, 9.0, 1.0, 2.0, 40, {2.0}});
  }
  const std::vector<TrainingPoint> points = TrainingCurves::Read(path);
  REQUIRE(points.size() == 4);
  CHECK(points[2].step == 3);
  CHECK(points[3].reward == 9.0);
  CHECK(points[3].extra == std::vector<double>{2.0});
  CHECK(points[1].evaluations == 20);
}

TEST_CASE("batched rollouts: parallel decode, one batch, seeded") {
  const graphs::Graph g = Diamond();
  const sim::Cluster cluster = sim::LoadCluster("k80x2");
  const sim::Evaluator evaluator(g, cluster, sim::MakeCostModel("roofline"));
  Objective objective;
  objective.kind = ObjectiveKind::kPeakMemory;
  const DecodeFn decode = [&](int32_t, Rng& rng, sim::Decision* out) {
    *out = sim::SingleDeviceDecision(g);
    for (auto& d : out->placement) d = static_cast<int32_t>(rng.UniformInt(uint64_t{2}));
  };
  RolloutBatch a, b;
  RunRollouts(evaluator, objective, 16, 5, 0, decode, &a);
  RunRollouts(evaluator, objective, 16, 5, 0, decode, &b);
  REQUIRE(a.scores.size() == 16);
  for (size_t i = 0; i < 16; ++i) {
    CHECK(a.decisions[i].placement == b.decisions[i].placement);
    CHECK(a.scores[i] == b.scores[i]);
    CHECK(a.scores[i] == evaluator.Evaluate(a.decisions[i]).peak_memory);
  }
}

}  // namespace
}  // namespace gosim::agents::learned
