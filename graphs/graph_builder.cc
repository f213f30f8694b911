#include "graphs/graph_builder.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <cmath>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/strings.h"

namespace gosim::graphs {
namespace {

using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<BoostGraph>::vertex_descriptor;

// Records the DFS finishing order (a reverse topological order), the DFS
// tree parents, and the first back edge (which closes a cycle).
struct OrderVisitor : public boost::default_dfs_visitor {
  std::vector<int32_t>* finish;
  std::vector<int32_t>* parent;
  std::pair<int32_t, int32_t>* first_back_edge;

  template <typename E, typename G>
  void tree_edge(E e, const G& g) const {
    (*parent)[boost::target(e, g)] = static_cast<int32_t>(boost::source(e, g));
  }
  template <typename E, typename G>
  void back_edge(E e, const G& g) const {
    if (first_back_edge->first < 0) {
      *first_back_edge = {static_cast<int32_t>(boost::source(e, g)),
                          static_cast<int32_t>(boost::target(e, g))};
    }
  }
  template <typename V, typename G>
  void finish_vertex(V v, const G&) const {
    finish->push_back(static_cast<int32_t>(v));
  }
};

bool Finite(double x) {
  return std::isfinite(x);
}

}  // namespace

GraphBuilder::GraphBuilder(std::string name, std::string source)
    : name_(std::move(name)), source_(std::move(source)) {}

Location GraphBuilder::Where(const Location& where) const {
  Location out = where;
  if (out.file.empty()) out.file = source_;
  return out;
}

int32_t GraphBuilder::AddNode(NodeSpec spec) {
  if (spec.name.empty()) {
    throw GraphError("a node has an empty name", Where(spec.where), "give every node a unique name");
  }
  const int32_t index = static_cast<int32_t>(specs_.size());
  auto [it, inserted] = index_.emplace(spec.name, index);
  if (!inserted) {
    throw GraphError("duplicate node name '" + spec.name + "'", Where(spec.where),
                     "node names must be unique within a graph");
  }
  specs_.push_back(std::move(spec));
  return index;
}

int32_t GraphBuilder::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

void GraphBuilder::AddEdge(int32_t src, int32_t dst, int32_t output_index, Location where) {
  edges_.push_back(PendingEdge{src, dst, {}, {}, output_index, std::move(where)});
}

void GraphBuilder::AddControlEdge(int32_t src, int32_t dst, Location where) {
  AddEdge(src, dst, Edge::kControl, std::move(where));
}

void GraphBuilder::AddEdge(std::string src, std::string dst, int32_t output_index, Location where) {
  edges_.push_back(PendingEdge{-1, -1, std::move(src), std::move(dst), output_index, std::move(where)});
}

void GraphBuilder::AddControlEdge(std::string src, std::string dst, Location where) {
  AddEdge(std::move(src), std::move(dst), Edge::kControl, std::move(where));
}

void GraphBuilder::ValidateNode(const NodeSpec& s) const {
  auto fail = [&](const std::string& what) {
    throw GraphError("node '" + s.name + "': " + what, Where(s.where),
                     "costs and sizes must be finite and non-negative");
  };
  if (s.op.empty()) {
    throw GraphError("node '" + s.name + "' has no op type", Where(s.where), "set its op type");
  }
  if (!Finite(s.flops) || s.flops < 0) fail("FLOPs is " + std::to_string(s.flops));
  if (s.bytes_read < 0) fail("bytes read is negative");
  if (s.bytes_written < 0) fail("bytes written is negative");
  if (s.persistent_bytes < 0) fail("persistent bytes is negative");
  for (size_t k = 0; k < s.outputs.size(); ++k) {
    const TensorInfo& t = s.outputs[k];
    if (t.bytes < 0) fail("output " + std::to_string(k) + " has negative size");
    for (int64_t d : t.shape) {
      if (d < 0) fail("output " + std::to_string(k) + " has a negative dimension");
    }
  }
  for (const MeasuredTime& m : s.measured) {
    if (!Finite(m.seconds) || m.seconds < 0) fail("measured time on '" + m.device_kind + "' is invalid");
    if (m.device_kind.empty()) fail("a measured time has no device kind");
  }
}

std::vector<int32_t> GraphBuilder::TopologicalOrder(const std::vector<PendingEdge>& edges) const {
  const int32_t n = static_cast<int32_t>(specs_.size());
  std::vector<int32_t> order(static_cast<size_t>(n));
  bool sorted = true;
  for (const PendingEdge& e : edges) {
    if (e.src >= e.dst) {
      sorted = false;
      break;
    }
  }
  if (sorted) {
    for (int32_t i = 0; i < n; ++i) order[i] = i;
    return order;
  }
  BoostGraph g(static_cast<size_t>(n));
  for (const PendingEdge& e : edges)
    boost::add_edge(static_cast<Vertex>(e.src), static_cast<Vertex>(e.dst), g);
  std::vector<int32_t> finish;
  finish.reserve(static_cast<size_t>(n));
  std::vector<int32_t> parent(static_cast<size_t>(n), -1);
  std::pair<int32_t, int32_t> back{-1, -1};
  OrderVisitor visitor;
  visitor.finish = &finish;
  visitor.parent = &parent;
  visitor.first_back_edge = &back;
  boost::depth_first_search(g, boost::visitor(visitor));
  if (back.first >= 0) {
    // back edge u -> v: v is an ancestor of u in the DFS tree.
    std::vector<std::string> cycle;
    for (int32_t x = back.first; x != back.second && x >= 0; x = parent[x]) cycle.push_back(specs_[x].name);
    cycle.push_back(specs_[back.second].name);
    std::reverse(cycle.begin(), cycle.end());
    cycle.push_back(specs_[back.second].name);
    if (cycle.size() > 12) {
      cycle.erase(cycle.begin() + 5, cycle.end() - 5);
      cycle.insert(cycle.begin() + 5, "...");
    }
    const NodeSpec& at = specs_[back.second];
    throw GraphError("the graph has a cycle through node '" + at.name + "': " + Join(cycle, " -> "),
                     Where(at.where), "computation graphs must be acyclic; remove one of these edges");
  }
  std::reverse(finish.begin(), finish.end());
  return finish;
}

Graph GraphBuilder::Build() {
  const int32_t n = static_cast<int32_t>(specs_.size());
  // Resolve names and validate edge endpoints.
  for (PendingEdge& e : edges_) {
    if (e.src < 0 && !e.src_name.empty()) {
      e.src = Find(e.src_name);
      if (e.src < 0) {
        throw GraphError("dangling reference: node '" + e.dst_name + "' has input '" + e.src_name +
                             "', which is not a node of the graph.",
                         Where(e.where), "define the node or remove the reference");
      }
    }
    if (e.dst < 0 && !e.dst_name.empty()) {
      e.dst = Find(e.dst_name);
      if (e.dst < 0) {
        throw GraphError(
            "dangling reference: edge from '" + e.src_name + "' goes to unknown node '" + e.dst_name + "'",
            Where(e.where), "define the node or remove the reference");
      }
    }
    if (e.src < 0 || e.src >= n || e.dst < 0 || e.dst >= n) {
      throw GraphError("an edge refers to node index out of range", Where(e.where));
    }
    const NodeSpec& src = specs_[e.src];
    if (e.src == e.dst) {
      throw GraphError("node '" + src.name + "' consumes its own output (a cycle of length 1)",
                       Where(e.where.file.empty() && e.where.line == 0 ? src.where : e.where),
                       "computation graphs must be acyclic");
    }
    if (e.output_index != Edge::kControl &&
        (e.output_index < 0 || e.output_index >= static_cast<int32_t>(src.outputs.size()))) {
      throw GraphError(
          "node '" + specs_[e.dst].name + "' reads output " + std::to_string(e.output_index) + " of '" +
              src.name + "', which has " + std::to_string(src.outputs.size()) + " output(s)",
          Where(e.where.line == 0 ? specs_[e.dst].where : e.where), "refer to an existing output");
    }
  }
  for (const NodeSpec& s : specs_) ValidateNode(s);

  // Drop duplicate edges: a node reading the same tensor twice moves it once.
  std::sort(edges_.begin(), edges_.end(), [](const PendingEdge& a, const PendingEdge& b) {
    return std::tie(a.src, a.output_index, a.dst) < std::tie(b.src, b.output_index, b.dst);
  });
  edges_.erase(std::unique(edges_.begin(), edges_.end(),
                           [](const PendingEdge& a, const PendingEdge& b) {
                             return a.src == b.src && a.output_index == b.output_index && a.dst == b.dst;
                           }),
               edges_.end());

  const std::vector<int32_t> order = TopologicalOrder(edges_);
  std::vector<int32_t> new_id(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) new_id[order[i]] = i;

  Graph g;
  g.name_ = name_;
  g.source_ = source_;
  g.nodes_.resize(static_cast<size_t>(n));
  std::unordered_map<std::string, int32_t> op_ids;
  std::unordered_map<std::string, int32_t> coloc_ids;
  g.tensor_offsets_.assign(static_cast<size_t>(n) + 1, 0);
  g.by_name_.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    NodeSpec& s = specs_[order[i]];
    Node& node = g.nodes_[i];
    auto [op_it, new_op] = op_ids.emplace(s.op, static_cast<int32_t>(g.op_types_.size()));
    if (new_op) g.op_types_.push_back(s.op);
    node.op = op_it->second;
    if (!s.colocation.empty()) {
      auto [c_it, new_c] = coloc_ids.emplace(s.colocation, static_cast<int32_t>(g.colocation_groups_.size()));
      if (new_c) g.colocation_groups_.push_back(s.colocation);
      node.colocation = c_it->second;
    }
    node.name = std::move(s.name);
    node.flops = s.flops;
    node.bytes_read = s.bytes_read;
    node.bytes_written = s.bytes_written;
    node.outputs = std::move(s.outputs);
    node.persistent_bytes = s.persistent_bytes;
    node.scope = std::move(s.scope);
    node.phase = s.phase;
    node.measured = std::move(s.measured);
    g.tensor_offsets_[i + 1] = g.tensor_offsets_[i] + static_cast<int32_t>(node.outputs.size());
    g.by_name_.emplace(node.name, i);
  }

