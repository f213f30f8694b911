#include "experiments/experiment_config.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/data_path.h"
#include "core/io.h"
#include "core/log.h"
#include "core/strings.h"
#include "experiments/cells.h"
#include "experiments/splits.h"
#include "graphs/json_format.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/msr.h"

namespace gosim::experiments {

namespace fs = std::filesystem;

namespace {

// The node itself, or a null node for the invalid node of a missing key.
YAML::Node Defined(const YAML::Node& node) {
  return node ? node : YAML::Node();
}

agents::Budget ParseBudget(const YAML::Node& node, const std::string& file, const std::string& path,
                           const agents::Budget& fallback) {
  agents::Budget budget = fallback;
  if (node.IsScalar()) {
    // `budget: 5000` is shorthand for `budget: {evaluations: 5000}`.
    budget.evaluations = YamlAs<int64_t>(node, file, path);
    budget.wall_seconds = 0.0;
  } else {
    YamlMap map(node, file, path);
    budget.evaluations = map.Get<int64_t>("evaluations", fallback.evaluations);
    budget.wall_seconds = map.Get<double>("wall_seconds", fallback.wall_seconds);
    map.Finish();
  }
  CheckBudget(budget, YamlLocation(node, file, path));
  return budget;
}

// `seeds: 3` means 0, 1, 2; `seeds: [7, 11]` lists them.
std::vector<uint64_t> ParseSeeds(const YAML::Node& node, const std::string& file, const std::string& path) {
  std::vector<uint64_t> seeds;
  if (node.IsScalar()) {
    const int64_t count = YamlAs<int64_t>(node, file, path);
    if (count < 1 || count > 100000) {
      throw ConfigError("seeds must be a count in [1, 100000] or a list of seeds",
                        YamlLocation(node, file, path));
    }
    for (int64_t s = 0; s < count; ++s) seeds.push_back(static_cast<uint64_t>(s));
  } else if (node.IsSequence()) {
    std::set<uint64_t> seen;
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string element = path + "[" + std::to_string(i) + "]";
      const int64_t seed = YamlAs<int64_t>(node[i], file, element);
      if (seed < 0) throw ConfigError("a seed must be >= 0", YamlLocation(node[i], file, element));
      if (!seen.insert(static_cast<uint64_t>(seed)).second) {
        throw ConfigError("seed " + std::to_string(seed) + " is listed twice",
                          YamlLocation(node[i], file, element));
      }
      seeds.push_back(static_cast<uint64_t>(seed));
    }
    if (seeds.empty()) throw ConfigError("the list of seeds is empty", YamlLocation(node, file, path));
  } else {
    throw ConfigError("seeds must be a count or a list of seeds", YamlLocation(node, file, path));
  }
  return seeds;
}

// A scalar or a list of scalars as a list of strings.
std::vector<std::string> StringList(const YAML::Node& node, const std::string& file,
                                    const std::string& path) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (node.IsScalar()) return {YamlAs<std::string>(node, file, path)};
  if (!node.IsSequence())
    throw ConfigError("expected a name or a list of names", YamlLocation(node, file, path));
  for (size_t i = 0; i < node.size(); ++i) {
    out.push_back(YamlAs<std::string>(node[i], file, path + "[" + std::to_string(i) + "]"));
  }
  return out;
}

