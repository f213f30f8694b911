#include "agents/colocation.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace gosim::agents {
namespace {

// Union-find over node ids with path halving; the root is the smallest id
// of a set so that group order follows the topological order.
class DisjointSets {
 public:
  explicit DisjointSets(int32_t n) : parent_(static_cast<size_t>(n)) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int32_t Find(int32_t x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      auto& p = parent_[static_cast<size_t>(x)];
      p = parent_[static_cast<size_t>(p)];
      x = p;
    }
    return x;
  }
  void Union(int32_t a, int32_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_[static_cast<size_t>(b)] = a;
  }

 private:
  std::vector<int32_t> parent_;
};

}  // namespace

ColocationUnits::ColocationUnits(const graphs::Graph& graph, bool enforce) {
  const int32_t n = graph.num_nodes();
  unit_.assign(static_cast<size_t>(n), -1);
  std::vector<int32_t> unit_of_group(graph.colocation_groups().size(), -1);
  int32_t units = 0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    const graphs::Node& node = graph.node(v);
    const int32_t group = enforce ? node.colocation : -1;
    if (group < 0) {
      unit_[static_cast<size_t>(v)] = units++;
      continue;
    }
    int32_t& u = unit_of_group[static_cast<size_t>(group)];
    if (u < 0) {
      u = units++;
    } else {
      grouped_ = true;
    }
    unit_[static_cast<size_t>(v)] = u;
  }
  Index(graph, units);
}

ColocationUnits::ColocationUnits(const graphs::Graph& graph, std::span<const int32_t> unit_of_node)
    : unit_(unit_of_node.begin(), unit_of_node.end()) {
  if (unit_.size() != static_cast<size_t>(graph.num_nodes()) ||
      std::any_of(unit_.begin(), unit_.end(), [](int32_t u) { return u < 0; }))
    throw std::invalid_argument("ColocationUnits: one unit (>= 0) per node of the graph is needed");
  const int32_t units = unit_.empty() ? 0 : *std::max_element(unit_.begin(), unit_.end()) + 1;
  Index(graph, units);
  for (int32_t u = 0; u < units && !grouped_; ++u) grouped_ = members(u).size() > 1;
}

void ColocationUnits::Index(const graphs::Graph& graph, int32_t units) {
  const int32_t n = graph.num_nodes();
  weight_.resize(static_cast<size_t>(n));
  for (graphs::NodeId v = 0; v < n; ++v) {
    const graphs::Node& node = graph.node(v);
    weight_[static_cast<size_t>(v)] =
        1.0 + static_cast<double>(node.persistent_bytes) + static_cast<double>(node.bytes_written);
  }
  // Counting sort of the nodes by unit (members ascending).
  offsets_.assign(static_cast<size_t>(units) + 1, 0);
  for (int32_t u : unit_) ++offsets_[static_cast<size_t>(u) + 1];
  for (size_t u = 0; u < static_cast<size_t>(units); ++u) offsets_[u + 1] += offsets_[u];
  members_.resize(static_cast<size_t>(n));
  std::vector<int32_t> next(offsets_.begin(), offsets_.end() - 1);
  for (graphs::NodeId v = 0; v < n; ++v)
    members_[static_cast<size_t>(next[unit_[static_cast<size_t>(v)]]++)] = v;
}

ColocationUnits::ColocationUnits(const sim::Evaluator& evaluator)
    : ColocationUnits(evaluator.graph(), evaluator.options().enforce_colocation) {}

bool ColocationUnits::Splits(std::span<const int32_t> placement) const {
  if (!grouped_) return false;
  for (size_t v = 0; v < unit_.size(); ++v) {
    const graphs::NodeId first = members(unit_[v]).front();
    if (placement[v] != placement[static_cast<size_t>(first)]) return true;
  }
  return false;
}

int32_t ColocationUnits::KeepTogether(std::span<int32_t> placement) const {
  if (!grouped_) return 0;
  int32_t moved = 0;
  std::vector<double> share;
  for (int32_t u = 0; u < num_units(); ++u) {
    const std::span<const graphs::NodeId> nodes = members(u);
    if (nodes.size() < 2) continue;
    share.clear();
    for (graphs::NodeId v : nodes) {
      const auto d = static_cast<size_t>(std::max(0, placement[static_cast<size_t>(v)]));
      if (d >= share.size()) share.resize(d + 1, 0.0);
      share[d] += weight_[static_cast<size_t>(v)];
    }
    const auto best = static_cast<int32_t>(std::max_element(share.begin(), share.end()) - share.begin());
    for (graphs::NodeId v : nodes) {
      int32_t& d = placement[static_cast<size_t>(v)];
      if (d != best) {
        d = best;
        ++moved;
      }
    }
  }
  return moved;
}

std::vector<int32_t> ColocationUnits::Expand(std::span<const int32_t> unit_device) const {
  std::vector<int32_t> out(unit_.size());
  for (size_t v = 0; v < unit_.size(); ++v) out[v] = unit_device[static_cast<size_t>(unit_[v])];
  return out;
}

std::vector<int32_t> ColocationRuns(const graphs::Graph& graph, int32_t max_groups, int32_t* count) {
  const int32_t n = graph.num_nodes();
  DisjointSets sets(n);
  std::vector<int32_t> first_of_colocation(graph.colocation_groups().size(), -1);
  for (graphs::NodeId id = 0; id < n; ++id) {
    const int32_t c = graph.node(id).colocation;
    if (c < 0) continue;
    int32_t& first = first_of_colocation[static_cast<size_t>(c)];
    if (first < 0) {
      first = id;
    } else {
      sets.Union(first, id);
    }
  }
  for (graphs::NodeId id = 0; id < n; ++id) {
    if (graph.node(id).colocation >= 0) continue;
    graphs::NodeId consumer = -1;
    bool single = true;
    for (graphs::EdgeId e : graph.out_edges(id)) {
      const graphs::NodeId dst = graph.edge(e).dst;
      if (consumer >= 0 && dst != consumer) {
        single = false;
        break;
      }
      consumer = dst;
    }
    if (single && consumer >= 0) sets.Union(id, consumer);
  }
  // Number the sets by their first (smallest) node id.
  std::vector<int32_t> group(static_cast<size_t>(n));
  std::vector<int32_t> root_group(static_cast<size_t>(n), -1);
  std::vector<int64_t> sizes;
  for (graphs::NodeId id = 0; id < n; ++id) {
    const int32_t root = sets.Find(id);
    int32_t& g = root_group[static_cast<size_t>(root)];
    if (g < 0) {
      g = static_cast<int32_t>(sizes.size());
      sizes.push_back(0);
    }
    group[static_cast<size_t>(id)] = g;
    ++sizes[static_cast<size_t>(g)];
  }
  int32_t groups = static_cast<int32_t>(sizes.size());
  if (max_groups > 0 && groups > max_groups) {
    // Consecutive runs of groups (in order of their first op) with about
    // n / max_groups ops each.
    std::vector<int32_t> bucket(sizes.size());
    int64_t before = 0;
    int32_t next = -1;
    int32_t last_bucket = -1;
    for (size_t g = 0; g < sizes.size(); ++g) {
      const auto b = static_cast<int32_t>(std::min<int64_t>(max_groups - 1, before * max_groups / n));
      if (b != last_bucket) {
        ++next;
        last_bucket = b;
      }
      bucket[g] = next;
      before += sizes[g];
    }
    for (int32_t& g : group) g = bucket[static_cast<size_t>(g)];
    groups = next + 1;
  }
  if (count != nullptr) *count = groups;
  return group;
}

}  // namespace gosim::agents
