#include "experiments/splits.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/data_path.h"
#include "core/io.h"
#include "core/strings.h"
#include "experiments/experiment_config.h"
#include "experiments/runner.h"
#include "graphs/suite.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;
using testing::WriteText;

// A suite with one graph per split; `train_params` are the train entry's.
std::string SuiteYaml(const std::string& train_params) {
  return "name: s\n"
         "graphs:\n"
         "  - {name: a, generator: regal_random, params: " +
         train_params +
         ", split: train}\n"
         "  - {name: b, generator: regal_random, params: {nodes: 31, seed: 2}, split: valid}\n"
         "  - {name: c, generator: regal_random, params: {nodes: 32, seed: 3}, split: test}\n";
}

std::string ExperimentOn(const std::string& suite, const std::string& output, const std::string& split) {
  return "name: e\nsuite: " + suite + "\n" + (split.empty() ? "" : "split: " + split + "\n") + "clusters: [" +
         std::string(testing::kTwoGpus) +
         "]\n"
         "agents: [{name: single_device}]\n"
         "output: " +
         output + "\n";
}

TEST_CASE("Every suite in configs/suites keeps its test graphs out of every train and valid split") {
  const TestGraphIndex& index = ProjectTestGraphs();
  int suites = 0, checked = 0;
  for (const auto& item : std::filesystem::directory_iterator(ResolveDataPath("configs/suites"))) {
    const graphs::Suite suite = graphs::LoadSuite(item.path().string());
    ++suites;
    for (const graphs::SuiteEntry& entry : suite.entries) {
      if (entry.split != "train" && entry.split != "valid") continue;
      ++checked;
      INFO(suite.path << ": " << entry.name << " " << entry.Spec());
      CHECK(index.TestSourceOf(entry).empty());
    }
  }
  CHECK(suites >= 10);
  CHECK(checked > 100);  // regal_synthetic alone has thousands
  // The GO tables' test rows are test graphs, by generator and parameters.
  const graphs::Suite go = graphs::LoadSuite(ResolveDataPath("configs/suites/go_placement.yaml"));
  REQUIRE(go.entries.size() == 6);
  for (const graphs::SuiteEntry& entry : go.entries) CHECK_FALSE(index.TestSourceOf(entry).empty());
}

TEST_CASE("A train or valid entry equal to a test graph of any suite is refused as a leak") {
  TempDir dir;
  // The same generator and parameters as the BERT row of the GO tables.
  const std::string leak = WriteText(
      dir, "leak.yaml",
      "name: leak\ngraphs:\n"
      "  - {name: mine, generator: bert, params: {layers: 12, hidden: 768, heads: 12, seq_len: 128, "
      "batch: 32, training: true}, split: valid}\n");
  try {
    LoadExperiment(WriteText(dir, "e.yaml", ExperimentOn(leak, dir / "run", "valid")));
    FAIL("a leaking suite was accepted");
  } catch (const ConfigError& e) {
    CHECK(e.where().file == leak);
    CHECK(std::string(e.what()).find("bert_base") != std::string::npos);
    CHECK(std::string(e.what()).find("go_placement.yaml") != std::string::npos);
  }
  // Within one suite: a train entry equal to the suite's own test entry.
  const std::string self = WriteText(dir, "self.yaml", SuiteYaml("{nodes: 32, seed: 3}"));
  CHECK_THROWS_AS(LoadExperiment(WriteText(dir, "e2.yaml", ExperimentOn(self, dir / "run2", "train"))),
                  ConfigError);
  // Another size is not a leak.
  const std::string clean = WriteText(dir, "clean.yaml", SuiteYaml("{nodes: 30, seed: 1}"));
  CHECK(LoadExperiment(WriteText(dir, "e3.yaml", ExperimentOn(clean, dir / "run3", "train")))
            .test_graphs.empty());
}

