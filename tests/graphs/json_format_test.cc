#include "graphs/json_format.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "graphs/graph_builder.h"
#include "graphs/io.h"
#include "tests/graphs/rich_graph.h"

namespace gosim::graphs {
namespace {

using testing::CheckSameGraph;
using testing::RichGraph;

// The GraphError thrown by reading `text`.
GraphError ErrorOf(const std::string& text) {
  try {
    ReadGraphJson(text, "g.json");
  } catch (const GraphError& e) {
    return e;
  }
  FAIL("no error for: " << text);
  return GraphError("");
}

std::string OneNode(const std::string& node_body) {
  return "{\"format\": \"gosim.graph\", \"version\": 1, \"name\": \"g\",\n \"nodes\": [\n  {" + node_body +
         "}\n]}";
}

}  // namespace

TEST_CASE("JSON round trip is exact") {
  const Graph g = RichGraph();
  const std::string text = WriteGraphJson(g);
  const Graph back = ReadGraphJson(text, "rich.json");
  CheckSameGraph(g, back);
  CHECK(back.source() == "rich.json");
  CHECK(back.node(4).flops == 1.7976931348623157e308);
  CHECK(back.node(2).measured[1].seconds == 0.1 + 0.2);
  CHECK(back.node(2).measured[2].seconds == 5e-324);
  CHECK(back.node(4).persistent_bytes == 9007199254740993);
  CHECK(back.node(3).phase == Phase::kBackward);
  CHECK(back.node(4).phase == Phase::kUpdate);
  CHECK(back.colocation_groups() == std::vector<std::string>{"conv1_w"});
  CHECK(WriteGraphJson(back) == text);

  // Edges: x->conv, init:7->conv (data and control), conv->grad (outputs 0, 2), ...
  int control = 0;
  for (const Edge& e : back.edges()) control += e.is_control() ? 1 : 0;
  CHECK(control == 2);
  CHECK(back.in_degree(2) == 3);
  CHECK(text.find("\"init:7:0\"") != std::string::npos);  // the ":0" keeps "init:7" one name
  CHECK(text.find("\"^init:7\"") != std::string::npos);
  CHECK(text.find("\"conv1:2\"") != std::string::npos);
}

TEST_CASE("dtype names: tfloat32 (alias tf32) is float32 computed on TF32 tensor cores, 4 bytes") {
  CHECK(ParseDType("tfloat32") == DType::kTFloat32);
  CHECK(ParseDType("TF32") == DType::kTFloat32);
  CHECK(DTypeName(DType::kTFloat32) == "tfloat32");
  CHECK(DTypeSize(DType::kTFloat32) == 4);
  CHECK(kLastDType == DType::kTFloat32);
  // Every dtype's name parses back to it.
  for (int k = 0; k <= static_cast<int>(kLastDType); ++k) {
    const auto dtype = static_cast<DType>(k);
    CHECK(ParseDType(DTypeName(dtype)) == dtype);
  }
}

TEST_CASE("JSON round trip through a gzip'd file") {
  const Graph g = RichGraph();
  const std::string path =
      (std::filesystem::temp_directory_path() / "gosim_json_format_test.json.gz").string();
  SaveGraph(g, path);
  const Graph back = LoadGraph(path);
  CheckSameGraph(g, back);
  CHECK(back.source() == path);
  std::filesystem::remove(path);
}

TEST_CASE("JSON reader takes the documented example and any node order") {
  const std::string text = R"({
  "format": "gosim.graph",
  "version": 1,
  "name": "resnet50_train_b32",
  "metadata": {"source": "torchvision resnet50", "batch": 32, "nested": {"nodes": [{"a": 1}]}},
  "nodes": [
    {
      "name": "conv1",
      "op": "aten::convolution",
      "flops": 236027904.0,
      "bytes_read": 19267584,
      "bytes_written": 102760448,
      "outputs": [{"bytes": 102760448, "shape": [32, 64, 112, 112], "dtype": "float32"}],
      "persistent_bytes": 37632,
      "colocation": "conv1_w",
      "scope": "conv1",
      "phase": "forward",
      "measured": {"V100": 1.2e-4},
      "inputs": ["x:0", "^init"]
    },
    {"name": "x", "op": "Placeholder", "outputs": [{"bytes": 19267584, "dtype": "f32"}]},
    {"name": "init", "op": "NoOp"}
  ]
})";
  const Graph g = ReadGraphJson(text, "example.json");
  REQUIRE(g.num_nodes() == 3);
  const NodeId conv = *g.FindNode("conv1");
  CHECK(conv == 2);  // renumbered after its producers
  const Node& n = g.node(conv);
  CHECK(g.op_type_name(n.op) == "aten::convolution");
  CHECK(n.flops == 236027904.0);
  CHECK(n.bytes_read == 19267584);
  CHECK(n.bytes_written == 102760448);
  CHECK(n.outputs[0].shape == std::vector<int64_t>{32, 64, 112, 112});
  CHECK(n.outputs[0].dtype == DType::kFloat32);
  CHECK(n.persistent_bytes == 37632);
  CHECK(g.colocation_groups()[n.colocation] == "conv1_w");
  CHECK(n.scope == "conv1");
  REQUIRE(n.measured.size() == 1);
  CHECK(n.measured[0].device_kind == "V100");
  CHECK(n.measured[0].seconds == 1.2e-4);
  CHECK(g.in_degree(conv) == 2);
  CHECK(g.node(*g.FindNode("x")).outputs[0].dtype == DType::kFloat32);
  CHECK(g.name() == "resnet50_train_b32");
}