AgentSpec ParseAgent(YamlMap& map, const ExperimentConfig& config) {
  AgentSpec spec;
  spec.where = map.Where();
  spec.name = map.Require<std::string>("name");
  const std::vector<std::string> names = agents::AgentNames();
  if (std::find(names.begin(), names.end(), spec.name) == names.end()) {
    map.Fail("name", "unknown agent '" + spec.name + "'." + DidYouMean(spec.name, names),
             "valid agents are: " + Join(names, ", "));
  }
  spec.label = map.Get<std::string>("label", spec.name);
  if (spec.label.empty()) map.Fail("label", "an agent label must not be empty");
  // reset() rebinds; operator= on a yaml-cpp node would write through to the tree
  // (and throws on the invalid node a missing key gives).
  spec.options.reset(Defined(map.Node("options")));
  spec.options_file = map.file();
  spec.options_path = map.ChildPath("options");
  if (spec.options && spec.options.IsScalar()) {
    // `options: configs/agents/brkga.yaml` reads the options from a file.
    spec.options_file = ResolveDataPath(YamlAs<std::string>(spec.options, map.file(), spec.options_path));
    if (!std::filesystem::is_regular_file(spec.options_file)) {
      map.Fail("options", "no agent options file '" + spec.options_file + "'",
               "give a mapping of options or the path of a YAML file of options (e.g. configs/agents/" +
                   spec.name + ".yaml)");
    }
    spec.options.reset(LoadYamlFile(spec.options_file));
    spec.options_path = "";
  }
  if (!spec.options || spec.options.IsNull()) spec.options.reset(YAML::Node(YAML::NodeType::Map));
  if (!spec.options.IsMap()) {
    throw ConfigError("agent options must be a mapping of key: value pairs",
                      YamlLocation(spec.options, spec.options_file, spec.options_path));
  }
  spec.budget = config.budget;
  if (map.Has("budget"))
    spec.budget = ParseBudget(map.Node("budget"), map.file(), map.ChildPath("budget"), config.budget);
  spec.seeds = config.seeds;
  if (map.Has("seeds")) spec.seeds = ParseSeeds(map.Node("seeds"), map.file(), map.ChildPath("seeds"));
  map.Finish();
  // Build the agent once so that bad options fail now, not hours into a run.
  YamlMap options(spec.options, spec.options_file, spec.options_path);
  agents::MakeAgent(spec.name, options);
  options.Finish();
  return spec;
}

}  // namespace

sim::Cluster LoadClusterFor(const std::string& preset_or_path, const graphs::Graph& graph,
                            const Location& where) {
  if (preset_or_path != kClusterFromGraph) return LoadClusterAt(preset_or_path, where);
  const std::string& file = graph.source();
  if (file.empty() || !graphs::IsMsrProblem(ReadFile(file))) {
    throw ConfigError("cluster from-graph needs a graph file that brings its machine, and graph '" +
                          graph.name() + "' " +
                          (file.empty() ? "was not read from a file" : "(" + file + ") names none"),
                      where, "give msr-fiddle's problem file as the graph, or name a cluster preset");
  }
  return sim::MsrCluster(graphs::ReadMsrProblem(ReadFile(file), file));
}

sim::Cluster LoadClusterAt(const std::string& preset_or_path, const Location& where) {
  if (preset_or_path == kClusterFromGraph) {
    throw ConfigError("cluster from-graph takes its machine from the graph file, which is not known here",
                      where, "use it with gosim simulate / optimize --graph FILE, or name a cluster preset");
  }
  try {
    return sim::LoadCluster(preset_or_path);
  } catch (const ConfigError& e) {
    // Not found (or bad :parameters): sim names only the bare name. Errors
    // inside a file name the file, with a line where they have one (an
    // empty or truncated file's may not).
    if (e.where().file == preset_or_path && e.where().line == 0 &&
        !FileExists(ResolveDataPath(preset_or_path)))
      throw ConfigError(e.message(), where, e.hint());
    throw;
  }
}

sim::SimOptions ParseSimOptions(YamlMap& map) {
  sim::SimOptions options;
  options.track_memory = map.Get<bool>("track_memory", options.track_memory);
  options.infeasible_step_time = map.Get<double>("infeasible_step_time", options.infeasible_step_time);
  options.stop_at_oom = map.Get<bool>("stop_at_oom", options.stop_at_oom);
  options.reuse_transfers = map.Get<bool>("reuse_transfers", options.reuse_transfers);
  options.oom_live_tensors = map.Get<int>("oom_live_tensors", options.oom_live_tensors);
  options.enforce_colocation = map.Get<bool>("enforce_colocation", options.enforce_colocation);
  if (map.Has("execution")) {
    const std::string text = map.Get<std::string>("execution", "");
    const std::optional<sim::Execution> e = sim::ParseExecution(text);
    if (!e)
      map.Fail("execution", "unknown execution '" + text + "'", "give auto, none, eager, graph or captured");
    options.execution = *e;
  }
  if (map.Has("processes")) {
    const std::string text = map.Get<std::string>("processes", "");
    const std::optional<sim::Processes> p = sim::ParseProcesses(text);
    if (!p) map.Fail("processes", "unknown processes '" + text + "'", "give auto, one or per_device");
    options.processes = *p;
  }
  options.host_threads = map.Get<int>("host_threads", options.host_threads);
  if (options.host_threads < 1) map.Fail("host_threads", "host_threads must be >= 1");
  options.launch_queue = map.Get<int>("launch_queue", options.launch_queue);
  if (options.launch_queue < 1) map.Fail("launch_queue", "launch_queue must be >= 1");
  options.max_load = map.Get<bool>("max_load", options.max_load);
  options.micro_batches = map.Get<int>("micro_batches", options.micro_batches);
  if (options.micro_batches < 1 || options.micro_batches > 4096)
    map.Fail("micro_batches", "micro_batches must be 1 (one step) to 4096 (a pipeline)");
  if (map.Has("schedule")) {
    const std::string text = map.Get<std::string>("schedule", "");
    const std::optional<sim::Schedule> schedule = sim::ParseSchedule(text);
    if (!schedule) map.Fail("schedule", "unknown schedule '" + text + "'", "give streaming, gpipe or 1f1b");
    options.schedule = *schedule;
  }
  map.Finish();
  return options;
}