TEST_CASE("Test graphs run only with --final, and every final run is logged in the run folder") {
  TempDir dir;
  const std::string suite = WriteText(dir, "s.yaml", SuiteYaml("{nodes: 30, seed: 1}"));
  RunOptions options;
  options.progress = false;
  // train and valid: no test graph, no --final needed, nothing logged.
  const ExperimentConfig tuning =
      LoadExperiment(WriteText(dir, "t.yaml", ExperimentOn(suite, dir / "t", "[train, valid]")));
  CHECK(RunExperiment(tuning, options).ran == 2);
  CHECK_FALSE(FileExists(dir / "t/final_runs.jsonl"));
  // The whole suite holds its test graph.
  const ExperimentConfig all = LoadExperiment(WriteText(dir, "a.yaml", ExperimentOn(suite, dir / "a", "")));
  REQUIRE(all.test_graphs.size() == 1);
  CHECK(StartsWith(all.test_graphs[0], "c (the test split of "));
  CHECK_THROWS_AS(RunExperiment(all, options), ConfigError);
  CHECK_FALSE(FileExists(dir / "a/results.jsonl"));
  options.final = true;
  CHECK(RunExperiment(all, options).ran == 3);
  const RunReport again = RunExperiment(all, options);
  CHECK(again.summary.final_runs == 2);
  CHECK(again.summary.ToMarkdown().find("1 test graph(s), used in 2 final run(s)") != std::string::npos);
  const std::vector<std::string> lines = Split(ReadFile(dir / "a/final_runs.jsonl"), '\n');
  REQUIRE(lines.size() >= 2);
  const nlohmann::json second = nlohmann::json::parse(lines[1]);
  CHECK(second["final_run"] == 2);
  CHECK(second["config_digest"] == ConfigDigest(all.resolved));
  CHECK(second["test_graphs"].size() == 1);
  CHECK(second["date"].get<std::string>().size() == 20);
  // A graph listed inline with the parameters of another suite's test entry
  // is a test graph too.
  const std::string inline_test =
      "name: i\ngraphs:\n  - {name: g, generator: gnmt, params: {layers: 8, hidden: 1024, seq_len: 10, "
      "batch: "
      "128, training: true}}\nclusters: [" +
      std::string(testing::kTwoGpus) + "]\nagents: [{name: single_device}]\noutput: " + (dir / "i") + "\n";
  const ExperimentConfig inline_config = LoadExperiment(WriteText(dir, "i.yaml", inline_test));
  REQUIRE(inline_config.test_graphs.size() == 1);
  CHECK(inline_config.test_graphs[0].find("of the test split of") != std::string::npos);
}

TEST_CASE("Cells of test graphs copied with --reuse bring the final runs that produced them") {
  TempDir dir;
  const std::string suite = WriteText(dir, "s.yaml", SuiteYaml("{nodes: 30, seed: 1}"));
  RunOptions options;
  options.progress = false;
  options.final = true;
  // Two final runs in a: the grid, then a resume with nothing left to run.
  const ExperimentConfig a = LoadExperiment(WriteText(dir, "a.yaml", ExperimentOn(suite, dir / "a", "")));
  CHECK(RunExperiment(a, options).ran == 3);
  CHECK(RunExperiment(a, options).ran == 0);
  REQUIRE(CountFinalRuns(dir / "a") == 2);
  // b copies a's cells: its own final run plus a's two.
  options.reuse = {dir / "a"};
  const ExperimentConfig b = LoadExperiment(WriteText(dir, "b.yaml", ExperimentOn(suite, dir / "b", "")));
  const RunReport copied = RunExperiment(b, options);
  CHECK(copied.reused == 3);
  CHECK(copied.ran == 0);
  CHECK(copied.summary.final_runs == 3);
  const std::vector<std::string> lines = Split(ReadFile(dir / "b/final_runs.jsonl"), '\n');
  REQUIRE(lines.size() >= 3);
  const nlohmann::json carried = nlohmann::json::parse(lines[2]);
  CHECK(carried["final_run"] == 3);
  CHECK(carried["carried_final_run"] == 2);
  CHECK(carried["carried_from"].get<std::string>().find("/a") != std::string::npos);
  // Nothing left to copy: a's runs are not carried twice (b's own run is logged).
  CHECK(RunExperiment(b, options).reused == 0);
  CHECK(CountFinalRuns(dir / "b") == 4);
  // c copies from b: b's own runs and those it carried, each once.
  const ExperimentConfig c = LoadExperiment(WriteText(dir, "c.yaml", ExperimentOn(suite, dir / "c", "")));
  options.reuse = {dir / "b", dir / "a"};
  CHECK(RunExperiment(c, options).reused == 3);
  CHECK(CountFinalRuns(dir / "c") == 1 + 4);
  // A torn log is one error naming the file and the line.
  WriteFileAtomic(dir / "a/final_runs.jsonl", ReadFile(dir / "a/final_runs.jsonl") + "{torn\n");
  CHECK_THROWS_WITH_AS(CarryFinalRuns(dir / "a", dir / "c"), doctest::Contains("line 3"), StateError);
}

}  // namespace
}  // namespace gosim::experiments
