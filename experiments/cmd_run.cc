// `gosim run EXPERIMENT.yaml [key=value ...]`: runs or resumes an experiment
// grid and prints the comparison table (docs/EXPERIMENTS.md). Under
// `mpirun -np N` the cells are spread over the N processes.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agents/learned_agents.h"
#include "core/error.h"
#include "core/version.h"
#include "experiments/commands.h"
#include "experiments/runner.h"

namespace gosim::cli {

namespace {

struct RunArgs {
  std::string experiment;
  std::vector<std::string> overrides;
  std::vector<std::string> reuse;
  std::vector<std::string> only;
  bool reuse_other_code = false;
  bool final = false;
  bool quick = false;
  int64_t max_cells = -1;
  bool list = false;
  bool no_progress = false;
};

int RunList(const experiments::ExperimentConfig& config) {
  const std::vector<experiments::CellStatus> cells = experiments::ListCells(config);
  int64_t finished = 0, other_build = 0;
  // Per agent label, in the experiment's order.
  struct Tally {
    int64_t done = 0, pending = 0, other = 0;  // other: of those pending, finished by another build
  };
  std::vector<Tally> by_agent(config.agents.size());
  std::printf("%-6s %-16s %-9s %-24s %-16s %-20s %s\n", "cell", "id", "status", "graph", "cluster", "agent",
              "seed");
  for (size_t i = 0; i < cells.size(); ++i) {
    const experiments::Cell& cell = cells[i].cell;
    finished += cells[i].finished ? 1 : 0;
    other_build += cells[i].finished_by_other_build ? 1 : 0;
    Tally& tally = by_agent[static_cast<size_t>(cell.agent)];
    (cells[i].finished ? tally.done : tally.pending) += 1;
    tally.other += cells[i].finished_by_other_build ? 1 : 0;
    std::printf("%-6zu %-16s %-9s %-24s %-16s %-20s %llu\n", i + 1, cell.id.c_str(),
                cells[i].finished ? "done" : (cells[i].finished_by_other_build ? "other" : "pending"),
                config.graphs[static_cast<size_t>(cell.graph)].name.c_str(),
                config.clusters[static_cast<size_t>(cell.cluster)].c_str(),
                config.agents[static_cast<size_t>(cell.agent)].label.c_str(),
                static_cast<unsigned long long>(cell.seed));
  }
  std::printf("\n%-20s %8s %8s %8s\n", "agent", "done", "pending", "other");
  for (size_t a = 0; a < config.agents.size(); ++a) {
    std::printf("%-20s %8lld %8lld %8lld\n", config.agents[a].label.c_str(),
                static_cast<long long>(by_agent[a].done), static_cast<long long>(by_agent[a].pending),
                static_cast<long long>(by_agent[a].other));
  }
  std::printf("%lld of %zu cells finished in %s\n", static_cast<long long>(finished), cells.size(),
              config.output.c_str());
  if (other_build > 0) {
    std::printf(
        "%lld pending cells (status 'other') are in the folder as another build of gosim ran them: this "
        "build "
        "(%s) runs them again; to use them, run into another folder (output=DIR) with --reuse %s "
        "--reuse-other-code, and the summary lists both code versions\n",
        static_cast<long long>(other_build), BuildCodeVersion().ToString().c_str(), config.output.c_str());
  }
  return 0;
}

int Run(const RunArgs& args) {
  // `--only a b` takes one label; `b` lands among the overrides. Say so
  // rather than "not of the form key.path=value".
  if (!args.only.empty()) {
    for (const std::string& word : args.overrides) {
      if (word.find('=') == std::string::npos) {
        throw ConfigError("'" + word + "' is neither the experiment nor an override (key.path=value)", {},
                          "--only takes one agent label: give each its own, e.g. --only " + args.only.back() +
                              " --only " + word);
      }
    }
  }
  const experiments::ExperimentConfig config =
      experiments::LoadExperiment(args.experiment, args.overrides, args.quick);
  if (args.list) return RunList(config);
  for (const experiments::AgentSpec& agent : config.agents) {
    if (agents::IsLearnedAgent(agent.name)) PrepareForLibTorch();  // may start the program again
  }
  experiments::RunOptions options;
  options.max_cells = args.max_cells;
  options.reuse = args.reuse;
  options.reuse_other_code = args.reuse_other_code;
  options.only_agents = args.only;
  options.final = args.final;
  options.progress = !args.no_progress;
  const experiments::Communicator& world = experiments::Communicator::World();
  options.comm = &world;
  const experiments::RunReport report = experiments::RunExperiment(config, options);
  if (world.rank() != 0) return 0;  // rank 0 prints the table and the failures
  std::printf("%s", report.summary.ToMarkdown().c_str());
  if (!config.note.empty()) std::printf("Note: %s\n\n", config.note.c_str());
  std::printf(
      "%lld cells: %lld already finished, %s%lld run now, %zu failed; results in %s/ (results.jsonl, "
      "curves.csv, decisions/, summary.md, summary.csv)\n",
      static_cast<long long>(report.total_cells), static_cast<long long>(report.already_finished),
      args.reuse.empty() ? "" : (std::to_string(report.reused) + " reused, ").c_str(),
      static_cast<long long>(report.ran), report.failed.size(), report.folder.c_str());
  if (report.held_back > 0) {
    std::printf(
        "%lld pending cells of the other agents are left: run again without --only to finish the grid\n",
        static_cast<long long>(report.held_back));
  }
  for (const std::string& failure : report.failed)
    std::fprintf(stderr, "gosim: failed cell %s\n", failure.c_str());
  return report.failed.empty() ? 0 : 1;
}

}  // namespace

void AddRunCommand(CLI::App& root) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run =
      root.add_subcommand("run", "Run (or resume) a YAML experiment: graphs x clusters x agents x seeds");
  InputFile(run->add_option("experiment", args->experiment, "Experiment YAML file (see docs/EXPERIMENTS.md)"))
      ->required();  // found from the working directory or the project's folder (core/data_path.h)
  run->add_option("overrides", args->overrides,
                  "Overrides of the experiment's keys, applied before validation: key.path=value "
                  "(e.g. budget.evaluations=500 agents[1].options.population=64 seeds=[0,1])");
  run->add_option("--max-cells", args->max_cells, "Run at most N unfinished cells, then stop (resume later)");
  InputFile(run->add_option(
                "--reuse", args->reuse,
                "Run folder of another experiment whose finished cells with the same identity (graph, "
                "cluster, cost model, objective, agent options, budget, seed) are copied instead of run "
                "(repeatable); cells of another build (code version) are not copied unless "
                "--reuse-other-code"))
      ->allow_extra_args(false);  // one folder per --reuse
  run->add_flag("--reuse-other-code", args->reuse_other_code,
                "With --reuse: also copy cells produced by another build of gosim (their lines keep "
                "that code version, and the summary lists the versions)");
  run->add_option("--only", args->only,
                  "Run only the cells of the agent with this label (as the summary names it; repeatable: "
                  "--only a --only b); "
                  "the grid, the run folder and the cells' identities stay the experiment's, so a later run "
                  "without --only finishes the rest (e.g. cheap rows first)")
      ->allow_extra_args(false);  // one label per --only: what follows is the experiment or an override
  run->add_flag(
      "--quick", args->quick,
      "The experiment's quick mode: its `quick:` overrides first (a smaller grid, its own run folder)");
  run->add_flag("--final", args->final,
                "Allow test graphs (a test split, or a graph of any suite's test split): a final evaluation, "
                "logged in the run folder's final_runs.jsonl");
  run->add_flag("--list", args->list, "List the cells and which are finished; run nothing");
  run->add_flag("--no-progress", args->no_progress, "No per-cell progress bars");
  Commands().push_back({run, [args] { return Run(*args); }});
}

}  // namespace gosim::cli