agents::Objective ParseObjective(const YAML::Node& node, const std::string& file, const std::string& path) {
  agents::Objective objective;
  if (!node || node.IsNull()) return objective;
  if (node.IsScalar()) {
    objective.kind =
        agents::ParseObjectiveKind(YamlAs<std::string>(node, file, path), YamlLocation(node, file, path));
    return objective;
  }
  YamlMap map(node, file, path);
  objective.kind = agents::ParseObjectiveKind(map.Require<std::string>("kind"), map.Where("kind"));
  objective.memory_weight = map.Get<double>("memory_weight", objective.memory_weight);
  objective.reference_step_time = map.Get<double>("reference_step_time", objective.reference_step_time);
  map.Finish();
  if (!(objective.memory_weight >= 0.0)) map.Fail("memory_weight", "memory_weight must be >= 0");
  if (!(objective.reference_step_time > 0.0)) {
    map.Fail("reference_step_time", "reference_step_time must be > 0 (seconds)");
  }
  if (objective.kind != agents::ObjectiveKind::kWeighted &&
      (map.Has("memory_weight") || map.Has("reference_step_time"))) {
    map.Fail("kind", "memory_weight and reference_step_time apply only to kind: weighted");
  }
  return objective;
}

const char* ObjectiveKindName(agents::ObjectiveKind kind) {
  switch (kind) {
    case agents::ObjectiveKind::kStepTime:
      return "step_time";
    case agents::ObjectiveKind::kPeakMemory:
      return "peak_memory";
    case agents::ObjectiveKind::kWeighted:
      return "weighted";
    case agents::ObjectiveKind::kMaxLoad:
      return "max_load";
    case agents::ObjectiveKind::kThroughput:
      return "throughput";
  }
  return "step_time";
}

DisplayMetric ObjectiveDisplay(const agents::Objective& objective, double step_time_s,
                               double peak_memory_bytes, double score) {
  switch (objective.kind) {
    case agents::ObjectiveKind::kStepTime:
      return {"ms", step_time_s * 1e3};
    case agents::ObjectiveKind::kPeakMemory:
      return {"GiB", peak_memory_bytes / static_cast<double>(1ULL << 30)};
    case agents::ObjectiveKind::kMaxLoad:
    case agents::ObjectiveKind::kThroughput:
      return {"ms", score * 1e3};
    case agents::ObjectiveKind::kWeighted:
      break;
  }
  return {"", score};
}