TEST_CASE("JSON syntax errors give line and column") {
  const GraphError e = ErrorOf("{\n  \"format\": \"gosim.graph\",\n  \"version\": 1,,\n}");
  CHECK(e.where().file == "g.json");
  CHECK(e.where().line == 3);
  CHECK(e.where().column == 16);  // the second comma
  CHECK(std::string(e.what()).find("g.json:3:16: invalid JSON") == 0);

  const GraphError truncated = ErrorOf("{\"format\": \"gosim.graph\",\n \"nodes\": [{\"name\": \"a\"");
  CHECK(truncated.where().line == 2);
  CHECK(std::string(truncated.what()).find("invalid JSON") != std::string::npos);

  const GraphError empty = ErrorOf("");
  CHECK(empty.where().line == 1);
}

TEST_CASE("JSON: a key given twice in one object is an error at the second") {
  // Last value wins in nlohmann (and Python): a negative FLOP count would
  // pass unseen behind a valid one.
  const GraphError e = ErrorOf(OneNode("\"name\": \"a\", \"op\": \"MatMul\", \"flops\": -5, \"flops\": 1e9"));
  CHECK(std::string(e.what()) ==
        "g.json:3:46: key \"flops\" appears twice in one object (remove one of the two: a JSON reader would "
        "silently keep only one value)");
  CHECK(ErrorOf("{\"format\": \"gosim.graph\", \"format\": \"gosim.graph\"}").where().column == 27);
  // The same key in different objects is fine.
  CHECK(ReadGraphJson(OneNode("\"name\": \"a\", \"op\": \"MatMul\", \"measured\": {\"V100\": 1e-3}, "
                              "\"outputs\": [{\"bytes\": 4}, {\"bytes\": 8}]"),
                      "g.json")
            .num_nodes() == 1);
}

TEST_CASE("JSON unknown keys are errors with a did-you-mean and the node's line") {
  const GraphError e = ErrorOf(OneNode("\"name\": \"a\", \"op\": \"Add\", \"flop\": 3"));
  CHECK(e.where().path == "nodes[0].flop");
  CHECK(e.where().line == 3);
  CHECK(std::string(e.what()).find("Did you mean 'flops'?") != std::string::npos);

  const GraphError top = ErrorOf(R"({"format": "gosim.graph", "version": 1, "name": "g", "node": []})");
  CHECK(top.where().path == "node");
  CHECK(std::string(top.what()).find("Did you mean 'nodes'?") != std::string::npos);

  const GraphError output =
      ErrorOf(OneNode(R"("name": "a", "op": "Add", "outputs": [{"bytes": 4, "shap": [1]}])"));
  CHECK(output.where().path == "nodes[0].outputs[0].shap");
  CHECK(std::string(output.what()).find("Did you mean 'shape'?") != std::string::npos);
}

