#include "graphs/suite.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "graphs/generators/generators.h"
#include "graphs/io.h"

namespace gosim::graphs {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system temp folder, removed at the end.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("gosim_suite_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

std::map<std::string, int> SplitCounts(const Suite& s) {
  std::map<std::string, int> counts;
  for (const SuiteEntry& e : s.entries) ++counts[e.split];
  return counts;
}

// The error of loading `text` as a suite.
ConfigError LoadError(const std::string& text) {
  TempDir dir;
  const std::string path = dir.Write("bad.yaml", text);
  try {
    LoadSuite(path);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError for:\n" << text);
  return ConfigError("unreachable");
}

}  // namespace

TEST_CASE("Suites: generator entries, explicit splits and seeds expansion") {
  TempDir dir;
  const std::string path = dir.Write("s.yaml", R"(name: small
description: a test suite
graphs:
  - generator: resnet
    name: r50
    params: {batch: 2}
    split: test
  - generator: regal_random
    name: regal_{seed}
    params: {min_nodes: 10, max_nodes: 20}
    seeds: {from: 5, count: 3}
    split: train
  - generator: regal_random
    repeat: 2
    params: {seed: 100, nodes: 12}
    split: valid
)");
  const Suite s = LoadSuite(path);
  CHECK(s.name == "small");
  CHECK(s.description == "a test suite");
  REQUIRE(s.entries.size() == 6);
  CHECK(s.entries[0].name == "r50");
  CHECK(s.entries[0].split == "test");
  CHECK(s.entries[0].Spec() == "gen:resnet:batch=2");
  CHECK(s.entries[1].name == "regal_5");
  CHECK(s.entries[3].name == "regal_7");
  CHECK(*s.entries[3].seed == 7);
  CHECK(s.entries[3].Spec() == "gen:regal_random:max_nodes=20,min_nodes=10#seed=7");
  CHECK(s.entries[4].name == "regal_random_s100");
  CHECK(s.entries[5].name == "regal_random_s101");
  CHECK(s.EntriesOf("train").size() == 3);
  CHECK(s.EntriesOf("valid").size() == 2);

  const Graph r50 = MaterializeGraph(s.entries[0]);
  CHECK(r50.name() == "r50");
  const Graph g7 = MaterializeGraph(s.entries[3]);
  CHECK(g7.name() == "regal_7");
  CHECK(g7.num_nodes() >= 10);
  CHECK(g7.num_nodes() <= 20);
  // The seed reaches the generator: same as generating with seed 7 directly.
  const Graph direct =
      Generate("regal_random", YAML::Load("{min_nodes: 10, max_nodes: 20, seed: 7, name: regal_7}"), "x");
  CHECK(direct.num_edges() == g7.num_edges());
  CHECK(MaterializeGraph(s.entries[5]).num_nodes() == 12);
  // Materializing reads the shared params mapping without changing it.
  const YAML::Node& params = s.entries[3].params;
  CHECK(params.size() == 2);
  CHECK_FALSE(params["name"]);
  CHECK_FALSE(params["seed"]);
}

TEST_CASE("Suites: fraction and count splits are seeded shuffles") {
  TempDir dir;
  auto suite = [&](const std::string& split) {
    return LoadSuite(dir.Write("s.yaml", "split: " + split + R"(
graphs:
  - generator: regal_random
    seeds: {count: 20}
  - generator: resnet
    split: test
)"));
  };
  const Suite a = suite("{train: 0.8, valid: 0.1, test: 0.1, seed: 3}");
  auto counts = SplitCounts(a);
  CHECK(counts["train"] == 16);
  CHECK(counts["valid"] == 2);
  CHECK(counts["test"] == 3);  // 2 by fraction + the explicit one
  CHECK(a.entries.back().split == "test");
  const Suite b = suite("{train: 0.8, valid: 0.1, test: 0.1, seed: 3}");
  const Suite c = suite("{train: 0.8, valid: 0.1, test: 0.1, seed: 4}");
  bool same_ab = true, same_ac = true;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    same_ab = same_ab && a.entries[i].split == b.entries[i].split;
    same_ac = same_ac && a.entries[i].split == c.entries[i].split;
  }
  CHECK(same_ab);
  CHECK_FALSE(same_ac);
  counts = SplitCounts(suite("{train: 14, valid: 3, test: 3}"));
  CHECK(counts["train"] == 14);
  CHECK(counts["valid"] == 3);
  CHECK(counts["test"] == 4);
  try {
    suite("{train: 10, valid: 3, test: 3}");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("add up to 16 but 20 graphs") != std::string::npos);
    CHECK(e.where().line == 1);
  }
}

TEST_CASE("Suites: files and globs relative to the suite folder, augmentation copies") {
  TempDir dir;
  const Graph g = Generate("regal_random", YAML::Load("{seed: 1, nodes: 30}"), "x");
  SaveGraph(g, dir.path() + "/data/one.json.gz");
  SaveGraph(Generate("regal_random", YAML::Load("{seed: 2, nodes: 40}"), "x"), dir.path() + "/data/two.json");
  const std::string path = dir.Write("suites/s.yaml", R"(graphs:
  - glob: ../data/*.json*
    augment: 2
    augment_sigma: 1.0
  - file: ../data/one.json.gz
    name: first
    split: valid
  - glob: ../nothing/*.json
)");
  const Suite s = LoadSuite(path);
  REQUIRE(s.entries.size() == 7);
  CHECK(s.entries[0].name == "one");
  CHECK(s.entries[1].name == "one_aug1");
  CHECK(s.entries[2].name == "one_aug2");
  CHECK(s.entries[3].name == "two");
  CHECK(s.entries[6].name == "first");
  CHECK(s.entries[6].split == "valid");
  CHECK(s.entries[0].split.empty());
  CHECK(s.entries[1].Spec().find("#aug=1") != std::string::npos);
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].find("matched no file") != std::string::npos);

  const Graph one = MaterializeGraph(s.entries[0]);
  CHECK(one.num_nodes() == 30);
  const Graph aug = MaterializeGraph(s.entries[1]);
  CHECK(aug.name() == "one_aug1");
  REQUIRE(aug.num_nodes() == 30);
  int64_t changed = 0;
  for (NodeId n = 0; n < 30; ++n)
    changed += aug.node(n).outputs[0].bytes != one.node(n).outputs[0].bytes ? 1 : 0;
  CHECK(changed > 15);
  CHECK(MaterializeGraph(s.entries[3]).num_nodes() == 40);
}

TEST_CASE("Suites: augmentation copies stay in their base graph's split") {
  TempDir dir;
  const Suite s = LoadSuite(dir.Write("s.yaml", R"(split: {train: 3, valid: 1, test: 1, seed: 9}
graphs:
  - generator: regal_random
    seeds: [0, 1, 2, 3, 4]
    augment: 3
)"));
  REQUIRE(s.entries.size() == 20);
  for (size_t i = 0; i < s.entries.size(); i += 4) {
    for (size_t k = 1; k < 4; ++k) CHECK(s.entries[i + k].split == s.entries[i].split);
  }
  auto counts = SplitCounts(s);
  CHECK(counts["train"] == 12);
  CHECK(counts["valid"] == 4);
  CHECK(counts["test"] == 4);
}

TEST_CASE("Suites: bad files are ConfigErrors with the line") {
  auto check = [](const std::string& text, int line, const std::string& what) {
    CAPTURE(text);
    const ConfigError e = LoadError(text);
    CHECK(e.where().line == line);
    CHECK(std::string(e.what()).find(what) != std::string::npos);
  };
  check("graphs:\n  - generator: resnet\n    parms: {}\n", 3, "Did you mean 'params'?");
  check("graphs:\n  - generator: resnett\n", 2, "Did you mean 'resnet'?");
  check("graphs:\n  - generator: resnet\n    split: trian\n", 3, "Did you mean 'train'?");
  check("graphs:\n  - file: nowhere.json\n", 2, "not found");
  check("graphs:\n  - {generator: resnet, file: x.json}\n", 2, "exactly one of");
  check("graphs:\n  - {generator: resnet, name: a}\n  - {generator: bert, name: a}\n", 3,
        "two graphs are named 'a'");
  check("graphs:\n  - generator: resnet\n    seeds: {count: 0}\n", 3, "seeds.count");
  check("name: x\n", 1, "no 'graphs' list");
  check("graphs: 3\n", 1, "expected a list");
  check("graphs:\n  - generator: resnet\nsplit: {train: 0.5, valid: 0.2}\n", 3, "fractions adding up to 1");
  check("graphs: [\n", 2, "invalid YAML");
  // A bad generator parameter is found when the graph is built, at its line.
  TempDir dir;
  const Suite s =
      LoadSuite(dir.Write("p.yaml", "graphs:\n  - generator: resnet\n    params:\n      depht: 50\n"));
  try {
    MaterializeGraph(s.entries[0]);
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 4);
    CHECK(e.where().file == dir.path() + "/p.yaml");
    CHECK(std::string(e.what()).find("Did you mean 'depth'?") != std::string::npos);
  }
}

TEST_CASE("Suites: duplicate generated names get a number") {
  TempDir dir;
  const Suite s = LoadSuite(dir.Write("d.yaml", "graphs:\n  - generator: resnet\n  - generator: resnet\n"));
  REQUIRE(s.entries.size() == 2);
  CHECK(s.entries[0].name == "resnet");
  CHECK(s.entries[1].name == "resnet_2");
}

TEST_CASE("The repository's suites load") {
  for (const char* path : {"configs/suites/paper.yaml", "configs/suites/quickstart.yaml",
                           "configs/suites/regal_synthetic.yaml", "configs/suites/xl.yaml"}) {
    CAPTURE(path);
    const Suite s = LoadSuite(path);
    CHECK_FALSE(s.entries.empty());
  }
  const Suite regal = LoadSuite("configs/suites/regal_synthetic.yaml");
  auto counts = SplitCounts(regal);
  CHECK(counts["train"] == 10 * counts["test"]);
  CHECK(counts["valid"] == counts["test"]);
  const Suite quick = LoadSuite("configs/suites/quickstart.yaml");
  for (const SuiteEntry& e : quick.entries) {
    CAPTURE(e.name);
    CHECK(MaterializeGraph(e).num_nodes() > 0);
  }
  const Suite paper = LoadSuite("configs/suites/paper.yaml");
  CHECK(paper.entries.size() >= 11);
}

}  // namespace gosim::graphs
