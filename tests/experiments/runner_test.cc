#include "experiments/runner.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/io.h"
#include "core/strings.h"
#include "core/version.h"
#include "graphs/io.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;
using testing::TinyExperimentYaml;
using testing::WriteText;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

RunOptions Quiet() {
  RunOptions options;
  options.progress = false;
  return options;
}

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& line : Split(ReadFile(path), '\n')) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// Rewrites a run folder's results as if another build had produced them:
// another code version in each identity, hence other cell ids.
void PretendOtherBuild(const std::string& folder) {
  std::string rewritten;
  for (const std::string& line : Lines(folder + "/results.jsonl")) {
    nlohmann::json json = nlohmann::json::parse(line);
    json["identity"]["code"] = "0123456789abcdef0123456789abcdef01234567";
    json["cell"] = HashHex(json["identity"].dump());
    rewritten += json.dump() + "\n";
  }
  WriteFileAtomic(folder + "/results.jsonl", rewritten);
}

// The fields of a record that must not depend on when or how fast it ran.
std::string Reproducible(const CellRecord& r, const std::string& folder) {
  nlohmann::ordered_json json = r.ToJson();
  for (const char* key : {"wall_seconds", "finished_at", "curve", "simulations"}) json.erase(key);
  json["decision_json"] = ReadFile(folder + "/" + r.decision);
  json["curve_evaluations"] = nlohmann::ordered_json::array();
  for (const agents::CurvePoint& p : r.curve)
    json["curve_evaluations"].push_back({p.evaluations, p.best_objective});
  return json.dump();
}

std::map<std::string, std::string> ReproducibleById(const std::string& folder) {
  std::map<std::string, std::string> out;
  const ResultsLog log(folder + "/results.jsonl");
  for (const CellRecord& r : log.records()) out[r.cell] = Reproducible(r, folder);
  return out;
}

double SingleDeviceStepTime() {
  const graphs::Graph graph = graphs::LoadGraph(testing::kTinyGraph);
  const sim::Cluster cluster = sim::LoadCluster(testing::kTwoGpus);
  const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel(sim::kDefaultCostModel));
  return evaluator.Evaluate(sim::SingleDeviceDecision(graph)).step_time;
}

TEST_CASE("A tiny experiment runs end to end and writes every file") {
  TempDir dir;
  const std::string run = dir / "run";
  const ExperimentConfig config = LoadExperiment(WriteText(dir, "exp.yaml", TinyExperimentYaml(run)));
  const RunReport report = RunExperiment(config, Quiet());
  CHECK(report.total_cells == 4);
  CHECK(report.ran == 4);
  CHECK(report.already_finished == 0);
  CHECK(report.failed.empty());

  CHECK(Lines(run + "/results.jsonl").size() == 4);
  CHECK(Lines(run + "/curves.csv").size() >= 5);
  CHECK(Lines(run + "/curves.csv")[0] ==
        "cell,graph,cluster,label,seed,evaluations,wall_seconds,best_objective");
  CHECK(FileExists(run + "/config.yaml"));
  CHECK(FileExists(run + "/summary.md"));
  CHECK(Lines(run + "/summary.csv").size() == 3);  // header + 2 agents x 1 graph x 1 cluster

  const graphs::Graph graph = graphs::LoadGraph(testing::kTinyGraph);
  const sim::Cluster cluster = sim::LoadCluster(testing::kTwoGpus);
  const sim::Evaluator evaluator(graph, cluster, sim::MakeCostModel(sim::kDefaultCostModel));
  const double single = SingleDeviceStepTime();
  const ResultsLog log(run + "/results.jsonl");
  for (const CellRecord& r : log.records()) {
    CHECK(r.graph == "tiny_branches");
    CHECK(r.nodes == 8);
    CHECK(r.devices == 2);
    CHECK(r.feasible);
    CHECK(StartsWith(r.decision, "decisions/"));
    // The saved decision re-simulates to exactly the recorded figures.
    const sim::Decision decision = sim::LoadDecision(run + "/" + r.decision, graph, cluster);
    const sim::Evaluation again = evaluator.Evaluate(decision);
    CHECK(again.step_time == r.step_time);
    CHECK(again.peak_memory == r.peak_memory);
    CHECK(r.best_objective == r.step_time);  // objective step_time scores seconds
    CHECK(r.pretrain_evaluations == 0);      // no checkpoint behind these agents
    CHECK(r.evaluations == r.simulations);   // every simulation counted, nothing more
    if (r.agent == "single_device") {
      CHECK(r.step_time == single);
    } else {
      CHECK(r.agent == "random_search");
      CHECK(r.evaluations == 40);
      CHECK(r.curve.back().evaluations == 40);
    }
  }

  // The summary compares against single_device with the exact means.
  const Summary& summary = report.summary;
  REQUIRE(summary.entries.size() == 2);
  CHECK(summary.entries[0].label == "single_device");
  CHECK(summary.entries[0].value == doctest::Approx(single * 1e3));
  CHECK(*summary.entries[0].vs_reference_pct == 0.0);
  double random_mean = 0.0;
  for (const CellRecord& r : log.records()) {
    if (r.agent == "random_search") random_mean += r.step_time * 1e3 / 2.0;
  }
  CHECK(summary.entries[1].value == doctest::Approx(random_mean));
  CHECK(*summary.entries[1].vs_reference_pct ==
        doctest::Approx((random_mean / (single * 1e3) - 1.0) * 100.0));
  const std::string markdown = ReadFile(run + "/summary.md");
  CHECK(markdown.find("| single_device |") != std::string::npos);
  CHECK(markdown.find("(ref)") != std::string::npos);
  CHECK(markdown.find("tiny_branches") != std::string::npos);
  // Every finished cell recorded the execution it ran; the header says whether the host was modelled.
  CHECK((markdown.find("Host: not modelled") != std::string::npos ||
         markdown.find("Host: execution ") != std::string::npos));
}

