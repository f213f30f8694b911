#include "agents/roles.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gosim::agents {

NodePartition MakeNodePartition(const graphs::Graph& graph, std::vector<int64_t> ids) {
  // Colocation followers take their leader's (the group's first member's) id.
  std::unordered_map<int32_t, int64_t> leader;
  for (size_t v = 0; v < ids.size(); ++v) {
    const int32_t colocation = graph.node(static_cast<graphs::NodeId>(v)).colocation;
    if (colocation < 0) continue;
    const auto [it, inserted] = leader.emplace(colocation, ids[v]);
    if (!inserted) ids[v] = it->second;
  }
  NodePartition out;
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
  out.id = std::move(ids);
  out.count = static_cast<int64_t>(out.first.size());
  return out;
}

NodePartition MakeScopeGroups(const graphs::Graph& graph) {
  const int64_t n = static_cast<int64_t>(graph.num_nodes());
  if (n == 0) return {};
  std::vector<int64_t> group(static_cast<size_t>(n), -1);  // provisional ids, renumbered below
  int64_t next = 0;
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
  return MakeNodePartition(graph, std::move(group));
}

NodePartition MakeRoleGroups(const graphs::Graph& graph, const NodePartition& groups, RoleKey key_kind) {
  const int64_t n = static_cast<int64_t>(graph.num_nodes());
  if (n == 0) return {};
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
  // Followers take their leader's role (MakeNodePartition), before the
  // spread over groups is judged.
  NodePartition followed = MakeNodePartition(graph, std::move(role));
  role = std::move(followed.id);
  // Keep the roles whose members lie in two or more groups.
  const bool by_node = groups.count == 0 || groups.id.size() != static_cast<size_t>(n);
  std::vector<int64_t> seen(static_cast<size_t>(followed.count), -1);  // a group of the members; -2: several
  for (int64_t v = 0; v < n; ++v) {
    const int64_t r = role[static_cast<size_t>(v)];
    if (r < 0) continue;
    const int64_t g = by_node ? v : groups.id[static_cast<size_t>(v)];
    int64_t& s = seen[static_cast<size_t>(r)];
    if (s == -1) {
      s = g;
    } else if (s != g) {
      s = -2;
    }
  }
  for (int64_t& r : role)
    if (r >= 0 && seen[static_cast<size_t>(r)] != -2) r = -1;
  // The kept roles in order of their first node (followers already follow).
  return MakeNodePartition(graph, std::move(role));
}

}  // namespace gosim::agents
