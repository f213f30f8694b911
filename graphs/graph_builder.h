// Builds and validates an immutable Graph.
//
// Loaders and generators describe nodes and edges in any order; Build()
// resolves names, checks every attribute, orders the nodes topologically
// (keeping the insertion order when it already is one, so files round-trip
// exactly) and builds the CSR arrays. Any problem is a GraphError that names
// the node and, for loaded files, the position in the file:
//   - a cycle names the nodes on it;
//   - an edge to an unknown node is a dangling reference;
//   - duplicate or empty names, negative or non-finite costs and sizes, and
//     an edge naming a missing output are rejected.
#ifndef GOSIM_GRAPHS_GRAPH_BUILDER_H_
#define GOSIM_GRAPHS_GRAPH_BUILDER_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "graphs/graph.h"

namespace gosim::graphs {

// One node as a loader or generator describes it.
struct NodeSpec {
  std::string name;
  std::string op;                 // op type, e.g. "Conv2D", "aten::mm"
  double flops = 0.0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  std::vector<TensorInfo> outputs;
  int64_t persistent_bytes = 0;
  std::string colocation;         // "" = none
  std::string scope;
  Phase phase = Phase::kForward;
  std::vector<MeasuredTime> measured;
  Location where;                 // where the node is defined (errors point here)
};

class GraphBuilder {
 public:
  // `source` is the file being read ("" for generated graphs); it prefixes
  // the location of every error that has no location of its own.
  explicit GraphBuilder(std::string name, std::string source = {});

  // Adds a node and returns its index in insertion order. Duplicate names
  // are reported immediately.
  int32_t AddNode(NodeSpec spec);
  int32_t num_nodes() const { return static_cast<int32_t>(specs_.size()); }
  const NodeSpec& node(int32_t index) const { return specs_[static_cast<size_t>(index)]; }
  NodeSpec& mutable_node(int32_t index) { return specs_[static_cast<size_t>(index)]; }

  // `dst` consumes output `output_index` of `src` (insertion indices).
  void AddEdge(int32_t src, int32_t dst, int32_t output_index, Location where = {});
  void AddControlEdge(int32_t src, int32_t dst, Location where = {});
  // The same by node name; names are resolved by Build().
  void AddEdge(std::string src, std::string dst, int32_t output_index, Location where = {});
  void AddControlEdge(std::string src, std::string dst, Location where = {});

  // Index of a node added so far, or -1.
  int32_t Find(const std::string& name) const;

  // Validates and builds. The builder is left empty.
  Graph Build();

 private:
  struct PendingEdge {
    int32_t src = -1;
    int32_t dst = -1;
    std::string src_name;  // used when src < 0
    std::string dst_name;  // used when dst < 0
    int32_t output_index = Edge::kControl;
    Location where;
  };

  Location Where(const Location& where) const;
  void ValidateNode(const NodeSpec& spec) const;
  std::vector<int32_t> TopologicalOrder(const std::vector<PendingEdge>& edges) const;

  std::string name_;
  std::string source_;
  std::vector<NodeSpec> specs_;
  std::vector<PendingEdge> edges_;
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_GRAPH_BUILDER_H_
