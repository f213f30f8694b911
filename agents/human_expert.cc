#include "agents/human_expert.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "core/data_path.h"
#include "core/io.h"
#include "core/strings.h"
#include "core/yaml.h"

namespace gosim::agents {

namespace {

// "first" / "last" / "inherit" (when allowed) / an integer index >= 0.
int32_t ParseDeviceSpec(YamlMap& map, const std::string& key, bool allow_inherit) {
  const YAML::Node node = map.Node(key);
  if (!node || !node.IsScalar()) {
    map.Fail(key, "'" + key + "' must be first, last" + std::string(allow_inherit ? ", inherit" : "") +
                      " or a device index");
  }
  const std::string text = node.Scalar();
  if (text == "first") return ExpertRules::kFirst;
  if (text == "last") return ExpertRules::kLast;
  if (allow_inherit && text == "inherit") return ExpertRules::kInherit;
  try {
    size_t used = 0;
    const long value = std::stol(text, &used);
    if (used == text.size() && value >= 0 && value < (1L << 20)) return static_cast<int32_t>(value);
  } catch (const std::exception&) {
  }
  std::vector<std::string> valid = {"first", "last"};
  if (allow_inherit) valid.push_back("inherit");
  map.Fail(key, "invalid device '" + text + "'." + DidYouMean(text, valid),
           "use " + Join(valid, ", ") + " or a device index >= 0");
}

int32_t Resolve(int32_t spec, int32_t num_devices) {
  if (spec == ExpertRules::kFirst) return 0;
  if (spec == ExpertRules::kLast) return num_devices - 1;
  return spec % num_devices;
}

}  // namespace

bool ExpertRules::AppliesTo(const std::string& graph_name) const {
  for (const std::string& pattern : graphs) {
    if (fnmatch(pattern.c_str(), graph_name.c_str(), 0) == 0) return true;
  }
  return false;
}

ExpertRules ParseExpertRules(const std::string& yaml_text, const std::string& source) {
  YamlMap root = YamlMap::Root(LoadYamlString(yaml_text, source), source);
  ExpertRules rules;
  rules.file = source;
  const std::string format = root.Require<std::string>("format");
  if (format != "gosim.expert") root.Fail("format", "expected format 'gosim.expert', got '" + format + "'");
  const int version = root.Get<int>("version", 1);
  if (version != 1) root.Fail("version", "unsupported version " + std::to_string(version), "use version: 1");
  rules.model = root.Require<std::string>("model");
  rules.source = root.Get<std::string>("source", "");
  rules.graphs = root.Get<std::vector<std::string>>("graphs", {});
  rules.default_device = root.Has("default") ? ParseDeviceSpec(root, "default", true) : ExpertRules::kInherit;
  std::vector<YamlMap> entries = root.ChildList("rules");
  for (YamlMap& entry : entries) {
    ExpertRule rule;
    rule.where = entry.Where().ToString();
    rule.scope = entry.Require<std::string>("scope");
    try {
      rule.pattern = std::regex(rule.scope, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      entry.Fail("scope", "invalid regular expression '" + rule.scope + "': " + e.what(),
                 "use ECMAScript regex syntax; escape backslashes in YAML strings");
    }
    const bool has_device = entry.Has("device");
    const bool has_split = entry.Has("split");
    if (has_device == has_split) entry.Fail("", "a rule needs exactly one of 'device' and 'split'");
    if (has_device) {
      rule.kind = ExpertRule::Kind::kDevice;
      rule.device = ParseDeviceSpec(entry, "device", false);
    } else {
      const std::string split = GetChoice(entry, "split", "even", {"even", "modulo"});
      rule.kind = split == "even" ? ExpertRule::Kind::kSplitEven : ExpertRule::Kind::kSplitModulo;
      rule.group = static_cast<int32_t>(GetInt(entry, "group", 1, 1, 99));
      if (static_cast<int32_t>(rule.pattern.mark_count()) < rule.group) {
        entry.Fail("group",
                   "the scope regex has " + std::to_string(rule.pattern.mark_count()) +
                       " capture groups, fewer than group " + std::to_string(rule.group),
                   "capture the layer index with parentheses, e.g. layer_(\\\\d+)");
      }
      rule.layers = static_cast<int32_t>(GetInt(entry, "layers", 0, 0, 1 << 20));
    }
    entry.Finish();
    rules.rules.push_back(std::move(rule));
  }
  root.Finish();
  return rules;
}

ExpertRules LoadExpertRules(const std::string& path) {
  return ParseExpertRules(ReadFile(path), path);
}

ExpertRules FindExpertRules(const std::string& directory, const std::string& graph_name) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string path = entry.path().string();
    if (EndsWith(path, ".yaml") || EndsWith(path, ".yml")) files.push_back(path);
  }
  if (ec) {
    throw ConfigError("cannot list expert rules in '" + directory + "': " + ec.message(), {},
                      "set the agent option 'rules' to an expert file or 'expert_dir' to a folder");
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> models;
  for (const std::string& file : files) {
    ExpertRules rules = LoadExpertRules(file);
    if (rules.AppliesTo(graph_name)) return rules;
    models.push_back(rules.model + " (" + Join(rules.graphs, ", ") + ")");
  }
  throw ConfigError("no expert placement for graph '" + graph_name + "' in " + directory, {},
                    "known: " + (models.empty() ? std::string("none") : Join(models, "; ")) +
                        "; add a file to " + directory + " or set the agent option 'rules'");
}

std::vector<int32_t> ExpertPlacement(const ExpertRules& rules, const graphs::Graph& graph,
                                     int32_t num_devices) {
  const int32_t n = graph.num_nodes();
  // Which rule decides each node, and the captured index for split rules.
  std::vector<int32_t> rule_of(static_cast<size_t>(n), -1);
  std::vector<int64_t> index_of(static_cast<size_t>(n), 0);
  std::vector<int64_t> min_index(rules.rules.size(), INT64_MAX);
  std::vector<int64_t> max_index(rules.rules.size(), -1);
  std::smatch match;
  for (graphs::NodeId v = 0; v < n; ++v) {
    const std::string& scope = graph.node(v).scope;
    for (size_t r = 0; r < rules.rules.size(); ++r) {
      const ExpertRule& rule = rules.rules[r];
      if (!std::regex_search(scope, match, rule.pattern)) continue;
      if (rule.kind != ExpertRule::Kind::kDevice) {
        const std::string captured = match[static_cast<size_t>(rule.group)].str();
        int64_t index = 0;
        try {
          index = std::stoll(captured);
        } catch (const std::exception&) {
          throw ConfigError("rule '" + rule.scope + "' captured '" + captured + "' from scope '" + scope +
                                "' of node '" + graph.node(v).name + "', not an index",
                            Location(rule.where), "capture only digits, e.g. layer_(\\\\d+)");
        }
        index_of[static_cast<size_t>(v)] = index;
        min_index[r] = std::min(min_index[r], index);
        max_index[r] = std::max(max_index[r], index);
      }
      rule_of[static_cast<size_t>(v)] = static_cast<int32_t>(r);
      break;
    }
  }
  if (n > 0 && !rules.rules.empty() &&
      std::all_of(rule_of.begin(), rule_of.end(), [](int32_t r) { return r < 0; })) {
    // Otherwise every node would silently take the default device. (A file
    // with no rules at all states that default on purpose, e.g. Inception's
    // expert placement is one GPU.)
    std::string example;
    for (graphs::NodeId v = 0; v < n && example.empty(); ++v) example = graph.node(v).scope;
    throw ConfigError(
        "no rule of the '" + rules.model + "' expert placement matches a node of graph '" + graph.name() +
            "' (" +
            (example.empty() ? std::string("its nodes have no scope paths")
                             : "scope paths look like '" + example + "'") +
            "), so every node would go to the default device",
        Location(rules.file),
        "write rules whose `scope` regexes match this graph's scope paths, or use single_device");
  }
  std::vector<int32_t> placement(static_cast<size_t>(n), 0);
  for (graphs::NodeId v = 0; v < n; ++v) {
    const int32_t r = rule_of[static_cast<size_t>(v)];
    int32_t device = 0;
    if (r < 0) {
      if (rules.default_device == ExpertRules::kInherit) {
        device = 0;
        for (graphs::EdgeId e : graph.in_edges(v)) {
          device = placement[static_cast<size_t>(graph.edge(e).src)];
          break;
        }
      } else {
        device = Resolve(rules.default_device, num_devices);
      }
    } else {
      const ExpertRule& rule = rules.rules[static_cast<size_t>(r)];
      // Position of the index among those the rule matched (so 0- and
      // 1-based layer numbering behave alike).
      const int64_t index = index_of[static_cast<size_t>(v)] - min_index[static_cast<size_t>(r)];
      switch (rule.kind) {
        case ExpertRule::Kind::kDevice:
          device = Resolve(rule.device, num_devices);
          break;
        case ExpertRule::Kind::kSplitModulo:
          device = static_cast<int32_t>(index % num_devices);
          break;
        case ExpertRule::Kind::kSplitEven: {
          const int64_t seen = max_index[static_cast<size_t>(r)] - min_index[static_cast<size_t>(r)] + 1;
          const int64_t layers = rule.layers > 0 ? rule.layers : seen;
          const int64_t clamped = std::min<int64_t>(index, std::max<int64_t>(layers - 1, 0));
          device = static_cast<int32_t>(clamped * num_devices / std::max<int64_t>(layers, 1));
          break;
        }
      }
    }
    placement[static_cast<size_t>(v)] = device;
  }
  return placement;
}

namespace {

class HumanExpertAgent : public Agent {
 public:
  explicit HumanExpertAgent(YamlMap& options) {
    rules_path_ = ResolveDataPath(options.Get<std::string>("rules", ""));
    expert_dir_ = ResolveDataPath(options.Get<std::string>("expert_dir", "configs/experts"));
    exclude_ = options.Get<std::vector<std::string>>("exclude_devices", {});
    finish_ = FinishOptions::Parse(options);
    if (!rules_path_.empty()) rules_ = LoadExpertRules(rules_path_);
    options.Finish();
  }
  std::string name() const override { return "human_expert"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    const ExpertRules rules =
        rules_path_.empty() ? FindExpertRules(expert_dir_, problem.graph.name()) : rules_;
    SearchTracker tracker(problem, progress);
    sim::Decision decision;
    // The rules place over the kept devices ("first", "last", splits),
    // e.g. the GPUs of a machine whose CPU is also a device.
    const std::vector<int32_t> kept = KeptDevices(name(), problem.cluster, exclude_);
    decision.placement = ExpertPlacement(rules, problem.graph, static_cast<int32_t>(kept.size()));
    for (int32_t& d : decision.placement) d = kept[static_cast<size_t>(d)];
    if (finish_.schedule != "fifo")
      ApplySchedule(finish_.schedule, problem.graph, StaticCosts(problem.evaluator), decision);
    EvaluateAndMaybeRepair(tracker, decision, finish_);
    return tracker.Finish();
  }

 private:
  std::string rules_path_;
  std::string expert_dir_;
  ExpertRules rules_;
  std::vector<std::string> exclude_;
  FinishOptions finish_;
};

}  // namespace

void RegisterExpertAgent(const RegisterFn& add) {
  add(
      "human_expert", [](YamlMap& o) { return std::make_unique<HumanExpertAgent>(o); },
      "hand-made placement from scope-path rules (configs/experts/), as the papers' 'Human Expert'");
}

}  // namespace gosim::agents
