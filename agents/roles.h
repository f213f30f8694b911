// Scope groups and role groups of a graph's nodes, shared by GO's action
// and role groups (agents/learned/go/go_graph.h) and by the `role_sweep`
// agent (agents/role_sweep.cc), so that the sweep without a network moves
// exactly the groups GO's sweep moves.
//
// Scope groups: a node's group is its scope prefix of 1 component, refined
// by the next component while a group has more than `max_size` nodes; a
// group that cannot be refined (members of exactly that scope) and is still
// too large is cut into runs of `max_size` members in topological order;
// the nodes without a scope are cut into such runs too. Colocation
// followers join their leader's group.
//
// Role groups: the ops that play one role in every repeated layer. A node's
// role is its direction (backward when its name starts with TensorFlow's
// "gradients/", else forward) and its scope with every run of digits
// removed, so the gradient ops of all of WaveNet's
// "dilated_stack/layer<i>/skip" convolutions share one role. Only roles
// whose members lie in two or more of the given groups are kept (a role
// inside one group adds nothing to that group's own decision); nodes
// without a scope, or of a dropped role, have no role. Colocation followers
// take their leader's role, so moving a role never splits a colocation
// group. With RoleKey::kName the key is the node's whole name with every
// run of digits removed instead of its scope: one op of each layer (e.g.
// one of a layer's attention gradients) rather than a whole sub-scope.
#ifndef GOSIM_AGENTS_ROLES_H_
#define GOSIM_AGENTS_ROLES_H_

#include <cstdint>
#include <vector>

#include "graphs/graph.h"

namespace gosim::agents {

// A partition of (some of) the nodes: id[v] in [0, count), numbered in
// order of their first node, or -1 for a node outside every part; first[p]
// is part p's first node and size[p] its node count.
struct NodePartition {
  std::vector<int64_t> id;
  std::vector<int64_t> first;
  std::vector<float> size;
  int64_t count = 0;
};

// `ids` (one per node, -1 = none) with colocation followers moved to their
// leader's (the group's first member's) id, renumbered in order of first
// appearance; parts left empty disappear.
NodePartition MakeNodePartition(const graphs::Graph& graph, std::vector<int64_t> ids);

// Scope groups (see above): max_size = max(ceil(n / 16), kScopeGroupMin).
inline constexpr int64_t kScopeGroupMin = 16;
NodePartition MakeScopeGroups(const graphs::Graph& graph);

// Role groups across `groups` (see above; an empty partition: every node
// its own group). Nodes without a role have id -1.
enum class RoleKey { kScope, kName };
NodePartition MakeRoleGroups(const graphs::Graph& graph, const NodePartition& groups,
                             RoleKey key = RoleKey::kScope);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_ROLES_H_
