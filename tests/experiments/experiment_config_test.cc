#include "experiments/experiment_config.h"

#include <doctest/doctest.h>

#include <string>

#include "experiments/cells.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;
using testing::TinyExperimentYaml;
using testing::WriteText;

// The ConfigError that parsing `yaml` (after `overrides`) throws.
ConfigError ErrorOf(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", yaml);
  try {
    LoadExperiment(path, overrides);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError");
  return ConfigError("unreachable");
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("A valid experiment parses with its defaults") {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run"));
  const ExperimentConfig config = LoadExperiment(path);
  CHECK(config.name == "tiny");
  REQUIRE(config.graphs.size() == 1);
  CHECK(config.clusters == std::vector<std::string>{testing::kTwoGpus});
  REQUIRE(config.agents.size() == 2);
  CHECK(config.agents[0].label == "single_device");
  CHECK(config.agents[1].label == "random_search");
  CHECK(config.agents[1].seeds == std::vector<uint64_t>{0, 1});
  CHECK(config.agents[1].budget.evaluations == 40);
  CHECK(config.agents[1].budget.wall_seconds == 0.0);
  CHECK(config.reference == "single_device");  // the first agent by default
  CHECK(config.cost_model == "auto");
  CHECK(config.objective.kind == agents::ObjectiveKind::kStepTime);
  CHECK(config.output == dir / "run");
  CHECK_FALSE(config.parallel_cells);
  CHECK(ExpandGrid(config).size() == 4);
}

TEST_CASE("An unknown key is an error with its line, path and a did-you-mean") {
  const ConfigError e = ErrorOf(TinyExperimentYaml("out", 1, "budjet: 5\n"));
  CHECK(e.where().line == 11);
  CHECK(e.where().path == "budjet");
  CHECK(Contains(e.what(), "unknown key 'budjet'"));
  CHECK(Contains(e.what(), "Did you mean 'budget'?"));
}

TEST_CASE("An unknown key inside an agent entry names the entry") {
  const std::string yaml =
      "name: tiny\n"
      "graphs: [{file: " +
      std::string(testing::kTinyGraph) +
      "}]\n"
      "clusters: [" +
      std::string(testing::kTwoGpus) +
      "]\n"
      "agents:\n"
      "  - name: single_device\n"
      "    lable: one\n";
  const ConfigError e = ErrorOf(yaml);
  CHECK(e.where().line == 6);
  CHECK(e.where().path == "agents[0].lable");
  CHECK(Contains(e.what(), "Did you mean 'label'?"));
}

TEST_CASE("A bad agent name lists the valid ones") {
  const std::string yaml = "graphs: [{file: " + std::string(testing::kTinyGraph) +
                           "}]\n"
                           "clusters: [" +
                           std::string(testing::kTwoGpus) +
                           "]\n"
                           "agents:\n"
                           "  - name: single_device\n"
                           "  - name: random_serch\n";
  const ConfigError e = ErrorOf(yaml);
  CHECK(e.where().line == 5);
  CHECK(e.where().path == "agents[1].name");
  CHECK(Contains(e.what(), "unknown agent 'random_serch'"));
  CHECK(Contains(e.what(), "Did you mean 'random_search'?"));
  CHECK(Contains(e.what(), "valid agents are: "));
  CHECK(Contains(e.what(), "single_device"));
}

TEST_CASE("Bad agent options fail while reading the experiment") {
  const ConfigError e = ErrorOf(TinyExperimentYaml("out", 1), {"agents[1].options.no_such_option=3"});
  CHECK(Contains(e.what(), "no_such_option"));
  CHECK(Contains(e.where().path, "agents[1].options"));
}

TEST_CASE("Agent options may come from a file") {
  TempDir dir;
  const std::string options = WriteText(dir, "rs.yaml", "batch: 8\n");
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run"));
  const ExperimentConfig config = LoadExperiment(path, {"agents[1].options=" + options});
  CHECK(config.agents[1].options["batch"].as<int>() == 8);
  CHECK(config.agents[1].options_file == options);
  const std::string bad = WriteText(dir, "bad.yaml", "batch: 8\nbatsh: 2\n");
  const ConfigError e = ErrorOf(TinyExperimentYaml("out"), {"agents[1].options=" + bad});
  CHECK(e.where().file == bad);
  CHECK(e.where().line == 2);
  CHECK(Contains(ErrorOf(TinyExperimentYaml("out"), {"agents[1].options=no/such.yaml"}).what(),
                 "no agent options file"));
}

TEST_CASE("Overrides apply before validation") {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run"));
  const ExperimentConfig config =
      LoadExperiment(path, {"budget.evaluations=7", "seeds=[3, 5, 9]", "agents[1].label=rs", "reference=rs"});
  CHECK(config.agents[1].label == "rs");
  CHECK(config.reference == "rs");
  CHECK(config.agents[0].budget.evaluations == 7);
  CHECK(config.agents[1].seeds == std::vector<uint64_t>{3, 5, 9});
  CHECK(config.resolved["budget"]["evaluations"].as<int>() == 7);
}

TEST_CASE("--quick applies the experiment's quick overrides first; a bad quick list is one error") {
  TempDir dir;
  const std::string yaml =
      TinyExperimentYaml(dir / "run") + "quick:\n  - budget.evaluations=3\n  - seeds=[4]\n";
  const std::string path = WriteText(dir, "exp.yaml", yaml);
  const ExperimentConfig full = LoadExperiment(path);
  CHECK(full.agents[0].budget.evaluations != 3);
  const ExperimentConfig quick = LoadExperiment(path, {}, true);
  CHECK(quick.agents[0].budget.evaluations == 3);
  CHECK(quick.agents[1].seeds == std::vector<uint64_t>{4});
  CHECK(quick.output != full.output);  // its own run folder
  // The command line's overrides come after the quick ones.
  CHECK(LoadExperiment(path, {"budget.evaluations=5"}, true).agents[0].budget.evaluations == 5);

  const std::string plain = WriteText(dir, "plain.yaml", TinyExperimentYaml(dir / "run"));
  CHECK_THROWS_WITH_AS(LoadExperiment(plain, {}, true), doctest::Contains("has no quick mode"), ConfigError);
  const std::string bad = WriteText(dir, "bad.yaml", TinyExperimentYaml(dir / "run") + "quick: [seeds]\n");
  CHECK_THROWS_WITH_AS(LoadExperiment(bad), doctest::Contains("quick lists overrides"), ConfigError);
  const std::string scalar = WriteText(dir, "scalar.yaml", TinyExperimentYaml(dir / "run") + "quick: yes\n");
  CHECK_THROWS_WITH_AS(LoadExperiment(scalar), doctest::Contains("quick must be a list"), ConfigError);
}

TEST_CASE("Bad overrides are config errors") {
  const std::string yaml = TinyExperimentYaml("out", 1);
  // A misspelt key path creates an unknown key.
  const ConfigError typo = ErrorOf(yaml, {"budjet.evaluations=5"});
  CHECK(Contains(typo.what(), "unknown key 'budjet'"));
  CHECK(Contains(typo.what(), "Did you mean 'budget'?"));
  CHECK(typo.where().file == "override 'budjet.evaluations=5'");
  // A bad value names the override, not a line of the file it never was in.
  const ConfigError agent = ErrorOf(yaml, {"agents[1].name=random_serch"});
  CHECK(agent.where().file == "override 'agents[1].name=random_serch'");
  CHECK(agent.where().path == "agents[1].name");
  CHECK(Contains(agent.what(), "Did you mean 'random_search'?"));
  // An index past the end of a list.
  CHECK(Contains(ErrorOf(yaml, {"agents[5].label=x"}).what(), "has no element 5"));
  // Not an assignment.
  CHECK(Contains(ErrorOf(yaml, {"budget"}).what(), "not of the form key.path=value"));
  // A value of the wrong type.
  CHECK(Contains(ErrorOf(yaml, {"budget.evaluations=lots"}).what(), "expected an integer"));
}

TEST_CASE("Semantic errors: labels, reference, budget, seeds, objective, clusters") {
  const std::string base = TinyExperimentYaml("out", 1);
  CHECK(Contains(ErrorOf(base, {"agents[1].label=single_device"}).what(), "both labelled 'single_device'"));
  const ConfigError reference = ErrorOf(base, {"reference=random_serch"});
  CHECK(Contains(reference.what(), "not an agent label"));
  CHECK(Contains(reference.what(), "Did you mean 'random_search'?"));
  CHECK(Contains(ErrorOf(base, {"budget.evaluations=-3"}).what(), "must be >= 0"));
  CHECK(Contains(ErrorOf(base, {"seeds=[1, 1]"}).what(), "listed twice"));
  CHECK(Contains(ErrorOf(base, {"seeds=0"}).what(), "seeds must be a count"));
  CHECK(Contains(ErrorOf(base, {"objective=fastest"}).what(), "unknown objective 'fastest'"));
  CHECK(Contains(ErrorOf(base, {"objective={kind: step_time, memory_weight: 2}"}).what(),
                 "apply only to kind: weighted"));
  CHECK(Contains(ErrorOf(base, {"cost_model=rooflin"}).what(), "Did you mean 'roofline'?"));
  CHECK(Contains(ErrorOf(base, {"sim.track_memry=false"}).what(), "Did you mean 'track_memory'?"));
  CHECK(Contains(ErrorOf(base, {"name=a/b"}).what(), "experiment name"));

  const ConfigError cluster = ErrorOf(base, {"clusters=[two_gpus, no_such_preset]"});
  CHECK(cluster.where().path == "clusters[0]");  // two_gpus is not a preset either
  CHECK(Contains(cluster.what(), "no cluster file"));
}

TEST_CASE("An experiment without graphs or agents says what is missing") {
  CHECK(Contains(ErrorOf("clusters: [x]\nagents: [{name: single_device}]\n").what(), "names no graphs"));
  const std::string no_agents = "graphs: [{file: " + std::string(testing::kTinyGraph) +
                                "}]\n"
                                "clusters: [" +
                                std::string(testing::kTwoGpus) + "]\n";
  CHECK(Contains(ErrorOf(no_agents).what(), "names no agents"));
  // A misspelt required key: the error names the key that is there.
  const std::string misspelt = "graphs: [{file: " + std::string(testing::kTinyGraph) + "}]\nclustrs: [x]\n";
  CHECK(Contains(ErrorOf(misspelt).what(), "names no clusters"));
  CHECK(Contains(ErrorOf(misspelt).what(), "clustrs"));
  CHECK(Contains(ErrorOf("suit: s.yaml\nclusters: [x]\n").what(), "suit"));
  CHECK(Contains(ErrorOf("- a\n- b\n").what(), "must be a YAML mapping"));
}

TEST_CASE("Per-agent budget and seeds override the experiment's") {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run", 3));
  const ExperimentConfig config =
      LoadExperiment(path, {"agents[0].seeds=1", "agents[1].budget={evaluations: 10, wall_seconds: 2.5}"});
  CHECK(config.agents[0].seeds == std::vector<uint64_t>{0});
  CHECK(config.agents[1].seeds == std::vector<uint64_t>{0, 1, 2});
  CHECK(config.agents[1].budget.evaluations == 10);
  CHECK(config.agents[1].budget.wall_seconds == 2.5);
  CHECK(ExpandGrid(config).size() == 4);
}

TEST_CASE("A checkpoint named in agent options is part of the cell identity by its contents") {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run", 1));
  ExperimentConfig config = LoadExperiment(path);
  const std::vector<Cell> before = ExpandGrid(config);
  CHECK(CheckpointDigest(YamlToJson(config.agents[1].options)).is_null());
  CHECK_FALSE(before[1].identity.contains("checkpoint_digest"));
  // The agent is built at load time, so the option goes in afterwards: the
  // identity is computed from the options as given.
  const std::string checkpoint = dir / "net.pt";
  config.agents[1].options["checkpoint"] = checkpoint;
  const std::vector<Cell> missing = ExpandGrid(config);
  CHECK(missing[1].identity["checkpoint_digest"] == "missing");
  WriteText(dir, "net.pt", "first network");
  const std::vector<Cell> first = ExpandGrid(config);
  WriteText(dir, "net.pt", "second network");
  const std::vector<Cell> second = ExpandGrid(config);
  CHECK(first[1].identity["checkpoint_digest"] == HashHex("first network"));
  CHECK(first[1].id != missing[1].id);
  CHECK(second[1].id != first[1].id);  // same path, new contents: a new cell
  WriteText(dir, "net.pt", "first network");
  CHECK(ExpandGrid(config)[1].id == first[1].id);
  // Cells of agents without a checkpoint keep their identity.
  CHECK(second[0].id == before[0].id);
  CHECK(CheckpointDigest(nlohmann::json{{"checkpoint", ""}}).is_null());
}

TEST_CASE("Weighted objectives and display units") {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run"));
  const ExperimentConfig config =
      LoadExperiment(path, {"objective={kind: weighted, memory_weight: 0.25, reference_step_time: 0.01}"});
  CHECK(config.objective.kind == agents::ObjectiveKind::kWeighted);
  CHECK(config.objective.memory_weight == 0.25);
  CHECK(config.objective.reference_step_time == 0.01);
  agents::Objective step;
  CHECK(ObjectiveDisplay(step, 0.0125, 0, 0).value == doctest::Approx(12.5));
  CHECK(std::string(ObjectiveDisplay(step, 0.0125, 0, 0).unit) == "ms");
  agents::Objective memory;
  memory.kind = agents::ObjectiveKind::kPeakMemory;
  CHECK(ObjectiveDisplay(memory, 0, 3.0 * (1 << 30), 0).value == 3.0);
  CHECK(ObjectiveDisplay(config.objective, 1, 2, 0.75).value == 0.75);
}

}  // namespace
}  // namespace gosim::experiments
