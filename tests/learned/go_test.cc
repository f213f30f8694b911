// Tests of GO (agents/learned/go/): the fusion eligibility of the inputs, the
// shapes and masks of every module, segment recurrence against a direct
// full-attention computation, the decoding into valid decisions, checkpoint
// round trips, zero-shot mode, option errors and a learning smoke test on a
// tiny graph whose best placement is known.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/train.h"
#include "agents/learned/go/go_agent.h"
#include "agents/learned/go/go_model.h"
#include "agents/learned/register.h"
#include "core/error.h"
#include "core/io.h"
#include "core/yaml.h"
#include "tests/agents/test_util.h"
#include "tests/learned/train_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using learned::go::GoActions;
using learned::go::GoGraph;
using learned::go::GoModelOptions;
using learned::go::GoOutput;
using learned::go::GoPolicy;
using learned::go::GoPolicyImpl;
using learned::go::RecurrentAttention;
using testing::Fixture;
using testing::IndependentChains;
using testing::MakeCluster;

std::unique_ptr<Agent> MakeGo(const std::string& yaml) {
  RegisterLearnedAgents();
  YAML::Node node = LoadYamlString(yaml, "test");
  YamlMap options = YamlMap::Root(node, "test");
  return MakeAgent("go", options);
}

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

GoModelOptions SmallModel() {
  GoModelOptions o;
  o.gnn.hidden = 16;
  o.gnn.op_embedding = 4;
  o.model = 16;
  o.heads = 2;
  o.layers = 1;
  o.segment = 4;
  o.max_relative = 8;
  o.max_devices = 4;
  o.priority_levels = 3;
  return o;
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

// w (a weight) -> x -> y -> g -> u, w -> g; u is w's optimizer update
// (same colocation group); g keeps x's scope, as gradient ops do.
graphs::Graph ScopedWithColocation() {
  graphs::GraphBuilder b("scoped");
  auto op = [&](const char* name, const char* scope, const char* group) {
    graphs::NodeSpec s = testing::Op(name, 1.0, 400, scope);
    s.colocation = group;
    return b.AddNode(s);
  };
  const int w = op("w", "enc/l1", "w");
  const int x = op("x", "enc/l1/mm", "");
  const int y = op("y", "dec/l1", "");
  const int g = op("g", "enc/l1/mm", "");
  const int u = op("u", "enc/l1", "w");
  b.AddEdge(w, x, 0);
  b.AddEdge(x, y, 0);
  b.AddEdge(y, g, 0);
  b.AddEdge(w, g, 0);
  b.AddEdge(g, u, 0);
  return b.Build();
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
  CHECK_THROWS_AS(MakeGo("{model: {action_groups: nodes}}"), ConfigError);
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
  // A role whose members share one action group is dropped too.
  groups.group = torch::tensor(std::vector<int64_t>{0, 0, 0, 0, 2, 3, 1, 1, 0}, torch::kInt64);
  const learned::go::RoleGrouping same = learned::go::MakeRoleGrouping(g, groups);
  CHECK(same.count == 0);
  CHECK(ToVector(same.role) == std::vector<int64_t>(9, 0));
  // The network inputs carry the roles across the scope groups.
  CHECK(learned::go::MakeGoGraph(IndependentChains(4, 6)).roles.count == 1);  // "chain_/op_"
  CHECK_THROWS_AS(MakeGo("{model: {role_moves: 2}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{model: {action_groups: chunks, role_moves: 2}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{model: {action_groups: scope, role_moves: -1}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{model: {action_groups: scope, role_calibration: true}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{role_sweep: -1}"), ConfigError);
}

TEST_CASE("GoPolicy: group-level placement draws one device per group from the pooled logits") {
  const graphs::Graph g = IndependentChains(4, 6);  // scope groups: the 4 chains
  const GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = SmallModel();
  options.action_groups = learned::go::ActionGroups::kScope;
  options.segment = 5;  // chains span segments
  torch::manual_seed(21);
  GoPolicy policy(options);
  CHECK(policy->Grouping(in) == &in.scope_actions);
  CHECK(policy->ActionsPerSample(in) == 24);  // priority and fusion still decide per node
  Rng rng(22);
  torch::NoGradGuard no_grad;
  const GoOutput out = policy->forward(in, 3, 64, GoPolicyImpl::Mode::kSample, &rng);
  REQUIRE(out.actions.device.sizes() == torch::IntArrayRef({64, 24}));
  CHECK(out.actions.device.max().item<int64_t>() < 3);  // device 3 masked
  for (int64_t c = 0; c < 4; ++c) {
    const torch::Tensor chain = out.actions.device.slice(1, 6 * c, 6 * c + 6);
    CHECK(torch::equal(chain, chain.select(1, 0).unsqueeze(1).expand({64, 6})));
  }
  CHECK(out.actions.device.select(1, 0).min().item<int64_t>() !=
        out.actions.device.select(1, 0).max().item<int64_t>());
  // The placement log-probability is the group's, at its first node; with
  // placement alone every other node adds 0 and each action's entropy is at
  // most log 3.
  options.priority = false;
  options.fusion = false;
  GoPolicy place_only(options);
  CHECK(place_only->ActionsPerSample(in) == 4);
  const GoOutput p = place_only->forward(in, 3, 16, GoPolicyImpl::Mode::kSample, &rng);
  const torch::Tensor firsts = torch::tensor(std::vector<int64_t>{0, 6, 12, 18});
  CHECK(p.log_prob.index_select(1, firsts).max().item<float>() < 0.0f);
  CHECK(p.log_prob.abs().sum().item<float>() ==
        doctest::Approx(p.log_prob.index_select(1, firsts).abs().sum().item<float>()));
  CHECK(p.entropy.max().item<float>() <= std::log(3.0f) + 1e-5f);
  // Given actions are re-scored; greedy is deterministic.
  const GoOutput again = place_only->forward(in, 3, 16, GoPolicyImpl::Mode::kGiven, nullptr, &p.actions);
  CHECK(torch::allclose(again.log_prob, p.log_prob, 1e-5, 1e-6));
  const GoOutput g1 = place_only->forward(in, 3, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  const GoOutput g2 = place_only->forward(in, 3, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  CHECK(torch::equal(g1.actions.device, g2.actions.device));
}

// Placement alone, one device per scope group, segments of 5 (the chains
// of IndependentChains(4, 6) span segments).
GoModelOptions GroupPlacementModel() {
  GoModelOptions options = SmallModel();
  options.action_groups = learned::go::ActionGroups::kScope;
  options.segment = 5;
  options.priority = false;
  options.fusion = false;
  return options;
}

TEST_CASE("GoPolicy: node moves let single nodes leave their group's device, scored given the group") {
  const graphs::Graph g = IndependentChains(4, 6);  // scope groups: the 4 chains
  const GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = GroupPlacementModel();
  options.node_moves = 3.0;  // about 3 of the 24 nodes move per decision
  torch::manual_seed(23);
  GoPolicy policy(options);
  CHECK(policy->ActionsPerSample(in) == 24);  // every node decides
  Rng rng(24);
  torch::NoGradGuard no_grad;
  const GoOutput out = policy->forward(in, 3, 256, GoPolicyImpl::Mode::kSample, &rng);
  REQUIRE(out.actions.group.sizes() == torch::IntArrayRef({256, 4}));
  CHECK(out.actions.device.max().item<int64_t>() < 3);
  const torch::Tensor home = out.actions.group.repeat_interleave(6, 1);  // chain c = nodes 6c .. 6c+5
  const double moved = (out.actions.device != home).sum().item<double>() / 256.0;
  MESSAGE("nodes moved per decision: ", moved);
  CHECK(moved > 1.0);
  CHECK(moved < 8.0);
  // Every node's choice counts (given its group's device), not only the
  // group's first node.
  CHECK(out.log_prob.slice(1, 1, 6).abs().sum().item<float>() > 0.0f);
  const GoOutput again = policy->forward(in, 3, 256, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
  CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
  CHECK(torch::equal(again.actions.device, out.actions.device));
  // Greedy: nodes stay with their group unless their own logits beat the
  // stickiness.
  const GoOutput greedy = policy->forward(in, 3, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  CHECK(torch::equal(greedy.actions.device, greedy.actions.group.repeat_interleave(6, 1)));
  // One device: nothing to move to.
  const GoOutput single = policy->forward(in, 1, 4, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(single.actions.device.max().item<int64_t>() == 0);
}

TEST_CASE("GoPolicy: role moves send a role's members, across groups, to one device or leave them") {
  const graphs::Graph g = IndependentChains(4, 6);  // scope groups: the 4 chains; one role across them
  const GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = GroupPlacementModel();
  options.role_moves = 0.5;  // s = log(3 * 1 / 0.5): an untrained network moves the role about 1 time in 3
  torch::manual_seed(25);
  GoPolicy policy(options);
  REQUIRE(policy->Roles(in) == &in.roles);
  CHECK(policy->ActionsPerSample(in) == 5);  // 4 groups and 1 role
  Rng rng(26);
  torch::NoGradGuard no_grad;
  const GoOutput out = policy->forward(in, 3, 256, GoPolicyImpl::Mode::kSample, &rng);
  REQUIRE(out.actions.role.sizes() == torch::IntArrayRef({256, 1}));
  const torch::Tensor home = out.actions.group.repeat_interleave(6, 1);
  const torch::Tensor choice = out.actions.role.select(1, 0);
  CHECK(choice.max().item<int64_t>() == options.max_devices);  // "stay" is column max_devices
  const torch::Tensor stay = choice == options.max_devices;
  const torch::Tensor moved = stay.logical_not();
  CHECK(torch::equal(out.actions.device.index({stay}), home.index({stay})));
  CHECK(torch::equal(out.actions.device.index({moved}), choice.index({moved}).unsqueeze(1).expand({-1, 24})));
  CHECK(choice.index({moved}).max().item<int64_t>() < 3);  // device 3 masked
  const double fraction = moved.to(torch::kFloat).mean().item<double>();
  MESSAGE("role moved in ", fraction, " of the decisions");
  CHECK(fraction > 0.1);
  CHECK(fraction < 0.7);
  // The role's log-probability sits at its first node, with group 0's.
  const GoOutput again = policy->forward(in, 3, 256, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
  CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
  CHECK(torch::equal(again.actions.device, out.actions.device));
  // The same network without role moves scores the same groups differently.
  options.role_moves = 0.0;
  torch::manual_seed(25);
  GoPolicy groups_only(options);
  CHECK(!torch::allclose(
      groups_only->forward(in, 3, 256, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions).log_prob,
      out.log_prob));
  // Re-scoring without the role choices is refused; one device: nothing moves.
  GoActions without = out.actions;
  without.role = torch::Tensor();
  CHECK_THROWS_AS(policy->forward(in, 3, 256, GoPolicyImpl::Mode::kGiven, nullptr, &without), StateError);
  const GoOutput single = policy->forward(in, 1, 4, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(single.actions.device.max().item<int64_t>() == 0);
}

TEST_CASE("GoPolicy: calibrated role moves move a role k / R of the time however sure the network is") {
  const graphs::Graph g = IndependentChains(4, 6);  // scope groups: the 4 chains; one role across them
  GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = GroupPlacementModel();
  options.role_moves = 0.25;
  options.temperature = 0.5;
  torch::manual_seed(27);
  GoPolicy plain(options);
  options.role_calibration = true;
  torch::manual_seed(27);
  GoPolicy calibrated(options);
  // A network sure that everything belongs on device 1.
  for (GoPolicy* policy : {&plain, &calibrated}) {
    torch::NoGradGuard no_grad;
    for (auto& item : (*policy)->named_parameters())
      if (item.key() == "place_head.bias") item.value()[1] += 8.0F;
  }
  torch::NoGradGuard no_grad;
  constexpr int64_t kSamples = 4000;
  auto role_moves = [&](const GoOutput& out) {
    const torch::Tensor choice = out.actions.role.select(1, 0);
    return (choice != options.max_devices) & (choice != 1);  // a real move: off "stay" and off device 1
  };
  Rng rng(28);
  const GoOutput greedy = calibrated->forward(in, 3, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  REQUIRE(torch::equal(greedy.actions.device, torch::ones({1, 24}, torch::kInt64)));
  // The plain rule: the role's "stay" is as sure as its groups, so it
  // (almost) never moves.
  const GoOutput before = plain->forward(in, 3, kSamples, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(role_moves(before).to(torch::kFloat).mean().item<double>() < 0.01);
  // Calibrated from the greedy decision: one stickiness per role, and the
  // role moves with probability k / R = 0.25, never to device 1 where all
  // its members are.
  CHECK_THROWS_AS(calibrated->CalibrateRoles(&in, GoActions{}, 3), StateError);
  calibrated->CalibrateRoles(&in, greedy.actions, 3);
  REQUIRE(in.roles.stickiness.sizes() == torch::IntArrayRef({1}));
  const GoOutput out = calibrated->forward(in, 3, kSamples, GoPolicyImpl::Mode::kSample, &rng);
  REQUIRE(torch::equal(out.actions.group, torch::ones({kSamples, 4}, torch::kInt64)));
  const torch::Tensor choice = out.actions.role.select(1, 0);
  CHECK((choice == 1).sum().item<int64_t>() == 0);
  const double fraction = role_moves(out).to(torch::kFloat).mean().item<double>();
  MESSAGE("calibrated role moved in ", fraction, " of the decisions");
  CHECK(fraction == doctest::Approx(0.25).epsilon(0.2));
  const torch::Tensor moved = choice != options.max_devices;
  CHECK(torch::equal(out.actions.device.index({moved}), choice.index({moved}).unsqueeze(1).expand({-1, 24})));
  const GoOutput again =
      calibrated->forward(in, 3, kSamples, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
  CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
}

TEST_CASE("GoPolicy: role moves ranked from a placement, never to where a role's members all are") {
  const graphs::Graph g = IndependentChains(4, 6);  // one role across the 4 chains
  const GoGraph in = learned::go::MakeGoGraph(g);
  torch::manual_seed(29);
  GoPolicy policy(GroupPlacementModel());  // role moves off: the ranking does not need them
  const torch::Tensor home = torch::ones({1, 24}, torch::kInt64);
  const std::vector<GoPolicyImpl::RoleMove> moves = policy->RankRoleMoves(in, home, 3);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].role == 0);
  CHECK(moves[0].device != 1);  // all members are on device 1
  CHECK(moves[0].device < 3);   // device 3 of max_devices is not in the cluster
  CHECK(std::isfinite(moves[0].score));
  // The score is the best other device's pooled logit minus the members'
  // average logit for device 1: a bias for device 1 lowers it by as much.
  {
    torch::NoGradGuard no_grad;
    for (auto& item : policy->named_parameters())
      if (item.key() == "place_head.bias") item.value()[1] += 2.0F;
  }
  const std::vector<GoPolicyImpl::RoleMove> biased = policy->RankRoleMoves(in, home, 3);
  REQUIRE(biased.size() == 1);
  CHECK(biased[0].device == moves[0].device);
  CHECK(biased[0].score == doctest::Approx(moves[0].score - 2.0).epsilon(1e-4));
  CHECK(policy->RankRoleMoves(in, home, 1).empty());  // one device: nowhere to move
  CHECK_THROWS_AS(policy->RankRoleMoves(in, torch::ones({2, 24}, torch::kInt64), 3), StateError);
}

TEST_CASE("go role sweep: a moved role keeps its priorities and no fusion across devices") {
  const graphs::Graph g = IndependentChains(2, 3);  // c0: nodes 0 -> 1 -> 2; c1: 3 -> 4 -> 5
  GoGraph in = learned::go::MakeGoGraph(g);
  // One role by hand: node 1 alone; the others have none (= count).
  in.roles.role = torch::tensor({1, 0, 1, 1, 1, 1}, torch::kInt64);
  in.roles.count = 1;
  GoActions all;
  all.device = torch::zeros({2, 6}, torch::kInt64);
  all.priority = torch::full({2, 6}, 3, torch::kInt64);
  all.fuse = torch::ones({2, 6}, torch::kInt64);  // every chain fused into one kernel
  const GoActions moved = learned::go::MoveRole(in, all, 0, 2);
  CHECK(torch::equal(moved.device, torch::tensor({0, 2, 0, 0, 0, 0}, torch::kInt64).unsqueeze(0)));
  CHECK(torch::equal(moved.priority, all.priority.slice(0, 0, 1)));
  // Node 1 left its producer's device and node 2 its producer's: unfused;
  // chain c1 stays fused.
  CHECK(torch::equal(moved.fuse, torch::tensor({1, 0, 0, 1, 1, 1}, torch::kInt64).unsqueeze(0)));
  CHECK_NOTHROW(sim::ValidateDecision(learned::go::DecodeDecision(in, moved, 0), g, MakeCluster(4)));
  // Without the unfusing the decision would be refused.
  GoActions kept = moved;
  kept.fuse = all.fuse.slice(0, 0, 1);
  CHECK_THROWS(sim::ValidateDecision(learned::go::DecodeDecision(in, kept, 0), g, MakeCluster(4)));
}

TEST_CASE("GoPolicy: a temperature below 1 samples closer to the greedy decision, scored as sampled") {
  const graphs::Graph g = IndependentChains(4, 6);
  const GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = GroupPlacementModel();
  auto agreement = [&](double temperature, uint64_t seed) {
    options.temperature = temperature;
    torch::manual_seed(27);  // the same network for every temperature
    GoPolicy policy(options);
    Rng rng(seed);
    torch::NoGradGuard no_grad;
    const GoOutput greedy = policy->forward(in, 3, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
    const GoOutput out = policy->forward(in, 3, 256, GoPolicyImpl::Mode::kSample, &rng);
    const GoOutput again = policy->forward(in, 3, 256, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
    CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
    return (out.actions.group == greedy.actions.group).to(torch::kFloat).mean().item<double>();
  };
  const double hot = agreement(1.0, 28);
  const double cold = agreement(0.01, 28);
  MESSAGE("groups on their greedy device: ", hot, " at temperature 1, ", cold, " at 0.01");
  CHECK(cold > hot);
  CHECK(cold > 0.75);  // an untrained network's pooled logits differ little
  CHECK_THROWS_AS(MakeGo("{model: {temperature: 0}}"), ConfigError);
}

TEST_CASE("GoPolicy: colocation followers take their leader's device and add no log-probability") {
  const graphs::Graph g = ScopedWithColocation();
  const GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = SmallModel();
  options.priority = false;
  options.fusion = false;
  options.segment = 2;  // the leader (node 0) sits in an earlier segment than its follower (node 4)
  torch::manual_seed(8);
  GoPolicy policy(options);
  Rng rng(9);
  torch::NoGradGuard no_grad;
  const GoOutput out = policy->forward(in, 4, 32, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(torch::equal(out.actions.device.select(1, 4), out.actions.device.select(1, 0)));
  CHECK(out.actions.device.select(1, 0).min().item<int64_t>() !=
        out.actions.device.select(1, 0).max().item<int64_t>());  // the leader's device does vary
  CHECK(out.log_prob.select(1, 4).abs().max().item<float>() == 0.0f);
  CHECK(out.entropy.select(1, 4).abs().max().item<float>() == 0.0f);
  CHECK(out.log_prob.select(1, 0).abs().min().item<float>() > 0.0f);
  const GoOutput again = policy->forward(in, 4, 32, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
  CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
  // Off: every node decides for itself.
  options.colocate = false;
  GoPolicy free(options);
  const GoOutput loose = free->forward(in, 4, 32, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(loose.log_prob.select(1, 4).abs().min().item<float>() > 0.0f);
}

TEST_CASE("GoPolicy: noisy exploration draws one perturbation per sample and re-scores under it") {
  const graphs::Graph g = IndependentChains(3, 5);
  const GoGraph in = learned::go::MakeGoGraph(g);
  GoModelOptions options = SmallModel();
  options.exploration_noise = 2.0;
  torch::manual_seed(10);
  GoPolicy policy(options);
  CHECK(policy->exploration_noise() == doctest::Approx(2.0));
  Rng rng(11);
  torch::NoGradGuard no_grad;
  const GoOutput out = policy->forward(in, 3, 6, GoPolicyImpl::Mode::kSample, &rng);
  REQUIRE(out.actions.place_noise.defined());
  CHECK(out.actions.place_noise.sizes() == torch::IntArrayRef({6, 4, policy->NoiseWidth(in)}));
  // State, 4 positions x 7 features (3 frequencies), a bias, 3 chains + 15 ops as scope groups.
  CHECK(policy->NoiseWidth(in) == options.model + learned::go::kGoPositions * 7 + 1 + 3 + 15);
  CHECK(out.actions.device.max().item<int64_t>() < 3);
  const GoOutput again = policy->forward(in, 3, 6, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
  CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
  // Other noise gives other log-probabilities for the same actions.
  GoActions other = out.actions;
  other.place_noise = torch::randn_like(out.actions.place_noise);
  const GoOutput moved = policy->forward(in, 3, 6, GoPolicyImpl::Mode::kGiven, nullptr, &other);
  CHECK(!torch::allclose(moved.log_prob, out.log_prob, 1e-3, 1e-4));
  GoActions bare = out.actions;
  bare.place_noise = torch::Tensor();
  CHECK_THROWS_AS(policy->forward(in, 3, 6, GoPolicyImpl::Mode::kGiven, nullptr, &bare), StateError);
  // Greedy decisions use the noise-free network.
  const GoOutput g1 = policy->forward(in, 3, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  CHECK(!g1.actions.place_noise.defined());
  // Noise is a property of the network, kept by its signature.
  const GoModelOptions back = learned::go::ModelOptionsFromSignature(options.Signature(), "test");
  CHECK(back.exploration_noise > 0.0);
  CHECK(back.Signature() == options.Signature());
  CHECK(learned::go::ModelOptionsFromSignature(SmallModel().Signature(), "test").exploration_noise == 0.0);
  CHECK_THROWS_AS(learned::go::ModelOptionsFromSignature("go/v1:model=3", "test"), StateError);
}

TEST_CASE("RecurrentAttention: shapes, causal mask over segment and memory, weights sum to one") {
  torch::manual_seed(1);
  RecurrentAttention layer(8, 2, 6);
  const torch::Tensor x = torch::randn({3, 4, 8});
  const torch::Tensor memory = torch::randn({3, 5, 8});
  const torch::Tensor out = layer->forward(x, memory, torch::Tensor(), torch::Tensor());
  CHECK(out.sizes() == torch::IntArrayRef({3, 4, 8}));
  const torch::Tensor w = layer->AttentionWeights(x, memory);
  REQUIRE(w.sizes() == torch::IntArrayRef({3, 2, 4, 9}));
  CHECK(torch::allclose(w.sum(-1), torch::ones({3, 2, 4})));
  for (int64_t i = 0; i < 4; ++i) {
    // Query i sits at position 5 + i: every memory key and segment keys <= i are visible.
    CHECK(w.select(2, i).slice(-1, 0, 5 + i + 1).min().item<float>() > 0.0f);
    if (5 + i + 1 < 9) CHECK(w.select(2, i).slice(-1, 5 + i + 1, 9).abs().max().item<float>() == 0.0f);
  }
  // FiLM: gamma = 0, beta = 0 switches both sublayers off (the residual stays).
  const torch::Tensor zeros = torch::zeros({3, 2, 8});
  CHECK(torch::allclose(layer->forward(x, memory, zeros, zeros), x));
}

// The output of `layer` computed node by node, causal full attention over
// the whole sequence, straight from the layer's parameters.
torch::Tensor DirectFullAttention(RecurrentAttention& layer, const torch::Tensor& x, int64_t heads) {
  auto p = layer->named_parameters();
  const int64_t n = x.size(1), d = x.size(2), dh = d / heads;
  const auto norm = [&](const torch::Tensor& t, const std::string& name) {
    return torch::layer_norm(t, {d}, p[name + ".weight"], p[name + ".bias"]);
  };
  const torch::Tensor h = norm(x[0], "norm1");
  const torch::Tensor qkv = torch::matmul(h, p["qkv.weight"].t()) + p["qkv.bias"];
  const torch::Tensor bias = p["relative_bias"];
  const int64_t r = bias.size(1);
  std::vector<torch::Tensor> rows;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<torch::Tensor> head_out;
    for (int64_t hd = 0; hd < heads; ++hd) {
      const torch::Tensor q = qkv[i].slice(0, hd * dh, (hd + 1) * dh);
      std::vector<double> scores;
      for (int64_t j = 0; j <= i; ++j) {
        const torch::Tensor k = qkv[j].slice(0, d + hd * dh, d + (hd + 1) * dh);
        scores.push_back((q * k).sum().item<double>() / std::sqrt(static_cast<double>(dh)) +
                         bias[hd][std::min(i - j, r - 1)].item<double>());
      }
      double top = scores[0];
      for (double s : scores) top = std::max(top, s);
      double total = 0.0;
      for (double& s : scores) total += (s = std::exp(s - top));
      torch::Tensor acc = torch::zeros({dh});
      for (int64_t j = 0; j <= i; ++j) {
        acc = acc + qkv[j].slice(0, 2 * d + hd * dh, 2 * d + (hd + 1) * dh) *
                        (scores[static_cast<size_t>(j)] / total);
      }
      head_out.push_back(acc);
    }
    rows.push_back(torch::cat(head_out));
  }
  const torch::Tensor attended = torch::matmul(torch::stack(rows), p["out.weight"].t()) + p["out.bias"];
  const torch::Tensor mid = x[0] + attended;
  const torch::Tensor ff =
      torch::matmul(torch::relu(torch::matmul(norm(mid, "norm2"), p["ff1.weight"].t()) + p["ff1.bias"]),
                    p["ff2.weight"].t()) +
      p["ff2.bias"];
  return (mid + ff).unsqueeze(0);
}

TEST_CASE("segment recurrence equals full attention when one segment covers the graph") {
  torch::manual_seed(2);
  RecurrentAttention layer(8, 2, 4);  // distances >= 3 share one bias: the clamp is exercised
  {
    torch::NoGradGuard no_grad;
    for (auto& p : layer->parameters()) p.normal_(0.0, 0.5);
  }
  const torch::Tensor x = torch::randn({1, 10, 8});
  const torch::Tensor direct = DirectFullAttention(layer, x, 2);
  CHECK(torch::allclose(learned::go::RunSegmented(layer, x, 10, {}, {}), direct, 1e-4, 1e-5));
  CHECK(torch::allclose(learned::go::RunSegmented(layer, x, 1000, {}, {}), direct, 1e-4, 1e-5));

  // Shorter segments: the first segment is unchanged, the second sees only
  // the previous segment (Transformer-XL memory), and no gradient flows
  // into the memory.
  const torch::Tensor xg = x.clone().requires_grad_(true);
  const torch::Tensor seg = learned::go::RunSegmented(layer, xg, 4, {}, {});
  CHECK(seg.sizes() == x.sizes());
  CHECK(torch::allclose(seg.slice(1, 0, 4), direct.slice(1, 0, 4), 1e-4, 1e-5));
  const torch::Tensor second = layer->forward(x.slice(1, 4, 8), x.slice(1, 0, 4), {}, {});
  CHECK(torch::allclose(seg.slice(1, 4, 8), second, 1e-5, 1e-6));
  seg.slice(1, 8, 10).sum().backward();
  CHECK(xg.grad().slice(1, 0, 8).abs().max().item<float>() == 0.0f);
  CHECK(xg.grad().slice(1, 8, 10).abs().max().item<float>() > 0.0f);
}

TEST_CASE("GoPolicy: shapes, device and fusion masks, greedy determinism, given actions re-scored") {
  const graphs::Graph g = IndependentChains(3, 5);
  const GoGraph in = learned::go::MakeGoGraph(g);
  torch::manual_seed(3);
  GoPolicy policy(SmallModel());
  Rng rng(7);
  torch::NoGradGuard no_grad;
  const GoOutput out = policy->forward(in, 2, 6, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(out.actions.device.sizes() == torch::IntArrayRef({6, 15}));
  CHECK(out.actions.priority.sizes() == torch::IntArrayRef({6, 15}));
  CHECK(out.actions.fuse.sizes() == torch::IntArrayRef({6, 15}));
  CHECK(out.log_prob.sizes() == torch::IntArrayRef({6, 15}));
  CHECK(out.entropy.sizes() == torch::IntArrayRef({6, 15}));
  CHECK(out.value.sizes() == torch::IntArrayRef({6}));
  CHECK(torch::isfinite(out.log_prob).all().item<bool>());
  CHECK(out.actions.device.max().item<int64_t>() < 2);  // devices 2 and 3 of max_devices 4 are masked
  CHECK(out.actions.device.min().item<int64_t>() >= 0);
  CHECK(out.actions.priority.max().item<int64_t>() < 3);
  // Fusion only where eligible (not the chain heads) and on the producer's device.
  const torch::Tensor fused = out.actions.fuse.to(torch::kBool);
  CHECK((fused & in.fuse_eligible.logical_not().unsqueeze(0)).sum().item<int64_t>() == 0);
  const torch::Tensor producer_device = out.actions.device.index_select(1, in.fuse_src);
  CHECK((fused & (producer_device != out.actions.device)).sum().item<int64_t>() == 0);
  // Every sampled decision is valid for the simulator.
  const sim::Cluster cluster = MakeCluster(2);
  for (int64_t i = 0; i < 6; ++i) {
    const sim::Decision d = learned::go::DecodeDecision(in, out.actions, i);
    CHECK_NOTHROW(sim::ValidateDecision(d, g, cluster));
    CHECK(d.priority.size() == 15);
  }
  // Re-scoring the sampled actions reproduces their log-probabilities.
  const GoOutput again = policy->forward(in, 2, 6, GoPolicyImpl::Mode::kGiven, nullptr, &out.actions);
  CHECK(torch::allclose(again.log_prob, out.log_prob, 1e-5, 1e-6));
  const GoOutput g1 = policy->forward(in, 2, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  const GoOutput g2 = policy->forward(in, 2, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  CHECK(torch::equal(g1.actions.device, g2.actions.device));
  CHECK_THROWS_AS(policy->forward(in, 5, 1, GoPolicyImpl::Mode::kGreedy, nullptr), ConfigError);

  // Placement only (GDP-style): the other heads are off.
  GoModelOptions placement_only = SmallModel();
  placement_only.priority = false;
  placement_only.fusion = false;
  GoPolicy gdp(placement_only);
  const GoOutput p = gdp->forward(in, 2, 2, GoPolicyImpl::Mode::kSample, &rng);
  CHECK(!p.actions.priority.defined());
  CHECK(!p.actions.fuse.defined());
  const sim::Decision d = learned::go::DecodeDecision(in, p.actions, 0);
  CHECK(!d.has_priority());
  CHECK(!d.has_fusion());
}

TEST_CASE("BackwardBySegment: the gradients of back-propagating the whole loss, one segment at a time") {
  // 15 nodes, segments of 4: 4 segments; the scope groups (chains) span segments.
  const graphs::Graph g = IndependentChains(3, 5);
  const GoGraph in = learned::go::MakeGoGraph(g);
  struct Setting {
    double noise;
    learned::go::ActionGroups groups;
    double moves;
    double role_moves = 0.0;
  };
  for (const Setting& setting : std::vector<Setting>{{0.0, learned::go::ActionGroups::kNone, 0.0},
                                                     {1.5, learned::go::ActionGroups::kNone, 0.0},
                                                     {0.0, learned::go::ActionGroups::kScope, 0.0},
                                                     {1.5, learned::go::ActionGroups::kChunks, 0.0},
                                                     {0.0, learned::go::ActionGroups::kScope, 4.0},
                                                     {1.5, learned::go::ActionGroups::kChunks, 4.0},
                                                     {0.0, learned::go::ActionGroups::kScope, 0.0, 0.5},
                                                     {1.5, learned::go::ActionGroups::kScope, 4.0, 0.5}}) {
    CAPTURE(setting.noise);
    CAPTURE(learned::go::ActionGroupsName(setting.groups));
    CAPTURE(setting.moves);
    CAPTURE(setting.role_moves);
    GoModelOptions options = SmallModel();
    options.exploration_noise = setting.noise;
    options.action_groups = setting.groups;
    options.node_moves = setting.moves;
    options.role_moves = setting.role_moves;
    torch::manual_seed(11);
    GoPolicy policy(options);
    Rng rng(12);
    GoOutput sampled;
    {
      torch::NoGradGuard no_grad;
      sampled = policy->forward(in, 3, 5, GoPolicyImpl::Mode::kSample, &rng);
    }
    const torch::Tensor weight = torch::randn({5, 15});  // a different weight per action
    const torch::Tensor target = torch::randn({5});
    auto grads = [&]() {
      std::vector<torch::Tensor> out;
      for (const torch::Tensor& p : policy->parameters()) {
        out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
        if (p.grad().defined()) p.mutable_grad().zero_();
      }
      return out;
    };
    const GoOutput full = policy->forward(in, 3, 5, GoPolicyImpl::Mode::kGiven, nullptr, &sampled.actions);
    CHECK(torch::allclose(full.log_prob, sampled.log_prob, 1e-5, 1e-6));
    const torch::Tensor whole =
        (full.log_prob * weight).sum() - 0.1 * full.entropy.sum() + (full.value - target).pow(2).mean();
    whole.backward();
    const std::vector<torch::Tensor> expected = grads();
    int segments = 0;
    const double total = policy->BackwardBySegment(
        in, 3, sampled.actions,
        [&](int64_t start, int64_t end, const torch::Tensor& log_prob, const torch::Tensor& entropy) {
          ++segments;
          CHECK(log_prob.sizes() == torch::IntArrayRef({5, end - start}));
          return (log_prob * weight.slice(1, start, end)).sum() - 0.1 * entropy.sum();
        },
        [&](const torch::Tensor& value) { return (value - target).pow(2).mean(); });
    CHECK(segments == 4);
    CHECK(total == doctest::Approx(whole.item<double>()).epsilon(1e-5));
    const std::vector<torch::Tensor> got = grads();
    REQUIRE(got.size() == expected.size());
    double largest = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(torch::allclose(got[i], expected[i], 1e-4, 1e-6));
      largest = std::max(largest, expected[i].abs().max().item<double>());
    }
    CHECK(largest > 0.0);  // the loss reaches the parameters
  }
}

TEST_CASE("GO checkpoints: save / load round trip and signature checks") {
  const std::string dir = (std::filesystem::temp_directory_path() / "gosim_go_test").string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/go.pt";
  const graphs::Graph g = IndependentChains(2, 4);
  const GoGraph in = learned::go::MakeGoGraph(g);
  const GoModelOptions options = SmallModel();
  torch::manual_seed(4);
  GoPolicy a(options);
  learned::TrainingState state;
  state.step = 12;
  state.scalars["evaluations"] = 96;
  learned::SaveCheckpoint(path, options.Signature(), *a, nullptr, state);
  const std::string signature = learned::ReadCheckpointSignature(path);
  CHECK(signature == options.Signature());
  const GoModelOptions back = learned::go::ModelOptionsFromSignature(signature, path);
  CHECK(back.Signature() == options.Signature());
  torch::manual_seed(5);
  GoPolicy b(back);
  const learned::TrainingState loaded = learned::LoadCheckpoint(path, signature, *b, nullptr);
  CHECK(loaded.step == 12);
  torch::NoGradGuard no_grad;
  const GoOutput oa = a->forward(in, 2, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  const GoOutput ob = b->forward(in, 2, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  CHECK(torch::allclose(oa.log_prob, ob.log_prob));
  CHECK(torch::equal(oa.actions.device, ob.actions.device));
  GoModelOptions other = options;
  other.model = 32;
  GoPolicy c(other);
  CHECK_THROWS_AS(learned::LoadCheckpoint(path, other.Signature(), *c, nullptr), StateError);
  CHECK_THROWS_AS(learned::go::ModelOptionsFromSignature("hidden=3", path), StateError);
  // The agent starts from the checkpoint.
  Fixture f(IndependentChains(2, 4), MakeCluster(2));
  auto agent = MakeGo("{checkpoint: '" + path + "', model: {segment: 4}}");
  const AgentResult r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 1, 1));
  CHECK(r.evaluations == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("go agents on concurrent threads give the results of running one after another (torch_lock.h)") {
  // parallel_cells runs cells on threads; LibTorch's BLAS (openblas-serial)
  // is not thread-safe, so without the lock concurrent GO runs corrupt each
  // other's matrix products now and then.
  const std::string options =
      "{heads: [placement], model: {segment: 64}, ppo: {samples: 16, epochs: 2, learning_rate: 0.01}}";
  auto run = [&](const Fixture& f, uint64_t seed) {
    return MakeGo(options)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 96, seed));
  };
  const Fixture a(IndependentChains(8, 30), MakeCluster(4));
  const Fixture b(IndependentChains(6, 40), MakeCluster(4));
  const AgentResult alone_a = run(a, 5);
  const AgentResult alone_b = run(b, 6);
  for (int round = 0; round < 2; ++round) {
    AgentResult together_a, together_b;
    std::thread first([&] { together_a = run(a, 5); });
    std::thread second([&] { together_b = run(b, 6); });
    first.join();
    second.join();
    CHECK(together_a.best_objective == alone_a.best_objective);
    CHECK(together_b.best_objective == alone_b.best_objective);
    CHECK(together_a.extra.at("last_mean_cost") == alone_a.extra.at("last_mean_cost"));
    CHECK(together_b.extra.at("last_mean_cost") == alone_b.extra.at("last_mean_cost"));
  }
}

TEST_CASE("go agent: zero-shot is one forward pass and one evaluation; bad options are ConfigErrors") {
  Fixture f(IndependentChains(3, 4), MakeCluster(2));
  auto agent = MakeGo("{model: {gnn_hidden: 16, model: 16, attention_heads: 2, layers: 1}}");
  const AgentResult r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 0, 1));
  CHECK(r.evaluations == 1);
  CHECK(r.extra.at("ppo_steps") == 0);
  CHECK(r.best_objective == doctest::Approx(r.extra.at("zero_shot_objective")));
  CHECK_THROWS_AS(MakeGo("{heads: [priority]}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{heads: [placement, sched]}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{model: {model: 10, attention_heads: 4}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{ppo: {clip: -1}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{modle: {}}"), ConfigError);
  CHECK_THROWS_AS(MakeGo("{model: {node_moves: 2}}"), ConfigError);  // needs action groups
  CHECK_THROWS_AS(MakeGo("{model: {action_groups: scope, node_moves: -1}}"), ConfigError);
  auto missing = MakeGo("{checkpoint: /nonexistent/go.pt}");
  CHECK_THROWS_AS(missing->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 0, 1)), IoError);
}

// The learning curve of a GO run in the test log: mean sampled step time of
// the first and last PPO step (x the zero-shot decision), best and zero-shot.
void ReportLearning(const char* label, const AgentResult& r) {
  MESSAGE(std::string(label), " mean step time (x zero-shot), first step ", r.extra.at("first_mean_cost"),
          ", last step ", r.extra.at("last_mean_cost"), "; best ", r.best_objective, " s, zero-shot ",
          r.extra.at("zero_shot_objective"), " s");
}

// One chain of 8 ops (1 ms each) on 2 devices whose transfers cost 1 ms of
// latency: the best decision keeps the chain on one device, 8 ms; a random
// per-node placement pays about 3.5 ms of transfers. (On 4 chains, where the
// optimum needs whole chains dealt 2 and 2, GO's per-node heads did not
// improve their mean within a test-sized budget; see docs/RESULTS.md.)
TEST_CASE("go learns: PPO lowers the mean step time and finds the 8 ms decision") {
  Fixture f(IndependentChains(1, 8), MakeCluster(2, int64_t{1} << 34, 1e10, 1e-3));
  auto agent = MakeGo(
      "{heads: [placement], model: {gnn_hidden: 32, model: 32, attention_heads: 2, layers: 1, segment: 8},"
      " ppo: {samples: 16, epochs: 4, learning_rate: 0.03, entropy_weight: 0.001}}");
  const AgentResult r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 481, 3));
  CHECK(r.evaluations == 481);
  CHECK(r.extra.at("ppo_steps") == 30);
  ReportLearning("go", r);
  CHECK(r.extra.at("last_mean_cost") < 0.9 * r.extra.at("first_mean_cost"));
  CHECK(r.best_objective == doctest::Approx(0.008).epsilon(1e-6));
}

// 4 independent chains of 6 ops on 2 devices with 1 ms transfer latency:
// the best decision deals whole chains 2 and 2 (12 ms). Per-node sampling
// did not learn this within a test-sized budget (docs/RESULTS.md); with the
// per-sample structured noise a sample moves whole scope groups (chains),
// and PPO raises the probability of the good splits.
TEST_CASE("go learns with structured exploration noise: whole chains dealt 2 and 2") {
  Fixture f(IndependentChains(4, 6), MakeCluster(2, int64_t{1} << 34, 1e10, 1e-3));
  auto agent = MakeGo(
      "{heads: [placement], model: {gnn_hidden: 16, op_embedding: 4, model: 16, attention_heads: 2, layers: "
      "1,"
      " segment: 24, exploration_noise: 1.0}, ppo: {samples: 16, epochs: 2, learning_rate: 0.03}}");
  const AgentResult r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 321, 5));
  CHECK(r.extra.at("ppo_steps") == 20);
  ReportLearning("go (noise)", r);
  CHECK(r.best_objective == doctest::Approx(0.012).epsilon(1e-6));
  CHECK(r.extra.at("last_mean_cost") < 0.9 * r.extra.at("first_mean_cost"));
}

// The same 4 chains with group-level placement (one device per chain, no
// noise): a genuine categorical per chain, so PPO's gradient does not
// saturate and the mean sampled step time falls clearly.
TEST_CASE("go learns with group-level placement: whole chains dealt 2 and 2") {
  Fixture f(IndependentChains(4, 6), MakeCluster(2, int64_t{1} << 34, 1e10, 1e-3));
  auto agent = MakeGo(
      "{heads: [placement], model: {gnn_hidden: 16, op_embedding: 4, model: 16, attention_heads: 2, layers: "
      "1, segment: 24, action_groups: scope}, ppo: {samples: 16, epochs: 2, learning_rate: 0.03}}");
  const AgentResult r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 321, 5));
  CHECK(r.extra.at("ppo_steps") == 20);
  CHECK(r.extra.at("action_groups") == 4);
  ReportLearning("go (groups)", r);
  CHECK(r.best_objective == doctest::Approx(0.012).epsilon(1e-6));
  CHECK(r.extra.at("last_mean_cost") < 0.8 * r.extra.at("first_mean_cost"));
}

// A fork a -> {b, c} -> d in one scope ("block"), b and c 10 ms each, on 2
// devices with 1 ms transfer latency. One device per group runs it in 22
// ms; the best decision overlaps b and c: one branch with a (or d) on the
// other device, 13 ms. Group actions cannot express that; node moves can,
// and PPO learns to move.
TEST_CASE("go learns with node moves: one op leaves its group") {
  graphs::GraphBuilder b("fork");
  const int a = b.AddNode(testing::Op("a", 1.0, 4, "block/a"));
  const int x = b.AddNode(testing::Op("b", 10.0, 4, "block/b"));
  const int y = b.AddNode(testing::Op("c", 10.0, 4, "block/c"));
  const int d = b.AddNode(testing::Op("d", 1.0, 4, "block/d"));
  b.AddEdge(a, x, 0);
  b.AddEdge(a, y, 0);
  b.AddEdge(x, d, 0);
  b.AddEdge(y, d, 0);
  Fixture f(b.Build(), MakeCluster(2, int64_t{1} << 34, 1e10, 1e-3));
  const std::string model =
      "{heads: [placement], model: {gnn_hidden: 16, op_embedding: 4, model: 16, attention_heads: 2, layers: "
      "1, "
      "segment: 4, action_groups: scope";
  const std::string ppo = "}, ppo: {samples: 16, epochs: 2, learning_rate: 0.03}}";
  const AgentResult groups = MakeGo(model + ppo)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 161, 7));
  CHECK(groups.best_objective == doctest::Approx(0.022).epsilon(1e-6));
  const AgentResult moves =
      MakeGo(model + ", node_moves: 1" + ppo)->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 161, 7));
  ReportLearning("go (node moves)", moves);
  CHECK(moves.best_objective == doctest::Approx(0.013).epsilon(1e-6));
  CHECK(moves.extra.at("last_mean_cost") < 0.8 * moves.extra.at("first_mean_cost"));
}

// `gosim train` with agent go on a suite of two small train graphs; `cluster`
// is one preset or a list. In `dir`/run.
learned::TrainRequest GoTrainRequest(const std::string& dir, const std::string& cluster, int64_t steps) {
  return testing::MakeTrainRequest(
      dir,
      "name: two\ngraphs:\n"
      "  - {name: g1, generator: regal_random, params: {nodes: 30, seed: 5}, split: train}\n"
      "  - {name: g2, generator: regal_random, params: {nodes: 40, seed: 6}, split: train}\n",
      "agent: go\ncluster: " + cluster + "\nsteps: " + std::to_string(steps) +
          "\ncheckpoint_every: 2\nseed: 3\nheads: [placement]\n"
          "model: {gnn_hidden: 8, op_embedding: 4, model: 8, attention_heads: 2, layers: 1, "
          "segment: 16, action_groups: scope}\nppo: {samples: 4, epochs: 1}\n",
      "go_train_config");
}

TEST_CASE("go pre-training: round robin over graphs x clusters, checkpoints, exact resume, bad clusters") {
  RegisterLearnedAgents();
  const std::string base = (std::filesystem::temp_directory_path() / "gosim_go_train").string();
  // Two clusters of 2 and 4 devices: 4 training items, each graph on each.
  const learned::TrainRequest uninterrupted = GoTrainRequest(base + "_a", "[k80x2, p100x4_pcie]", 6);
  learned::RunTraining(uninterrupted);
  // Killed after step 3 (the last checkpoint is step 2), then resumed.
  const learned::TrainRequest resumed = testing::KillAndResume(
      GoTrainRequest(base + "_b", "[k80x2, p100x4_pcie]", 6), 3, [](const learned::TrainRequest&) {});
  REQUIRE(testing::CompareCurves(uninterrupted, resumed, 6) == "");
  const auto curve = learned::TrainingCurves::Read(uninterrupted.run_dir + "/curves.csv");
  for (size_t i = 0; i < curve.size(); ++i) {
    CHECK(curve[i].extra.at(0) == static_cast<double>(i % 4));  // the training item of the step
    CHECK(curve[i].evaluations == 4 * curve[i].step);
  }
  // The checkpoint fine-tunes on either cluster's device count.
  Fixture f(IndependentChains(2, 4), MakeCluster(4));
  auto agent = MakeGo("{checkpoint: " + uninterrupted.run_dir +
                      "/checkpoint.pt, heads: [placement], model: {segment: 16, action_groups: scope}}");
  CHECK(agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 9, 1)).evaluations == 9);
  // Fine-tuning with calibrated role moves (calibrated on the zero-shot pass).
  auto calibrated = MakeGo("{checkpoint: " + uninterrupted.run_dir +
                           "/checkpoint.pt, heads: [placement], model: {segment: 16, action_groups: scope, "
                           "role_moves: 1, role_calibration: true}}");
  const AgentResult tuned = calibrated->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 9, 1));
  CHECK(tuned.evaluations == 9);
  CHECK(tuned.extra.at("role_groups") >= 1.0);
  CHECK(tuned.extra.at("first_mean_cost") > 0.0);  // mean cost of the first and last PPO batches
  CHECK(tuned.extra.at("last_mean_cost") > 0.0);
  // The role sweep: one evaluation per role (here one), from the budget.
  auto sweeping = MakeGo("{checkpoint: " + uninterrupted.run_dir +
                         "/checkpoint.pt, heads: [placement], role_sweep: 8, model: {segment: 16, "
                         "action_groups: scope}}");
  const AgentResult swept = sweeping->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 9, 1));
  CHECK(swept.evaluations == 9);
  CHECK(swept.extra.at("role_sweep_evaluations") == 1.0);
  CHECK(swept.extra.at("role_sweep_best_objective") <= swept.extra.at("zero_shot_objective"));
  CHECK(swept.best_objective <= swept.extra.at("role_sweep_best_objective"));
  // Pre-training has no graph to calibrate on: refused, with the fix.
  learned::TrainRequest calibrating = GoTrainRequest(base + "_f", "k80x2", 1);
  calibrating.config["model"]["role_moves"] = 1;
  calibrating.config["model"]["role_calibration"] = true;
  CHECK_THROWS_AS(learned::RunTraining(calibrating), ConfigError);
  // A single preset still works; an empty list or an unknown preset does not.
  learned::RunTraining(GoTrainRequest(base + "_c", "k80x2", 1));
  CHECK(learned::TrainingCurves::Read(base + "_c/run/curves.csv").size() == 1);
  CHECK_THROWS_AS(learned::RunTraining(GoTrainRequest(base + "_d", "[]", 1)), ConfigError);
  CHECK_THROWS_AS(learned::RunTraining(GoTrainRequest(base + "_e", "[k80x2, nope_cluster]", 1)), ConfigError);
}

}  // namespace
}  // namespace gosim::agents
