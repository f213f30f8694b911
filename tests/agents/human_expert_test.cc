#include "agents/human_expert.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "tests/agents/test_util.h"

namespace gosim::agents {
namespace {

using testing::Op;

// A GNMT-like scope layout: embedding, 4 encoder and 4 decoder layers,
// attention and softmax, plus an unscoped op.
graphs::Graph NmtLike() {
  graphs::GraphBuilder b("gnmt_test");
  int prev = b.AddNode(Op("emb", 1, 4, "embedding"));
  for (int l = 1; l <= 4; ++l) {
    const int id =
        b.AddNode(Op("enc" + std::to_string(l), 1, 4, "encoder/layer_" + std::to_string(l) + "/lstm"));
    b.AddEdge(prev, id, 0);
    prev = id;
  }
  const int att = b.AddNode(Op("att", 1, 4, "decoder/attention"));
  b.AddEdge(prev, att, 0);
  prev = att;
  for (int l = 1; l <= 4; ++l) {
    const int id = b.AddNode(Op("dec" + std::to_string(l), 1, 4, "decoder/layer_" + std::to_string(l)));
    b.AddEdge(prev, id, 0);
    prev = id;
  }
  const int sm = b.AddNode(Op("softmax", 1, 4, "softmax"));
  b.AddEdge(prev, sm, 0);
  const int loose = b.AddNode(Op("loose", 1, 4, ""));
  b.AddEdge(sm, loose, 0);
  return b.Build();
}

const char* const kRules = R"yaml(
format: gosim.expert
version: 1
model: nmt
graphs: ["gnmt*", "nmt*"]
rules:
  - scope: "attention|softmax"
    device: last
  - scope: "layer_(\\d+)"
    split: even
    layers: 4
  - scope: "embedding"
    device: first
default: inherit
)yaml";

TEST_CASE("Expert rules: first match wins, even split over layers, inherit for the rest") {
  const ExpertRules rules = ParseExpertRules(kRules, "nmt.yaml");
  CHECK(rules.model == "nmt");
  CHECK(rules.AppliesTo("gnmt_8layers"));
  CHECK_FALSE(rules.AppliesTo("resnet50"));
  const graphs::Graph g = NmtLike();
  // Layers 1..4 are positions 0..3: position i -> floor(i * D / 4).
  const std::vector<int32_t> p4 = ExpertPlacement(rules, g, 4);
  //                                emb enc1 enc2 enc3 enc4 att dec1 dec2 dec3 dec4 sm loose
  CHECK(p4 == std::vector<int32_t>{0, 0, 1, 2, 3, 3, 0, 1, 2, 3, 3, 3});
  const std::vector<int32_t> p2 = ExpertPlacement(rules, g, 2);
  CHECK(p2 == std::vector<int32_t>{0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("Expert rules: modulo split, fixed devices wrap, layer count from the graph") {
  const ExpertRules rules = ParseExpertRules(R"yaml(
format: gosim.expert
model: m
rules:
  - {scope: "softmax", device: 5}
  - {scope: "layer_(\\d+)", split: modulo}
default: 1
)yaml",
                                             "m.yaml");
  const std::vector<int32_t> p = ExpertPlacement(rules, NmtLike(), 3);
  //                               emb enc1 enc2 enc3 enc4 att dec1 dec2 dec3 dec4 sm loose
  CHECK(p == std::vector<int32_t>{1, 0, 1, 2, 0, 1, 0, 1, 2, 0, 2, 1});
}

TEST_CASE("Expert rule files report their mistakes with a location") {
  CHECK_THROWS_AS(
      ParseExpertRules("format: gosim.expert\nmodel: m\nrules:\n  - {scope: \"(\", device: 0}\n", "a.yaml"),
      ConfigError);
  CHECK_THROWS_AS(
      ParseExpertRules("format: gosim.expert\nmodel: m\nrules:\n  - {scope: x, split: even}\n", "b.yaml"),
      ConfigError);  // no capture group
  CHECK_THROWS_AS(ParseExpertRules("format: gosim.expert\nmodel: m\nrules:\n  - {scope: x}\n", "c.yaml"),
                  ConfigError);  // neither device nor split
  try {
    ParseExpertRules("format: gosim.expert\nmodel: m\nrules:\n  - {scope: x, device: lats}\n", "d.yaml");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 4);
    CHECK(std::string(e.what()).find("last") != std::string::npos);
  }
  CHECK_THROWS_AS(ParseExpertRules("format: gosim.expert\nmodel: m\nrulez: []\n", "e.yaml"), ConfigError);
}

TEST_CASE("Every file in configs/experts parses; each named model finds its rules") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/experts")) {
    CAPTURE(entry.path().string());
    const ExpertRules rules = LoadExpertRules(entry.path().string());
    CHECK_FALSE(rules.graphs.empty());
    CHECK_FALSE(rules.source.empty());
    ++files;
  }
  CHECK(files >= 4);
  CHECK(FindExpertRules("configs/experts", "gnmt").model == "gnmt");
  CHECK(FindExpertRules("configs/experts", "inception_v3").model == "inception_v3");
  CHECK_THROWS_AS(FindExpertRules("configs/experts", "no_such_model_xyz"), ConfigError);
}

}  // namespace
}  // namespace gosim::agents

