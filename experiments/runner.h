// The experiment runner behind `gosim run`, and the one-problem solve behind
// `gosim optimize`.
//
// RunExperiment expands the grid, skips the cells already in the run
// folder's results.jsonl, runs the others in grid order (graph, cluster,
// agent, seed) and writes the files described in experiments/results.h after
// every cell, so an interrupted run loses at most the cell in progress. One
// process at a time may use a run folder (an flock'd `.lock` file).
//
// Cells run one after another by default; agents parallelize inside. Under
// mpirun the cells are spread over the processes (RunOptions::comm). With
// `parallel_cells: true` the cells of one graph run concurrently, each with
// its own Evaluator; results are the same as sequential runs for agents whose
// budget is in evaluations (wall-clock budgets are inherently not
// reproducible), only the order of the lines in results.jsonl changes.
#ifndef GOSIM_EXPERIMENTS_RUNNER_H_
#define GOSIM_EXPERIMENTS_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "experiments/cells.h"
#include "experiments/experiment_config.h"
#include "experiments/mpi.h"
#include "experiments/summary.h"
#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/evaluator.h"

namespace gosim::experiments {

struct RunOptions {
  // Run at most this many unfinished cells, then stop as if interrupted
  // (-1 = all). Used by tests and to run a grid in slices.
  int64_t max_cells = -1;
  // Show a progress bar per cell (on a terminal; plain log lines otherwise).
  bool progress = true;
  // Several processes (mpirun -np N gosim run ...): rank 0 owns the run
  // folder, hands out the pending cells one at a time to the other ranks and
  // to a worker thread of its own, and writes every finished cell as it
  // arrives; the others run cells and send their outputs back. Every cell's
  // result is the same as in a single-process run (only the order of the
  // lines of results.jsonl and wall times differ). null or a world of one:
  // this process runs everything.
  const Communicator* comm = nullptr;
  // Run folders of other experiments (`gosim run --reuse DIR`): a cell not
  // finished here whose id (a hash of everything that determines its
  // result: graph, cluster, cost model, objective, agent and options,
  // budget, seed) is finished in one of them is copied, decision file
  // included, instead of run; its line records where it came from. The
  // first folder that has the cell wins. The id includes the code version,
  // so cells of another build are not copied: a warning line counts them,
  // and they run here, unless `reuse_other_code` is set
  // (`--reuse-other-code`): then a cell that matches in everything but the
  // code version is copied too, and its line keeps the version that
  // produced it (the summary lists the versions of its cells).
  std::vector<std::string> reuse;
  bool reuse_other_code = false;
  // `--only LABEL` (repeatable): run only the pending cells of these agents
  // (labels as in the summary: an agent's `label`, else its name); the
  // others stay pending for a later call. The run folder, the grid and every
  // cell's identity are those of the whole experiment, so a later call
  // without it finishes the grid (e.g. a grid's cheap rows first). Empty:
  // every agent. A label the experiment does not have is a ConfigError.
  std::vector<std::string> only_agents;
  // `--final`: the experiment may run on test graphs
  // (ExperimentConfig::test_graphs). Without it such an experiment is a
  // ConfigError; with it, the run is appended to the run folder's
  // final_runs.jsonl (experiments/splits.h) before any cell runs.
  bool final = false;
};

struct RunReport {
  std::string folder;               // the run folder
  int64_t total_cells = 0;          // cells of the grid
  int64_t already_finished = 0;     // skipped because results.jsonl had them
  int64_t reused = 0;               // copied from the `reuse` folders by this call
  int64_t ran = 0;                  // finished by this call
  int64_t held_back = 0;            // pending cells of agents that RunOptions::only_agents leaves out
  std::vector<std::string> failed;  // "cell id: error" of cells that threw; they run again next time
  Summary summary;                  // over every finished cell of the grid
};

// Runs (or resumes) `config`. Throws ConfigError / StateError / IoError for
// problems with the run folder; an error inside one cell is logged, listed
// in RunReport::failed, and the run goes on with the next cell.
RunReport RunExperiment(const ExperimentConfig& config, const RunOptions& options = {});

// The cells of `config` with whether each is finished in its run folder.
struct CellStatus {
  Cell cell;
  bool finished = false;
  // Not finished, but the folder holds the cell as another build (code
  // version) ran it: `--reuse-other-code` territory, not this build's result.
  bool finished_by_other_build = false;
};
std::vector<CellStatus> ListCells(const ExperimentConfig& config);

// One optimization: builds nothing, runs `agent` on the problem, checks the
// returned decision (ValidateDecision) and re-simulates it so the reported
// figures come from the simulator, not from the agent.
struct SolveResult {
  agents::AgentResult result;
  sim::Evaluation final;      // the best decision, re-simulated
  double score = 0.0;         // objective.Score(final)
  int64_t simulations = 0;    // evaluator calls made by the agent
  double wall_seconds = 0.0;  // of Optimize()
};
// `progress_label` non-empty: a progress bar with that label while it runs.
SolveResult Solve(agents::Agent& agent, const agents::Problem& problem,
                  const std::string& progress_label = {});

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_RUNNER_H_
