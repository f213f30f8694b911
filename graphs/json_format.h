// gosim's native JSON graph format (docs/FORMATS.md, "Graph: native JSON").
//
// Writing then reading gives back the same graph exactly: node order, names,
// op types, every cost (doubles in nlohmann's shortest round-trip form),
// output shapes and dtypes, colocation groups, scopes, phases, measured times,
// data and control edges.
//
// Errors are GraphErrors that point into the text: JSON syntax errors carry
// line:column; semantic errors (unknown key, wrong type, negative size,
// dangling input, cycle) carry the JSON path of the value
// (`nodes[12].outputs[0].bytes`) and the line where that node starts.
#ifndef GOSIM_GRAPHS_JSON_FORMAT_H_
#define GOSIM_GRAPHS_JSON_FORMAT_H_

#include <string>
#include <string_view>

#include "graphs/graph.h"

namespace gosim::graphs {

// Parses a native JSON graph. `source` is the file name used in errors and
// stored as Graph::source() ("" for text that does not come from a file).
// Throws GraphError on any malformed or inconsistent input.
Graph ReadGraphJson(std::string_view text, const std::string& source = {});

// Serializes `graph` as native JSON, one node per line, nodes in id order.
// Throws GraphError for graphs the format cannot represent: a name that is not
// valid UTF-8, a data producer whose name starts with '^', or two measured
// times for the same device kind on one node.
std::string WriteGraphJson(const Graph& graph);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_JSON_FORMAT_H_
