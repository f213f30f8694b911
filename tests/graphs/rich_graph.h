// A graph that uses every attribute the graph file formats store, and a
// field-by-field comparison of two graphs (round-trip tests of
// json_format_test.cc and binary_format_test.cc).
#ifndef GOSIM_TESTS_GRAPHS_RICH_GRAPH_H_
#define GOSIM_TESTS_GRAPHS_RICH_GRAPH_H_

#include <doctest/doctest.h>

#include "graphs/graph.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs::testing {

// A graph that uses every attribute the format stores.
inline Graph RichGraph() {
  GraphBuilder b("rich \"graph\"");
  NodeSpec x;
  x.name = "x";
  x.op = "Placeholder";
  x.outputs = {TensorInfo{1536, {32, 3, 4, 4}, DType::kFloat16}};
  const int ix = b.AddNode(x);

  NodeSpec init;
  init.name = "init:7";  // a name that looks like a tensor reference
  init.op = "NoOp";
  init.outputs = {TensorInfo{8, {}, DType::kInt64}};
  const int iinit = b.AddNode(init);

  NodeSpec conv;
  conv.name = "conv1";
  conv.op = "aten::convolution";
  conv.flops = 236027904.0;
  conv.bytes_read = 19267584;
  conv.bytes_written = 102760448;
  conv.outputs = {TensorInfo{102760448, {32, 64, 112, 112}, DType::kFloat32},
                  TensorInfo{64, {}, DType::kUnknown}, TensorInfo{0, {0, 5}, DType::kBool}};
  conv.persistent_bytes = 37632;
  conv.colocation = "conv1_w";
  conv.scope = "encoder/layer_2/attention";
  conv.measured = {MeasuredTime{"V100", 1.2e-4}, MeasuredTime{"any", 0.1 + 0.2},
                   MeasuredTime{"A100", 5e-324}};
  const int iconv = b.AddNode(conv);

  NodeSpec grad;
  grad.name = "conv1_grad";
  grad.op = "aten::convolution_backward";
  grad.flops = 1.0 / 3.0;
  grad.phase = Phase::kBackward;
  grad.colocation = "conv1_w";
  grad.outputs = {TensorInfo{4, {1}, DType::kBFloat16, /*alias=*/true}};
  const int igrad = b.AddNode(grad);

  NodeSpec update;
  update.name = "update";
  update.op = "ApplyAdam";
  update.flops = 1.7976931348623157e308;
  update.phase = Phase::kUpdate;
  update.persistent_bytes = 9007199254740993;                   // 2^53 + 1: not exact as a double
  update.outputs = {TensorInfo{16, {2, 2}, DType::kTFloat32}};  // the last dtype
  const int iupdate = b.AddNode(update);

  b.AddEdge(ix, iconv, 0);
  b.AddEdge(iinit, iconv, 0);
  b.AddControlEdge(iinit, iconv);
  b.AddEdge(iconv, igrad, 0);
  b.AddEdge(iconv, igrad, 2);
  b.AddEdge(iconv, iupdate, 1);
  b.AddEdge(igrad, iupdate, 0);
  b.AddControlEdge(ix, iupdate);
  return b.Build();
}

inline void CheckSameGraph(const Graph& a, const Graph& b) {
  CHECK(a.name() == b.name());
  REQUIRE(a.num_nodes() == b.num_nodes());
  REQUIRE(a.num_edges() == b.num_edges());
  for (NodeId i = 0; i < a.num_nodes(); ++i) {
    const Node& x = a.node(i);
    const Node& y = b.node(i);
    CHECK(x.name == y.name);
    CHECK(a.op_type_name(x.op) == b.op_type_name(y.op));
    CHECK(x.flops == y.flops);
    CHECK(x.bytes_read == y.bytes_read);
    CHECK(x.bytes_written == y.bytes_written);
    CHECK(x.outputs == y.outputs);
    CHECK(x.persistent_bytes == y.persistent_bytes);
    CHECK((x.colocation < 0) == (y.colocation < 0));
    if (x.colocation >= 0 && y.colocation >= 0) {
      CHECK(a.colocation_groups()[x.colocation] == b.colocation_groups()[y.colocation]);
    }
    CHECK(x.scope == y.scope);
    CHECK(x.phase == y.phase);
    CHECK(x.measured == y.measured);
  }
  for (EdgeId e = 0; e < a.num_edges(); ++e) {
    CHECK(a.edge(e).src == b.edge(e).src);
    CHECK(a.edge(e).dst == b.edge(e).dst);
    CHECK(a.edge(e).output_index == b.edge(e).output_index);
    CHECK(a.edge(e).bytes == b.edge(e).bytes);
  }
}

}  // namespace gosim::graphs::testing

#endif  // GOSIM_TESTS_GRAPHS_RICH_GRAPH_H_
