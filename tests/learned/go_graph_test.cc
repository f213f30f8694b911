// Tests of GO's per-graph inputs and groupings (agents/learned/go/go_graph.h):
// fusion eligibility, scope-prefix positions and colocation leaders, action
// groups (scope prefixes, chunks) and role groups.
#include <cstdint>
#include <string>
#include <vector>

#include "agents/learned/go/go_graph.h"
#include "agents/learned/go/go_model.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "tests/agents/test_util.h"
#include "tests/learned/go_test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using go_testing::MakeGoPaper;
using go_testing::ScopedWithColocation;
using learned::go::GoGraph;
using testing::IndependentChains;

// a -> b -> c, a -> d, c -> e, d -> e.
graphs::Graph Diamond() {
  graphs::GraphBuilder b("diamond");
  const int a = b.AddNode(testing::Op("a", 1.0, 400));
  const int bb = b.AddNode(testing::Op("b", 1.0, 400));
  const int c = b.AddNode(testing::Op("c", 1.0, 400));
  const int d = b.AddNode(testing::Op("d", 1.0, 400));
  const int e = b.AddNode(testing::Op("e", 1.0, 400));
  b.AddEdge(a, bb, 0);
  b.AddEdge(bb, c, 0);
  b.AddEdge(a, d, 0);
  b.AddEdge(c, e, 0);
  b.AddEdge(d, e, 0);
  return b.Build();
}

TEST_CASE("MakeGoGraph: a node may fuse with its producer only on a single-producer, single-consumer link") {
  const graphs::Graph g = Diamond();
  const GoGraph in = learned::go::MakeGoGraph(g);
  const auto id = [&](const char* name) { return static_cast<size_t>(*g.FindNode(name)); };
  CHECK(in.num_nodes == 5);
  CHECK(in.fuse_producer[id("a")] == -1);  // no producer
  CHECK(in.fuse_producer[id("b")] == -1);  // a has two consumers
  CHECK(in.fuse_producer[id("c")] == static_cast<int64_t>(id("b")));
  CHECK(in.fuse_producer[id("d")] == -1);
  CHECK(in.fuse_producer[id("e")] == -1);  // two producers
  CHECK(in.fuse_eligible.sum().item<int64_t>() == 1);
}