TEST_CASE("JSON semantic errors name the value's path and line") {
  const std::string nodes =
      "{\"format\": \"gosim.graph\", \"version\": 1, \"name\": \"g\", \"nodes\": [\n"
      "  {\"name\": \"a\", \"op\": \"Add\", \"outputs\": [{\"bytes\": 4}]},\n"
      "  {\"name\": \"b\", \"op\": \"Add\",\n"
      "   \"outputs\": [{\"bytes\": -4}]}\n"
      "]}";
  const GraphError negative = ErrorOf(nodes);
  CHECK(negative.where().path == "nodes[1].outputs[0].bytes");
  CHECK(negative.where().line == 3);
  CHECK(std::string(negative.what()).find("must be >= 0") != std::string::npos);

  const GraphError type = ErrorOf(OneNode(R"("name": "a", "op": "Add", "flops": "many")"));
  CHECK(type.where().path == "nodes[0].flops");
  CHECK(std::string(type.what()).find("must be a number") != std::string::npos);

  const GraphError alias =
      ErrorOf(OneNode(R"("name": "a", "op": "Add", "outputs": [{"bytes": 4, "alias": 1}])"));
  CHECK(alias.where().path == "nodes[0].outputs[0].alias");
  CHECK(std::string(alias.what()).find("must be true or false") != std::string::npos);

  const GraphError fractional = ErrorOf(OneNode(R"("name": "a", "op": "Add", "bytes_read": 1.5)"));
  CHECK(fractional.where().path == "nodes[0].bytes_read");

  const GraphError dangling = ErrorOf(OneNode(R"("name": "a", "op": "Add", "inputs": ["b", "^c"])"));
  CHECK(dangling.where().path == "nodes[0].inputs[0]");
  CHECK(dangling.where().line == 3);
  CHECK(std::string(dangling.what()).find("dangling reference") != std::string::npos);

  const GraphError missing_output = ErrorOf(
      "{\"format\": \"gosim.graph\", \"version\": 1, \"name\": \"g\", \"nodes\": [\n"
      "  {\"name\": \"a\", \"op\": \"Add\", \"outputs\": [{\"bytes\": 4}]},\n"
      "  {\"name\": \"b\", \"op\": \"Add\", \"inputs\": [\"a:1\"]}]}");
  CHECK(missing_output.where().path == "nodes[1].inputs[0]");
  CHECK(missing_output.where().line == 3);

  const GraphError cycle = ErrorOf(
      "{\"format\": \"gosim.graph\", \"version\": 1, \"name\": \"g\", \"nodes\": [\n"
      "  {\"name\": \"a\", \"op\": \"Add\", \"inputs\": [\"^b\"]},\n"
      "  {\"name\": \"b\", \"op\": \"Add\", \"inputs\": [\"^a\"]}]}");
  CHECK(std::string(cycle.what()).find("cycle") != std::string::npos);
  CHECK(cycle.where().line >= 2);

  const GraphError duplicate = ErrorOf(
      "{\"format\": \"gosim.graph\", \"version\": 1, \"name\": \"g\", \"nodes\": [\n"
      "  {\"name\": \"a\", \"op\": \"Add\"},\n"
      "  {\"name\": \"a\", \"op\": \"Mul\"}]}");
  CHECK(duplicate.where().line == 3);
  CHECK(duplicate.where().path == "nodes[1]");

  const GraphError dtype = ErrorOf(OneNode(R"("name": "a", "op": "Add", "outputs": [{"dtype": "flaot32"}])"));
  CHECK(std::string(dtype.what()).find("Did you mean 'float32'?") != std::string::npos);

  const GraphError phase = ErrorOf(OneNode(R"("name": "a", "op": "Add", "phase": "backwards")"));
  CHECK(std::string(phase.what()).find("Did you mean 'backward'?") != std::string::npos);

  const GraphError no_op = ErrorOf(OneNode(R"("name": "a")"));
  CHECK(std::string(no_op.what()).find("missing required key 'op'") != std::string::npos);

  CHECK(std::string(ErrorOf(R"({"format": "gosim.graph", "version": 2, "name": "g", "nodes": []})").what())
            .find("unsupported version 2") != std::string::npos);
  CHECK(std::string(ErrorOf(R"({"format": "onnx", "version": 1, "name": "g", "nodes": []})").what())
            .find("unknown format") != std::string::npos);
  CHECK(ErrorOf("[1, 2]").where().path.empty());
  const GraphError not_object = ErrorOf(
      "{\"format\": \"gosim.graph\", \"version\": 1, \"name\": \"g\", \"nodes\": [\n"
      "  {\"name\": \"a\", \"op\": \"Add\"},\n  [\"b\"],\n  17]}");
  CHECK(not_object.where().path == "nodes[1]");
  CHECK(not_object.where().line == 3);
}

