#include "graphs/onnx_format.h"

#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/io.h"
#include "core/yaml.h"
#include "graphs/io.h"
#include "graphs/op_class.h"
#include "graphs/op_costs.h"
#include "graphs/suite.h"

namespace gosim::graphs {
namespace {

const Node& NodeNamed(const Graph& g, const std::string& name) {
  const auto id = g.FindNode(name);
  REQUIRE_MESSAGE(id.has_value(), "no node " << name);
  return g.node(*id);
}

std::string Op(const Graph& g, const std::string& name) {
  return g.op_type_name(NodeNamed(g, name).op);
}

int64_t TotalPersistent(const Graph& g) {
  int64_t total = 0;
  for (const Node& n : g.nodes()) total += n.persistent_bytes;
  return total;
}

}  // namespace

TEST_CASE("op_costs formulas") {
  // Conv 3x3, 3 -> 4 channels, 8x8 output, batch 2, with bias.
  CHECK(ConvFlops(2, 4, 64, 3, 9, true) == 2.0 * 2 * 4 * 64 * 3 * 9 + 2 * 4 * 64);
  CHECK(MatMulFlops(2, 5, 16, 5) == 1600);
  CHECK(GemmFlops(2, 64, 10, true) == 2580);
  CHECK(GemmFlops(2, 64, 10, false) == 2560);
  CHECK(PoolFlops(128, 4) == 512);
  CHECK(SoftmaxFlops(100) == 500);
  const std::vector<int64_t> shape{2, 3, 4};
  CHECK(NumElements(shape) == 24);
  CHECK(NumElements(std::span<const int64_t>()) == 1);
  CHECK(ClassifyOnnxOp("Conv") == OpCostClass::kConv);
  CHECK(ClassifyOnnxOp("Erf") == OpCostClass::kElementwise);
  CHECK(ClassifyOnnxOp("Reshape") == OpCostClass::kDataMovement);
  CHECK(ClassifyOnnxOp("NonMaxSuppression") == OpCostClass::kOther);
}

TEST_CASE("ONNX: tiny CNN exported by torch" * doctest::skip(!OnnxSupported())) {
  const Graph g = LoadGraph("tests/data/onnx/tiny_cnn.onnx");
  CHECK(g.name() == "tiny_cnn");
  REQUIRE(g.num_nodes() == 7);
  CHECK(g.num_edges() == 6);
  const std::vector<std::string> names{"/conv/Conv",    "/relu/Relu", "/bn/BatchNormalization",
                                       "/pool/MaxPool", "/Flatten",   "/fc/Gemm",
                                       "/Softmax"};
  for (NodeId i = 0; i < 7; ++i) {
    CHECK(g.node(i).name == names[static_cast<size_t>(i)]);
    if (i > 0) {
      REQUIRE(g.in_degree(i) == 1);
      CHECK(g.edge(g.in_edges(i)[0]).src == i - 1);
    }
  }

  // Conv: input [2,3,8,8], weight [4,3,3,3], bias [4], output [2,4,8,8]:
  // 2 * (2*4*64 outputs) * (3*9 MACs each) + 512 bias adds.
  const Node& conv = NodeNamed(g, "/conv/Conv");
  CHECK(g.op_type_name(conv.op) == "Conv");
  CHECK(conv.flops == 28160);
  CHECK(conv.outputs[0] == TensorInfo{2048, {2, 4, 8, 8}, DType::kFloat32});
  CHECK(conv.bytes_read == 1536 + 432 + 16);  // image, weight, bias
  CHECK(conv.bytes_written == 2048);
  CHECK(conv.persistent_bytes == 432 + 16);
  CHECK(conv.scope == "conv");

  CHECK(NodeNamed(g, "/relu/Relu").flops == 512);
  const Node& bn = NodeNamed(g, "/bn/BatchNormalization");
  CHECK(bn.flops == 4 * 512);
  CHECK(bn.persistent_bytes == 4 * 16);  // scale, bias, mean, variance
  const Node& pool = NodeNamed(g, "/pool/MaxPool");
  CHECK(pool.flops == 128 * 4);  // 2x2 kernel
  CHECK(pool.outputs[0].shape == std::vector<int64_t>{2, 4, 4, 4});
  CHECK(NodeNamed(g, "/Flatten").flops == 0);
  CHECK(NodeNamed(g, "/Flatten").outputs[0].shape == std::vector<int64_t>{2, 64});

  // Gemm: [2,64] x [10,64]^T + [10]: 2*2*64*10 + 2*10.
  const Node& gemm = NodeNamed(g, "/fc/Gemm");
  CHECK(gemm.flops == 2580);
  CHECK(gemm.persistent_bytes == 2560 + 40);
  CHECK(gemm.outputs[0] == TensorInfo{80, {2, 10}, DType::kFloat32});
  CHECK(NodeNamed(g, "/Softmax").flops == 5 * 20);
  CHECK(TotalPersistent(g) == 448 + 64 + 2600);
}

TEST_CASE("ONNX: tiny attention block exported by torch" * doctest::skip(!OnnxSupported())) {
  const Graph g = LoadGraph("tests/data/onnx/tiny_attention.onnx");
  REQUIRE(g.num_nodes() == 30);
  // Embedding lookup: 2x5 int64 token ids into a 50x16 float table.
  const Node& gather = NodeNamed(g, "/embed/Gather");
  CHECK(Op(g, "/embed/Gather") == "Gather");
  CHECK(gather.flops == 0);
  CHECK(gather.bytes_read == 80 + 640);  // the indices and the gathered rows, not the table
  CHECK(gather.persistent_bytes == 50 * 16 * 4);
  CHECK(gather.outputs[0] == TensorInfo{640, {2, 5, 16}, DType::kFloat32});
  CHECK(g.in_degree(*g.FindNode("/embed/Gather")) == 0);  // graph inputs are not nodes

  CHECK(NodeNamed(g, "/norm/LayerNormalization").flops == 7 * 160);
  // Projections: [2,5,16] x [16,16].
  CHECK(NodeNamed(g, "/q/MatMul").flops == 2.0 * 10 * 16 * 16);
  CHECK(NodeNamed(g, "/up/MatMul").flops == 2.0 * 10 * 16 * 32);
  // Scores: [2,5,16] x [2,16,5] -> [2,5,5]; context: [2,5,5] x [2,5,16].
  CHECK(NodeNamed(g, "/MatMul").flops == 2.0 * 2 * 5 * 16 * 5);
  CHECK(NodeNamed(g, "/MatMul_1").flops == 2.0 * 2 * 5 * 5 * 16);
  CHECK(g.in_degree(*g.FindNode("/MatMul")) == 2);
  CHECK(NodeNamed(g, "/Softmax").flops == 5 * 50);
  CHECK(NodeNamed(g, "/Erf").flops == 320);
  CHECK(NodeNamed(g, "/Constant").outputs[0] == TensorInfo{4, {}, DType::kFloat32});
  CHECK(NodeNamed(g, "/q/Add").scope == "q");
  // Every weight is resident once: 50x16 table, LayerNorm 2x16, four 16x16
  // projections with biases, 16x32 and 32x16 MLP layers with biases.
  CHECK(TotalPersistent(g) == 4 * (800 + 32 + 4 * (256 + 16) + (512 + 32) + (512 + 16)));
}

TEST_CASE("ONNX: hand-written model with unnamed nodes, groups, transA, custom ops" *
          doctest::skip(!OnnxSupported())) {
  const Graph g = LoadGraph("tests/data/onnx/handmade.onnx");
  REQUIRE(g.num_nodes() == 10);
  // An empty name becomes "<op_type>_<index>"; a repeated one gets "_<index>".
  CHECK(Op(g, "Conv_0") == "Conv (grouped)");  // 8 channels in 2 groups
  CHECK(Op(g, "dup") == "GlobalAveragePool");
  CHECK(Op(g, "dup_2") == "Flatten");
  CHECK(Op(g, "Transpose_3") == "Transpose");
  // Conv, 8 -> 4 channels in 2 groups, 3x3, no bias, 6x6 output: 2 * 144 * 4 * 9.
  CHECK(NodeNamed(g, "Conv_0").flops == 10368);
  CHECK(NodeNamed(g, "dup").flops == 144);  // global pool: one add per input element
  // Gemm with transA: A is [4,1] -> M=1, K=4; B [4,3]; C [3]: 2*1*4*3 + 3.
  CHECK(NodeNamed(g, "gemm").flops == 27);
  // "c" is read by gemm and add but resident once, with its first reader.
  CHECK(NodeNamed(g, "gemm").persistent_bytes == 48 + 12);
  CHECK(NodeNamed(g, "add").persistent_bytes == 0);
  CHECK(NodeNamed(g, "add").bytes_read == 24);
  CHECK(NodeNamed(g, "reduce").flops == 3);
  CHECK(NodeNamed(g, "pool").flops == 36 * 4);
  // ConvTranspose: [1,4,3,3] input, weight [4,2,2,2], stride 2 -> [1,2,6,6]:
  // 2 * 36 input elements * 2 * 4 + 72 bias adds.
  CHECK(NodeNamed(g, "deconv").flops == 648);
  CHECK(NodeNamed(g, "deconv").outputs[0].shape == std::vector<int64_t>{1, 2, 6, 6});
  // Shape inference knows nothing of com.example::Mystery: no shape, no FLOPs.
  const Node& mystery = NodeNamed(g, "mystery");
  CHECK(Op(g, "mystery") == "com.example::Mystery");
  CHECK(mystery.flops == 0);
  CHECK(mystery.outputs[0] == TensorInfo{});
  CHECK(mystery.bytes_read == 12);
}

TEST_CASE("ONNX: a Conv's group gives its kind in its op type" * doctest::skip(!OnnxSupported())) {
  // The weight is an initializer, not a node the cost models could read its
  // shape from, so the importer names the kind as a calibrated type does.
  const Graph g = LoadGraph("tests/data/onnx/depthwise.onnx");
  CHECK(Op(g, "dw") == "Conv (depthwise)");
  CHECK(Op(g, "grouped") == "Conv (grouped)");
  CHECK(Op(g, "dense") == "Conv");
  for (const char* name : {"dw", "grouped", "dense"}) CHECK(ClassifyOp(Op(g, name)) == OpClass::kConv);
  CHECK(TypeConvKind(Op(g, "dw")) == ConvKind::kDepthwise);
  CHECK(TypeConvKind(Op(g, "grouped")) == ConvKind::kGrouped);
  // FLOPs count C/g input channels: 2 x 2 x 8 x 36 x 1 x 9, 2 x 2 x 8 x 36 x 4 x 9, 2 x 2 x 8 x 36 x 8.
  CHECK(NodeNamed(g, "dw").flops == 10368);
  CHECK(NodeNamed(g, "grouped").flops == 41472);
  CHECK(NodeNamed(g, "dense").flops == 9216);
  CHECK_THROWS_WITH_AS(LoadGraph("tests/data/onnx/bad_group.onnx"),
                       doctest::Contains("bad_group.onnx: [graph.node[0]]: Conv attribute 'group' is 0"),
                       GraphError);
}

TEST_CASE("ONNX: malformed models are GraphErrors naming the file" * doctest::skip(!OnnxSupported())) {
  try {
    LoadGraph("tests/data/onnx/dangling.onnx");
    FAIL("no error");
  } catch (const GraphError& e) {
    CHECK(e.where().file == "tests/data/onnx/dangling.onnx");
    CHECK(e.where().path == "graph.node[1].input[0]");
    CHECK(std::string(e.what()).find("'ghost'") != std::string::npos);
  }

  const std::string bytes = ReadFile("tests/data/onnx/tiny_cnn.onnx");
  try {
    ReadOnnx(bytes.substr(0, bytes.size() / 2), "half.onnx");
    FAIL("no error");
  } catch (const GraphError& e) {
    CHECK(e.where().file == "half.onnx");
    // ir_version (2 bytes), producer_name (9) and producer_version (8) are
    // whole; the graph field that starts at byte 19 runs past the cut.
    CHECK(e.where().byte_offset == 19);
    CHECK(
        std::string(e.what()).find("do not parse as an onnx.ModelProto (the top-level field at this byte is "
                                   "broken)") != std::string::npos);
  }
  CHECK_THROWS_AS(ReadOnnx("", "empty.onnx"), GraphError);
  CHECK_THROWS_AS(ReadOnnx("{\"format\": \"gosim.graph\"}", "json.onnx"), GraphError);
  CHECK_THROWS_AS(LoadGraph("tests/data/onnx/no_such_model.onnx"), IoError);
}

namespace {

// The message of the GraphError that loading `path` with `shapes` throws.
std::string LoadError(const std::string& path, const OnnxShapes& shapes = {}) {
  try {
    LoadGraph(path, shapes);
  } catch (const GraphError& e) {
    CHECK(e.where().file == path);
    return e.what();
  }
  FAIL("no error loading " << path);
  return "";
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double TotalFlops(const Graph& g) {
  double total = 0;
  for (const Node& n : g.nodes()) total += n.flops;
  return total;
}

}  // namespace

TEST_CASE("ONNX: a symbolic batch dimension is bound by name or by input shape" *
          doctest::skip(!OnnxSupported())) {
  const std::string path = "tests/data/onnx/symbolic_batch.onnx";
  // Per sample: conv 2*4*64*27 + 4*64 = 14,080; relu 256; gemm 2*256*10 + 10 = 5,130.
  for (const int64_t batch : {1, 2, 32}) {
    CAPTURE(batch);
    const Graph g = LoadGraph(path, OnnxShapes{{{"batch", batch}}, {}});
    REQUIRE(g.num_nodes() == 4);
    CHECK(NodeNamed(g, "/conv/Conv").flops == 14080.0 * static_cast<double>(batch));
    CHECK(NodeNamed(g, "/conv/Conv").outputs[0] ==
          TensorInfo{batch * 4 * 64 * 4, {batch, 4, 8, 8}, DType::kFloat32});
    CHECK(NodeNamed(g, "/conv/Conv").bytes_read == batch * 3 * 64 * 4 + 432 + 16);
    CHECK(NodeNamed(g, "/relu/Relu").flops == 256.0 * static_cast<double>(batch));
    CHECK(NodeNamed(g, "/Flatten").outputs[0].shape == std::vector<int64_t>{batch, 256});
    CHECK(NodeNamed(g, "/fc/Gemm").flops == 5130.0 * static_cast<double>(batch));
    CHECK(NodeNamed(g, "/fc/Gemm").bytes_written == batch * 10 * 4);
    CHECK(TotalFlops(g) == 19466.0 * static_cast<double>(batch));
  }
  // The whole input shape binds "batch" everywhere it occurs, the same graph.
  const Graph by_shape = LoadGraph(path, OnnxShapes{{}, {{"image", {32, 3, 8, 8}}}});
  CHECK(TotalFlops(by_shape) == 19466.0 * 32);
  CHECK(NodeNamed(by_shape, "/relu/Relu").outputs[0].shape == std::vector<int64_t>{32, 4, 8, 8});
  // Both, consistent, are accepted.
  CHECK(TotalFlops(LoadGraph(path, OnnxShapes{{{"batch", 4}}, {{"image", {4, 3, 8, 8}}}})) == 19466.0 * 4);
}

TEST_CASE("ONNX: an unbound or wrongly bound dimension is a one-line GraphError, never a silent zero" *
          doctest::skip(!OnnxSupported())) {
  const std::string path = "tests/data/onnx/symbolic_batch.onnx";
  std::string message = LoadError(path);
  CHECK(Has(message, "symbolic dimension 'batch'"));
  CHECK(Has(message, "--dim batch=N"));
  CHECK(Has(message, "dims: {batch: N}"));
  CHECK(message.find('\n') == std::string::npos);

  message = LoadError(path, OnnxShapes{{{"bacth", 8}}, {}});
  CHECK(Has(message, "no symbolic input dimension named 'bacth'"));
  CHECK(Has(message, "batch"));
  CHECK(Has(LoadError(path, OnnxShapes{{{"batch", 0}}, {}}), "sizes must be positive"));
  CHECK(Has(LoadError(path, OnnxShapes{{}, {{"img", {1, 3, 8, 8}}}}), "its inputs are: image"));
  CHECK(Has(LoadError(path, OnnxShapes{{}, {{"image", {1, 3, 8}}}}), "has 4 dimensions"));
  CHECK(Has(LoadError(path, OnnxShapes{{}, {{"image", {1, 3, 9, 8}}}}), "has size 8 in dimension 2"));
  CHECK(Has(LoadError(path, OnnxShapes{{{"batch", 2}}, {{"image", {4, 3, 8, 8}}}}), "given as both 2 and 4"));
  // A fixed-shape model has nothing to bind.
  CHECK(Has(LoadError("tests/data/onnx/tiny_cnn.onnx", OnnxShapes{{{"batch", 2}}, {}}),
            "its inputs have no symbolic dimensions"));

  // A dimension with neither size nor name: only a whole input shape gives it.
  message = LoadError("tests/data/onnx/unnamed_dim.onnx");
  CHECK(Has(message, "dimension 0 of input 'x' has no size and no name"));
  CHECK(Has(message, "--input-shape x="));
  const Graph g = LoadGraph("tests/data/onnx/unnamed_dim.onnx", OnnxShapes{{}, {{"x", {5, 16}}}});
  CHECK(NodeNamed(g, "relu").flops == 80);
  CHECK(NodeNamed(g, "relu").bytes_written == 320);

  // Sizes are for ONNX models only: not silently ignored elsewhere.
  try {
    LoadGraph("tests/data/costgraph/regal_style.pbtxt", OnnxShapes{{{"batch", 2}}, {}});
    FAIL("no error");
  } catch (const GraphError& e) {
    CHECK(Has(e.what(), "apply only to ONNX models"));
  }
}

TEST_CASE("ONNX: a suite entry binds dimensions with dims and input_shapes" *
          doctest::skip(!OnnxSupported())) {
  const YAML::Node list = LoadYamlString(R"(
- {file: tests/data/onnx/symbolic_batch.onnx, name: b8, dims: {batch: 8}}
- {file: tests/data/onnx/symbolic_batch.onnx, name: b3, input_shapes: {image: [3, 3, 8, 8]}}
)",
                                         "suite.yaml");
  const std::vector<SuiteEntry> entries = ParseSuiteEntries(list, "suite.yaml", "graphs", ".");
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].Spec() == "file:tests/data/onnx/symbolic_batch.onnx#dims=batch=8");
  CHECK(entries[1].Spec() == "file:tests/data/onnx/symbolic_batch.onnx#input_shapes=image=3x3x8x8");
  CHECK(TotalFlops(MaterializeGraph(entries[0])) == 19466.0 * 8);
  CHECK(TotalFlops(MaterializeGraph(entries[1])) == 19466.0 * 3);

  for (const char* bad : {"[{file: tests/data/onnx/symbolic_batch.onnx, dims: {batch: 0}}]",
                          "[{file: tests/data/onnx/symbolic_batch.onnx, dims: [8]}]",
                          "[{file: tests/data/onnx/symbolic_batch.onnx, input_shapes: {image: 8}}]",
                          "[{file: tests/data/onnx/symbolic_batch.onnx, dims: {batch: x}}]"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ParseSuiteEntries(LoadYamlString(bad, "s.yaml"), "s.yaml", "graphs", "."), ConfigError);
  }
}

}  // namespace gosim::graphs
