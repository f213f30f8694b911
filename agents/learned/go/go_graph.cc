#include "agents/learned/go/go_graph.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "agents/learned/common/features.h"
#include "core/error.h"

namespace gosim::agents::learned::go {

namespace {

// Colocation followers take their leader's (the group's first member's) id.
void FollowLeaders(const graphs::Graph& graph, std::vector<int64_t>& ids) {
  std::unordered_map<int32_t, int64_t> leader;
  for (size_t v = 0; v < ids.size(); ++v) {
    const int32_t colocation = graph.node(static_cast<graphs::NodeId>(v)).colocation;
    if (colocation < 0) continue;
    const auto [it, inserted] = leader.emplace(colocation, ids[v]);
    if (!inserted) ids[v] = it->second;
  }
}

// Renumbers ids >= 0 in order of first appearance (ids < 0 are left as
// they are); returns each new id's first node and size.
struct Renumbered {
  std::vector<int64_t> first;
  std::vector<float> size;
};
Renumbered Renumber(std::vector<int64_t>& ids) {
  Renumbered out;
  std::unordered_map<int64_t, int64_t> index;
  for (size_t v = 0; v < ids.size(); ++v) {
    if (ids[v] < 0) continue;
    const auto [it, inserted] = index.emplace(ids[v], static_cast<int64_t>(index.size()));
    if (inserted) {
      out.first.push_back(static_cast<int64_t>(v));
      out.size.push_back(0.0f);
    }
    ids[v] = it->second;
    out.size[static_cast<size_t>(it->second)] += 1.0f;
  }
  return out;
}

}  // namespace

ActionGroups ParseActionGroups(const std::string& name) {
  if (name == "none") return ActionGroups::kNone;
  if (name == "scope") return ActionGroups::kScope;
  if (name == "chunks") return ActionGroups::kChunks;
  throw ConfigError("unknown GO action_groups '" + name + "'", {},
                    "use none (a placement per node), scope or chunks");
}

const char* ActionGroupsName(ActionGroups groups) {
  switch (groups) {
    case ActionGroups::kScope:
      return "scope";
    case ActionGroups::kChunks:
      return "chunks";
    case ActionGroups::kNone:
      break;
  }
  return "none";
}

ActionGrouping MakeActionGrouping(const graphs::Graph& graph, ActionGroups kind) {
  ActionGrouping out;
  const int64_t n = static_cast<int64_t>(graph.num_nodes());
  if (kind == ActionGroups::kNone || n == 0) return out;
  std::vector<int64_t> group(static_cast<size_t>(n), -1);  // provisional ids, renumbered below
  int64_t next = 0;
  if (kind == ActionGroups::kChunks) {
    const int64_t chunk = std::max<int64_t>(1, (n + kChunkGroups - 1) / kChunkGroups);
    for (int64_t v = 0; v < n; ++v) group[static_cast<size_t>(v)] = v / chunk;
  } else {
    const int64_t max_size = std::max<int64_t>((n + 15) / 16, kScopeGroupMin);
    // Scope components per node ("encoder/layer_2/attention" -> 3 parts).
    std::vector<std::vector<std::string_view>> parts(static_cast<size_t>(n));
    for (int64_t v = 0; v < n; ++v) {
      const std::string& scope = graph.node(static_cast<graphs::NodeId>(v)).scope;
      size_t from = 0;
      while (from < scope.size()) {
        const size_t cut = std::min(scope.find('/', from), scope.size());
        if (cut > from) parts[static_cast<size_t>(v)].emplace_back(scope.data() + from, cut - from);
        from = cut + 1;
      }
    }
    // Members (ascending ids) cut into runs of max_size, one group each.
    auto cut = [&](const std::vector<int64_t>& members) {
      for (size_t i = 0; i < members.size(); ++i) {
        if (i % static_cast<size_t>(max_size) == 0) ++next;
        group[static_cast<size_t>(members[i])] = next - 1;
      }
    };
    struct Pending {
      size_t depth;  // members share their first `depth` scope components
      std::vector<int64_t> members;
    };
    std::vector<Pending> work;
    std::vector<int64_t> unscoped;
    {
      std::map<std::string_view, std::vector<int64_t>> top;
      for (int64_t v = 0; v < n; ++v) {
        const auto& p = parts[static_cast<size_t>(v)];
        if (p.empty()) {
          unscoped.push_back(v);
        } else {
          top[p[0]].push_back(v);
        }
      }
      for (auto& [name, members] : top) work.push_back({1, std::move(members)});
    }
    while (!work.empty()) {
      Pending p = std::move(work.back());
      work.pop_back();
      if (static_cast<int64_t>(p.members.size()) <= max_size) {
        cut(p.members);
        continue;
      }
      // Refine by the next scope component; members whose scope ends here
      // stay together (cut into runs when too many).
      std::map<std::string_view, std::vector<int64_t>> children;
      std::vector<int64_t> rest;
      for (const int64_t v : p.members) {
        const auto& parts_v = parts[static_cast<size_t>(v)];
        if (parts_v.size() > p.depth) {
          children[parts_v[p.depth]].push_back(v);
        } else {
          rest.push_back(v);
        }
      }
      cut(rest);
      for (auto& [name, members] : children) work.push_back({p.depth + 1, std::move(members)});
    }
    cut(unscoped);
  }
  FollowLeaders(graph, group);
  const Renumbered renumbered = Renumber(group);  // drops groups left empty
  out.group = torch::tensor(group, torch::kInt64);
  out.first = torch::tensor(renumbered.first, torch::kInt64);
  out.size = torch::tensor(renumbered.size, torch::kFloat32);
  out.count = static_cast<int64_t>(renumbered.first.size());
  return out;
}

RoleGrouping MakeRoleGrouping(const graphs::Graph& graph, const ActionGrouping& groups, RoleKey key_kind) {
  RoleGrouping out;
  const int64_t n = static_cast<int64_t>(graph.num_nodes());
  if (n == 0) return out;
  std::vector<int64_t> group_of;
  if (groups.count > 0) {
    const torch::Tensor g = groups.group.contiguous();
    group_of.assign(g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + g.numel());
  }
  // The role key: "b:" for backward ops (TensorFlow's "gradients/" name
  // prefix), then the scope (or, RoleKey::kName, the whole name) with every
  // run of digits removed, so "dilated_stack/layer22/skip" and
  // "dilated_stack/layer7/skip" share one.
  std::unordered_map<std::string, int64_t> index;
  std::vector<int64_t> role(static_cast<size_t>(n), -1);
  for (int64_t v = 0; v < n; ++v) {
    const graphs::Node& node = graph.node(static_cast<graphs::NodeId>(v));
    if (node.scope.empty()) continue;
    std::string key = node.name.rfind("gradients/", 0) == 0 ? "b:" : "f:";
    for (const char c : key_kind == RoleKey::kName ? node.name : node.scope)
      if (c < '0' || c > '9') key.push_back(c);
    role[static_cast<size_t>(v)] =
        index.emplace(std::move(key), static_cast<int64_t>(index.size())).first->second;
  }
  FollowLeaders(graph, role);
  // Keep the roles whose members lie in two or more action groups.
  std::vector<int64_t> seen(index.size(), -1);  // an action group of the role's members; -2: several
  for (int64_t v = 0; v < n; ++v) {
    const int64_t r = role[static_cast<size_t>(v)];
    if (r < 0) continue;
    const int64_t g = group_of.empty() ? v : group_of[static_cast<size_t>(v)];
    int64_t& s = seen[static_cast<size_t>(r)];
    if (s == -1) {
      s = g;
    } else if (s != g) {
      s = -2;
    }
  }
  for (int64_t& r : role)
    if (r >= 0 && seen[static_cast<size_t>(r)] != -2) r = -1;
  // The kept roles in order of their first node; the others are "no role" (= count).
  Renumbered renumbered = Renumber(role);
  out.count = static_cast<int64_t>(renumbered.first.size());
  const auto loose = static_cast<float>(std::count(role.begin(), role.end(), -1));
  for (int64_t& r : role)
    if (r < 0) r = out.count;
  renumbered.size.push_back(std::max(loose, 1.0f));
  out.role = torch::tensor(role, torch::kInt64);
  out.first = torch::tensor(renumbered.first, torch::kInt64);
  out.size = torch::tensor(renumbered.size, torch::kFloat32);
  return out;
}

GoGraph MakeGoGraph(const graphs::Graph& graph) {
  const NodeFeatures features = ComputeNodeFeatures(graph);
  GoGraph g;
  g.tensors = ToTensors(features);
  g.num_nodes = features.num_nodes;
  const size_t n = static_cast<size_t>(features.num_nodes);
  // Merged (data and control) edges: a node may be fused with its producer
  // when that producer is its only predecessor and it is the producer's only
  // successor. Fused groups are then chains, which are always convex.
  std::vector<int32_t> in_count(n, 0), out_count(n, 0);
  std::vector<int64_t> pred(n, -1);
  for (size_t e = 0; e < features.edge_src.size(); ++e) {
    const auto s = static_cast<size_t>(features.edge_src[e]);
    const auto d = static_cast<size_t>(features.edge_dst[e]);
    ++out_count[s];
    ++in_count[d];
    pred[d] = static_cast<int64_t>(s);
  }
  g.fuse_producer.assign(n, -1);
  std::vector<uint8_t> eligible(n, 0);
  std::vector<int64_t> src(n);
  for (size_t v = 0; v < n; ++v) {
    src[v] = static_cast<int64_t>(v);
    if (in_count[v] == 1 && out_count[static_cast<size_t>(pred[v])] == 1) {
      g.fuse_producer[v] = pred[v];
      eligible[v] = 1;
      src[v] = pred[v];
    }
  }
  g.fuse_eligible =
      torch::tensor(std::vector<int64_t>(eligible.begin(), eligible.end()), torch::kInt64).to(torch::kBool);
  g.fuse_src = torch::tensor(src, torch::kInt64);

  // Positions: the node's own, then the first node of its scope prefix of
  // 1, 2 and 3 components ("encoder", "encoder/layer_2", ...); a node
  // without a scope uses its own position at every depth.
  const double denominator = n > 1 ? static_cast<double>(n - 1) : 1.0;
  std::vector<float> positions(n * static_cast<size_t>(kGoPositions));
  std::vector<std::unordered_map<std::string_view, size_t>> first(kGoPositions - 1);
  for (size_t v = 0; v < n; ++v) {
    const std::string& scope = graph.node(static_cast<graphs::NodeId>(v)).scope;
    float* row = positions.data() + v * static_cast<size_t>(kGoPositions);
    row[0] = static_cast<float>(static_cast<double>(v) / denominator);
    size_t cut = 0;  // end of the current prefix; npos once it is the whole scope
    for (int64_t depth = 1; depth < kGoPositions; ++depth) {
      size_t at = v;
      if (!scope.empty()) {
        cut = cut == std::string::npos ? cut : scope.find('/', depth == 1 ? 0 : cut + 1);
        const std::string_view prefix(scope.data(), cut == std::string::npos ? scope.size() : cut);
        at = first[static_cast<size_t>(depth - 1)].emplace(prefix, v).first->second;
      }
      row[depth] = static_cast<float>(static_cast<double>(at) / denominator);
    }
  }
  g.positions = torch::tensor(positions, torch::kFloat32).view({static_cast<int64_t>(n), kGoPositions});
  // Scope groups of depths 1 and 2 for the exploration noise: the prefix's
  // first node (columns 1 and 2 of the positions) identifies the group.
  for (int depth = 1; depth <= 2; ++depth) {
    std::unordered_map<int64_t, int64_t> index;
    std::vector<int64_t> group(n);
    for (size_t v = 0; v < n; ++v) {
      int64_t key = -1;  // nodes without a scope share one group
      if (!graph.node(static_cast<graphs::NodeId>(v)).scope.empty()) {
        key = static_cast<int64_t>(std::llround(positions[v * kGoPositions + depth] * denominator));
      }
      group[v] = index.emplace(key, static_cast<int64_t>(index.size())).first->second;
    }
    (depth == 1 ? g.scope_group1 : g.scope_group2) = torch::tensor(group, torch::kInt64);
    (depth == 1 ? g.num_scope_groups1 : g.num_scope_groups2) = static_cast<int64_t>(index.size());
  }

  // Colocation groups: the first member (in topological order) decides.
  std::vector<int64_t> leader(n);
  std::vector<float> free(n, 1.0f);
  std::unordered_map<int32_t, int64_t> group_leader;
  for (size_t v = 0; v < n; ++v) {
    leader[v] = static_cast<int64_t>(v);
    const int32_t group = graph.node(static_cast<graphs::NodeId>(v)).colocation;
    if (group < 0) continue;
    const auto [it, inserted] = group_leader.emplace(group, static_cast<int64_t>(v));
    if (!inserted) {
      leader[v] = it->second;
      free[v] = 0.0f;
      g.has_followers = true;
    }
  }
  g.place_leader = torch::tensor(leader, torch::kInt64);
  g.place_free = torch::tensor(free, torch::kFloat32);
  g.scope_actions = MakeActionGrouping(graph, ActionGroups::kScope);
  g.chunk_actions = MakeActionGrouping(graph, ActionGroups::kChunks);
  g.roles = MakeRoleGrouping(graph, g.scope_actions);
  return g;
}

}  // namespace gosim::agents::learned::go