TEST_CASE("Resume skips finished cells and reproduces the deleted ones exactly") {
  TempDir dir;
  const std::string run = dir / "run";
  const ExperimentConfig config = LoadExperiment(WriteText(dir, "exp.yaml", TinyExperimentYaml(run)));
  RunExperiment(config, Quiet());
  const std::map<std::string, std::string> first = ReproducibleById(run);
  REQUIRE(first.size() == 4);

  // Lose the last two cells, as if the run had stopped after two.
  std::vector<std::string> lines = Lines(run + "/results.jsonl");
  WriteFileAtomic(run + "/results.jsonl", lines[0] + "\n" + lines[1] + "\n");
  const RunReport resumed = RunExperiment(config, Quiet());
  CHECK(resumed.already_finished == 2);
  CHECK(resumed.ran == 2);
  CHECK(ReproducibleById(run) == first);
  std::vector<std::string> after = Lines(run + "/results.jsonl");
  REQUIRE(after.size() == 4);
  CHECK(after[0] == lines[0]);  // finished lines are never rewritten
  CHECK(after[1] == lines[1]);

  // Nothing left to do.
  const RunReport again = RunExperiment(config, Quiet());
  CHECK(again.ran == 0);
  CHECK(again.already_finished == 4);
}

TEST_CASE("A torn last line is ignored on resume and its cell runs again") {
  TempDir dir;
  const std::string run = dir / "run";
  const ExperimentConfig config = LoadExperiment(WriteText(dir, "exp.yaml", TinyExperimentYaml(run)));
  RunExperiment(config, Quiet());
  const std::map<std::string, std::string> first = ReproducibleById(run);
  const std::vector<std::string> lines = Lines(run + "/results.jsonl");
  WriteFileAtomic(run + "/results.jsonl", lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n" +
                                              lines[3].substr(0, lines[3].size() / 2));
  const RunReport resumed = RunExperiment(config, Quiet());
  CHECK(resumed.already_finished == 3);
  CHECK(resumed.ran == 1);
  CHECK(Lines(run + "/results.jsonl").size() == 4);
  CHECK(ReproducibleById(run) == first);
}

