#include "graphs/generators/generators.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/yaml.h"
#include "graphs/generators/model_builder.h"
#include "graphs/stats.h"

namespace gosim::graphs {
namespace {

Graph Gen(const std::string& spec) {
  auto [name, params] = ParseGeneratorSpec(spec);
  return Generate(name, params, "test");
}

// Trainable weights (elements) and forward Conv/MatMul FLOPs.
struct Counts {
  int64_t weights = 0;
  double matmul_flops = 0.0;
};

Counts Count(const Graph& g) {
  Counts c;
  for (const Node& n : g.nodes()) {
    const std::string& op = g.op_type_name(n.op);
    if (op == "Variable") c.weights += n.persistent_bytes / 4;
    if (n.phase == Phase::kForward && (op == "Conv2D" || op == "MatMul" || op == "DepthwiseConv2dNative")) {
      c.matmul_flops += n.flops;
    }
  }
  return c;
}

int64_t CountOp(const Graph& g, const std::string& op) {
  int64_t k = 0;
  for (const Node& n : g.nodes()) k += g.op_type_name(n.op) == op ? 1 : 0;
  return k;
}

// Every attribute of two graphs, node by node and edge by edge.
void CheckIdentical(const Graph& a, const Graph& b) {
  REQUIRE(a.name() == b.name());
  REQUIRE(a.num_nodes() == b.num_nodes());
  REQUIRE(a.num_edges() == b.num_edges());
  bool same = true;
  for (NodeId i = 0; i < a.num_nodes(); ++i) {
    const Node& x = a.node(i);
    const Node& y = b.node(i);
    same = same && x.name == y.name && a.op_type_name(x.op) == b.op_type_name(y.op) && x.flops == y.flops &&
           x.bytes_read == y.bytes_read && x.bytes_written == y.bytes_written && x.outputs == y.outputs &&
           x.persistent_bytes == y.persistent_bytes && x.scope == y.scope && x.phase == y.phase &&
           x.measured == y.measured && x.colocation == y.colocation;
  }
  for (EdgeId e = 0; e < a.num_edges(); ++e) {
    const Edge& x = a.edge(e);
    const Edge& y = b.edge(e);
    same = same && x.src == y.src && x.dst == y.dst && x.output_index == y.output_index && x.bytes == y.bytes;
  }
  CHECK(same);
  CHECK(a.colocation_groups() == b.colocation_groups());
}

}  // namespace

TEST_CASE("ModelBuilder: a dense layer, its gradients and its updates") {
  gen::ModelOptions o;
  o.batch = 8;
  o.training = true;
  gen::ModelBuilder b("tiny", o);
  const gen::Tensor x = b.Input("x", {8, 16});
  const gen::Tensor labels = b.Input("labels", {8}, DType::kInt64);
  {
    auto s = b.Scope("layer");
    const gen::Tensor y = b.Relu(b.Dense(x, 4));
    CHECK(b.shape(y) == gen::Shape{8, 4});
    b.SoftmaxCrossEntropy(y, labels);
  }
  const Graph g = b.Build();
  // Forward: 2 inputs, 2 variables, MatMul, BiasAdd, Relu, loss. Backward:
  // loss grad, ReluGrad, BiasAddGrad, MatMul wrt the kernel (x needs no
  // gradient). Update: one ApplyAdam per variable.
  CHECK(g.num_nodes() == 8 + 4 + 2);
  const Node& mm = g.node(*g.FindNode("layer/dense/MatMul"));
  CHECK(mm.flops == 2.0 * 8 * 16 * 4);
  CHECK(mm.bytes_read == 8 * 16 * 4 + 16 * 4 * 4);
  CHECK(mm.bytes_written == 8 * 4 * 4);
  CHECK(mm.scope == "layer/dense");
  const Node& kernel = g.node(*g.FindNode("layer/dense/kernel"));
  CHECK(kernel.persistent_bytes == 16 * 4 * 4);
  const auto update = g.FindNode("layer/dense/kernel/ApplyAdam");
  REQUIRE(update.has_value());
  CHECK(g.node(*update).phase == Phase::kUpdate);
  CHECK(g.node(*update).persistent_bytes == 2 * kernel.persistent_bytes);  // Adam's m and v
  CHECK(g.node(*update).colocation == kernel.colocation);
  CHECK(g.colocation_groups()[static_cast<size_t>(kernel.colocation)] == "layer/dense/kernel");
  const auto grad = g.FindNode("gradients/layer/dense/MatMul_grad/MatMul");
  REQUIRE(grad.has_value());
  CHECK(g.node(*grad).phase == Phase::kBackward);
  CHECK(g.node(*grad).flops == mm.flops);
  // The weight gradient reads the saved input x, so x lives until backward.
  bool reads_x = false;
  for (EdgeId e : g.in_edges(*grad)) reads_x = reads_x || g.edge(e).src == *g.FindNode("x");
  CHECK(reads_x);
  CHECK(CountOp(g, "ReluGrad") == 1);
  CHECK(CountOp(g, "ApplyAdam") == 2);
}

TEST_CASE("ModelBuilder: gradients of a tensor with several consumers are summed") {
  gen::ModelOptions o;
  o.training = true;
  gen::ModelBuilder b("fanout", o);
  const gen::Tensor x = b.Input("x", {2, 3});
  const gen::Tensor h = b.Dense(x, 3, false);
  const gen::Tensor y = b.Add(b.Relu(h), b.Tanh(h));
  b.SoftmaxCrossEntropy(y, b.Input("labels", {2}, DType::kInt64));
  const Graph g = b.Build();
  CHECK(CountOp(g, "AddN") == 1);  // dh = ReluGrad + TanhGrad
  CHECK(CountOp(g, "Add") == 1);   // the forward Add passes its gradient through
}

TEST_CASE("ModelBuilder: the node limit stops runaway graphs") {
  gen::ModelOptions o;
  o.max_nodes = 50;
  gen::ModelBuilder b("big", o);
  gen::Tensor x = b.Input("x", {1, 4});
  CHECK_THROWS_AS(
      [&] {
        for (int i = 0; i < 100; ++i) x = b.Relu(x);
      }(),
      ConfigError);
}

TEST_CASE("ResNet-50/101/152 match torchvision's weights and FLOPs") {
  const Graph r50 = Gen("resnet:batch=1");
  const Counts c50 = Count(r50);
  CHECK(c50.weights == 25'557'032);
  // 4.09 GMACs per 224x224 image (torchvision), 2 FLOPs each.
  CHECK(c50.matmul_flops == doctest::Approx(2 * 4.089e9).epsilon(0.01));
  CHECK(ComputeStats(r50).flops == doctest::Approx(2 * 4.1e9).epsilon(0.03));
  // The stem convolution, exactly: 2 * 112 * 112 * 64 * 3 * 7 * 7.
  CHECK(r50.node(*r50.FindNode("stem/conv1/Conv2D")).flops == 236'027'904.0);
  CHECK(Count(Gen("resnet:batch=1,depth=101")).weights == 44'549'160);
  CHECK(Count(Gen("resnet:batch=1,depth=152")).weights == 60'192'808);
  CHECK_THROWS_AS(Gen("resnet:depth=34"), ConfigError);
}

TEST_CASE("ResNet-50 training adds backward and update phases") {
  const Graph g = Gen("resnet:batch=32,training=true");
  const GraphStats s = ComputeStats(g);
  // 176 forward ops + 161 variables + 2 inputs; 213 gradient ops + 16 AddN
  // (block inputs feed the residual add and the next block); 161 updates.
  CHECK(s.forward_nodes == 339);
  CHECK(s.backward_nodes == 229);
  CHECK(s.update_nodes == 161);
  CHECK(s.update_nodes == CountOp(g, "Variable"));
  CHECK(g.node(*g.FindNode("stem/conv1/Conv2D")).flops == 32 * 236'027'904.0);
  // No gradient for the images: the first convolution has no input gradient.
  CHECK_FALSE(g.FindNode("gradients/stem/conv1/Conv2D_grad/Conv2DBackpropInput").has_value());
  CHECK(g.FindNode("gradients/stem/conv1/Conv2D_grad/Conv2DBackpropFilter").has_value());
  // Training costs about three forward passes.
  const double forward = ComputeStats(Gen("resnet:batch=32")).flops;
  CHECK(s.flops / forward == doctest::Approx(3.0).epsilon(0.1));
}

TEST_CASE("Inception-v3 matches torchvision's weights and FLOPs") {
  const Graph with_aux = Gen("inception_v3:batch=1,aux_logits=true");
  CHECK(Count(with_aux).weights == 27'161'264);
  const Graph plain = Gen("inception_v3:batch=1");
  CHECK(Count(plain).weights == 23'834'568);
  CHECK(Count(plain).matmul_flops == doctest::Approx(2 * 5.71e9).epsilon(0.01));  // 5.71 GMACs at 299x299
  CHECK(plain.FindNode("Mixed_6b/branch7x7_2/conv/Conv2D").has_value());          // a factorized 1x7
  const Graph train = Gen("inception_v3:training=true");
  CHECK(ComputeStats(train).update_nodes == CountOp(train, "Variable"));
  CHECK(CountOp(train, "SparseSoftmaxCrossEntropyWithLogits") == 2);  // main and auxiliary heads
}

TEST_CASE("BERT-base has BertForPreTraining's 110,106,428 weights") {
  const Graph g = Gen("bert:batch=1");
  CHECK(Count(g).weights == 110'106'428);
  CHECK(CountOp(g, "LayerNorm") == 1 + 12 * 2 + 1);
  CHECK_THROWS_AS(Gen("bert:hidden=100,heads=12"), ConfigError);
  // The tied word embedding gets a dense (MatMul) and a sparse (Gather)
  // gradient, summed before its update.
  const Graph t = Gen("bert:batch=2,seq_len=16,layers=2,training=true");
  const auto update = t.FindNode("embeddings/word_embeddings/ApplyAdam");
  REQUIRE(update.has_value());
}

TEST_CASE("Transformer-XL: memory, relative attention and segments") {
  const Graph g = Gen("transformer_xl:batch=1");
  // 41M weights for the 12-layer enwik8 model (Dai et al. 2019, Table 2).
  CHECK(Count(g).weights == doctest::Approx(41e6).epsilon(0.02));
  CHECK(CountOp(g, "RelShift") == 12);
  const Graph two = Gen("transformer_xl:batch=1,layers=2,seq_len=16,mem_len=16,segments=2,training=true");
  // The second segment's memory comes from the first behind a StopGradient.
  CHECK(CountOp(two, "StopGradient") == 2);
  CHECK(CountOp(two, "SparseSoftmaxCrossEntropyWithLogits") == 2);
  CHECK(CountOp(two, "ApplyAdam") == CountOp(two, "Variable"));
}

TEST_CASE("GNMT: bidirectional bottom layer, residuals from layer 3, attention per step") {
  const Graph g = Gen("gnmt:batch=2,seq_len=4,hidden=8,vocab=50");
  CHECK(g.FindNode("encoder/layer_1/bw/kernel").has_value());
  CHECK(g.FindNode("encoder/layer_1/fw/kernel").has_value());
  // Adds: one per LSTM cell (new c; 9 encoder chains incl. the backward
  // one and 8 decoder layers, 4 steps), one per attention step, and the
  // residuals of encoder and decoder layers 3..8.
  CHECK(CountOp(g, "Add") == (9 + 8) * 4 + 4 + 2 * 6 * 4);
  CHECK(CountOp(g, "Softmax") == 4);  // one attention softmax per decoder step
  // 8 + 8 layers of 13-op LSTM cells, 4 steps, plus the backward cells.
  CHECK(CountOp(g, "Sigmoid") == 3 * (9 + 8) * 4);
}

TEST_CASE("An 8-layer GNMT training graph reaches 80,000 nodes") {
  const Graph g = Gen("gnmt:layers=8,training=true,seq_len=150");
  CHECK(g.num_nodes() >= 80'000);
  const GraphStats s = ComputeStats(g);
  CHECK(s.backward_nodes > s.forward_nodes);
  CHECK(s.update_nodes == CountOp(g, "Variable"));
}

TEST_CASE("Every generator builds, in ranges, with backward ops when training") {
  struct Case {
    const char* spec;
    int64_t min_nodes, max_nodes;
  };
  const Case cases[] = {
      {"inception_v3:training=true", 1000, 2000},   {"resnet:training=true", 600, 900},
      {"rnnlm:training=true", 1000, 1600},          {"nmt:training=true", 6000, 9000},
      {"nmt:layers=4,training=true", 11000, 16000}, {"nmt:layers=8,training=true", 22000, 30000},
      {"gnmt:training=true", 25000, 40000},         {"transformer_xl:training=true", 1000, 1600},
      {"wavenet:training=true", 1200, 1900},        {"bert:training=true", 1000, 1500},
      {"amoebanet:training=true", 3500, 5500},      {"regal_random", 50, 250},
  };
  for (const Case& c : cases) {
    CAPTURE(c.spec);
    const Graph g = Gen(c.spec);
    CHECK(g.num_nodes() >= c.min_nodes);
    CHECK(g.num_nodes() <= c.max_nodes);
    if (std::string(c.spec).find("training") != std::string::npos) {
      const GraphStats s = ComputeStats(g);
      CHECK(s.backward_nodes > 0);
      CHECK(s.update_nodes > 0);
    }
  }
}

TEST_CASE("Generators are deterministic") {
  for (const char* spec : {"inception_v3:training=true", "gnmt:layers=2,seq_len=5,training=true",
                           "amoebanet:num_cells=6,filters=32,training=true", "wavenet:stacks=1,training=true",
                           "transformer_xl:layers=2,segments=2,training=true", "regal_random:seed=7",
                           "regal_random:seed=7,augment_index=3"}) {
    CAPTURE(spec);
    CheckIdentical(Gen(spec), Gen(spec));
  }
  CHECK(Gen("regal_random:seed=1").num_edges() != Gen("regal_random:seed=2").num_edges());
}

TEST_CASE("regal_random: layered DAG with CostGraphDef-like costs") {
  const Graph g = Gen("regal_random:seed=11,min_nodes=100,max_nodes=120,weight_prob=0.5");
  CHECK(g.num_nodes() >= 100);
  CHECK(g.num_nodes() <= 120);
  int64_t weights = 0;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    REQUIRE(node.measured.size() == 1);
    CHECK(node.measured[0].device_kind == "any");
    CHECK(node.flops == doctest::Approx(node.measured[0].seconds * 1e13));
    for (const TensorInfo& t : node.outputs) CHECK(t.bytes % 4 == 0);
    if (node.scope != "layer_0") CHECK(g.in_degree(n) >= 1);
    weights += node.persistent_bytes > 0 ? 1 : 0;
  }
  CHECK(weights > 20);
  CHECK(Gen("regal_random:nodes=77").num_nodes() == 77);
  // augment_index re-draws sizes but keeps the structure and costs.
  const Graph a = Gen("regal_random:seed=11,min_nodes=100,max_nodes=120,weight_prob=0.5,augment_index=1");
  REQUIRE(a.num_nodes() == g.num_nodes());
  REQUIRE(a.num_edges() == g.num_edges());
  int64_t changed = 0;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    CHECK(a.node(n).flops == g.node(n).flops);
    changed += a.node(n).outputs[0].bytes != g.node(n).outputs[0].bytes ? 1 : 0;
  }
  CHECK(changed > g.num_nodes() / 2);
}

