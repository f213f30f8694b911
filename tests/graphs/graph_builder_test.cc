#include "graphs/graph_builder.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace gosim::graphs {
namespace {

NodeSpec Op(const std::string& name, const std::string& op = "MatMul", int64_t out_bytes = 100) {
  NodeSpec s;
  s.name = name;
  s.op = op;
  s.flops = 1000;
  s.outputs.push_back(TensorInfo{out_bytes, {5, 5}, DType::kFloat32});
  return s;
}

}  // namespace

TEST_CASE("Build keeps a topological insertion order and builds CSR") {
  GraphBuilder b("g");
  const int a = b.AddNode(Op("a"));
  const int c = b.AddNode(Op("c", "Add"));
  const int d = b.AddNode(Op("d", "Relu", 40));
  b.AddEdge(a, c, 0);
  b.AddEdge(a, d, 0);
  b.AddEdge(c, d, 0);
  b.AddControlEdge(a, d);
  Graph g = b.Build();
  REQUIRE(g.num_nodes() == 3);
  CHECK(g.num_edges() == 4);
  CHECK(g.node(0).name == "a");
  CHECK(g.node(2).name == "d");
  CHECK(g.out_degree(0) == 3);
  CHECK(g.in_degree(2) == 3);
  CHECK(g.in_degree(0) == 0);
  CHECK(g.op_type_name_of(1) == "Add");
  CHECK(g.num_tensors() == 3);
  CHECK(g.tensor(2, 0) == 2);
  CHECK(g.tensor_producer(1) == 1);
  int control = 0;
  for (EdgeId e : g.in_edges(2)) {
    CHECK(g.edge(e).dst == 2);
    if (g.edge(e).is_control()) {
      ++control;
      CHECK(g.edge(e).bytes == 0);
    } else {
      CHECK(g.edge(e).bytes == 100);
    }
  }
  CHECK(control == 1);
  CHECK(g.FindNode("c") == std::optional<NodeId>(1));
  CHECK_FALSE(g.FindNode("zz").has_value());
}

TEST_CASE("Build sorts nodes given out of order") {
  GraphBuilder b("g");
  b.AddNode(Op("z"));
  b.AddNode(Op("y"));
  b.AddNode(Op("x"));
  b.AddEdge(std::string("x"), std::string("y"), 0);
  b.AddEdge(std::string("y"), std::string("z"), 0);
  Graph g = b.Build();
  for (const Edge& e : g.edges()) CHECK(e.src < e.dst);
  CHECK(g.node(0).name == "x");
  CHECK(g.node(2).name == "z");
}

TEST_CASE("Every edge goes forward after sorting a random DAG") {
  GraphBuilder b("rand");
  const int n = 200;
  for (int i = 0; i < n; ++i) b.AddNode(Op("n" + std::to_string((i * 37) % n)));
  // edges from higher names to lower names: reverse of insertion ranks
  for (int i = 1; i < n; ++i) {
    b.AddEdge("n" + std::to_string(i), "n" + std::to_string(i / 2), 0);
    b.AddEdge("n" + std::to_string(i), "n" + std::to_string(i - 1), 0);
  }
  Graph g = b.Build();
  for (const Edge& e : g.edges()) CHECK(e.src < e.dst);
  CHECK(g.num_edges() == 2 * (n - 1) - 2);  // i = 1 and i = 2 each add one edge twice
}

TEST_CASE("A cycle names the nodes on it") {
  GraphBuilder b("cyc", "cyc.json");
  b.AddNode(Op("a"));
  b.AddNode(Op("b"));
  b.AddNode(Op("c"));
  b.AddEdge(std::string("a"), std::string("b"), 0);
  b.AddEdge(std::string("b"), std::string("c"), 0);
  b.AddEdge(std::string("c"), std::string("a"), 0);
  try {
    b.Build();
    FAIL("expected GraphError");
  } catch (const GraphError& e) {
    const std::string what = e.what();
    CHECK(what.find("cycle") != std::string::npos);
    CHECK(what.find("cyc.json") != std::string::npos);
    CHECK(what.find("a -> b -> c -> a") != std::string::npos);
  }
}

TEST_CASE("Invalid graphs are GraphErrors") {
  SUBCASE("dangling reference") {
    GraphBuilder b("g", "f.json");
    b.AddNode(Op("a"));
    b.AddEdge(std::string("ghost"), std::string("a"), 0, Location{"f.json", 7, 3});
    try {
      b.Build();
      FAIL("expected GraphError");
    } catch (const GraphError& e) {
      CHECK(e.where().line == 7);
      CHECK(std::string(e.what()).find("ghost") != std::string::npos);
    }
  }
  SUBCASE("duplicate name") {
    GraphBuilder b("g");
    b.AddNode(Op("a"));
    CHECK_THROWS_AS(b.AddNode(Op("a")), GraphError);
  }
  SUBCASE("negative and NaN costs") {
    GraphBuilder b("g");
    NodeSpec s = Op("a");
    s.flops = std::numeric_limits<double>::quiet_NaN();
    b.AddNode(s);
    CHECK_THROWS_AS(b.Build(), GraphError);
    GraphBuilder b2("g");
    NodeSpec t = Op("a");
    t.outputs[0].bytes = -4;
    b2.AddNode(t);
    CHECK_THROWS_AS(b2.Build(), GraphError);
  }
  SUBCASE("missing output and self loop") {
    GraphBuilder b("g");
    b.AddNode(Op("a"));
    b.AddNode(Op("b"));
    b.AddEdge(0, 1, 3);
    CHECK_THROWS_AS(b.Build(), GraphError);
    GraphBuilder b2("g");
    b2.AddNode(Op("a"));
    b2.AddEdge(0, 0, 0);
    CHECK_THROWS_AS(b2.Build(), GraphError);
  }
}

TEST_CASE("Op types and colocation groups are interned") {
  GraphBuilder b("g");
  NodeSpec a = Op("a", "Conv");
  a.colocation = "w1";
  NodeSpec c = Op("c", "Conv");
  c.colocation = "w1";
  b.AddNode(a);
  b.AddNode(c);
  b.AddNode(Op("d", "Relu"));
  Graph g = b.Build();
  CHECK(g.op_types().size() == 2);
  CHECK(g.node(0).op == g.node(1).op);
  CHECK(g.colocation_groups().size() == 1);
  CHECK(g.node(0).colocation == 0);
  CHECK(g.node(2).colocation == -1);
  CHECK(g.FindOpType("Relu") == 1);
}

}  // namespace gosim::graphs
