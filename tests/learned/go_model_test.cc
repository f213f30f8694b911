// Tests of GO's network (agents/learned/go/go_model.h): the shapes and masks
// of every module, group-level placement, node and role moves, temperature,
// colocation and exploration noise, segment recurrence against a direct
// full-attention computation, the segment-by-segment backward pass, and
// checkpoint round trips.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/go/go_agent.h"
#include "agents/learned/go/go_model.h"
#include "core/error.h"
#include "core/io.h"
#include "tests/agents/test_util.h"
#include "tests/learned/go_test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using go_testing::MakeGoPaper;
using go_testing::ScopedWithColocation;
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
  CHECK_THROWS_AS(MakeGoPaper("{model: {temperature: 0}}"), ConfigError);
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

// The attention weights and the relative-position bias's gradient against
// the bias built index by index (one gathered entry per query and key,
// masked where the key comes after the query), over a distance range that
// the bias's max_relative clamps.
TEST_CASE("RecurrentAttention: relative-position bias and its gradient against an index-by-index reference") {
  torch::manual_seed(3);
  const int64_t d = 8, heads = 2, dh = d / heads, m = 5, l = 4, r = 6;
  RecurrentAttention layer(d, heads, r);
  auto p = layer->named_parameters();
  {
    torch::NoGradGuard no_grad;
    p["relative_bias"].uniform_(-1.0, 1.0);
  }
  const torch::Tensor x = torch::randn({3, l, d});
  const torch::Tensor memory = torch::randn({3, m, d});
  const torch::Tensor probe = torch::randn({3, heads, l, m + l});
  const torch::Tensor w = layer->AttentionWeights(x, memory);
  (w * probe).sum().backward();
  const torch::Tensor grad = p["relative_bias"].grad().clone();
  p["relative_bias"].mutable_grad().zero_();

  const torch::Tensor ctx = torch::cat({memory, x}, 1);
  const torch::Tensor h = torch::layer_norm(ctx, {d}, p["norm1.weight"], p["norm1.bias"]);
  const torch::Tensor qkv = torch::matmul(h, p["qkv.weight"].t()) + p["qkv.bias"];
  const torch::Tensor q = qkv.slice(2, 0, d).slice(1, m, m + l).reshape({3, l, heads, dh}).transpose(1, 2);
  const torch::Tensor k = qkv.slice(2, d, 2 * d).reshape({3, m + l, heads, dh}).transpose(1, 2);
  const torch::Tensor bias = go_testing::RelativeBiasReference(p["relative_bias"], m, l);
  const torch::Tensor reference =
      torch::softmax(torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(dh)) + bias, -1);
  CHECK(torch::allclose(w, reference, 1e-5, 1e-6));
  (reference * probe).sum().backward();
  CHECK(torch::allclose(grad, p["relative_bias"].grad(), 1e-5, 1e-6));
  // Distances beyond max_relative share its last entry, which so gets a gradient.
  CHECK(grad.select(1, r - 1).abs().sum().item<float>() > 0.0f);
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

struct BackwardSetting {
  double noise;
  learned::go::ActionGroups groups;
  double moves;
  double role_moves = 0.0;
  bool heads = true;   // priority and fusion heads too
  bool whole = false;  // one loss call over the whole graph (long graph, groups only sliced)
};