TEST_CASE("AugmentTensorSizes keeps edges consistent with the new sizes") {
  const Graph g = Gen("resnet:batch=2");
  CheckIdentical(AugmentTensorSizes(g, 5, 0, 0.5, g.name()), g);
  const Graph a = AugmentTensorSizes(g, 5, 4, 0.5);
  CHECK(a.name() == g.name() + "_aug4");
  for (const Edge& e : a.edges()) {
    if (!e.is_control()) CHECK(e.bytes == a.node(e.src).outputs[static_cast<size_t>(e.output_index)].bytes);
  }
  int64_t sum_out = 0;
  for (const TensorInfo& t : a.node(1).outputs) sum_out += t.bytes;
  CHECK(a.node(1).bytes_written == sum_out + (g.node(1).bytes_written - g.node(1).outputs[0].bytes));
  CheckIdentical(AugmentTensorSizes(g, 5, 4, 0.5), a);
}

TEST_CASE("The smallest accepted inputs build") {
  for (const char* spec :
       {"inception_v3:image_size=75,training=true,aux_logits=false,batch=1", "resnet:image_size=32,batch=1",
        "amoebanet:image_size=96,filters=8,num_cells=3,training=true,batch=1",
        "bert:seq_len=2,layers=1,hidden=8,heads=1,batch=1,training=true",
        "transformer_xl:seq_len=1,mem_len=0,layers=1,d_model=4,heads=1,training=true",
        "nmt:seq_len=1,layers=1,hidden=1,vocab=2,training=true",
        "wavenet:samples=2,dilations=[1],training=true"}) {
    CAPTURE(spec);
    CHECK(Gen(spec).num_nodes() > 0);
  }
}

