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

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphs/graph.h"

namespace gosim::graphs {

// msr-fiddle's placement problems ("Efficient Algorithms for Device
// Placement of DNN Graph Operators", NeurIPS 2020; docs/FORMATS.md,
// "msr-fiddle workloads"): a JSON object with maxSizePerFPGA, maxFPGAs,
// maxCPUs, nodes and edges. ReadGraphJson reads them as graphs (detected by
// their keys); this gives the machine and the ids as well.
//
// Each node keeps its name (or "node<id>"), its latencies as measured times
// ("any" accelerator: fpgaLatency, "cpu": cpuLatency; milliseconds in the
// file, seconds here), its size as persistent bytes, its colorClass as
// colocation group "color<k>" and isBackwardNode as its phase. An edge's
// cost (the time to move the source's output between an accelerator and
// CPU DRAM, one value per source) becomes that output's size in
// transfer-equivalent bytes: cost x kMsrTransferBandwidth, so that the
// machine of MsrCluster (sim/cluster.h) moves it in exactly `cost`.
inline constexpr double kMsrTransferBandwidth = 1e9;  // bytes/s

struct MsrProblem {
  Graph graph;
  double accelerator_memory = 0.0;  // maxSizePerFPGA, bytes
  int32_t accelerators = 0;         // maxFPGAs
  int32_t cpus = 0;                 // maxCPUs
  // (msr node id, graph node id), ascending by msr id.
  std::vector<std::pair<int64_t, NodeId>> ids;
};

// Whether `text` is msr-fiddle's problem format (a cheap check of its keys,
// for readers of other formats that want to say so).
bool IsMsrProblem(std::string_view text);
// Parses one; GraphError (file, JSON path, the line of the node, how to fix)
// on anything malformed: a missing field, a negative latency or size, an
// unknown or repeated id, a source whose edges disagree on the cost, a node
// that cannot run on an accelerator (supportedOnFpga 0: gosim has no
// per-node device restriction), a cycle.
MsrProblem ReadMsrProblem(std::string_view text, const std::string& source = {});

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
