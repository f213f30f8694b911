#include "experiments/graph_source.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "graphs/onnx_format.h"

namespace gosim::experiments {
namespace {

// The one-line message of the ConfigError `f` throws; checks its option.
template <typename F>
std::string ErrorOf(F&& f, const std::string& option) {
  try {
    f();
  } catch (const ConfigError& e) {
    CHECK(e.where().file == option);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    return e.what();
  }
  FAIL("no ConfigError");
  return "";
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("--dim and --input-shape parse into sizes; anything else is a one-line error") {
  const graphs::OnnxShapes shapes = ParseShapeArguments({"batch=32", "seq=128"}, {"x=1x3x224x224", "y=7"});
  CHECK(shapes.dims == std::map<std::string, int64_t>{{"batch", 32}, {"seq", 128}});
  CHECK(shapes.input_shapes.at("x") == std::vector<int64_t>{1, 3, 224, 224});
  CHECK(shapes.input_shapes.at("y") == std::vector<int64_t>{7});
  CHECK(ParseShapeArguments({}, {}).empty());

  using V = std::vector<std::string>;
  CHECK(Has(ErrorOf([] { ParseShapeArguments(V{"batch"}, {}); }, "--dim"), "is not NAME=VALUE"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments(V{"=3"}, {}); }, "--dim"), "is not NAME=VALUE"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments(V{"batch=0"}, {}); }, "--dim"), "not a positive whole number"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments(V{"batch=-2"}, {}); }, "--dim"), "not a positive whole number"));
  CHECK(
      Has(ErrorOf([] { ParseShapeArguments(V{"batch=3.5"}, {}); }, "--dim"), "not a positive whole number"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments(V{"batch=99999999999999999999"}, {}); }, "--dim"),
            "not a positive whole number"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments(V{"b=1", "b=2"}, {}); }, "--dim"), "given twice"));
  CHECK(
      Has(ErrorOf([] { ParseShapeArguments({}, V{"x=1x0x3"}); }, "--input-shape"), "'0' is not a positive"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments({}, V{"x=1xx3"}); }, "--input-shape"), "'' is not a positive"));
  CHECK(Has(ErrorOf([] { ParseShapeArguments({}, V{"x="}); }, "--input-shape"), "is not NAME=VALUE"));
}

TEST_CASE(
    "ParseGraphArgument: sizes go with an ONNX file into the graph's identity, never with a generator") {
  const graphs::OnnxShapes batch8{{{"batch", 8}}, {}};
  const GraphEntry entry = ParseGraphArgument("tests/data/onnx/symbolic_batch.onnx", batch8);
  CHECK(entry.identity == "file:tests/data/onnx/symbolic_batch.onnx#dims=batch=8");
  CHECK(MaterializeGraph(entry).num_nodes() == 4);
  CHECK(Has(ErrorOf([&] { ParseGraphArgument("gen:resnet:depth=18", batch8); }, "--graph"),
            "apply to ONNX files, not to generated graphs"));
  CHECK(Has(ErrorOf([] { ParseGraphArgument("graphs/data/no_such_graph.json"); }, "--graph"),
            "no graph file 'graphs/data/no_such_graph.json'"));
  // The Python API names its parameter instead of the command line's option.
  const std::string python = ErrorOf([] { ParseGraphArgument("no_such_graph.json", {}, "graph"); }, "graph");
  CHECK(python.rfind("graph: no graph file 'no_such_graph.json'", 0) == 0);
  CHECK(Has(ErrorOf([&] { ParseGraphArgument("gen:resnet:depth=18", batch8, "graph"); }, "graph"),
            "apply to ONNX files"));
}

}  // namespace gosim::experiments