TEST_CASE("Unknown and out-of-range parameters are ConfigErrors with a did-you-mean") {
  try {
    Generate("resnet", LoadYamlString("depht: 50\n", "p.yaml"), "p.yaml", "");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("Did you mean 'depth'?") != std::string::npos);
    CHECK(e.where().line == 1);
    CHECK(e.where().file == "p.yaml");
  }
  CHECK_THROWS_AS(Gen("gnmt:layers=0"), ConfigError);
  CHECK_THROWS_AS(Gen("wavenet:dtype=float8"), ConfigError);
  CHECK_THROWS_AS(Gen("resnt"), ConfigError);
  CHECK_THROWS_AS(Gen("inception_v3:image_size=10"), ConfigError);
  CHECK_THROWS_AS(Gen("inception_v3:image_size=200,training=true"), ConfigError);
  CHECK_THROWS_AS(Generate("bert", LoadYamlString("[1, 2]"), "x"), ConfigError);
}

TEST_CASE("ParseGeneratorSpec reads names and YAML values") {
  auto [name, params] = ParseGeneratorSpec("wavenet:dilations=[1,2,4],training=true,batch=3");
  CHECK(name == "wavenet");
  CHECK(params["dilations"].size() == 3);
  CHECK(params["training"].as<bool>());
  CHECK(params["batch"].as<int>() == 3);
  CHECK(ParseGeneratorSpec("bert").second.size() == 0);
  CHECK_THROWS_AS(ParseGeneratorSpec("bert:layers"), ConfigError);
  CHECK_THROWS_AS(ParseGeneratorSpec(":x=1"), ConfigError);
  const Graph g = Gen("wavenet:dilations=[1,2,4],samples=100");
  CHECK(CountOp(g, "Tanh") == 3);
}

TEST_CASE("ListGenerators describes every generator") {
  const auto list = ListGenerators();
  std::vector<std::string> names;
  for (const auto& g : list) {
    names.push_back(g.name);
    CHECK_FALSE(g.description.empty());
  }
  CHECK(names == std::vector<std::string>{"amoebanet", "bert", "gnmt", "inception_v3", "nmt", "regal_random",
                                          "resnet", "rnnlm", "transformer_xl", "wavenet"});
}

}  // namespace gosim::graphs
