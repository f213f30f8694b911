#include "experiments/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core/version.h"
#include "experiments/pretrain.h"
#include "experiments/splits.h"
#include "sim/cost_model.h"
#include "sim/decision.h"

namespace gosim::experiments {

namespace fs = std::filesystem;

namespace {

// Holds an exclusive flock on `<folder>/.lock` for the lifetime of a run.
class FolderLock {
 public:
  explicit FolderLock(const std::string& folder) : path_(folder + "/.lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ < 0) throw IoError(std::string("cannot create lock file: ") + std::strerror(errno), {path_});
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw StateError("another gosim run is using this run folder", Location{path_},
                       "wait for it to finish, or set output: to another folder");
    }
  }
  ~FolderLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

std::string EmitYaml(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

// Writes config.yaml; a different earlier one is kept as config.<time>.yaml.
void WriteConfigCopy(const ExperimentConfig& config, const std::string& folder) {
  const std::string path = folder + "/config.yaml";
  const std::string text = EmitYaml(config.resolved);
  if (FileExists(path)) {
    const std::string previous = ReadFile(path);
    if (previous == text) return;
    std::string stamp = UtcNow();
    std::replace(stamp.begin(), stamp.end(), ':', '-');
    const std::string kept = folder + "/config." + stamp + ".yaml";
    std::error_code ec;
    fs::rename(path, kept, ec);
    if (ec) throw IoError("cannot keep the previous config: " + ec.message(), {path});
    GOSIM_LOG(Info) << "the experiment differs from the one run before in " << folder
                    << "; the earlier config is kept as " << kept;
  }
  WriteFileAtomic(path, text);
}

// The agent's score in words, for progress lines.
std::string DescribeScore(const agents::Objective& objective, double score) {
  if (!std::isfinite(score)) return "none yet";
  if (score >= agents::Objective::kInfeasibleBase) return "infeasible so far";
  switch (objective.kind) {
    case agents::ObjectiveKind::kStepTime:
      return FormatSeconds(score);
    case agents::ObjectiveKind::kPeakMemory:
      return FormatBytes(score);
    case agents::ObjectiveKind::kMaxLoad:
      return FormatSeconds(score) + " max-load";
    case agents::ObjectiveKind::kThroughput:
      return FormatSeconds(score) + " per micro-batch";
    case agents::ObjectiveKind::kWeighted:
      break;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4f", score);
  return buffer;
}

struct RunState {
  const ExperimentConfig& config;
  std::string folder;
  std::vector<sim::Cluster> clusters;
  std::shared_ptr<const sim::CostModel> cost_model;
  std::vector<Cell> cells;
  ResultsLog log;
  std::mutex write_mutex;  // the log and the derived files
};

void WriteDerivedFiles(RunState& state) {
  WriteFileAtomic(state.folder + "/curves.csv", CurvesCsv(state.log.records()));
  const Summary summary = Summarize(state.config, state.cells, state.log);
  WriteFileAtomic(state.folder + "/summary.md", summary.ToMarkdown());
  WriteFileAtomic(state.folder + "/summary.csv", summary.ToCsv());
}

// What one finished cell leaves behind: its results line and its best
// decision as decision JSON (not yet written).
struct CellOutput {
  CellRecord record;
  std::string decision_json;
};

// The fields of `record` that name `cell` in `config` (not part of its
// identity): experiment, graph entry, cluster, label, decision file.
void NameRecord(const ExperimentConfig& config, const Cell& cell, CellRecord* record) {
  record->experiment = config.name;
  record->graph = config.graphs[static_cast<size_t>(cell.graph)].name;
  record->cluster = config.clusters[static_cast<size_t>(cell.cluster)];
  record->label = config.agents[static_cast<size_t>(cell.agent)].label;
  record->decision = "decisions/" + cell.FileStem(config) + ".json";
}

// Runs one cell. Writes nothing; thread-safe.
CellOutput ComputeCell(const RunState& state, const Cell& cell, size_t position, const graphs::Graph& graph,
                       const sim::Evaluator& evaluator, bool show_bar) {
  const ExperimentConfig& config = state.config;
  const AgentSpec& spec = config.agents[static_cast<size_t>(cell.agent)];
  const sim::Cluster& cluster = state.clusters[static_cast<size_t>(cell.cluster)];
  const std::string cluster_name = config.clusters[static_cast<size_t>(cell.cluster)];
  const std::string counter =
      "cell " + std::to_string(position + 1) + "/" + std::to_string(state.cells.size());
  GOSIM_LOG(Info) << counter << ": " << graph.name() << " on " << cluster_name << ", " << spec.label
                  << ", seed " << cell.seed << " [" << cell.id << "]";

  YamlMap options(spec.options, spec.options_file, spec.options_path);
  std::unique_ptr<agents::Agent> agent = agents::MakeAgent(spec.name, options);
  const agents::Problem problem{graph, cluster, evaluator, config.objective, cell.budget, cell.seed};
  const SolveResult solved = Solve(*agent, problem, show_bar ? counter + " " + spec.label : std::string());

  CellOutput out;
  out.decision_json =
      sim::DecisionToJson(solved.result.best, graph, cluster,
                          {spec.name, static_cast<int64_t>(cell.seed), cell.budget.evaluations,
                           solved.result.evaluations, ObjectiveKindName(config.objective.kind)});
  CellRecord& record = out.record;
  record.cell = cell.id;
  NameRecord(config, cell, &record);
  record.nodes = graph.num_nodes();
  record.edges = graph.num_edges();
  record.devices = cluster.num_devices();
  record.agent = spec.name;
  record.seed = cell.seed;
  record.budget = cell.budget;
  record.objective = ObjectiveKindName(config.objective.kind);
  record.best_objective = solved.score;
  record.feasible = solved.final.feasible;
  record.step_time = solved.final.step_time;
  record.peak_memory = solved.final.peak_memory;
  record.oom_device = solved.final.oom_device;
  record.host_busy = solved.final.host_busy;
  record.execution = std::string(sim::ExecutionName(evaluator.execution()));
  record.cost_model = evaluator.cost_model_description();
  record.evaluations = solved.result.evaluations;
  record.simulations = solved.simulations;
  const PretrainCost pretrain = FindPretrainCost(spec.name, YamlToJson(spec.options));
  record.pretrain_evaluations = pretrain.evaluations;
  record.pretrain_source = pretrain.source;
  record.wall_seconds = solved.wall_seconds;
  record.extra = solved.result.extra;
  record.curve = CompressCurve(solved.result.curve);
  record.finished_at = UtcNow();
  record.identity = cell.identity;

  const DisplayMetric shown =
      ObjectiveDisplay(config.objective, record.step_time, record.peak_memory, record.best_objective);
  char value[64];
  std::snprintf(value, sizeof(value), "%.4g %s", shown.value, shown.unit);
  GOSIM_LOG(Info) << counter << " done: " << (record.feasible ? value : "infeasible") << " after "
                  << record.evaluations << " evaluations in " << FormatSeconds(record.wall_seconds);
  return out;
}

// Writes a finished cell's decision file, then appends its line (the order
// that makes a crash leave either a whole cell or none). The caller holds
// state.write_mutex.
void WriteCell(RunState& state, const CellOutput& out) {
  WriteFileAtomic(state.folder + "/" + out.record.decision, out.decision_json);
  state.log.Append(out.record);
}

// WriteCell, then the derived files. Thread-safe. A failed write (a full
// disk) is not a cell's failure: it throws an IoError that ends the run
// (the other cells would fail the same way), the results log left whole.
void CommitCell(RunState& state, const CellOutput& out) {
  std::lock_guard<std::mutex> lock(state.write_mutex);
  const auto stopped = [&](const IoError& e, const std::string& what) {
    return IoError(
        e.message() + "; the run stopped (cell " + out.record.cell + " " + what + ")", e.where(),
        "make room on the disk or set output: elsewhere, then run again: the finished cells are kept");
  };
  try {
    WriteCell(state, out);
  } catch (const IoError& e) {
    throw stopped(e, "is not recorded");
  }
  try {
    WriteDerivedFiles(state);
  } catch (const IoError& e) {
    throw stopped(e, "is recorded; the summaries are not up to date");
  }
}

// A results log's cells by their identity without the code version (to
// match cells across builds); of several lines, the last wins.
std::map<std::string, const CellRecord*> ByIdentityWithoutCode(const ResultsLog& log) {
  std::map<std::string, const CellRecord*> out;
  for (const CellRecord& record : log.records())
    out[DumpJson(IdentityWithoutCode(record.identity))] = &record;
  return out;
}

// Copies the finished cells of `folders` (RunOptions::reuse) that are not
// finished in `state`'s folder; returns how many.
int64_t ReuseCells(RunState& state, const std::vector<std::string>& folders, bool other_code) {
  std::lock_guard<std::mutex> lock(state.write_mutex);  // no cell runs yet; the writers share it all the same
  int64_t reused = 0;
  for (const std::string& folder : folders) {
    const std::string results = folder + "/results.jsonl";
    if (!FileExists(results)) {
      throw IoError("no results to reuse: " + results + " does not exist", {folder},
                    "pass the run folder of an earlier `gosim run`, the one that holds its results.jsonl");
    }
    if (fs::weakly_canonical(folder) == fs::weakly_canonical(state.folder)) continue;
    const ResultsLog source(results, /*repair=*/false);
    const std::map<std::string, const CellRecord*> by_identity = ByIdentityWithoutCode(source);
    int64_t from_here = 0, other_builds = 0;
    std::set<std::string> other_versions;
    for (const Cell& cell : state.cells) {
      if (state.log.Has(cell.id)) continue;
      const CellRecord* found = source.Find(cell.id);
      // The id hashes the identity; comparing it as well guards against a
      // collision or a hand-edited line.
      if (found != nullptr && found->identity != cell.identity) found = nullptr;
      if (found == nullptr) {
        const auto it = by_identity.find(DumpJson(IdentityWithoutCode(cell.identity)));
        if (it == by_identity.end()) continue;
        other_versions.insert(IdentityCode(it->second->identity));
        if (!other_code) {
          ++other_builds;
          continue;
        }
        found = it->second;
      }
      const std::string decision_path = folder + "/" + found->decision;
      if (!FileExists(decision_path)) {
        GOSIM_LOG(Warn) << "not reusing cell " << cell.id << " from " << folder << ": its decision file "
                        << decision_path << " is missing (the cell runs here)";
        continue;
      }
      CellOutput out;
      out.decision_json = ReadFile(decision_path);
      out.record = *found;
      // Names are this experiment's (labels and graph names are not part of
      // the identity); the measured fields are the source's, and so is the
      // identity (its code version says which build produced them).
      out.record.cell = cell.id;
      NameRecord(state.config, cell, &out.record);
      out.record.reused_from = found->reused_from.empty() ? folder : found->reused_from;
      WriteCell(state, out);
      ++from_here;
    }
    // Cells of test graphs copied from a final run there: that run used the
    // test set for this folder's cells, so its log line comes along.
    if (from_here > 0 && !state.config.test_graphs.empty()) {
      const int64_t carried = CarryFinalRuns(folder, state.folder);
      if (carried > 0) {
        GOSIM_LOG(Info) << "carried " << carried << " final run(s) logged in " << folder
                        << " into final_runs.jsonl (the reused cells came from them)";
      }
    }
    if (other_builds > 0) {
      GOSIM_LOG(Warn) << "not reusing " << other_builds << " cells of " << folder
                      << ": they were produced by "
                      << Join(std::vector<std::string>(other_versions.begin(), other_versions.end()), ", ")
                      << ", this build is " << BuildCodeVersion().ToString()
                      << " (they run here; --reuse-other-code copies them)";
    }
    if (from_here > 0) {
      GOSIM_LOG(Info)
          << "reused " << from_here << " finished cells from " << folder
          << (other_code && !other_versions.empty()
                  ? " (produced by " +
                        Join(std::vector<std::string>(other_versions.begin(), other_versions.end()), ", ") +
                        ")"
                  : std::string());
    }
    reused += from_here;
  }
  if (reused > 0) WriteDerivedFiles(state);  // once, after every copied line
  return reused;
}

// The graph and evaluator of the cells one worker runs, rebuilt only when
// the graph or the cluster changes (cells come graph by graph).
class CellWorkspace {
 public:
  explicit CellWorkspace(const RunState& state) : state_(state) {}
  // Throws what MaterializeGraph throws.
  void Prepare(const Cell& cell) {
    if (cell.graph != graph_index_) {
      evaluator_.reset();
      cluster_index_ = -1;
      graph_index_ = -1;
      graph_ = MaterializeGraph(state_.config.graphs[static_cast<size_t>(cell.graph)]);
      graph_index_ = cell.graph;
    }
    if (cell.cluster != cluster_index_) {
      evaluator_.reset();
      evaluator_ = std::make_unique<sim::Evaluator>(
          graph_, state_.clusters[static_cast<size_t>(cell.cluster)], state_.cost_model, state_.config.sim);
      cluster_index_ = cell.cluster;
    }
  }
  const graphs::Graph& graph() const { return graph_; }
  const sim::Evaluator& evaluator() const { return *evaluator_; }

 private:
  const RunState& state_;
  int32_t graph_index_ = -1;
  int32_t cluster_index_ = -1;
  graphs::Graph graph_;
  std::unique_ptr<sim::Evaluator> evaluator_;
};

// Message tags of a distributed run (rank 0 hands out cells, the others run
// them and send back their outputs).
enum RunTag : int { kTagReady = 1, kTagCell = 2, kTagStop = 3, kTagResult = 4, kTagFailed = 5 };

std::string JoinPositions(const std::vector<size_t>& positions) {
  std::string out;
  for (size_t p : positions) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

std::vector<size_t> SplitPositions(const std::string& text) {
  std::vector<size_t> out;
  for (const std::string& part : Split(text, ',')) {
    if (!part.empty()) out.push_back(static_cast<size_t>(std::stoull(part)));
  }
  return out;
}

// Rank > 0: runs the cells rank 0 sends until it says stop.
int64_t ServeCells(RunState& state, const Communicator& comm) {
  CellWorkspace workspace(state);
  int64_t ran = 0;
  comm.Send(0, kTagReady, "");
  while (true) {
    int tag = 0;
    const std::string message = comm.ReceiveFrom(0, &tag);
    if (tag == kTagStop) return ran;
    const size_t position = static_cast<size_t>(std::stoull(message));
    const Cell& cell = state.cells[position];
    try {
      workspace.Prepare(cell);
      const CellOutput out =
          ComputeCell(state, cell, position, workspace.graph(), workspace.evaluator(), false);
      comm.Send(0, kTagResult, DumpJson(out.record.ToJson()) + "\n" + out.decision_json);
      ++ran;
    } catch (const Error& e) {
      GOSIM_LOG(Error) << "cell " << cell.id << " failed on rank " << comm.rank() << ": " << e.kind() << ": "
                       << e.what() << " (it runs again next time)";
      comm.Send(0, kTagFailed, cell.id + ": " + e.what());
    }
  }
}

// Rank 0: hands out `pending` cells to the other ranks and to a worker
// thread of its own, commits every output as it arrives.
void DispatchCells(RunState& state, const Communicator& comm, const std::vector<size_t>& pending,
                   RunReport* report) {
  std::mutex queue_mutex;
  size_t next = 0;
  auto take = [&](size_t* position) {
    std::lock_guard<std::mutex> lock(queue_mutex);
    if (next >= pending.size()) return false;
    *position = pending[next++];
    return true;
  };
  std::mutex report_mutex;
  std::exception_ptr error;  // a failed write (e.g. the disk is full): stop handing out cells
  const auto stop = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(queue_mutex);
    if (!error) error = std::move(e);
    next = pending.size();
  };
  std::thread local([&] {
    CellWorkspace workspace(state);
    size_t position = 0;
    while (take(&position)) {
      const Cell& cell = state.cells[position];
      CellOutput out;
      try {
        workspace.Prepare(cell);
        out = ComputeCell(state, cell, position, workspace.graph(), workspace.evaluator(), false);
      } catch (const Error& e) {
        GOSIM_LOG(Error) << "cell " << cell.id << " failed: " << e.kind() << ": " << e.what()
                         << " (it runs again next time)";
        std::lock_guard<std::mutex> guard(report_mutex);
        report->failed.push_back(cell.id + ": " + e.what());
        continue;
      }
      try {
        CommitCell(state, out);
      } catch (...) {
        stop(std::current_exception());
        return;
      }
      std::lock_guard<std::mutex> guard(report_mutex);
      ++report->ran;
    }
  });
  int serving = comm.size() - 1;
  while (serving > 0) {
    int source = 0, tag = 0;
    const std::string message = comm.Receive(&source, &tag);
    try {
      if (tag == kTagResult) {
        const size_t split = message.find('\n');
        CellOutput out;
        out.record = CellRecord::FromJson(nlohmann::json::parse(message.substr(0, split)),
                                          "rank " + std::to_string(source));
        out.decision_json = message.substr(split + 1);
        CommitCell(state, out);
        std::lock_guard<std::mutex> guard(report_mutex);
        ++report->ran;
      } else if (tag == kTagFailed) {
        std::lock_guard<std::mutex> guard(report_mutex);
        report->failed.push_back(message);
      }
    } catch (...) {
      stop(std::current_exception());
    }
    size_t position = 0;
    if (take(&position)) {
      comm.Send(source, kTagCell, std::to_string(position));
    } else {
      comm.Send(source, kTagStop, "");
      --serving;
    }
  }
  local.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

SolveResult Solve(agents::Agent& agent, const agents::Problem& problem, const std::string& progress_label) {
  std::unique_ptr<ProgressBar> bar;
  std::atomic<int64_t> shown{0};
  agents::ProgressFn progress;
  if (!progress_label.empty()) {
    bar = std::make_unique<ProgressBar>(progress_label, problem.budget.evaluations);
    progress = [&](int64_t evaluations, double best) {
      int64_t previous = shown.load();
      while (evaluations > previous && !shown.compare_exchange_weak(previous, evaluations)) {
      }
      bar->SetStatus("best " + DescribeScore(problem.objective, best));
      if (evaluations > previous) bar->Add(evaluations - previous);
    };
  }
  const int64_t before = problem.evaluator.evaluations();
  const auto start = std::chrono::steady_clock::now();
  SolveResult out;
  out.result = agent.Optimize(problem, progress);
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.simulations = problem.evaluator.evaluations() - before;
  if (bar) bar->Finish();
  sim::ValidateDecision(out.result.best, problem.graph, problem.cluster);
  out.final = problem.evaluator.Evaluate(out.result.best);
  out.score = problem.objective.Score(out.final, problem.cluster);
  return out;
}

std::vector<CellStatus> ListCells(const ExperimentConfig& config) {
  const ResultsLog log(config.output + "/results.jsonl");
  const std::map<std::string, const CellRecord*> by_identity = ByIdentityWithoutCode(log);
  std::vector<CellStatus> out;
  for (Cell& cell : ExpandGrid(config)) {
    const bool finished = log.Has(cell.id);
    const bool other = !finished && by_identity.count(DumpJson(IdentityWithoutCode(cell.identity))) > 0;
    out.push_back({std::move(cell), finished, other});
  }
  return out;
}

RunReport RunExperiment(const ExperimentConfig& config, const RunOptions& options) {
  RunReport report;
  report.folder = config.output;
  if (!config.test_graphs.empty() && !options.final) {
    const size_t shown = std::min<size_t>(config.test_graphs.size(), 2);
    std::string names = Join(std::vector<std::string>(config.test_graphs.begin(),
                                                      config.test_graphs.begin() + static_cast<long>(shown)),
                             "; ");
    if (config.test_graphs.size() > shown)
      names += "; and " + std::to_string(config.test_graphs.size() - shown) + " more";
    throw ConfigError("experiment " + config.name + " runs on " + std::to_string(config.test_graphs.size()) +
                          " test graph(s): " + names,
                      Location{config.source},
                      "pass --final for a final evaluation (each is logged in the run folder's "
                      "final_runs.jsonl), or select split: train / valid");
  }
  std::vector<bool> agent_selected(config.agents.size(), options.only_agents.empty());
  if (!options.only_agents.empty()) {
    std::vector<std::string> labels;
    for (const AgentSpec& agent : config.agents) labels.push_back(agent.label);
    for (const std::string& only : options.only_agents) {
      const auto it = std::find(labels.begin(), labels.end(), only);
      if (it == labels.end()) {
        throw ConfigError("--only " + only + ": experiment " + config.name + " has no agent labelled '" +
                              only + "'." + DidYouMean(only, labels),
                          Location{config.source}, "give one of: " + Join(labels, ", "));
      }
      agent_selected[static_cast<size_t>(it - labels.begin())] = true;
    }
  }
  const Communicator* comm = options.comm != nullptr && options.comm->distributed() ? options.comm : nullptr;
  const bool primary = comm == nullptr || comm->rank() == 0;
  // Only rank 0 touches the run folder; the others learn the pending cells from it.
  std::unique_ptr<FolderLock> lock;
  if (primary) {
    std::error_code ec;
    fs::create_directories(config.output, ec);
    if (ec)
      throw IoError("cannot create the run folder: " + ec.message(), {config.output},
                    "set output: elsewhere");
    lock = std::make_unique<FolderLock>(config.output);
    WriteConfigCopy(config, config.output);
    if (!config.test_graphs.empty()) {
      const int64_t count =
          AppendFinalRun(config.output, config.resolved, config.test_graphs, "gosim run " + config.source);
      GOSIM_LOG(Info) << "final run " << count << " on the test graphs of " << config.output
                      << " (logged in final_runs.jsonl)";
    }
  }

  RunState state{config,  config.output,      {},
                 nullptr, ExpandGrid(config), ResultsLog(primary ? config.output + "/results.jsonl" : ""),
                 {}};
  report.total_cells = static_cast<int64_t>(state.cells.size());
  if (primary) {
    // The ids of this grid: readers of results.jsonl (analysis/) keep only
    // these, never lines other configurations or builds left in the folder.
    std::string ids;
    for (const Cell& cell : state.cells) ids += cell.id + "\n";
    WriteFileAtomic(config.output + "/cells.txt", ids);
  }

  // Cells still to run, grouped by graph (the grid is graph-major).
  std::vector<size_t> pending;
  if (primary) {
    report.reused = ReuseCells(state, options.reuse, options.reuse_other_code);
    for (size_t i = 0; i < state.cells.size(); ++i) {
      if (state.log.Has(state.cells[i].id)) {
        ++report.already_finished;
      } else if (!agent_selected[static_cast<size_t>(state.cells[i].agent)]) {
        ++report.held_back;
      } else {
        pending.push_back(i);
      }
    }
    report.already_finished -= report.reused;  // counted apart
    if (options.max_cells >= 0 && static_cast<int64_t>(pending.size()) > options.max_cells) {
      pending.resize(static_cast<size_t>(options.max_cells));
    }
    if (report.already_finished > 0) {
      GOSIM_LOG(Info) << "resuming " << config.output << ": " << report.already_finished << " of "
                      << report.total_cells << " cells already finished";
    }
    GOSIM_LOG(Info) << "experiment " << config.name << ": " << report.total_cells << " cells ("
                    << config.graphs.size() << " graphs x " << config.clusters.size() << " clusters x "
                    << config.agents.size() << " agents x seeds), " << pending.size() << " to run"
                    << (comm != nullptr ? " on " + std::to_string(comm->size()) + " processes" : "")
                    << (report.held_back > 0
                            ? "; " + std::to_string(report.held_back) +
                                  " pending cells of other agents left for a run without --only"
                            : "");
  }
  if (comm != nullptr) pending = SplitPositions(comm->Broadcast(JoinPositions(pending), 0));

  if (!pending.empty()) {
    for (const std::string& cluster : config.clusters) state.clusters.push_back(sim::LoadCluster(cluster));
    state.cost_model = sim::MakeCostModel(config.cost_model, config.cost_model_options, config.source);
  }
  if (comm != nullptr) {
    if (!primary) {
      report.ran = ServeCells(state, *comm);
      return report;  // rank 0 writes the files and the summary
    }
    DispatchCells(state, *comm, pending, &report);
    {
      std::lock_guard<std::mutex> lock_files(state.write_mutex);
      WriteDerivedFiles(state);
    }
    report.summary = Summarize(config, state.cells, state.log);
    return report;
  }

  const bool show_bar = options.progress && !config.parallel_cells;
  std::mutex report_mutex;
  // A cell's own error is logged and the run goes on; a failed write of its
  // results (CommitCell) ends the run.
  auto run_guarded = [&](size_t position, const graphs::Graph& graph, const sim::Evaluator& evaluator) {
    const Cell& cell = state.cells[position];
    CellOutput out;
    try {
      out = ComputeCell(state, cell, position, graph, evaluator, show_bar);
    } catch (const Error& e) {
      GOSIM_LOG(Error) << "cell " << cell.id << " failed: " << e.kind() << ": " << e.what()
                       << " (it runs again next time)";
      std::lock_guard<std::mutex> guard(report_mutex);
      report.failed.push_back(cell.id + ": " + e.what());
      return;
    }
    CommitCell(state, out);
    std::lock_guard<std::mutex> guard(report_mutex);
    ++report.ran;
  };

  size_t next = 0;
  while (next < pending.size()) {
    const int32_t g = state.cells[pending[next]].graph;
    size_t end = next;
    while (end < pending.size() && state.cells[pending[end]].graph == g) ++end;
    const GraphEntry& entry = config.graphs[static_cast<size_t>(g)];
    graphs::Graph graph;
    try {
      graph = MaterializeGraph(entry);
    } catch (const Error& e) {
      GOSIM_LOG(Error) << "graph " << entry.name << " failed to load: " << e.kind() << ": " << e.what();
      for (size_t i = next; i < end; ++i)
        report.failed.push_back(state.cells[pending[i]].id + ": " + e.what());
      next = end;
      continue;
    }
    GOSIM_LOG(Info) << "graph " << entry.name << ": " << graph.num_nodes() << " nodes, " << graph.num_edges()
                    << " edges";
    if (config.parallel_cells) {
      // Each concurrent cell gets its own Evaluator: agents budget by the
      // evaluator's counter, which must not mix two cells' calls.
      tbb::parallel_for(next, end, [&](size_t i) {
        const size_t position = pending[i];
        const sim::Evaluator evaluator(graph,
                                       state.clusters[static_cast<size_t>(state.cells[position].cluster)],
                                       state.cost_model, config.sim);
        run_guarded(position, graph, evaluator);
      });
    } else {
      std::unique_ptr<sim::Evaluator> evaluator;
      int32_t evaluator_cluster = -1;
      for (size_t i = next; i < end; ++i) {
        const size_t position = pending[i];
        const int32_t c = state.cells[position].cluster;
        if (c != evaluator_cluster) {
          evaluator.reset();
          evaluator = std::make_unique<sim::Evaluator>(graph, state.clusters[static_cast<size_t>(c)],
                                                       state.cost_model, config.sim);
          evaluator_cluster = c;
        }
        run_guarded(position, graph, *evaluator);
      }
    }
    next = end;
  }

  {
    std::lock_guard<std::mutex> lock_files(state.write_mutex);
    WriteDerivedFiles(state);
  }
  report.summary = Summarize(config, state.cells, state.log);
  return report;
}

}  // namespace gosim::experiments
