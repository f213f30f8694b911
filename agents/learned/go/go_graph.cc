#include "agents/learned/go/go_graph.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "agents/learned/common/features.h"
#include "core/error.h"

namespace gosim::agents::learned::go {

namespace {

ActionGrouping ToActionGrouping(const NodePartition& p) {
  ActionGrouping out;
  out.group = torch::tensor(p.id, torch::kInt64);
  out.first = torch::tensor(p.first, torch::kInt64);
  out.size = torch::tensor(p.size, torch::kFloat32);
  out.count = p.count;
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
  const int64_t n = static_cast<int64_t>(graph.num_nodes());
  if (kind == ActionGroups::kNone || n == 0) return {};
  if (kind == ActionGroups::kScope) return ToActionGrouping(MakeScopeGroups(graph));
  // Chunks: consecutive node ids (topological order).
  const int64_t chunk = std::max<int64_t>(1, (n + kChunkGroups - 1) / kChunkGroups);
  std::vector<int64_t> group(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) group[static_cast<size_t>(v)] = v / chunk;
  return ToActionGrouping(MakeNodePartition(graph, std::move(group)));
}

RoleGrouping MakeRoleGrouping(const graphs::Graph& graph, const ActionGrouping& groups, RoleKey key_kind) {
  RoleGrouping out;
  const int64_t n = static_cast<int64_t>(graph.num_nodes());
  if (n == 0) return out;
  NodePartition action;
  if (groups.count > 0) {
    const torch::Tensor g = groups.group.contiguous();
    action.id.assign(g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + g.numel());
    action.count = groups.count;
  }
  NodePartition roles = MakeRoleGroups(graph, action, key_kind);
  out.count = roles.count;
  // The role-less nodes are "role" count.
  const auto loose = static_cast<float>(std::count(roles.id.begin(), roles.id.end(), -1));
  for (int64_t& r : roles.id)
    if (r < 0) r = out.count;
  roles.size.push_back(std::max(loose, 1.0f));
  out.role = torch::tensor(roles.id, torch::kInt64);
  out.first = torch::tensor(roles.first, torch::kInt64);
  out.size = torch::tensor(roles.size, torch::kFloat32);
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