TEST_CASE("--only runs one agent's cells now and leaves the rest of the same grid for later") {
  TempDir dir;
  const std::string run = dir / "run";
  const std::string whole = dir / "whole";
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(run));
  RunOptions only = Quiet();
  only.only_agents = {"random_search"};
  const RunReport first = RunExperiment(LoadExperiment(path), only);
  CHECK(first.ran == 2);
  CHECK(first.held_back == 2);
  const std::vector<std::string> lines = Lines(run + "/results.jsonl");
  REQUIRE(lines.size() == 2);
  for (const std::string& line : lines) CHECK(Contains(line, "\"agent\":\"random_search\""));
  // The grid is the whole experiment's: cells.txt lists all four.
  CHECK(Lines(run + "/cells.txt").size() == 4);
  const RunReport rest = RunExperiment(LoadExperiment(path), Quiet());
  CHECK(rest.already_finished == 2);
  CHECK(rest.ran == 2);
  CHECK(rest.held_back == 0);
  // The same cells, with the same results, as the grid run in one go.
  const RunReport at_once = RunExperiment(LoadExperiment(path, {"output=" + whole}), Quiet());
  CHECK(at_once.ran == 4);
  CHECK(ReproducibleById(run) == ReproducibleById(whole));

  RunOptions typo = Quiet();
  typo.only_agents = {"random_serch"};
  const std::string other = dir / "other";
  CHECK_THROWS_WITH_AS(RunExperiment(LoadExperiment(path, {"output=" + other}), typo),
                       doctest::Contains("Did you mean 'random_search'?"), ConfigError);
  CHECK(!std::filesystem::exists(other));  // refused before the run folder is made
}

TEST_CASE("max_cells stops early; a changed budget makes new cells beside the old ones") {
  TempDir dir;
  const std::string run = dir / "run";
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(run));
  RunOptions options = Quiet();
  options.max_cells = 1;
  CHECK(RunExperiment(LoadExperiment(path), options).ran == 1);
  CHECK(RunExperiment(LoadExperiment(path), Quiet()).ran == 3);

  // output= names the folder: the changed cells go beside the old ones.
  const RunReport changed =
      RunExperiment(LoadExperiment(path, {"budget.evaluations=20", "output=" + run}), Quiet());
  CHECK(changed.already_finished == 0);
  CHECK(changed.ran == 4);
  CHECK(Lines(run + "/results.jsonl").size() == 8);
  // The earlier config is kept beside the new one.
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(run)) {
    if (StartsWith(entry.path().filename().string(), "config.")) ++configs;
  }
  CHECK(configs == 2);
  // A relabelled agent keeps its cells (labels are not part of the identity).
  CHECK(RunExperiment(LoadExperiment(path, {"agents[1].label=rs", "budget.evaluations=20", "output=" + run}),
                      Quiet())
            .ran == 0);
  // The summary counts only the current grid's cells, and cells.txt lists them.
  CHECK(Lines(run + "/cells.txt").size() == 4);
  const ResultsLog log(run + "/results.jsonl");
  const std::vector<Cell> grid = ExpandGrid(LoadExperiment(path, {"budget.evaluations=20", "output=" + run}));
  for (const Cell& cell : grid) CHECK(Contains(ReadFile(run + "/cells.txt"), cell.id));
}

TEST_CASE("Overrides that do not name the run folder get a sub-folder keyed by the resolved configuration") {
  TempDir dir;
  const std::string run = dir / "run";
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(run));
  CHECK(LoadExperiment(path).output == run);
  const ExperimentConfig budget = LoadExperiment(path, {"budget.evaluations=20"});
  CHECK(budget.output == run + "/" + OverrideFolder(budget.resolved));
  CHECK(StartsWith(budget.output, run + "/with-"));
  // The same settings find the same folder, whichever way they are given;
  // other settings another one.
  CHECK(LoadExperiment(path, {"budget={evaluations: 20}"}).output == budget.output);
  CHECK(LoadExperiment(path, {"budget.evaluations=30"}).output != budget.output);
  CHECK(LoadExperiment(path, {"mode=quick"}).output != run);
  CHECK(LoadExperiment(path, {"budget.evaluations=20", "output=" + (dir / "mine")}).output == dir / "mine");
  // The default run and an override run never share results.
  CHECK(RunExperiment(LoadExperiment(path), Quiet()).ran == 4);
  CHECK(RunExperiment(budget, Quiet()).ran == 4);
  CHECK(Lines(run + "/results.jsonl").size() == 4);
  CHECK(Lines(budget.output + "/results.jsonl").size() == 4);
}