namespace gosim::agents {
namespace {

// The expert files applied to the generators' graphs.
TEST_CASE("Expert placements of generated paper graphs") {
  const graphs::Graph nmt =
      graphs::Generate("nmt", LoadYamlString("{layers: 2, seq_len: 3, hidden: 64, vocab: 100}"), "test");
  const ExpertRules rules = FindExpertRules("configs/experts", nmt.name());
  const std::vector<int32_t> p = ExpertPlacement(rules, nmt, 2);
  int checked = 0;
  for (graphs::NodeId v = 0; v < nmt.num_nodes(); ++v) {
    const std::string& scope = nmt.node(v).scope;
    CAPTURE(scope);
    if (scope.find("attention") != std::string::npos ||
        scope.find("output_projection") != std::string::npos) {
      CHECK(p[static_cast<size_t>(v)] == 1);
      ++checked;
    } else if (scope.find("layer_1") != std::string::npos) {
      CHECK(p[static_cast<size_t>(v)] == 0);
      ++checked;
    } else if (scope.find("layer_2") != std::string::npos) {
      CHECK(p[static_cast<size_t>(v)] == 1);
      ++checked;
    }
  }
  CHECK(checked > nmt.num_nodes() / 2);

  const graphs::Graph inception = graphs::Generate("inception_v3", LoadYamlString("{batch: 2}"), "test");
  const std::vector<int32_t> single =
      ExpertPlacement(FindExpertRules("configs/experts", inception.name()), inception, 4);
  CHECK(single == std::vector<int32_t>(static_cast<size_t>(inception.num_nodes()), 0));

  const graphs::Graph bert =
      graphs::Generate("bert", LoadYamlString("{layers: 4, hidden: 64, heads: 2, seq_len: 16}"), "test");
  const std::vector<int32_t> pb = ExpertPlacement(FindExpertRules("configs/experts", bert.name()), bert, 2);
  for (graphs::NodeId v = 0; v < bert.num_nodes(); ++v) {
    const std::string& scope = bert.node(v).scope;
    if (scope.rfind("encoder/layer_0", 0) == 0 || scope.rfind("encoder/layer_1", 0) == 0) {
      CHECK(pb[static_cast<size_t>(v)] == 0);
    }
    if (scope.rfind("encoder/layer_2", 0) == 0 || scope.rfind("encoder/layer_3", 0) == 0 ||
        scope.rfind("cls", 0) == 0) {
      CHECK(pb[static_cast<size_t>(v)] == 1);
    }
  }
}

}  // namespace
}  // namespace gosim::agents

namespace gosim::agents {
namespace {

TEST_CASE("Expert rules that match no node of the graph are an error, not everything on gpu0") {
  const ExpertRules rules = ParseExpertRules(kRules, "nmt.yaml");
  graphs::GraphBuilder b("nmt_renamed");  // the name matches "nmt*"; the scopes match no rule
  const int a = b.AddNode(Op("a", 1, 4, "block0/conv"));
  const int c = b.AddNode(Op("c", 1, 4, "block1/conv"));
  b.AddEdge(a, c, 0);
  const graphs::Graph g = b.Build();
  try {
    ExpertPlacement(rules, g, 4);
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("no rule of the 'nmt' expert placement matches a node of graph 'nmt_renamed'") !=
          std::string::npos);
    CHECK(what.find("'block0/conv'") != std::string::npos);
    CHECK(e.where().file == "nmt.yaml");
  }
  // One matching node is enough: the rest follows the default.
  graphs::GraphBuilder b2("nmt_one");
  const int x = b2.AddNode(Op("x", 1, 4, "block0/conv"));
  const int y = b2.AddNode(Op("y", 1, 4, "softmax"));
  b2.AddEdge(x, y, 0);
  CHECK(ExpertPlacement(rules, b2.Build(), 4) == std::vector<int32_t>{0, 3});
}

}  // namespace
}  // namespace gosim::agents
