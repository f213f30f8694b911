#include "experiments/room_filter.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "core/rng.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

namespace gosim::experiments {
namespace {

const char* const kSplits[] = {"train", "valid", "test"};

uint64_t NameHash(const std::string& name) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// What the cached results depend on; a cache written with other settings
// is refused rather than silently mixed.
std::string SettingsLine(const RoomFilterOptions& o) {
  return "# room filter: suite=" + o.suite + ",cluster=" + o.cluster + ",cost_model=" + o.cost_model +
         ",objective=" + o.objective.ToString() + ",low=" + std::to_string(o.low_budget) +
         ",high=" + std::to_string(o.high_budget) + ",seed=" + std::to_string(o.seed);
}

constexpr const char* kCacheHeader = "name,split,low,high,low_feasible,high_feasible";

std::map<std::string, RoomCandidate> ReadCache(const RoomFilterOptions& o) {
  std::map<std::string, RoomCandidate> out;
  if (o.cache.empty() || !FileExists(o.cache)) return out;
  std::istringstream in(ReadFile(o.cache));
  std::string line;
  std::getline(in, line);
  if (line != SettingsLine(o)) {
    throw ConfigError("cache " + o.cache + " was written with other settings ('" + line + "')",
                      Location{o.cache, 1}, "remove it or give another --cache");
  }
  std::getline(in, line);  // header
  int line_number = 2;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    const std::vector<std::string> f = Split(line, ',');
    if (f.size() != 6) {
      throw ConfigError("malformed cache line", Location{o.cache, line_number},
                        "remove the line (it is recomputed) or the whole cache");
    }
    RoomCandidate c;
    c.name = f[0];
    c.split = f[1];
    c.low = std::strtod(f[2].c_str(), nullptr);
    c.high = std::strtod(f[3].c_str(), nullptr);
    c.low_feasible = f[4] == "1";
    c.high_feasible = f[5] == "1";
    out[c.name] = c;
  }
  return out;
}

void AppendCache(const RoomFilterOptions& o, const RoomCandidate& c) {
  if (o.cache.empty()) return;
  if (!FileExists(o.cache)) WriteFileAtomic(o.cache, SettingsLine(o) + "\n" + kCacheHeader + "\n");
  char buffer[128];
  std::snprintf(buffer, sizeof(buffer), ",%.17g,%.17g,%d,%d", c.low, c.high, c.low_feasible ? 1 : 0,
                c.high_feasible ? 1 : 0);
  AppendLine(o.cache, c.name + "," + c.split + buffer);
}

}  // namespace

bool HasRoom(const RoomCandidate& c, double min_improvement) {
  if (!c.high_feasible) return false;
  if (!c.low_feasible) return true;
  return c.low > 0.0 && (c.low - c.high) / c.low >= min_improvement;
}