ExperimentConfig ParseExperiment(const YAML::Node& root, const std::string& source) {
  if (!root || !root.IsMap()) {
    throw ConfigError("an experiment must be a YAML mapping", YamlLocation(root, source, ""),
                      "see docs/EXPERIMENTS.md for the schema");
  }
  ExperimentConfig config;
  config.source = source;
  config.resolved = YAML::Clone(root);
  YamlMap map = YamlMap::Root(root, source);

  // The file name without .yaml (and .gz: an experiment may be gzip'd).
  fs::path file = fs::path(source).filename();
  if (file.extension() == ".gz") file = file.stem();
  const std::string stem = source.empty() ? "experiment" : file.stem().string();
  config.name = map.Get<std::string>("name", stem);
  if (config.name.empty() || SafeFileName(config.name) != config.name) {
    map.Fail("name", "an experiment name may use only letters, digits, '.', '_' and '-'");
  }
  map.Get<std::string>("description", "");
  config.note = map.Get<std::string>("note", "");

  // Graphs: a suite file, inline entries, or both (suite entries first).
  const bool has_suite = map.Has("suite");
  const bool has_graphs = map.Has("graphs");
  if (!has_suite && !has_graphs) {
    map.FailMissing("suite", "the experiment names no graphs", "add suite: <suite.yaml> or a graphs: list");
  }
  config.splits = StringList(map.Node("split"), source, map.ChildPath("split"));
  if (has_suite) {
    config.suite = map.Require<std::string>("suite");
    for (GraphEntry& entry : LoadSuiteEntries(config.suite, map.Where("suite"))) {
      config.graphs.push_back(std::move(entry));
    }
  }
  if (has_graphs) {
    for (GraphEntry& entry : ParseGraphEntries(map.Node("graphs"), source, map.ChildPath("graphs"))) {
      config.graphs.push_back(std::move(entry));
    }
  }
  TestGraphIndex index = ProjectTestGraphs();  // and the experiment's own test entries
  for (const GraphEntry& entry : config.graphs) {
    if (entry.split == "test") {
      index.Add(entry.entry,
                "entry '" + entry.name + "' of the test split of " + (has_suite ? config.suite : source));
    }
  }
  if (!config.splits.empty()) {
    std::set<std::string> present;
    for (const GraphEntry& entry : config.graphs) present.insert(entry.split);
    for (const std::string& split : config.splits) {
      if (!present.count(split)) {
        map.Fail("split", "no graph belongs to split '" + split + "'",
                 "the graphs' splits are: " +
                     Join(std::vector<std::string>(present.begin(), present.end()), ", "));
      }
    }
    std::erase_if(config.graphs, [&](const GraphEntry& entry) {
      return std::find(config.splits.begin(), config.splits.end(), entry.split) == config.splits.end();
    });
  }
  if (config.graphs.empty()) map.Fail(has_suite ? "suite" : "graphs", "the experiment has no graphs");
  {
    // Sealed test sets: no train or valid graph may be a test graph of any
    // suite, and the test graphs are listed for RunExperiment's --final check.
    for (GraphEntry& entry : config.graphs) {
      CheckNoLeak(entry.entry, index, "experiment " + config.name);
      entry.test_source = entry.split == "test" ? "the test split of " + (has_suite ? config.suite : source)
                                                : index.TestSourceOf(entry.entry);
      if (!entry.test_source.empty())
        config.test_graphs.push_back(entry.name + " (" + entry.test_source + ")");
    }
  }
  std::set<std::string> graph_names;
  for (const GraphEntry& entry : config.graphs) {
    if (!graph_names.insert(entry.name).second) {
      throw ConfigError("two graphs are both named '" + entry.name + "'", entry.where,
                        "give each graph entry a distinct name: key");
    }
  }

  // Machines and the simulator.
  config.clusters = StringList(map.Node("clusters"), source, map.ChildPath("clusters"));
  if (config.clusters.empty()) {
    // Absent (often misspelt: the error suggests the key that is there) or an empty list.
    if (!map.Has("clusters"))
      map.FailMissing("clusters", "the experiment names no clusters", "e.g. clusters: [p100x4_pcie]");
    map.Fail("clusters", "the experiment names no clusters", "e.g. clusters: [p100x4_pcie]");
  }
  {
    const YAML::Node clusters = map.Node("clusters");
    std::set<std::string> seen;
    for (size_t i = 0; i < config.clusters.size(); ++i) {
      const YAML::Node item = clusters.IsSequence() ? clusters[i] : clusters;
      const Location where =
          YamlLocation(item, source, map.ChildPath("clusters") + "[" + std::to_string(i) + "]");
      if (!seen.insert(config.clusters[i]).second) {
        throw ConfigError("cluster '" + config.clusters[i] + "' is listed twice", where);
      }
      LoadClusterAt(config.clusters[i], where);
    }
  }
  const YAML::Node cost_model = map.Node("cost_model");
  if (cost_model && cost_model.IsScalar()) {
    config.cost_model = YamlAs<std::string>(cost_model, source, "cost_model");
  } else if (cost_model && cost_model.IsMap()) {
    YamlMap cm(cost_model, source, "cost_model");
    config.cost_model = cm.Require<std::string>("name");
    config.cost_model_options.reset(Defined(cm.Node("options")));
    cm.Finish();
  } else if (cost_model && !cost_model.IsNull()) {
    map.Fail("cost_model", "cost_model must be a name or {name: ..., options: {...}}");
  }
  if (!config.cost_model_options || config.cost_model_options.IsNull()) {
    config.cost_model_options.reset(YAML::Node(YAML::NodeType::Map));
  }
  {
    const std::vector<std::string> models = sim::CostModelNames();
    if (std::find(models.begin(), models.end(), config.cost_model) == models.end()) {
      map.Fail("cost_model",
               "unknown cost model '" + config.cost_model + "'." + DidYouMean(config.cost_model, models),
               "valid cost models are: " + Join(models, ", "));
    }
    sim::MakeCostModel(config.cost_model, config.cost_model_options, source);
  }
  YamlMap sim_map = map.Child("sim");
  config.sim = ParseSimOptions(sim_map);
  config.objective = ParseObjective(map.Node("objective"), source, "objective");
  config.sim.max_load = config.objective.kind == agents::ObjectiveKind::kMaxLoad;

  // Budgets, seeds, agents.
  if (map.Has("budget")) config.budget = ParseBudget(map.Node("budget"), source, "budget", config.budget);
  if (map.Has("seeds")) config.seeds = ParseSeeds(map.Node("seeds"), source, "seeds");
  if (!map.Has("agents"))
    map.FailMissing("agents", "the experiment names no agents", "add an agents: list of {name: ...}");
  std::set<std::string> labels;
  for (YamlMap& agent_map : map.ChildList("agents")) {
    AgentSpec spec = ParseAgent(agent_map, config);
    if (!labels.insert(spec.label).second) {
      agent_map.Fail("", "two agents are both labelled '" + spec.label + "'",
                     "give each agent entry a distinct label: (it names the agent in results and tables)");
    }
    config.agents.push_back(std::move(spec));
  }
  if (config.agents.empty()) map.Fail("agents", "the list of agents is empty");

  config.reference = map.Get<std::string>("reference", config.agents.front().label);
  if (!labels.count(config.reference)) {
    const std::vector<std::string> valid(labels.begin(), labels.end());
    map.Fail(
        "reference",
        "reference '" + config.reference + "' is not an agent label." + DidYouMean(config.reference, valid),
        "valid labels are: " + Join(valid, ", "));
  }
  config.output = map.Get<std::string>("output", "runs/" + config.name);
  if (config.output.empty()) map.Fail("output", "output must name a folder");
  config.parallel_cells = map.Get<bool>("parallel_cells", false);
  config.mode = map.Get<std::string>("mode", "full");
  if (config.mode != "full" && config.mode != "quick") {
    map.Fail("mode", "mode must be full or quick, not '" + config.mode + "'",
             "quick marks a pipeline check at toy sizes; full (the default) a result");
  }
  map.Finish();
  // The same by content (after every key is read, so that a typo is the
  // error reported): a train or valid graph that builds a test graph
  // under other text is refused; one of a test graph's family is said.
  const bool trains = std::any_of(config.graphs.begin(), config.graphs.end(), [](const GraphEntry& e) {
    return e.split == "train" || e.split == "valid";
  });
  if (trains) {
    TestContentIndex content = ProjectTestContent();
    for (const GraphEntry& entry : config.graphs) {
      if (entry.split == "test")
        content.Add(entry.entry,
                    "entry '" + entry.name + "' of the test split of " + (has_suite ? config.suite : source));
    }
    for (const GraphEntry& entry : config.graphs) {
      for (std::string& line : CheckNoContentLeak(entry.entry, content, "experiment " + config.name))
        config.near_duplicates.push_back(std::move(line));
    }
  }
  return config;
}

