// Helpers shared by the GO tests (go_graph_test.cc, go_model_test.cc,
// go_agent_test.cc).
#ifndef GOSIM_TESTS_LEARNED_GO_TEST_UTIL_H_
#define GOSIM_TESTS_LEARNED_GO_TEST_UTIL_H_

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/learned/register.h"
#include "core/yaml.h"
#include "graphs/graph.h"
#include "tests/agents/test_util.h"

namespace gosim::agents::go_testing {

// GO's relative-position attention bias written out index by index,
// [H x L x (M + L)] for relative_bias [H x R]: relative_bias[h][min(M + i -
// j, R - 1)] for key j <= M + i, -inf for a key after the query.
inline torch::Tensor RelativeBiasReference(const torch::Tensor& relative_bias, int64_t m, int64_t l) {
  const int64_t r = relative_bias.size(1);
  std::vector<int64_t> index;
  std::vector<uint8_t> after;
  for (int64_t i = 0; i < l; ++i) {
    for (int64_t j = 0; j < m + l; ++j) {
      const int64_t distance = m + i - j;
      index.push_back(std::clamp<int64_t>(distance, 0, r - 1));
      after.push_back(distance < 0 ? 1 : 0);
    }
  }
  return relative_bias.index_select(1, torch::tensor(index))
      .view({relative_bias.size(0), l, m + l})
      .masked_fill(torch::tensor(after).to(torch::kBool).view({1, l, m + l}),
                   -std::numeric_limits<float>::infinity());
}

// The `go` agent of the YAML options `yaml`.
inline std::unique_ptr<Agent> MakeGo(const std::string& yaml) {
  RegisterLearnedAgents();
  YAML::Node node = LoadYamlString(yaml, "test");
  YamlMap options = YamlMap::Root(node, "test");
  return MakeAgent("go", options);
}

// The `go` agent in GO's paper setting (`preset: paper`: a fresh network
// unless `yaml` names a checkpoint, a placement per node, placement,
// priority and fusion heads, segment 128) with LibTorch's thread setting
// (torch_threads: 0), then `yaml`'s keys: the agent's built-in settings
// before the committed network became its default, which these tests were
// written for.
inline std::unique_ptr<Agent> MakeGoPaper(const std::string& yaml) {
  RegisterLearnedAgents();
  YAML::Node node = LoadYamlString(yaml, "test");
  if (!node["preset"]) node["preset"] = "paper";
  if (!node["torch_threads"]) node["torch_threads"] = 0;
  YamlMap options = YamlMap::Root(node, "test");
  return MakeAgent("go", options);
}

// w (a weight) -> x -> y -> g -> u, w -> g; u is w's optimizer update
// (same colocation group); g keeps x's scope, as gradient ops do.
inline graphs::Graph ScopedWithColocation() {
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

}  // namespace gosim::agents::go_testing

#endif  // GOSIM_TESTS_LEARNED_GO_TEST_UTIL_H_