TEST_CASE("MakeGoGraph: scope-prefix positions and colocation leaders") {
  const graphs::Graph g = ScopedWithColocation();
  const GoGraph in = learned::go::MakeGoGraph(g);
  REQUIRE(in.positions.sizes() == torch::IntArrayRef({5, learned::go::kGoPositions}));
  const auto row = [&](const char* name) {
    const torch::Tensor r = in.positions[*g.FindNode(name)];
    return std::vector<float>(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
  };
  // Own position, then the first node of "enc" / "dec", "enc/l1" / "dec/l1", the full scope.
  CHECK(row("x") == std::vector<float>{0.25f, 0.0f, 0.0f, 0.25f});
  CHECK(row("y") == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
  CHECK(row("g") == std::vector<float>{0.75f, 0.0f, 0.0f, 0.25f});  // beside its forward op x
  CHECK(row("u") == std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f});
  CHECK(in.has_followers);
  CHECK(torch::equal(in.place_leader, torch::tensor(std::vector<int64_t>{0, 1, 2, 3, 0})));
  CHECK(torch::equal(in.place_free, torch::tensor(std::vector<float>{1, 1, 1, 1, 0})));
  CHECK(!learned::go::MakeGoGraph(IndependentChains(2, 3)).has_followers);
  // Scope groups: "enc" / "dec"; "enc/l1" / "dec/l1" (x's "enc/l1/mm" counts as "enc/l1").
  CHECK(in.num_scope_groups1 == 2);
  CHECK(in.num_scope_groups2 == 2);
  CHECK(torch::equal(in.scope_group1, torch::tensor(std::vector<int64_t>{0, 0, 1, 0, 0})));
  CHECK(torch::equal(in.scope_group2, torch::tensor(std::vector<int64_t>{0, 0, 1, 0, 0})));
}

// A chain of 40 ops: 0-17 in "net/l1", 18-35 in "net/l2/mm", 36-39 without a
// scope; 36 is colocated with 17.
graphs::Graph TwoLayersAndLoose() {
  graphs::GraphBuilder b("layers");
  int prev = -1;
  for (int i = 0; i < 40; ++i) {
    graphs::NodeSpec s = testing::Op("n" + std::to_string(i), 1.0, 400,
                                     i < 18   ? "net/l1"
                                     : i < 36 ? "net/l2/mm"
                                              : "");
    if (i == 17 || i == 36) s.colocation = "v";
    const int id = b.AddNode(s);
    if (prev >= 0) b.AddEdge(prev, id, 0);
    prev = id;
  }
  return b.Build();
}

std::vector<int64_t> ToVector(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST_CASE("action groups: scope prefixes refined while too large, runs, chunks, colocation") {
  using learned::go::ActionGroups;
  using learned::go::MakeActionGrouping;
  {
    // 5 nodes, at most 16 per group: "enc" and "dec".
    const learned::go::ActionGrouping a = MakeActionGrouping(ScopedWithColocation(), ActionGroups::kScope);
    CHECK(a.count == 2);
    CHECK(ToVector(a.group) == std::vector<int64_t>{0, 0, 1, 0, 0});
    CHECK(ToVector(a.first) == std::vector<int64_t>{0, 2});
    CHECK(torch::equal(a.size, torch::tensor(std::vector<float>{4, 1})));
  }
  {
    // 40 nodes, at most 16 per group: "net" (36) splits into "net/l1" and
    // "net/l2" (18 each); "net/l1" cannot be refined and is cut into runs
    // of 16 and 2, "net/l2" is refined to "net/l2/mm" (18), cut likewise;
    // the unscoped 37-39 form one run; 36 joins 17's group.
    const graphs::Graph g = TwoLayersAndLoose();
    const learned::go::ActionGrouping a = MakeActionGrouping(g, ActionGroups::kScope);
    std::vector<int64_t> expected(40);
    for (int i = 0; i < 40; ++i)
      expected[static_cast<size_t>(i)] = i < 16 ? 0 : i < 18 ? 1 : i < 34 ? 2 : i < 36 ? 3 : 4;
    expected[36] = 1;
    CHECK(a.count == 5);
    CHECK(ToVector(a.group) == expected);
    CHECK(ToVector(a.first) == std::vector<int64_t>{0, 16, 18, 34, 37});
    CHECK(a.size.sum().item<float>() == 40.0f);
    CHECK(a.size[1].item<float>() == 3.0f);
    // Chunks of ceil(40 / 64) = 1 node; the colocated pair shares one.
    const learned::go::ActionGrouping c = MakeActionGrouping(g, ActionGroups::kChunks);
    CHECK(c.count == 39);
    CHECK(c.group[36].item<int64_t>() == c.group[17].item<int64_t>());
    CHECK(MakeActionGrouping(g, ActionGroups::kNone).count == 0);
    // Both kinds come with the network inputs.
    const GoGraph in = learned::go::MakeGoGraph(g);
    CHECK(in.scope_actions.count == 5);
    CHECK(in.chunk_actions.count == 39);
  }
  CHECK(learned::go::ParseActionGroups("scope") == ActionGroups::kScope);
  CHECK_THROWS_AS(learned::go::ParseActionGroups("layers"), ConfigError);
  CHECK_THROWS_AS(MakeGoPaper("{model: {action_groups: nodes}}"), ConfigError);
}

TEST_CASE("role groups: one kind of op across the action groups, by direction, colocation followers") {
  // 0 w1 "net/l1" (colocation v), 1 x "net/l1/mm", 2 w2 "net/l2", 3 y
  // "net/l2/mm", 4 z "head/out", 5 loose (no scope), 6 gy and 7 gx (the
  // gradients of y and x), 8 u1 "opt/x" (colocated with w1).
  graphs::GraphBuilder b("roles");
  auto op = [&](const char* name, const char* scope, const char* group) {
    graphs::NodeSpec s = testing::Op(name, 1.0, 400, scope);
    s.colocation = group;
    return b.AddNode(s);
  };
  const std::vector<int> ids{op("w1", "net/l1", "v"),
                             op("x", "net/l1/mm", ""),
                             op("w2", "net/l2", ""),
                             op("y", "net/l2/mm", ""),
                             op("z", "head/out", ""),
                             op("loose", "", ""),
                             op("gradients/net/l2/mm_grad", "net/l2/mm", ""),
                             op("gradients/net/l1/mm_grad", "net/l1/mm", ""),
                             op("u1", "opt/x", "v")};
  for (size_t i = 1; i < ids.size(); ++i) b.AddEdge(ids[i - 1], ids[i], 0);
  const graphs::Graph g = b.Build();
  // Action groups: layer 1, layer 2, z, the loose node.
  learned::go::ActionGrouping groups;
  groups.group = torch::tensor(std::vector<int64_t>{0, 0, 1, 1, 2, 3, 1, 0, 0}, torch::kInt64);
  groups.count = 4;
  const learned::go::RoleGrouping r = learned::go::MakeRoleGrouping(g, groups);
  // Roles "f:net/l" (w1, w2 and w1's follower u1), "f:net/l/mm" (x, y),
  // "b:net/l/mm" (gy, gx); z's role has one member and is dropped.
  CHECK(r.count == 3);
  CHECK(ToVector(r.role) == std::vector<int64_t>{0, 1, 0, 1, 3, 3, 2, 2, 0});
  CHECK(ToVector(r.first) == std::vector<int64_t>{0, 1, 6});
  CHECK(torch::equal(r.size, torch::tensor(std::vector<float>{3, 2, 2, 2})));
  // Keyed by name: "f:w" (w1, w2 and w1's follower u1) and
  // "b:gradients/net/l/mm_grad" (gy, gx); x, y and z are alone in theirs,
  // and the loose node has no scope.
  const learned::go::RoleGrouping named =
      learned::go::MakeRoleGrouping(g, groups, learned::go::RoleKey::kName);
  CHECK(named.count == 2);
  CHECK(ToVector(named.role) == std::vector<int64_t>{0, 2, 0, 2, 2, 2, 1, 1, 0});
  CHECK(ToVector(named.first) == std::vector<int64_t>{0, 6});
  CHECK(torch::equal(named.size, torch::tensor(std::vector<float>{3, 2, 4})));
  // A role whose members share one action group is dropped too.
  groups.group = torch::tensor(std::vector<int64_t>{0, 0, 0, 0, 2, 3, 1, 1, 0}, torch::kInt64);
  const learned::go::RoleGrouping same = learned::go::MakeRoleGrouping(g, groups);
  CHECK(same.count == 0);
  CHECK(ToVector(same.role) == std::vector<int64_t>(9, 0));
  // The network inputs carry the roles across the scope groups.
  CHECK(learned::go::MakeGoGraph(IndependentChains(4, 6)).roles.count == 1);  // "chain_/op_"
  CHECK_THROWS_AS(MakeGoPaper("{model: {role_moves: 2}}"), ConfigError);
  CHECK_THROWS_AS(MakeGoPaper("{model: {action_groups: chunks, role_moves: 2}}"), ConfigError);
  CHECK_THROWS_AS(MakeGoPaper("{model: {action_groups: scope, role_moves: -1}}"), ConfigError);
  CHECK_THROWS_AS(MakeGoPaper("{model: {action_groups: scope, role_calibration: true}}"), ConfigError);
  CHECK_THROWS_AS(MakeGoPaper("{role_sweep: -1}"), ConfigError);
  CHECK_THROWS_AS(MakeGoPaper("{role_sweep: 4, role_sweep_by: names}"), ConfigError);
  CHECK_NOTHROW(MakeGoPaper("{role_sweep: 4, role_sweep_by: name}"));
}

// GO's scope groups and role groups are agents/roles.h's, so the
// role_sweep agent (no network) moves exactly the groups GO's sweep moves.
TEST_CASE("GO's action and role groups are the shared ones of agents/roles.h") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  const GoGraph in = learned::go::MakeGoGraph(nmt);
  const NodePartition scope = MakeScopeGroups(nmt);
  REQUIRE(scope.count > 4);
  CHECK(in.scope_actions.count == scope.count);
  CHECK(ToVector(in.scope_actions.group) == scope.id);
  for (const RoleKey key : {RoleKey::kScope, RoleKey::kName}) {
    const NodePartition roles = MakeRoleGroups(nmt, scope, key);
    const learned::go::RoleGrouping go =
        key == RoleKey::kScope ? in.roles : learned::go::MakeRoleGrouping(nmt, in.scope_actions, key);
    REQUIRE(roles.count > 2);
    CHECK(go.count == roles.count);
    std::vector<int64_t> expected = roles.id;
    for (int64_t& r : expected)
      if (r < 0) r = roles.count;
    CHECK(ToVector(go.role) == expected);
    CHECK(ToVector(go.first) == roles.first);
  }
}

}  // namespace
}  // namespace gosim::agents
