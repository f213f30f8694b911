#include "graphs/stats.h"

#include <doctest/doctest.h>

#include "graphs/graph_builder.h"

namespace gosim::graphs {
namespace {

NodeSpec Op(const std::string& name, const std::string& op, int64_t out_bytes,
            Phase phase = Phase::kForward) {
  NodeSpec s;
  s.name = name;
  s.op = op;
  s.flops = 10;
  s.phase = phase;
  s.outputs.push_back(TensorInfo{out_bytes, {}, DType::kFloat32});
  return s;
}

}  // namespace

TEST_CASE("ComputeStats: exact depth, width and sums on a hand-built graph") {
  //   a ---> b ---> d ---> f (backward)
  //   |      |      ^
  //   |      +--> e-+
  //   +--> c -------^   (c -> d)
  //   w (Variable, persistent 400) -> b
  //   a ..> e control edge
  GraphBuilder builder("hand");
  const int a = builder.AddNode(Op("a", "Input", 100));
  NodeSpec w = Op("w", "Variable", 400);
  w.persistent_bytes = 400;
  const int wv = builder.AddNode(w);
  const int b = builder.AddNode(Op("b", "MatMul", 50));
  const int c = builder.AddNode(Op("c", "Relu", 30));
  const int e = builder.AddNode(Op("e", "Relu", 20));
  const int d = builder.AddNode(Op("d", "Add", 10));
  NodeSpec f = Op("f", "ReluGrad", 7, Phase::kBackward);
  const int fv = builder.AddNode(f);
  NodeSpec u = Op("u", "ApplyAdam", 0, Phase::kUpdate);
  u.outputs.clear();
  u.persistent_bytes = 800;
  const int uv = builder.AddNode(u);
  builder.AddEdge(a, b, 0);
  builder.AddEdge(wv, b, 0);
  builder.AddEdge(a, c, 0);
  builder.AddEdge(b, e, 0);
  builder.AddEdge(b, d, 0);
  builder.AddEdge(e, d, 0);
  builder.AddEdge(c, d, 0);
  builder.AddControlEdge(a, e);
  builder.AddEdge(d, fv, 0);
  builder.AddEdge(fv, uv, 0);
  const Graph g = builder.Build();

  const GraphStats s = ComputeStats(g);
  CHECK(s.name == "hand");
  CHECK(s.nodes == 8);
  CHECK(s.edges == 10);
  CHECK(s.control_edges == 1);
  CHECK(s.flops == 80.0);
  // The Variable's 400 bytes are weights, the ApplyAdam's 800 optimizer state.
  CHECK(s.weight_bytes == 400);
  CHECK(s.optimizer_bytes == 800);
  CHECK(s.persistent_bytes == 1200);
  // Forward outputs without the Variable's: a, b, c, e, d.
  CHECK(s.activation_bytes == 100 + 50 + 30 + 20 + 10);
  // Levels: a, w = 1; b, c = 2; e = 3; d = 4; f = 5; u = 6.
  CHECK(s.depth == 6);
  CHECK(s.width == 2);
  CHECK(s.forward_nodes == 6);
  CHECK(s.backward_nodes == 1);
  CHECK(s.update_nodes == 1);
  CHECK(s.op_histogram.at("Relu") == 2);
  CHECK(s.op_histogram.at("ApplyAdam") == 1);
  CHECK(s.op_histogram.size() == 7);
}

TEST_CASE("ComputeStats: an empty graph and a wide graph") {
  const GraphStats empty = ComputeStats(GraphBuilder("empty").Build());
  CHECK(empty.nodes == 0);
  CHECK(empty.depth == 0);
  CHECK(empty.width == 0);

  GraphBuilder builder("wide");
  const int root = builder.AddNode(Op("root", "Input", 4));
  for (int i = 0; i < 5; ++i)
    builder.AddEdge(root, builder.AddNode(Op("leaf" + std::to_string(i), "Relu", 4)), 0);
  const GraphStats wide = ComputeStats(builder.Build());
  CHECK(wide.depth == 2);
  CHECK(wide.width == 5);
}

}  // namespace gosim::graphs