std::string OverrideFolder(const YAML::Node& resolved) {
  YAML::Node copy = YAML::Clone(resolved);
  if (copy.IsMap()) {
    copy.remove("output");
  }
  YAML::Emitter out;
  out << copy;
  return "with-" + HashHex(out.c_str()).substr(0, 8);
}

void CheckBudget(const agents::Budget& budget, const Location& where) {
  if (budget.evaluations < 0) throw ConfigError("budget evaluations must be >= 0", where);
  if (budget.evaluations > kMaxBudgetEvaluations) {
    throw ConfigError("budget of " + std::to_string(budget.evaluations) +
                          " evaluations is above the limit of " + std::to_string(kMaxBudgetEvaluations),
                      where, "give a smaller budget (0 = the agent's default)");
  }
  if (!(budget.wall_seconds >= 0.0)) throw ConfigError("budget wall_seconds must be >= 0", where);
  if (!(budget.wall_seconds <= kMaxBudgetWallSeconds)) {
    throw ConfigError("budget wall_seconds is above the limit of 1e7 s (about 116 days)", where,
                      "give a smaller wall-clock budget (0 = no limit)");
  }
}

int64_t ParseBudgetEvaluations(const std::string& text, const Location& where) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size()) {
    throw ConfigError("budget '" + text + "' is not a whole number of evaluations", where,
                      "give a plain integer, e.g. --budget 5000 (0 = the agent's default)");
  }
  if (ec == std::errc::result_out_of_range || value < 0 || value > kMaxBudgetEvaluations) {
    throw ConfigError(
        "budget " + text + " is outside 0.." + std::to_string(kMaxBudgetEvaluations) + " evaluations", where,
        "give a smaller budget (0 = the agent's default)");
  }
  return value;
}

