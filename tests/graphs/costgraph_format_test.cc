#include "graphs/costgraph_format.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/io.h"
#include "graphs/io.h"

namespace gosim::graphs {
namespace {

const Node& NodeNamed(const Graph& g, const std::string& name) {
  const auto id = g.FindNode(name);
  REQUIRE_MESSAGE(id.has_value(), "no node " << name);
  return g.node(*id);
}

// (producer name, output index) of every edge into `name`, in edge order.
std::vector<std::pair<std::string, int>> Inputs(const Graph& g, const std::string& name) {
  std::vector<std::pair<std::string, int>> out;
  for (EdgeId e : g.in_edges(*g.FindNode(name)))
    out.emplace_back(g.node(g.edge(e).src).name, g.edge(e).output_index);
  std::sort(out.begin(), out.end());
  return out;
}

GraphError ErrorOf(const std::string& text) {
  try {
    ReadCostGraphText(text, "g.pbtxt");
  } catch (const GraphError& e) {
    return e;
  }
  FAIL("no error for: " << text);
  return GraphError("");
}

}  // namespace

TEST_CASE("CostGraphDef: a REGAL-style file, node by node") {
  const Graph g = LoadGraph("tests/data/costgraph/regal_style.pbtxt");
  CHECK(g.name() == "regal_style");
  CHECK(g.source() == "tests/data/costgraph/regal_style.pbtxt");
  REQUIRE(g.num_nodes() == 6);
  CHECK(g.num_edges() == 8);
  // The file is in topological order, so ids follow it.
  const std::vector<std::string> names{"_SOURCE", "node_0", "node_1", "node_2", "node_3", "_SINK"};
  for (NodeId i = 0; i < 6; ++i) CHECK(g.node(i).name == names[static_cast<size_t>(i)]);

  const Node& source = NodeNamed(g, "_SOURCE");
  CHECK(g.op_type_name(source.op) == "NoOp");
  CHECK(source.outputs.empty());
  CHECK(source.measured == std::vector<MeasuredTime>{{"any", 0.0}});

  const Node& n0 = NodeNamed(g, "node_0");
  CHECK(g.op_type_name(n0.op) == "CostGraphNode");
  CHECK(Inputs(g, "node_0") == std::vector<std::pair<std::string, int>>{{"_SOURCE", Edge::kControl}});

  const Node& n1 = NodeNamed(g, "node_1");
  REQUIRE(n1.outputs.size() == 1);
  CHECK(n1.outputs[0] == TensorInfo{70, {}, DType::kUnknown});
  CHECK(n1.bytes_written == 70);
  CHECK(n1.bytes_read == 0);
  CHECK(n1.flops == 0);
  CHECK(n1.measured == std::vector<MeasuredTime>{{"any", 58e-6}});

  const Node& n2 = NodeNamed(g, "node_2");
  CHECK(n2.outputs.size() == 2);
  CHECK(n2.bytes_written == 64);
  CHECK(n2.measured[0].seconds == 47e-6);

  const Node& n3 = NodeNamed(g, "node_3");
  CHECK(n3.bytes_read == 70 + 12);
  CHECK(n3.bytes_written == 55);
  CHECK(n3.persistent_bytes == 1024);
  CHECK(n3.measured[0].seconds == 58e-6);
  CHECK(Inputs(g, "node_3") ==
        std::vector<std::pair<std::string, int>>{{"node_0", Edge::kControl}, {"node_1", 0}, {"node_2", 1}});
  for (EdgeId e : g.in_edges(*g.FindNode("node_3"))) {
    const Edge& edge = g.edge(e);
    CHECK(edge.bytes == (edge.is_control() ? 0 : edge.output_index == 1 ? 12 : 70));
  }

  const Node& sink = NodeNamed(g, "_SINK");
  CHECK(g.op_type_name(sink.op) == "NoOp");
  CHECK(sink.bytes_read == 55);
  CHECK(Inputs(g, "_SINK") ==
        std::vector<std::pair<std::string, int>>{{"node_2", Edge::kControl}, {"node_3", 0}});
}

TEST_CASE("CostGraphDef: RunMetadata wrapper, shapes, dtypes, order and names") {
  const Graph g = LoadGraph("tests/data/costgraph/run_metadata.pbtxt");
  REQUIRE(g.num_nodes() == 5);
  // Names: the second "a" and the empty name get the node id appended.
  CHECK(g.FindNode("a_9").has_value());
  CHECK(g.FindNode("node_11").has_value());
  // Producers come first whatever the file order.
  CHECK(*g.FindNode("a") < *g.FindNode("matmul"));
  CHECK(*g.FindNode("b") < *g.FindNode("matmul"));
  CHECK(*g.FindNode("matmul") < *g.FindNode("a_9"));

  const Node& matmul = NodeNamed(g, "matmul");
  CHECK(matmul.outputs[0] == TensorInfo{1024, {16, 16}, DType::kFloat32});
  CHECK(matmul.bytes_read == 512 + 256);
  CHECK(matmul.measured[0].seconds == 12e-6);
  CHECK(NodeNamed(g, "a").outputs[0] == TensorInfo{512, {16, 8}, DType::kFloat32});  // DT_FLOAT_REF
  CHECK(NodeNamed(g, "a").persistent_bytes == 512);
  CHECK(NodeNamed(g, "b").outputs[0] ==
        TensorInfo{256, {}, DType::kFloat16});  // a -1 dimension: shape unknown
  CHECK(NodeNamed(g, "a_9").outputs[0] == TensorInfo{4, {}, DType::kInt32});
  CHECK(Inputs(g, "node_11") == std::vector<std::pair<std::string, int>>{{"a_9", Edge::kControl}});
}

TEST_CASE("CostGraphDef: gzip'd files and other extensions load") {
  const std::string text = ReadFile("tests/data/costgraph/regal_style.pbtxt");
  const auto dir = std::filesystem::temp_directory_path();
  for (const std::string name :
       {"gosim_cg_test.pbtxt.gz", "gosim_cg_test.costgraph", "gosim_cg_test.txt.gz"}) {
    const std::string path = (dir / name).string();
    WriteFileAtomic(path, text);
    const Graph g = LoadGraph(path);
    CHECK(g.num_nodes() == 6);
    CHECK(g.name() == "gosim_cg_test");
    std::filesystem::remove(path);
  }
}

TEST_CASE("CostGraphDef: syntax errors give line and column and suggest field names") {
  const GraphError truncated = ErrorOf("node {\n  name: \"a\"\n  id: 1\n");
  CHECK(truncated.where().file == "g.pbtxt");
  CHECK(truncated.where().line == 4);
  CHECK(std::string(truncated.what()).find("invalid CostGraphDef text") != std::string::npos);

  const GraphError typo = ErrorOf("node {\n  name: \"a\"\n  compute_cots: 5\n}\n");
  CHECK(typo.where().line == 3);
  CHECK(typo.where().column == 3);
  CHECK(std::string(typo.what()).find("Did you mean 'compute_cost'?") != std::string::npos);

  const GraphError type = ErrorOf("node { name: \"a\" id: \"one\" }");
  CHECK(type.where().line == 1);
}

TEST_CASE("CostGraphDef: inconsistent graphs name the node and line") {
  const GraphError dangling = ErrorOf(
      "node { name: \"a\" id: 1 output_info { size: 4 } }\n"
      "node {\n  name: \"b\"\n  id: 2\n  input_info { preceding_node: 42 }\n}\n");
  CHECK(dangling.where().line == 5);
  CHECK(dangling.where().path == "node[1].input_info[0]");
  CHECK(std::string(dangling.what()).find("node id 42") != std::string::npos);

  const GraphError port = ErrorOf(
      "node { name: \"a\" id: 1 output_info { size: 4 } }\n"
      "node { name: \"b\" id: 2 input_info { preceding_node: 1 preceding_port: 1 } }\n");
  CHECK(port.where().line == 2);
  CHECK(std::string(port.what()).find("reads output 1 of 'a'") != std::string::npos);

  const GraphError duplicate = ErrorOf("node { name: \"a\" id: 1 }\nnode { name: \"b\" id: 1 }\n");
  CHECK(duplicate.where().line == 2);
  CHECK(std::string(duplicate.what()).find("already has") != std::string::npos);

  const GraphError negative =
      ErrorOf("node { name: \"a\" id: 1 }\nnode { name: \"b\" id: 2 output_info { size: -8 } }\n");
  CHECK(negative.where().path == "node[1].output_info[0]");
  CHECK(negative.where().line == 2);

  const GraphError cost = ErrorOf("node { name: \"a\" id: 1 compute_cost: -3 }");
  CHECK(cost.where().path == "node[0].compute_cost");

  const GraphError cycle =
      ErrorOf("node { name: \"a\" id: 1 control_input: 2 }\nnode { name: \"b\" id: 2 control_input: 1 }\n");
  CHECK(std::string(cycle.what()).find("cycle") != std::string::npos);
  CHECK(cycle.where().line >= 1);

  const GraphError overflow = ErrorOf(
      "node { name: \"a\" id: 1 output_info { size: 9000000000000000000 } output_info { size: "
      "9000000000000000000 } }");
  CHECK(std::string(overflow.what()).find("2^63") != std::string::npos);
}

TEST_CASE("CostGraphDef: an empty file is an empty graph") {
  const Graph g = ReadCostGraphText("# nothing here\n", "empty.pbtxt");
  CHECK(g.num_nodes() == 0);
  CHECK(g.name() == "costgraph");
}

}  // namespace gosim::graphs
