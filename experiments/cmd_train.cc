// `gosim train CONFIG.yaml [--run-dir DIR] [--resume] [--evaluate-only]
// [key=value ...]`: trains a learned agent (the config's `agent` key picks
// the trainer, agents/learned/common/train.h). The run folder (default: the
// config's `output`, else runs/train/<name>) receives the config, curves.csv,
// checkpoint.pt (latest, written periodically and atomically), best.pt (best
// on the validation split) and the trainer's reports. --resume continues a
// killed run from checkpoint.pt exactly. Built only with LibTorch.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agents/learned/common/train.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/log.h"
#include "core/yaml.h"
#include "experiments/commands.h"
#include "experiments/mpi.h"
#include "experiments/splits.h"
#include "graphs/suite.h"
#include "sim/batch_exchange.h"

namespace gosim::cli {

namespace {

struct TrainArgs {
  std::string config;
  std::string run_dir;
  std::vector<std::string> overrides;
  bool resume = false;
  bool evaluate_only = false;
  bool no_progress = false;
  bool final = false;
  int64_t max_steps = -1;
};

// Sealed test sets (experiments/splits.h) for a training config: no entry
// of the train or valid split of its `suite` may be a test graph (refused,
// even with --final); the test graphs it touches (its `evaluate:` check on
// the test split, or the one `graph` it trains on) need --final. Returns
// those test graphs.
std::vector<std::string> CheckTrainingSplits(const YAML::Node& config, const std::string& file, bool final) {
  if (!config["suite"] || !config["suite"].IsScalar()) return {};
  const graphs::Suite suite = graphs::LoadSuite(ResolveDataPath(config["suite"].as<std::string>()));
  experiments::TestGraphIndex index = experiments::ProjectTestGraphs();
  index.Add(suite);
  const std::string name =
      config["name"] && config["name"].IsScalar() ? config["name"].as<std::string>() : file;
  for (const graphs::SuiteEntry& entry : suite.entries)
    experiments::CheckNoLeak(entry, index, "training " + name);
  // By content: a train or valid graph that builds a test graph is refused;
  // one of a test graph's family is a warning line.
  if (!suite.EntriesOf("train").empty() || !suite.EntriesOf("valid").empty()) {
    experiments::TestContentIndex content = experiments::ProjectTestContent();
    for (const graphs::SuiteEntry* entry : suite.EntriesOf("test"))
      content.Add(*entry, "entry '" + entry->name + "' of the test split of " + suite.path);
    for (const graphs::SuiteEntry& entry : suite.entries)
      experiments::CheckNoContentLeak(entry, content, "training " + name);
  }
  std::vector<std::string> touched;
  if (config["evaluate"]) {
    for (const graphs::SuiteEntry* entry : suite.EntriesOf("test"))
      touched.push_back(entry->name + " (evaluate:)");
  }
  if (config["graph"] && config["graph"].IsScalar()) {
    const graphs::SuiteEntry* entry = suite.Find(config["graph"].as<std::string>());
    if (entry != nullptr) {
      const std::string source =
          entry->split == "test" ? "the test split of " + suite.path : index.TestSourceOf(*entry);
      if (!source.empty()) touched.push_back(entry->name + " (" + source + ")");
    }
  }
  if (!touched.empty() && !final) {
    throw ConfigError("training " + name + " touches " + std::to_string(touched.size()) +
                          " test graph(s), e.g. " + touched.front(),
                      Location{file},
                      "pass --final for a final evaluation (logged in the run folder's final_runs.jsonl), or "
                      "drop evaluate: / train on a train-split graph");
  }
  return touched;
}

int Train(const TrainArgs& args) {
  YAML::Node config = LoadYamlFile(args.config);
  if (!config.IsMap()) {
    throw ConfigError("a training config must be a YAML mapping", Location{args.config},
                      "see configs/experiments/regal_train.yaml");
  }
  for (const std::string& assignment : args.overrides) ApplyOverride(config, assignment);
  const std::vector<std::string> test_graphs = CheckTrainingSplits(config, args.config, args.final);
  agents::learned::TrainRequest request;
  request.config = config;
  request.config_file = args.config;
  request.resume = args.resume;
  request.evaluate_only = args.evaluate_only;
  request.progress = !args.no_progress;
  request.max_steps = args.max_steps;
  request.run_dir = args.run_dir;
  if (request.run_dir.empty() && config["output"] && config["output"].IsScalar()) {
    request.run_dir = config["output"].as<std::string>();
  }
  if (request.run_dir.empty()) {
    std::string name = std::filesystem::path(args.config).stem().string();
    if (config["name"] && config["name"].IsScalar()) name = config["name"].as<std::string>();
    request.run_dir = "runs/train/" + name;
  }
  // Under mpirun every process runs the same training; the simulator batches
  // of each step are spread over them (sim/batch_exchange.h), so the run is
  // the single-process one. Rank 0 writes the run folder; the others write
  // their identical copies beside it (<run>.rank<r>), which --resume reads.
  const experiments::Communicator& world = experiments::Communicator::World();
  if (world.distributed()) {
    sim::SetBatchExchange(experiments::MakeBatchExchange(world));
    if (world.rank() != 0) {
      request.run_dir += ".rank" + std::to_string(world.rank());
      request.progress = false;
    }
  }
  std::error_code error;
  std::filesystem::create_directories(request.run_dir, error);
  if (error) {
    throw IoError("cannot create the run folder: " + error.message(), Location{request.run_dir},
                  "choose another --run-dir");
  }
  if (!test_graphs.empty() && world.rank() == 0) {
    const int64_t count =
        experiments::AppendFinalRun(request.run_dir, config, test_graphs, "gosim train " + args.config);
    GOSIM_LOG(Info) << "final run " << count << " on test graphs, logged in " << request.run_dir
                    << "/final_runs.jsonl";
  }
  agents::learned::RunTraining(request);
  if (world.rank() == 0) std::printf("run folder: %s\n", request.run_dir.c_str());
  return 0;
}

}  // namespace

void AddTrainCommand(CLI::App& root) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = root.add_subcommand("train", TorchCommandDescription("train"));
  InputFile(
      cmd->add_option("config", args->config, "Training config, e.g. configs/experiments/regal_train.yaml"))
      ->required();
  cmd->add_option("overrides", args->overrides, "Config overrides key=value (dotted keys, YAML values)");
  cmd->add_option("--run-dir", args->run_dir,
                  "Run folder (default: the config's output, else runs/train/NAME)");
  cmd->add_flag("--resume", args->resume, "Continue the run in the run folder from its checkpoint.pt");
  cmd->add_flag("--evaluate-only", args->evaluate_only,
                "Skip training; run the config's evaluation with the run folder's checkpoint");
  cmd->add_option("--max-steps", args->max_steps, "Stop after this many steps in this process (for testing)");
  cmd->add_flag("--no-progress", args->no_progress, "No progress lines");
  cmd->add_flag("--final", args->final,
                "Allow test graphs (an evaluate: check on the test split, or a test graph to train on); "
                "logged in the run folder's final_runs.jsonl");
  Commands().push_back({cmd, [args] { return Train(*args); }});
}

}  // namespace gosim::cli
