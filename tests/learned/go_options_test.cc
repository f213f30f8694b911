// The `go` agent's options (agents/learned/go/go_agent.h): the built-in
// defaults equal configs/agents/go.yaml (the committed network, zero-shot),
// `checkpoint: ""` asks for a fresh network, `preset: paper` for GO's paper
// setting, and a shape that the checkpoint would silently override is
// refused.
#include <filesystem>
#include <string>

#include "agents/learned/go/go_agent.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "tests/agents/test_util.h"
#include "tests/learned/go_test_util.h"

// glog, which torch includes, defines a CHECK macro; doctest's must win here.
#undef CHECK
#include <doctest/doctest.h>

namespace gosim::agents {
namespace {

using learned::go::ActionGroups;
using learned::go::GoAgentOptions;

GoAgentOptions ParseYaml(const std::string& yaml) {
  YAML::Node node = LoadYamlString(yaml, "test");
  YamlMap options = YamlMap::Root(node, "test");
  return GoAgentOptions::Parse(options);
}

TEST_CASE("go options: the built-in defaults are configs/agents/go.yaml, the committed network") {
  const std::string file = ResolveDataPath("configs/agents/go.yaml");
  YAML::Node node = LoadYamlFile(file);
  YamlMap map = YamlMap::Root(node, file);
  const GoAgentOptions from_file = GoAgentOptions::Parse(map);
  const GoAgentOptions built_in = ParseYaml("{}");
  // Field by field first, so that a drift names the field.
  CHECK(from_file.checkpoint == built_in.checkpoint);
  CHECK(from_file.evaluations == built_in.evaluations);
  CHECK(from_file.torch_threads == built_in.torch_threads);
  CHECK(from_file.role_sweep == built_in.role_sweep);
  CHECK(from_file.role_sweep_by == built_in.role_sweep_by);
  CHECK(from_file.ppo == built_in.ppo);
  CHECK(from_file.model.Signature() == built_in.model.Signature());
  CHECK(from_file.model.segment == built_in.model.segment);
  CHECK(from_file.model.action_groups == built_in.model.action_groups);
  CHECK(from_file.model.priority == built_in.model.priority);
  CHECK(from_file.model.fusion == built_in.model.fusion);
  CHECK(from_file.model == built_in.model);
  CHECK(from_file == built_in);
  // The parsed defaults are the struct's: the committed network and the
  // runtime settings it was trained with.
  CHECK(built_in == GoAgentOptions{});
  CHECK(built_in.checkpoint == ResolveDataPath(learned::go::kGoDefaultCheckpoint));
  CHECK(std::filesystem::exists(built_in.checkpoint));
  CHECK(built_in.model.action_groups == ActionGroups::kScope);
  CHECK(built_in.model.segment == 256);
  CHECK(built_in.model.placement);
  CHECK_FALSE(built_in.model.priority);
  CHECK_FALSE(built_in.model.fusion);
  CHECK(built_in.evaluations == 0);
}

TEST_CASE("go options: checkpoint \"\" is a fresh network; preset paper is GO's paper setting") {
  const GoAgentOptions fresh = ParseYaml("{checkpoint: ''}");
  CHECK(fresh.checkpoint.empty());
  CHECK(fresh.model == GoAgentOptions{}.model);  // only the network changes
  const GoAgentOptions paper = ParseYaml("{preset: paper}");
  CHECK(paper == GoAgentOptions::Paper());
  CHECK(paper.checkpoint.empty());
  CHECK(paper.model.action_groups == ActionGroups::kNone);
  CHECK(paper.model.priority);
  CHECK(paper.model.fusion);
  CHECK(paper.model.segment == 128);
  // Keys beside the preset still apply.
  const GoAgentOptions paper_placement = ParseYaml("{preset: paper, heads: [placement]}");
  CHECK_FALSE(paper_placement.model.priority);
  CHECK(paper_placement.model.action_groups == ActionGroups::kNone);
  CHECK_THROWS_AS(ParseYaml("{preset: papers}"), ConfigError);
  // node_moves needs action groups: accepted by default (scope groups),
  // refused with the paper's per-node placement.
  CHECK_NOTHROW(ParseYaml("{model: {node_moves: 2}}"));
  CHECK_THROWS_AS(ParseYaml("{preset: paper, model: {node_moves: 2}}"), ConfigError);
}

TEST_CASE(
    "go agent without options runs the committed network zero-shot; a shape it would override is refused") {
  const graphs::Graph nmt = graphs::Generate(
      "nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100, training: true}"), "test");
  testing::Fixture f(nmt, sim::LoadCluster("p100x4_pcie"));
  const Problem problem = f.MakeProblem(ObjectiveKind::kStepTime, 0, 1);
  const AgentResult plain = go_testing::MakeGo("{}")->Optimize(problem);
  CHECK(plain.evaluations == 1);
  CHECK(plain.extra.at("ppo_steps") == 0);
  CHECK(plain.extra.at("action_groups") > 0);  // scope groups
  // The same as naming the committed network and its settings.
  const AgentResult named = go_testing::MakeGo(
                                "{checkpoint: configs/checkpoints/go.pt, heads: [placement], model: "
                                "{segment: 256, action_groups: scope}}")
                                ->Optimize(problem);
  CHECK(plain.best.placement == named.best.placement);
  CHECK(plain.best_objective == named.best_objective);
  // A fresh network (same seed) decides otherwise on this graph.
  const AgentResult fresh = go_testing::MakeGo("{checkpoint: ''}")->Optimize(problem);
  CHECK(fresh.best.placement != plain.best.placement);
  // A shape beside the default checkpoint would be silently replaced by the
  // checkpoint's: refused; with checkpoint "" it is the fresh network's.
  CHECK_THROWS_AS(go_testing::MakeGo("{model: {gnn_hidden: 16}}")->Optimize(problem), ConfigError);
  CHECK(go_testing::MakeGo("{checkpoint: '', model: {gnn_hidden: 16}}")->Optimize(problem).evaluations == 1);
}

}  // namespace
}  // namespace gosim::agents
