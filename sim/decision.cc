// Decision construction and validation. JSON I/O is in decision_json.cc.
#include "sim/decision.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "core/strings.h"
#include "sim/cluster.h"
#include "sim/decision_check.h"

namespace gosim::sim {

Decision SingleDeviceDecision(const graphs::Graph& graph, int32_t device) {
  Decision d;
  d.placement.assign(static_cast<size_t>(graph.num_nodes()), device);
  return d;
}

Decision DataParallelDecision(const graphs::Graph& graph, int32_t replicas) {
  Decision d = SingleDeviceDecision(graph, 0);
  d.data_parallel = replicas;
  return d;
}

namespace internal {
namespace {

using graphs::NodeId;

std::string Quote(const std::string& name) {
  return "'" + name + "'";
}

// Up to `limit` node names, quoted, then "and N more".
std::string NameList(const graphs::Graph& graph, const std::vector<NodeId>& nodes, size_t limit = 5) {
  std::vector<std::string> names;
  for (size_t i = 0; i < nodes.size() && i < limit; ++i) names.push_back(Quote(graph.node(nodes[i]).name));
  std::string out = Join(names, ", ");
  if (nodes.size() > limit) out += " and " + std::to_string(nodes.size() - limit) + " more";
  return out;
}

int32_t Find(std::vector<int32_t>& parent, int32_t x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

class Checker {
 public:
  Checker(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster, const Locator& where)
      : d_(decision), g_(graph), c_(cluster), where_(where), n_(graph.num_nodes()) {}

  void Run(bool check_colocation) {
    CheckSizes();
    if (d_.data_parallel != 0) CheckDataParallel();
    CheckPlacement();
    CheckPriorities();
    if (d_.has_fusion()) CheckFusion();
    if (check_colocation) CheckColocation();
  }

 private:
  [[noreturn]] void Fail(Field field, int64_t index, const std::string& message,
                         const std::string& hint = {}) const {
    throw DecisionError(message, where_(field, index), hint);
  }

  const std::string& DeviceName(int32_t d) const { return c_.device(d).name; }

  void CheckDataParallel() const {
    if (d_.data_parallel < 2 || d_.data_parallel > c_.num_devices()) {
      Fail(Field::kWhole, -1,
           "data_parallel is " + std::to_string(d_.data_parallel) + " but cluster '" + c_.name() + "' has " +
               std::to_string(c_.num_devices()) + " devices",
           "give 2 to " + std::to_string(c_.num_devices()) + " replicas, or 0 for a placement");
    }
    for (int32_t v = 0; v < n_; ++v) {
      if (d_.placement[static_cast<size_t>(v)] != 0)
        Fail(Field::kPlacement, v, "a data-parallel decision places every node on device 0 (the replica)",
             "leave the placement out of a data-parallel decision");
    }
    if (d_.has_priority() || d_.has_fusion() || d_.has_transfer_priority() || d_.has_gates())
      Fail(Field::kWhole, -1, "a data-parallel decision has no priorities, fusion or gates",
           "leave them out: each replica runs the graph FIFO");
  }

  void CheckSizes() const {
    const auto n = static_cast<size_t>(n_);
    if (d_.placement.size() != n) {
      Fail(Field::kPlacement, -1,
           "placement has " + std::to_string(d_.placement.size()) + " entries but graph '" + g_.name() +
               "' has " + std::to_string(n) + " nodes",
           "give one device per node");
    }
    if (d_.has_priority() && d_.priority.size() != n) {
      Fail(Field::kPriority, -1,
           "priority has " + std::to_string(d_.priority.size()) + " entries but the graph has " +
               std::to_string(n) + " nodes",
           "give one priority per node, or none");
    }
    const size_t copies = static_cast<size_t>(g_.num_tensors()) * static_cast<size_t>(c_.num_devices());
    if (d_.has_transfer_priority() && d_.transfer_priority.size() != copies) {
      Fail(Field::kTransferPriority, -1,
           "transfer_priority has " + std::to_string(d_.transfer_priority.size()) +
               " entries, expected tensors x " + "devices = " + std::to_string(g_.num_tensors()) + " x " +
               std::to_string(c_.num_devices()),
           "index it tensor * num_devices + device, or leave it empty");
    }
    if (d_.has_fusion() && d_.fusion_group.size() != n) {
      Fail(Field::kFusion, -1,
           "fusion_group has " + std::to_string(d_.fusion_group.size()) + " entries but the graph has " +
               std::to_string(n) + " nodes",
           "give one group id (or -1) per node, or none");
    }
  }

  void CheckPlacement() const {
    for (NodeId v = 0; v < n_; ++v) {
      const int32_t device = d_.placement[static_cast<size_t>(v)];
      if (device < 0 || device >= c_.num_devices()) {
        Fail(Field::kPlacement, v,
             "node " + Quote(g_.node(v).name) + " is placed on device " + std::to_string(device) +
                 ", but cluster '" + c_.name() + "' has devices 0.." + std::to_string(c_.num_devices() - 1),
             "use a device index below " + std::to_string(c_.num_devices()));
      }
    }
  }

  void CheckPriorities() const {
    for (size_t v = 0; v < d_.priority.size(); ++v) {
      if (!std::isfinite(d_.priority[v])) {
        Fail(Field::kPriority, static_cast<int64_t>(v),
             "priority of node " + Quote(g_.node(static_cast<NodeId>(v)).name) + " is not finite",
             "priorities are finite numbers; higher runs first");
      }
    }
    for (size_t k = 0; k < d_.transfer_priority.size(); ++k) {
      if (!std::isfinite(d_.transfer_priority[k])) {
        Fail(Field::kTransferPriority, static_cast<int64_t>(k),
             "transfer priority " + std::to_string(k) + " (tensor " +
                 std::to_string(k / static_cast<size_t>(c_.num_devices())) + ", device " +
                 DeviceName(static_cast<int32_t>(k % static_cast<size_t>(c_.num_devices()))) +
                 ") is not finite");
      }
    }
  }

  void CheckFusion() {
    // Representative (smallest node) of each group.
    std::unordered_map<int32_t, NodeId> first;
    rep_.resize(static_cast<size_t>(n_));
    for (NodeId v = 0; v < n_; ++v) {
      const int32_t group = d_.fusion_group[static_cast<size_t>(v)];
      if (group < -1) {
        Fail(Field::kFusion, v,
             "node " + Quote(g_.node(v).name) + " has fusion group " + std::to_string(group),
             "use -1 for unfused nodes and ids >= 0 for groups");
      }
      if (group == -1) {
        rep_[static_cast<size_t>(v)] = v;
        continue;
      }
      const auto [it, inserted] = first.emplace(group, v);
      rep_[static_cast<size_t>(v)] = it->second;
      const int32_t a = d_.placement[static_cast<size_t>(it->second)];
      const int32_t b = d_.placement[static_cast<size_t>(v)];
      if (a != b) {
        Fail(Field::kFusion, v,
             "fusion group " + std::to_string(group) + " spans devices: " + Quote(g_.node(it->second).name) +
                 " is on " + DeviceName(a) + " but " + Quote(g_.node(v).name) + " is on " + DeviceName(b),
             "fused ops run as one kernel: place every node of a group on one device");
      }
    }
    CheckConnected();
    CheckAcyclic();
  }

  // Each group is connected by edges (data or control) between its members.
  void CheckConnected() const {
    std::vector<int32_t> parent(static_cast<size_t>(n_));
    std::iota(parent.begin(), parent.end(), 0);
    for (const graphs::Edge& e : g_.edges()) {
      if (rep_[static_cast<size_t>(e.src)] != rep_[static_cast<size_t>(e.dst)]) continue;
      const int32_t a = Find(parent, e.src);
      const int32_t b = Find(parent, e.dst);
      if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
    for (NodeId v = 0; v < n_; ++v) {
      const NodeId r = rep_[static_cast<size_t>(v)];
      if (r == v) continue;
      if (Find(parent, v) != Find(parent, r)) {
        Fail(Field::kFusion, v,
             "fusion group " + std::to_string(d_.fusion_group[static_cast<size_t>(v)]) +
                 " is not connected: " + Quote(g_.node(r).name) + " and " + Quote(g_.node(v).name) +
                 " are not joined by edges inside it",
             "a fused kernel must be one connected piece of the graph; split the group");
      }
    }
  }

  // Contracting every group to one vertex must leave a DAG. A cycle through
  // one group means a path leaves it and re-enters (not convex); a cycle
  // through several means the groups wait for each other (deadlock).
  void CheckAcyclic() const {
    using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
    BGraph q(static_cast<size_t>(n_));
    for (const graphs::Edge& e : g_.edges()) {
      const NodeId a = rep_[static_cast<size_t>(e.src)];
      const NodeId b = rep_[static_cast<size_t>(e.dst)];
      if (a != b) boost::add_edge(static_cast<size_t>(a), static_cast<size_t>(b), q);
    }
    std::vector<int> component(static_cast<size_t>(n_));
    const int count = boost::strong_components(q, component.data());
    if (count == n_) return;
    std::vector<int> size(static_cast<size_t>(count), 0);
    for (NodeId v = 0; v < n_; ++v) {
      if (rep_[static_cast<size_t>(v)] == v) ++size[static_cast<size_t>(component[static_cast<size_t>(v)])];
    }
    for (NodeId v = 0; v < n_; ++v) {
      if (rep_[static_cast<size_t>(v)] != v) continue;
      const int comp = component[static_cast<size_t>(v)];
      if (size[static_cast<size_t>(comp)] < 2) continue;
      // The cycle through v's component: its groups and outside nodes.
      std::vector<NodeId> groups;
      std::vector<NodeId> outside;
      for (NodeId u = 0; u < n_; ++u) {
        if (rep_[static_cast<size_t>(u)] != u || component[static_cast<size_t>(u)] != comp) continue;
        (d_.fusion_group[static_cast<size_t>(u)] >= 0 ? groups : outside).push_back(u);
      }
      const auto group_id = [&](NodeId u) { return std::to_string(d_.fusion_group[static_cast<size_t>(u)]); };
      if (groups.size() == 1) {
        Fail(Field::kFusion, groups[0],
             "fusion group " + group_id(groups[0]) + " (with " + Quote(g_.node(groups[0]).name) +
                 ") is not convex: a path leaves it and comes back through " + NameList(g_, outside),
             "add those nodes to the group or split it so that no path leaves and re-enters it");
      }
      std::vector<std::string> ids;
      for (NodeId u : groups) ids.push_back(group_id(u) + " (" + Quote(g_.node(u).name) + ")");
      Fail(Field::kFusion, groups[0],
           "fusion groups " + Join(ids, ", ") + " depend on each other in a cycle, so none of them can start",
           "merge them or split them so that the fused graph stays acyclic");
    }
  }

  void CheckColocation() const {
    std::unordered_map<int32_t, NodeId> first;
    for (NodeId v = 0; v < n_; ++v) {
      const int32_t group = g_.node(v).colocation;
      if (group < 0) continue;
      const auto [it, inserted] = first.emplace(group, v);
      const int32_t a = d_.placement[static_cast<size_t>(it->second)];
      const int32_t b = d_.placement[static_cast<size_t>(v)];
      if (a != b) {
        Fail(Field::kPlacement, v,
             "colocation group '" + g_.colocation_groups()[static_cast<size_t>(group)] +
                 "' is split: " + Quote(g_.node(it->second).name) + " is on " + DeviceName(a) + " but " +
                 Quote(g_.node(v).name) + " is on " + DeviceName(b),
             "place every node of a colocation group on one device");
      }
    }
  }

  const Decision& d_;
  const graphs::Graph& g_;
  const Cluster& c_;
  const Locator& where_;
  const int32_t n_;
  std::vector<NodeId> rep_;  // fusion group representative per node (itself when unfused)
};

}  // namespace

void CheckDecision(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                   bool check_colocation, const Locator& where) {
  Checker(decision, graph, cluster, where).Run(check_colocation);
}

}  // namespace internal

void ValidateDecision(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                      bool check_colocation) {
  const internal::Locator where = [](internal::Field field, int64_t index) {
    Location at;
    const char* name = "decision";
    switch (field) {
      case internal::Field::kPlacement:
        name = "placement";
        break;
      case internal::Field::kPriority:
        name = "priority";
        break;
      case internal::Field::kTransferPriority:
        name = "transfer_priority";
        break;
      case internal::Field::kFusion:
        name = "fusion_group";
        break;
      case internal::Field::kWhole:
        break;
    }
    at.path = name;
    if (index >= 0) at.path += "[" + std::to_string(index) + "]";
    return at;
  };
  internal::CheckDecision(decision, graph, cluster, check_colocation, where);
}

}  // namespace gosim::sim
