// GO's per-graph inputs, built once per graph (agents/learned/go/go_model.h
// describes how the network uses them): the GraphSAGE tensors, the fusion
// eligibility of every node, the position inputs, colocation leaders, the
// scope groups of the exploration noise, and the partitions of the nodes
// into action groups (scope groups, topological chunks) and role groups.
#ifndef GOSIM_AGENTS_LEARNED_GO_GO_GRAPH_H_
#define GOSIM_AGENTS_LEARNED_GO_GO_GRAPH_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agents/learned/common/gnn.h"
#include "agents/roles.h"
#include "graphs/graph.h"

namespace gosim::agents::learned::go {

using ::gosim::agents::RoleKey;

// How placement decisions are grouped (a runtime setting, not part of the
// checkpoint): per node (GO), per scope group, or per topological chunk.
enum class ActionGroups { kNone, kScope, kChunks };
// "none" / "scope" / "chunks"; ConfigError on another name.
ActionGroups ParseActionGroups(const std::string& name);
const char* ActionGroupsName(ActionGroups groups);

// Raw position inputs per node (see the header comment): topological
// position and the first positions of its scope prefixes at depths 1-3.
inline constexpr int64_t kGoPositions = 4;

// A partition of the nodes into action groups: group[v] in [0, count),
// numbered in order of their first node; first[g] is group g's first node
// (it carries the group's log-probability) and size[g] its node count.
struct ActionGrouping {
  torch::Tensor group;  // int64 [n]
  torch::Tensor first;  // int64 [count]
  torch::Tensor size;   // float [count]
  int64_t count = 0;
};

// Scope groups (agents/roles.h, MakeScopeGroups).
// Chunks: consecutive node ids (topological order), ceil(n / 64) each.
inline constexpr int64_t kChunkGroups = 64;
ActionGrouping MakeActionGrouping(const graphs::Graph& graph, ActionGroups kind);

// Role groups (for `role_moves` and the role sweep; agents/roles.h,
// MakeRoleGroups, which the `role_sweep` agent shares) across `groups`'
// action groups. role[v] in [0, count], count = no role; first[r] is role
// r's first node; size has count + 1 entries (the last: the number of
// role-less nodes, at least 1).
struct RoleGrouping {
  torch::Tensor role;   // int64 [n]
  torch::Tensor first;  // int64 [count]
  torch::Tensor size;   // float [count + 1]
  int64_t count = 0;
  // Per-role stickiness [count] (GoPolicyImpl::CalibrateRoles); undefined:
  // the one stickiness of the role_moves rule.
  torch::Tensor stickiness;
};
RoleGrouping MakeRoleGrouping(const graphs::Graph& graph, const ActionGrouping& groups,
                              RoleKey key = RoleKey::kScope);

// A graph's inputs to the network, built once per graph.
struct GoGraph {
  GraphTensors tensors;
  int64_t num_nodes = 0;
  // Fusion: producer of node v when the pair (producer, v) may be fused
  // (v has exactly one predecessor u and u exactly one successor v), else -1.
  std::vector<int64_t> fuse_producer;
  torch::Tensor fuse_eligible;  // bool [n]
  torch::Tensor fuse_src;       // int64 [n]: fuse_producer or the node itself
  torch::Tensor positions;      // float [n x kGoPositions], each in [0, 1]
  // Colocation: the group's first node (the node itself outside groups) and
  // 1 where a node decides its own placement (0 for the other members).
  torch::Tensor place_leader;  // int64 [n]
  torch::Tensor place_free;    // float [n]
  bool has_followers = false;
  // Scope groups for the exploration noise: the index (in order of first
  // appearance) of each node's scope prefix of 1 and of 2 components; nodes
  // without a scope share one group.
  torch::Tensor scope_group1;  // int64 [n]
  torch::Tensor scope_group2;  // int64 [n]
  int64_t num_scope_groups1 = 0;
  int64_t num_scope_groups2 = 0;
  // Action groups of both kinds (the policy's `action_groups` picks one).
  ActionGrouping scope_actions;
  ActionGrouping chunk_actions;
  // Role groups across the scope action groups (`role_moves`).
  RoleGrouping roles;
};
GoGraph MakeGoGraph(const graphs::Graph& graph);

}  // namespace gosim::agents::learned::go

#endif  // GOSIM_AGENTS_LEARNED_GO_GO_GRAPH_H_