TEST_CASE("JSON writer rejects what the format cannot represent") {
  GraphBuilder b("g");
  NodeSpec a;
  a.name = "a";
  a.op = "Add";
  a.measured = {MeasuredTime{"V100", 1.0}, MeasuredTime{"V100", 2.0}};
  b.AddNode(a);
  const Graph g = b.Build();
  CHECK_THROWS_AS(WriteGraphJson(g), GraphError);

  GraphBuilder c("g");
  NodeSpec bad;
  bad.name = "bad\xff";
  bad.op = "Add";
  c.AddNode(bad);
  CHECK_THROWS_AS(WriteGraphJson(c.Build()), GraphError);
}

TEST_CASE("Another program's JSON is 'not a gosim graph', saying what it looks like") {
  auto message = [](const std::string& text) { return std::string(ErrorOf(text).what()); };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  // msr-fiddle's problems are read (tests/agents/msr_test.cc); a node
  // missing its fields is that reader's error, not "unknown format".
  const std::string placement =
      message(R"({"maxSizePerFPGA": 8000, "maxFPGAs": 4, "maxCPUs": 1, "nodes": [{"id": 1}], "edges": []})");
  CHECK(has(placement, "missing required key 'supportedOnFpga'"));
  CHECK(has(message(R"({"fpgas": [{"nodes": [1]}], "cpus": [], "maxLoad": -1})"),
            "looks like msr-fiddle's device split"));
  CHECK(has(message(R"({"traceEvents": [], "displayTimeUnit": "ms"})"),
            "looks like a Chrome / PyTorch-profiler"));
  CHECK(has(message(R"([{"ph": "X", "name": "k", "ts": 1}])"), "looks like a Chrome / profiler trace"));
  CHECK(has(message(R"({"format": "gosim.decision", "version": 1, "placement": {}})"),
            "looks like a gosim decision"));
  CHECK(
      has(message(R"({"architectures": ["BertModel"], "model_type": "bert"})"), "Hugging Face model config"));
  CHECK(has(message(R"({"directed": true, "nodes": [], "links": []})"), "node-link graph"));
  // Unrecognized: the top-level keys, made printable, on one line.
  const std::string unknown = message("{\"alpha\": 1, \"be\\nta\\u001b[2J\": 2}");
  CHECK(has(unknown, "no \"format\": \"gosim.graph\" (top-level keys: 'alpha', 'be?ta?[2J')"));
  CHECK(unknown.find('\n') == std::string::npos);
  CHECK(has(message(R"({"format": "onnx\n", "nodes": []})"), "unknown format 'onnx?'"));
}

}  // namespace gosim::graphs
