#include "experiments/cells.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "core/data_path.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/rng.h"
#include "core/version.h"

namespace gosim::experiments {

namespace {

// A YAML plain scalar as the JSON value a reader would expect. Quoted
// scalars ("1") stay strings.
nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // explicitly quoted in the file
  if (text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (!text.empty()) {
    errno = 0;
    char* end = nullptr;
    const long long integer = std::strtoll(text.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') return static_cast<int64_t>(integer);
    errno = 0;
    end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    const bool plain_number = text.find_first_not_of("0123456789+-.eE") == std::string::npos;
    if (errno == 0 && end && *end == '\0' && plain_number) return number;
  }
  return text;
}

nlohmann::json SimOptionsJson(const sim::SimOptions& options) {
  nlohmann::json out = {{"track_memory", options.track_memory},
                        {"infeasible_step_time", options.infeasible_step_time},
                        {"stop_at_oom", options.stop_at_oom},
                        {"reuse_transfers", options.reuse_transfers}};
  // Only when off, so that cells of the default keep their ids.
  if (!options.enforce_colocation) out["enforce_colocation"] = false;
  // The host: only when set, so that cells of the default keep their ids
  // (the default resolves per cluster; the cell's code version covers it).
  if (options.execution != sim::Execution::kAuto)
    out["execution"] = std::string(sim::ExecutionName(options.execution));
  if (options.processes != sim::Processes::kAuto)
    out["processes"] = std::string(sim::ProcessesName(options.processes));
  if (options.execution == sim::Execution::kGraph) out["host_threads"] = options.host_threads;
  if (options.launch_queue != sim::SimOptions{}.launch_queue) out["launch_queue"] = options.launch_queue;
  return out;
}

nlohmann::json ObjectiveJson(const agents::Objective& objective) {
  nlohmann::json out = {{"kind", ObjectiveKindName(objective.kind)}};
  if (objective.kind == agents::ObjectiveKind::kWeighted) {
    out["memory_weight"] = objective.memory_weight;
    out["reference_step_time"] = objective.reference_step_time;
  }
  return out;
}

}  // namespace

nlohmann::json YamlToJson(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsScalar()) return ScalarToJson(node);
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& element : node) out.push_back(YamlToJson(element));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto it = node.begin(); it != node.end(); ++it) out[it->first.Scalar()] = YamlToJson(it->second);
  return out;
}

std::string HashHex(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016" PRIx64, Mix64(hash));
  return buffer;
}

std::string SafeFileName(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out;
}

std::string Cell::FileStem(const ExperimentConfig& config) const {
  const std::string stem = config.graphs[static_cast<size_t>(graph)].name + "." +
                           config.clusters[static_cast<size_t>(cluster)] + "." +
                           config.agents[static_cast<size_t>(agent)].label + ".s" + std::to_string(seed);
  return SafeFileName(stem) + "." + id;
}

nlohmann::json IdentityWithoutCode(const nlohmann::json& identity) {
  nlohmann::json out = identity;
  if (out.is_object()) out.erase("code");
  return out;
}

std::string IdentityCode(const nlohmann::json& identity) {
  const auto it = identity.find("code");
  return it != identity.end() && it->is_string() ? it->get<std::string>() : "unrecorded";
}

nlohmann::json CheckpointDigest(const nlohmann::json& options) {
  const auto it = options.find("checkpoint");
  if (it == options.end() || !it->is_string()) return nullptr;
  if (it->get_ref<const std::string&>().empty()) return nullptr;
  // Found the way the agent finds it (working directory, $GOSIM_HOME, source tree).
  const std::string path = ResolveDataPath(it->get_ref<const std::string&>());
  if (!FileExists(path)) return "missing";
  return HashHex(ReadFile(path));
}

std::vector<Cell> ExpandGrid(const ExperimentConfig& config) {
  const nlohmann::json cost_model = {{"name", config.cost_model},
                                     {"options", YamlToJson(config.cost_model_options)}};
  const nlohmann::json sim_options = SimOptionsJson(config.sim);
  const nlohmann::json objective = ObjectiveJson(config.objective);
  const std::string code = BuildCodeVersion().ToString();
  // Per agent, once: its options as JSON and its checkpoint's digest (a
  // file read), the same for every graph and cluster.
  std::vector<nlohmann::json> options_of, checkpoint_of;
  for (const AgentSpec& agent : config.agents) {
    nlohmann::json options = YamlToJson(agent.options);
    if (options.is_null()) options = nlohmann::json::object();
    checkpoint_of.push_back(CheckpointDigest(options));
    options_of.push_back(std::move(options));
  }
  std::vector<Cell> cells;
  for (size_t g = 0; g < config.graphs.size(); ++g) {
    for (size_t c = 0; c < config.clusters.size(); ++c) {
      for (size_t a = 0; a < config.agents.size(); ++a) {
        const AgentSpec& agent = config.agents[a];
        const nlohmann::json& options = options_of[a];
        const nlohmann::json& checkpoint = checkpoint_of[a];
        for (const uint64_t seed : agent.seeds) {
          Cell cell;
          cell.graph = static_cast<int32_t>(g);
          cell.cluster = static_cast<int32_t>(c);
          cell.agent = static_cast<int32_t>(a);
          cell.seed = seed;
          cell.budget = agent.budget;
          cell.identity = {
              {"graph", config.graphs[g].identity},
              {"cluster", config.clusters[c]},
              {"cost_model", cost_model},
              {"sim", sim_options},
              {"objective", objective},
              {"agent", {{"name", agent.name}, {"options", options}}},
              {"seed", seed},
              {"budget",
               {{"evaluations", agent.budget.evaluations}, {"wall_seconds", agent.budget.wall_seconds}}},
          };
          if (!checkpoint.is_null()) cell.identity["checkpoint_digest"] = checkpoint;
          cell.identity["code"] = code;
          cell.identity["mode"] = config.mode;
          cell.id = HashHex(DumpJson(cell.identity));
          cells.push_back(std::move(cell));
        }
      }
    }
  }
  return cells;
}

}  // namespace gosim::experiments