RoomFilterResult FilterRoom(const RoomFilterOptions& options,
                            const std::function<void(const RoomCandidate&)>& progress) {
  const graphs::Suite suite = graphs::LoadSuite(options.suite);
  const sim::Cluster cluster = sim::LoadCluster(options.cluster);
  const std::shared_ptr<const sim::CostModel> cost_model = sim::MakeCostModel(options.cost_model);
  YamlMap no_options = YamlMap::Root(YAML::Node(YAML::NodeType::Map), "room filter");
  const std::unique_ptr<agents::Agent> brkga =
      agents::MakeAgent("brkga_5k", no_options);  // REGAL's uniform BRKGA, cold
  std::map<std::string, RoomCandidate> cache = ReadCache(options);

  RoomFilterResult result;
  for (const char* split : kSplits) {
    const auto wanted = options.keep.find(split);
    if (wanted == options.keep.end() || wanted->second <= 0) continue;
    int64_t& kept = result.kept[split];
    int64_t& examined = result.examined[split];
    for (const graphs::SuiteEntry* entry : suite.EntriesOf(split)) {
      if (kept >= wanted->second) break;
      RoomCandidate c;
      const auto hit = cache.find(entry->name);
      if (hit != cache.end()) {
        c = hit->second;
      } else {
        c.name = entry->name;
        c.split = split;
        const graphs::Graph graph = graphs::MaterializeGraph(*entry);
        const sim::Evaluator evaluator(graph, cluster, cost_model);
        auto run = [&](int64_t budget, uint64_t which) {
          const uint64_t seed = Rng::Derive(options.seed, {NameHash(entry->name), which}).Next();
          const agents::Problem problem{graph, cluster, evaluator, options.objective, {budget, 0.0}, seed};
          return brkga->Optimize(problem);
        };
        const agents::AgentResult low = run(options.low_budget, 1);
        const agents::AgentResult high = run(options.high_budget, 2);
        c.low = low.best_objective;
        c.high = high.best_objective;
        c.low_feasible = low.best_evaluation.feasible;
        c.high_feasible = high.best_evaluation.feasible;
        AppendCache(options, c);
      }
      c.kept = HasRoom(c, options.min_improvement);
      ++examined;
      if (c.kept) ++kept;
      result.candidates.push_back(c);
      if (progress) progress(c);
    }
  }
  return result;
}

std::string RoomSuiteYaml(const RoomFilterOptions& options, const RoomFilterResult& result,
                          const std::string& name, const std::string& command) {
  const graphs::Suite suite = graphs::LoadSuite(options.suite);
  std::ostringstream out;
  out << "# Generated by: " << command << "\n"
      << "# REGAL's \"room for improvement\" selection (experiments/room_filter.h) of\n"
      << "# " << options.suite << ": a graph is kept when uniform BRKGA with " << options.high_budget
      << " evaluations\n"
      << "# fits memory where BRKGA with " << options.low_budget << " does not, or lowers "
      << options.objective.ToString() << " by at least " << options.min_improvement * 100.0 << "%\n"
      << "# (cluster " << options.cluster << ", cost model " << options.cost_model << ", seed "
      << options.seed << "). Per split, the first candidates in suite order that pass:\n";
  for (const char* split : kSplits) {
    if (!result.examined.count(split)) continue;
    out << "#   " << split << ": " << result.kept.at(split) << " kept of " << result.examined.at(split)
        << " examined\n";
  }
  out << "# Do not edit by hand; rerun the command instead.\n";
  out << "name: " << name << "\n";
  out << "description: \"" << suite.name << " graphs with room for improvement (REGAL)\"\n";
  out << "graphs:\n";
  for (const RoomCandidate& c : result.candidates) {
    if (!c.kept) continue;
    const graphs::SuiteEntry* entry = suite.Find(c.name);
    if (!entry) {
      throw ConfigError("suite " + options.suite + " no longer has graph '" + c.name + "'",
                        Location{options.suite}, "rerun without the stale cache");
    }
    if (entry->augment_index > 0) {
      throw ConfigError("graph '" + c.name + "' is an augmentation copy, which a suite cannot list alone",
                        entry->where, "filter a suite without `augment:` entries");
    }
    YAML::Emitter e;
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << entry->name;
    if (entry->kind == graphs::SuiteEntry::Kind::kFile) {
      e << YAML::Key << "file" << YAML::Value << entry->path;
    } else {
      YAML::Node params =
          entry->params.IsMap() ? YAML::Clone(entry->params) : YAML::Node(YAML::NodeType::Map);
      if (entry->seed) params["seed"] = *entry->seed;
      e << YAML::Key << "generator" << YAML::Value << entry->generator;
      e << YAML::Key << "params" << YAML::Value << YAML::Flow << params;
    }
    e << YAML::Key << "split" << YAML::Value << c.split << YAML::EndMap;
    out << "  - " << e.c_str() << "\n";
  }
  return out.str();
}

}  // namespace gosim::experiments