  // Parameters per op type of the update phase, by colocation group.
  std::vector<std::unordered_set<int32_t>> update_groups(g.op_types_.size());
  g.update_parameters_.assign(g.op_types_.size(), 0);
  for (const Node& node : g.nodes_) {
    if (node.phase != Phase::kUpdate) continue;
    if (node.colocation < 0) {
      ++g.update_parameters_[static_cast<size_t>(node.op)];
    } else {
      update_groups[static_cast<size_t>(node.op)].insert(node.colocation);
    }
  }
  for (size_t op = 0; op < update_groups.size(); ++op)
    g.update_parameters_[op] += static_cast<int32_t>(update_groups[op].size());

  g.edges_.reserve(edges_.size());
  for (const PendingEdge& e : edges_) {
    Edge edge;
    edge.src = new_id[e.src];
    edge.dst = new_id[e.dst];
    edge.output_index = e.output_index;
    edge.bytes = e.output_index == Edge::kControl ? 0 : g.nodes_[edge.src].outputs[e.output_index].bytes;
    g.edges_.push_back(edge);
  }
  std::sort(g.edges_.begin(), g.edges_.end(), [](const Edge& a, const Edge& b) {
    return std::tie(a.src, a.output_index, a.dst) < std::tie(b.src, b.output_index, b.dst);
  });
  // CSR: out-edges are already grouped by src; in-edges by counting sort.
  g.out_offsets_.assign(static_cast<size_t>(n) + 1, 0);
  g.in_offsets_.assign(static_cast<size_t>(n) + 1, 0);
  for (const Edge& e : g.edges_) {
    ++g.out_offsets_[e.src + 1];
    ++g.in_offsets_[e.dst + 1];
  }
  for (int32_t i = 0; i < n; ++i) {
    g.out_offsets_[i + 1] += g.out_offsets_[i];
    g.in_offsets_[i + 1] += g.in_offsets_[i];
  }
  const size_t m = g.edges_.size();
  g.out_edge_ids_.resize(m);
  g.in_edge_ids_.resize(m);
  std::vector<int32_t> in_fill(g.in_offsets_.begin(), g.in_offsets_.end() - 1);
  for (size_t k = 0; k < m; ++k) {
    const Edge& e = g.edges_[k];
    g.out_edge_ids_[k] = static_cast<EdgeId>(k);
    g.in_edge_ids_[in_fill[e.dst]++] = static_cast<EdgeId>(k);
  }

  specs_.clear();
  edges_.clear();
  index_.clear();
  return g;
}

}  // namespace gosim::graphs