ExperimentConfig LoadExperiment(const std::string& given, const std::vector<std::string>& given_overrides,
                                bool quick) {
  const std::string path = ResolveDataPath(given);
  YAML::Node root = LoadYamlFile(path);
  if (!root.IsMap()) {
    throw ConfigError("an experiment must be a YAML mapping", Location{path, 1},
                      "see docs/EXPERIMENTS.md for the schema");
  }
  // `quick:` lists the overrides of the experiment's quick mode (--quick),
  // applied before the command line's.
  std::vector<std::string> overrides;
  if (const YAML::Node list = root["quick"]; list) {
    Location at{path, list.Mark().line + 1, list.Mark().column + 1};
    at.path = "quick";
    if (!list.IsSequence())
      throw ConfigError("quick must be a list of overrides (\"key=value\")", at, "e.g. quick: [seeds=2]");
    for (const YAML::Node& item : list) {
      if (!item.IsScalar() || item.Scalar().find('=') == std::string::npos)
        throw ConfigError("quick lists overrides \"key=value\", not '" + YAML::Dump(item) + "'", at);
      if (quick) overrides.push_back(item.Scalar());
    }
    root.remove("quick");
  } else if (quick) {
    throw ConfigError("this experiment has no quick mode (no quick: list of overrides)", Location{path, 1},
                      "run it without --quick, or give overrides on the command line");
  }
  overrides.insert(overrides.end(), given_overrides.begin(), given_overrides.end());
  for (const std::string& assignment : overrides) ApplyOverride(root, assignment);
  bool names_output = false, changes_grid = false;
  for (const std::string& assignment : overrides) {
    const std::string key = assignment.substr(0, assignment.find('='));
    (key == "output" ? names_output : changes_grid) = true;
  }
  try {
    ExperimentConfig config = ParseExperiment(root, path);
    if (changes_grid && !names_output) {
      config.output += "/" + OverrideFolder(config.resolved);
      GOSIM_LOG(Info) << "overrides given: the run folder is " << config.output
                      << " (name one with output=DIR)";
    }
    return config;
  } catch (const ConfigError& e) {
    // A value set on the command line has no line in the file: name the override instead.
    for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
      const std::string key = it->substr(0, it->find('='));
      const std::string& at = e.where().path;
      const bool inside = at == key || StartsWith(at, key + ".") || StartsWith(at, key + "[");
      // A key the override created (no line: it is not in the file).
      const bool created = e.where().line == 0 && (StartsWith(key, at + ".") || StartsWith(key, at + "["));
      if (inside || created) {
        Location where{"override '" + *it + "'"};
        where.path = at;
        throw ConfigError(e.message(), where, e.hint());
      }
    }
    throw;
  }
}

}  // namespace gosim::experiments