TEST_CASE("A cell's identity holds the code version and the mode; quick tables say so") {
  TempDir dir;
  const std::string path = WriteText(dir, "exp.yaml", TinyExperimentYaml(dir / "run"));
  const std::vector<Cell> full = ExpandGrid(LoadExperiment(path));
  const std::vector<Cell> quick = ExpandGrid(LoadExperiment(path, {"mode=quick"}));
  REQUIRE(full.size() == quick.size());
  for (size_t i = 0; i < full.size(); ++i) {
    CHECK(full[i].identity["code"] == BuildCodeVersion().ToString());
    CHECK(full[i].identity["mode"] == "full");
    CHECK(quick[i].identity["mode"] == "quick");
    CHECK(full[i].id != quick[i].id);
    CHECK(IdentityWithoutCode(full[i].identity).dump().find("\"code\"") == std::string::npos);
  }
  CHECK_THROWS_AS(LoadExperiment(path, {"mode=fast"}), ConfigError);
  const RunReport report = RunExperiment(LoadExperiment(path, {"mode=quick"}), Quiet());
  const std::string table = report.summary.ToMarkdown();
  CHECK(StartsWith(table, std::string("**") + kQuickModeNote + "**"));
  CHECK(Contains(table, "Code: " + BuildCodeVersion().ToString() + " (4 cells)"));
  CHECK_FALSE(Contains(RunExperiment(LoadExperiment(path), Quiet()).summary.ToMarkdown(), kQuickModeNote));
}

TEST_CASE("--reuse copies cells of another build only with reuse_other_code, keeping their code version") {
  TempDir dir;
  const std::string first_run = dir / "first";
  RunExperiment(LoadExperiment(WriteText(dir, "a.yaml", TinyExperimentYaml(first_run))), Quiet());
  // Pretend another build produced them: another code version, hence other ids.
  PretendOtherBuild(first_run);
  const std::string second_path = WriteText(dir, "b.yaml", TinyExperimentYaml(dir / "second"));
  RunOptions options = Quiet();
  options.reuse = {first_run};
  const RunReport refused = RunExperiment(LoadExperiment(second_path), options);
  CHECK(refused.reused == 0);
  CHECK(refused.ran == 4);

  const std::string third_path = WriteText(dir, "c.yaml", TinyExperimentYaml(dir / "third"));
  options.reuse_other_code = true;
  const RunReport copied = RunExperiment(LoadExperiment(third_path), options);
  CHECK(copied.reused == 4);
  CHECK(copied.ran == 0);
  const ResultsLog log(dir / "third/results.jsonl");
  for (const CellRecord& r : log.records()) {
    CHECK(IdentityCode(r.identity) == "0123456789abcdef0123456789abcdef01234567");
  }
  REQUIRE(copied.summary.code_versions.size() == 1);
  CHECK(copied.summary.code_versions.begin()->first == "0123456789abcdef0123456789abcdef01234567");
  CHECK(Contains(copied.summary.ToMarkdown(), "Code: 0123456789abcdef0123456789abcdef01234567 (4 cells)"));
}