// BackwardBySegment's parameter gradients and loss against back-propagating
// the whole loss of forward(kGiven), on `g` in segments of `segment`.
void CheckBackwardBySegment(const graphs::Graph& g, int64_t segment, int expected_segments,
                            const std::vector<BackwardSetting>& settings) {
  const GoGraph in = learned::go::MakeGoGraph(g);
  const int64_t n = g.num_nodes();
  for (const BackwardSetting& setting : settings) {
    CAPTURE(setting.noise);
    CAPTURE(learned::go::ActionGroupsName(setting.groups));
    CAPTURE(setting.moves);
    CAPTURE(setting.role_moves);
    GoModelOptions options = SmallModel();
    options.exploration_noise = setting.noise;
    options.action_groups = setting.groups;
    options.node_moves = setting.moves;
    options.role_moves = setting.role_moves;
    options.segment = segment;
    options.priority = options.fusion = setting.heads;
    torch::manual_seed(11);
    GoPolicy policy(options);
    Rng rng(12);
    GoOutput sampled;
    {
      torch::NoGradGuard no_grad;
      sampled = policy->forward(in, 3, 5, GoPolicyImpl::Mode::kSample, &rng);
    }
    const torch::Tensor weight = torch::randn({5, n});  // a different weight per action
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
    CHECK(segments == (setting.whole ? 1 : expected_segments));
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

TEST_CASE("BackwardBySegment: the gradients of back-propagating the whole loss, one segment at a time") {
  // 15 nodes, segments of 4: 4 segments; the scope groups (chains) span segments.
  CheckBackwardBySegment(IndependentChains(3, 5), 4, 4,
                         {{0.0, learned::go::ActionGroups::kNone, 0.0},
                          {1.5, learned::go::ActionGroups::kNone, 0.0},
                          {0.0, learned::go::ActionGroups::kScope, 0.0},
                          {1.5, learned::go::ActionGroups::kChunks, 0.0},
                          {0.0, learned::go::ActionGroups::kScope, 4.0},
                          {1.5, learned::go::ActionGroups::kChunks, 4.0},
                          {0.0, learned::go::ActionGroups::kScope, 0.0, 0.5},
                          {1.5, learned::go::ActionGroups::kScope, 4.0, 0.5}});
  // A long graph (68 segments of 2): the trunk in batches of segments, and
  // with the placement head alone the trunk once with its graph (fused
  // attention) and the loss taken once over the whole graph.
  CheckBackwardBySegment(IndependentChains(9, 15), 2, 68,
                         {{0.0, learned::go::ActionGroups::kScope, 0.0, 0.0, false, true},
                          {1.5, learned::go::ActionGroups::kChunks, 0.0, 0.0, false, true},
                          {0.0, learned::go::ActionGroups::kScope, 4.0, 0.5, true}});
}

TEST_CASE(
    "GoPolicy: the placement trunk in batches of segments (with gradients) equals one segment at a time") {
  // 135 nodes, segments of 2 (68 segments: a long graph): the first
  // segment alone, then four batches of 16 full segments and one of 3, then
  // a short last one (one node); each batch's first memory is the previous
  // batch's last inputs.
  const graphs::Graph g = IndependentChains(9, 15);
  const GoGraph in = learned::go::MakeGoGraph(g);
  for (const learned::go::ActionGroups groups :
       {learned::go::ActionGroups::kScope, learned::go::ActionGroups::kChunks}) {
    CAPTURE(learned::go::ActionGroupsName(groups));
    GoModelOptions options = SmallModel();
    options.segment = 2;
    options.action_groups = groups;
    options.priority = false;
    options.fusion = false;
    torch::manual_seed(21);
    GoPolicy policy(options);
    Rng rng(22);
    GoOutput sampled;
    {
      torch::NoGradGuard no_grad;  // one segment at a time
      sampled = policy->forward(in, 3, 4, GoPolicyImpl::Mode::kSample, &rng);
    }
    const GoOutput batched = policy->forward(in, 3, 4, GoPolicyImpl::Mode::kGiven, nullptr, &sampled.actions);
    CHECK(batched.log_prob.requires_grad());
    CHECK(torch::allclose(batched.log_prob, sampled.log_prob, 1e-5, 1e-6));
    CHECK(torch::allclose(batched.entropy, sampled.entropy, 1e-5, 1e-6));
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
  learned::SaveCheckpoint(path, learned::kGoCheckpoint, options.Signature(), *a, nullptr, state);
  const std::string signature = learned::ReadCheckpointSignature(path, learned::kGoCheckpoint);
  CHECK(signature == options.Signature());
  const GoModelOptions back = learned::go::ModelOptionsFromSignature(signature, path);
  CHECK(back.Signature() == options.Signature());
  torch::manual_seed(5);
  GoPolicy b(back);
  const learned::TrainingState loaded =
      learned::LoadCheckpoint(path, learned::kGoCheckpoint, signature, *b, nullptr);
  CHECK(loaded.step == 12);
  torch::NoGradGuard no_grad;
  const GoOutput oa = a->forward(in, 2, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  const GoOutput ob = b->forward(in, 2, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  CHECK(torch::allclose(oa.log_prob, ob.log_prob));
  CHECK(torch::equal(oa.actions.device, ob.actions.device));
  GoModelOptions other = options;
  other.model = 32;
  GoPolicy c(other);
  CHECK_THROWS_AS(learned::LoadCheckpoint(path, learned::kGoCheckpoint, other.Signature(), *c, nullptr),
                  StateError);
  CHECK_THROWS_AS(learned::go::ModelOptionsFromSignature("hidden=3", path), StateError);
  // The agent starts from the checkpoint.
  Fixture f(IndependentChains(2, 4), MakeCluster(2));
  auto agent = MakeGoPaper("{checkpoint: '" + path + "', model: {segment: 4}}");
  const AgentResult r = agent->Optimize(f.MakeProblem(ObjectiveKind::kStepTime, 1, 1));
  CHECK(r.evaluations == 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gosim::agents
