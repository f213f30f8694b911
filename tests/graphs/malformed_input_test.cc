// Input nested deeper than any real graph is a gosim::Error, not a stack
// overflow. Mutated and truncated files of every reader are fuzzed in
// tests/fuzz/fuzz_test.cc.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "graphs/costgraph_format.h"
#include "graphs/json_format.h"

namespace gosim::graphs {

TEST_CASE("deeply nested input is an error, not a stack overflow") {
  const std::string deep_json = R"({"format": "gosim.graph", "version": 1, "name": "g", "metadata": )" +
                                std::string(200000, '[') + std::string(200000, ']') + R"(, "nodes": []})";
  try {
    ReadGraphJson(deep_json, "deep.json");
    FAIL("no error");
  } catch (const GraphError& e) {
    CHECK(std::string(e.what()).find("nested deeper than") != std::string::npos);
    CHECK(e.where().line == 1);
  }
  std::string deep_text;
  for (int i = 0; i < 5000; ++i) deep_text += "node { output_info { shape { ";
  CHECK_THROWS_AS(ReadCostGraphText(deep_text, "deep.pbtxt"), GraphError);
}

}  // namespace gosim::graphs