TEST_CASE("--reuse copies another run's finished cells of the same identity, with their decisions") {
  TempDir dir;
  const std::string first_run = dir / "first";
  const ExperimentConfig first = LoadExperiment(WriteText(dir, "a.yaml", TinyExperimentYaml(first_run)));
  RunExperiment(first, Quiet());
  const std::map<std::string, std::string> source = ReproducibleById(first_run);
  REQUIRE(source.size() == 4);
  // The same grid under another name and a new label, in another folder,
  // plus cells of a larger budget that exist nowhere yet.
  const std::string second_run = dir / "second";
  const std::string second_path = WriteText(dir, "b.yaml", TinyExperimentYaml(second_run));
  RunOptions options = Quiet();
  options.reuse = {first_run};
  const RunReport reused = RunExperiment(
      LoadExperiment(second_path, {"name=second", "agents[1].label=rs", "output=" + second_run}), options);
  CHECK(reused.reused == 4);
  CHECK(reused.ran == 0);
  CHECK(reused.already_finished == 0);
  const ResultsLog log(second_run + "/results.jsonl");
  REQUIRE(log.records().size() == 4);
  for (const CellRecord& r : log.records()) {
    CHECK(r.reused_from == first_run);
    CHECK(r.experiment == "second");
    CHECK(FileExists(second_run + "/" + r.decision));
    // Measured fields and the decision are the source's.
    nlohmann::ordered_json mine = nlohmann::ordered_json::parse(Reproducible(r, second_run));
    nlohmann::ordered_json theirs = nlohmann::ordered_json::parse(source.at(r.cell));
    for (auto* json : {&mine, &theirs}) {
      for (const char* key : {"experiment", "label", "decision", "reused_from"}) json->erase(key);
    }
    CHECK(mine == theirs);
  }
  CHECK(std::count_if(log.records().begin(), log.records().end(),
                      [](const CellRecord& r) { return r.label == "rs"; }) == 2);
  // Reused lines survive a resume as they are; a changed budget has nothing
  // to reuse and runs.
  CHECK(RunExperiment(LoadExperiment(second_path, {"name=second", "output=" + second_run}), options)
            .already_finished == 4);
  const RunReport larger =
      RunExperiment(LoadExperiment(second_path, {"budget.evaluations=20", "output=" + second_run}), options);
  CHECK(larger.reused == 0);
  CHECK(larger.ran == 4);
  // A folder without results is an error that names it.
  options.reuse = {dir / "nowhere"};
  CHECK_THROWS_AS(RunExperiment(LoadExperiment(second_path), options), IoError);
}

TEST_CASE("parallel_cells gives the same results as a sequential run") {
  TempDir dir;
  const ExperimentConfig sequential =
      LoadExperiment(WriteText(dir, "a.yaml", TinyExperimentYaml(dir / "seq", 3)));
  const ExperimentConfig parallel =
      LoadExperiment(WriteText(dir, "b.yaml", TinyExperimentYaml(dir / "par", 3, "parallel_cells: true\n")));
  CHECK(RunExperiment(sequential, Quiet()).ran == 6);
  CHECK(RunExperiment(parallel, Quiet()).ran == 6);
  std::map<std::string, std::string> a = ReproducibleById(dir / "seq");
  std::map<std::string, std::string> b = ReproducibleById(dir / "par");
  CHECK(a == b);
}

TEST_CASE("A run folder in use by another process is refused") {
  TempDir dir;
  const std::string run = dir / "run";
  const ExperimentConfig config = LoadExperiment(WriteText(dir, "exp.yaml", TinyExperimentYaml(run)));
  std::filesystem::create_directories(run);
  const int fd = ::open((run + "/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK_THROWS_AS(RunExperiment(config, Quiet()), StateError);
  ::close(fd);
  CHECK(RunExperiment(config, Quiet()).ran == 4);
}

TEST_CASE("ListCells reports which cells are finished") {
  TempDir dir;
  const std::string run = dir / "run";
  const ExperimentConfig config = LoadExperiment(WriteText(dir, "exp.yaml", TinyExperimentYaml(run)));
  std::vector<CellStatus> before = ListCells(config);
  REQUIRE(before.size() == 4);
  for (const CellStatus& s : before) CHECK_FALSE(s.finished);
  RunOptions options = Quiet();
  options.max_cells = 3;
  RunExperiment(config, options);
  int finished = 0;
  for (const CellStatus& s : ListCells(config)) {
    finished += s.finished ? 1 : 0;
    CHECK_FALSE(s.finished_by_other_build);
  }
  CHECK(finished == 3);
  // The same cells as another build ran them: not finished for this build,
  // but listed as the other build's.
  PretendOtherBuild(run);
  int other = 0;
  for (const CellStatus& s : ListCells(config)) {
    CHECK_FALSE(s.finished);
    other += s.finished_by_other_build ? 1 : 0;
  }
  CHECK(other == 3);
}

}  // namespace
}  // namespace gosim::experiments
