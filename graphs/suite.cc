#include "graphs/suite.h"

#include <glob.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include "core/data_path.h"
#include "core/rng.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "graphs/io.h"

namespace gosim::graphs {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kMaxCopies = 10'000'000;
const std::vector<std::string> kSplits = {"train", "valid", "test"};

// An entry together with the unit it is split with (augmentation copies
// share their base graph's unit) and whether its name was given.
struct Parsed {
  std::vector<SuiteEntry> entries;
  std::vector<int64_t> unit;
};

std::string FileStem(const std::string& path) {
  std::string base = fs::path(path).filename().string();
  for (const char* ext : {".gz", ".json", ".pbtxt", ".costgraph", ".txt", ".onnx"}) {
    if (EndsWith(base, ext) && base.size() > std::string(ext).size())
      base.resize(base.size() - std::string(ext).size());
  }
  return base;
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      if (fs::is_regular_file(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
    }
  }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

// The seeds of a `seeds` node: a list of integers or {from, count}.
std::vector<uint64_t> ParseSeeds(const YAML::Node& node, const std::string& file, const std::string& path) {
  std::vector<uint64_t> seeds;
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      const int64_t s = YamlAs<int64_t>(node[i], file, path + "[" + std::to_string(i) + "]");
      if (s < 0) throw ConfigError("seeds must be non-negative", YamlLocation(node[i], file, path));
      seeds.push_back(static_cast<uint64_t>(s));
    }
    if (seeds.empty()) throw ConfigError("seeds is an empty list", YamlLocation(node, file, path));
    return seeds;
  }
  YamlMap m(node, file, path);
  const int64_t from = m.Get<int64_t>("from", 0);
  const int64_t count = m.Require<int64_t>("count");
  m.Finish();
  if (from < 0) m.Fail("from", "seeds.from must be non-negative");
  if (count < 1 || count > kMaxCopies)
    m.Fail("count", "seeds.count must be in [1, " + std::to_string(kMaxCopies) + "]");
  for (int64_t i = 0; i < count; ++i) seeds.push_back(static_cast<uint64_t>(from + i));
  return seeds;
}

// The `dims` and `input_shapes` keys of a file or glob entry.
OnnxShapes ParseShapes(YamlMap& m) {
  OnnxShapes out;
  auto positive = [&](const YAML::Node& node, const std::string& path) {
    const int64_t size = YamlAs<int64_t>(node, m.file(), path);
    if (size <= 0) throw ConfigError("sizes must be positive", YamlLocation(node, m.file(), path));
    return size;
  };
  for (const char* key : {"dims", "input_shapes"}) {
    const YAML::Node node = m.Node(key);
    if (!node || node.IsNull()) continue;
    const std::string path = m.ChildPath(key);
    if (!node.IsMap()) {
      throw ConfigError(std::string(key) + " must be a mapping", YamlLocation(node, m.file(), path),
                        std::string(key) == "dims" ? "write e.g. dims: {batch: 32}"
                                                   : "write e.g. input_shapes: {input: [32, 3, 224, 224]}");
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string name = it->first.Scalar();
      const std::string item = path + "." + name;
      if (std::string(key) == "dims") {
        out.dims[name] = positive(it->second, item);
        continue;
      }
      if (!it->second.IsSequence()) {
        throw ConfigError("a shape must be a list of sizes", YamlLocation(it->second, m.file(), item),
                          "write e.g. " + name + ": [32, 3, 224, 224]");
      }
      std::vector<int64_t>& shape = out.input_shapes[name];
      for (size_t k = 0; k < it->second.size(); ++k)
        shape.push_back(positive(it->second[k], item + "[" + std::to_string(k) + "]"));
    }
  }
  return out;
}

std::string ResolvePath(const std::string& path, const std::string& base_dir) {
  if (fs::path(path).is_absolute()) return path;
  if (!base_dir.empty()) {
    const fs::path p = fs::path(base_dir) / path;
    if (fs::exists(p)) return p.lexically_normal().string();
  }
  return ResolveDataPath(path);
}

uint64_t NameHash(const std::string& name) {  // FNV-1a: stable everywhere
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

Parsed ParseEntries(const YAML::Node& list, const std::string& file, const std::string& yaml_path,
                    const std::string& base_dir, std::vector<std::string>* notes) {
  if (!list || list.IsNull() || !list.IsSequence()) {
    throw ConfigError("expected a list of graph entries", YamlLocation(list, file, yaml_path),
                      "write e.g. graphs: [{generator: resnet, params: {depth: 50}}]");
  }
  Parsed out;
  std::set<std::string> explicit_names;
  std::unordered_set<std::string> used;
  int64_t unit = 0;
  auto add = [&](SuiteEntry e, bool name_given, int64_t augment, const YamlMap& m) {
    const std::string base = e.name;
    for (int64_t k = 0; k <= augment; ++k) {
      if (static_cast<int64_t>(out.entries.size()) >= kMaxCopies) {
        throw ConfigError("the list expands to more than " + std::to_string(kMaxCopies) + " graphs",
                          m.Where(), "use fewer seeds or augmentation copies");
      }
      SuiteEntry copy = e;
      copy.augment_index = k;
      copy.augment_seed = Mix64(copy.augment_seed ^ NameHash(base));
      if (k > 0) copy.name = base + "_aug" + std::to_string(k);
      if (!used.insert(copy.name).second) {
        if (name_given) {
          throw ConfigError("two graphs are named '" + copy.name + "'", m.Where("name"),
                            "graph names must be unique within a suite; use {seed} or {index} in the name");
        }
        for (int s = 2;; ++s) {
          const std::string candidate = copy.name + "_" + std::to_string(s);
          if (used.insert(candidate).second) {
            copy.name = candidate;
            break;
          }
        }
      }
      out.entries.push_back(std::move(copy));
      out.unit.push_back(unit);
    }
    ++unit;
  };

  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = yaml_path + "[" + std::to_string(i) + "]";
    YamlMap m(list[i], file, path);
    if (!list[i].IsMap()) throw ConfigError("a graph entry must be a mapping", m.Where());
    const int kinds = (m.Has("generator") ? 1 : 0) + (m.Has("file") ? 1 : 0) + (m.Has("glob") ? 1 : 0);
    if (kinds != 1) {
      m.Fail("", "a graph entry needs exactly one of 'generator', 'file' or 'glob'",
             "write e.g. {generator: resnet, params: {depth: 50}} or {file: graphs/data/x.json.gz}");
    }
    SuiteEntry e;
    e.where = m.Where();
    const std::optional<std::string> name = m.Maybe<std::string>("name");
    if (name && name->empty()) m.Fail("name", "the name is empty");
    if (const auto split = m.Maybe<std::string>("split")) {
      if (std::find(kSplits.begin(), kSplits.end(), *split) == kSplits.end()) {
        m.Fail("split", "unknown split '" + *split + "'." + DidYouMean(*split, kSplits),
               "use train, valid or test");
      }
      e.split = *split;
    }
    const int64_t augment = m.Get<int64_t>("augment", 0);
    if (augment < 0 || augment > kMaxCopies) m.Fail("augment", "augment must be in [0, 10000000]");
    e.augment_sigma = m.Get<double>("augment_sigma", 0.5);
    if (!(e.augment_sigma >= 0.0 && e.augment_sigma <= 10.0)) m.Fail("augment_sigma", "must be in [0, 10]");
    e.augment_seed = static_cast<uint64_t>(m.Get<int64_t>("augment_seed", 0));

    if (m.Has("generator")) {
      e.kind = SuiteEntry::Kind::kGenerator;
      e.generator = m.Require<std::string>("generator");
      if (!Generators().Contains(e.generator)) {
        const std::vector<std::string> names = Generators().Names();
        m.Fail("generator", "unknown graph generator '" + e.generator + "'." + DidYouMean(e.generator, names),
               "valid values are: " + Join(names, ", "));
      }
      e.params_path = path + ".params";
      const YAML::Node params = m.Node("params");
      if (params && !params.IsNull()) {
        if (!params.IsMap())
          throw ConfigError("params must be a mapping", YamlLocation(params, file, e.params_path));
        e.params.reset(params);  // rebinds (operator= would assign into the node)
      }
      std::vector<uint64_t> seeds;
      const bool has_seeds = m.Has("seeds"), has_repeat = m.Has("repeat");
      if (has_seeds && has_repeat) m.Fail("repeat", "give either seeds or repeat, not both");
      if (has_seeds) seeds = ParseSeeds(m.Node("seeds"), file, path + ".seeds");
      if (has_repeat) {
        const int64_t n = m.Get<int64_t>("repeat", 1);
        if (n < 1 || n > kMaxCopies) m.Fail("repeat", "repeat must be in [1, 10000000]");
        uint64_t base = 0;
        const YAML::Node& cp = e.params;  // const access never inserts keys
        if (cp && cp.IsMap() && cp["seed"]) {
          base = static_cast<uint64_t>(YamlAs<int64_t>(cp["seed"], file, e.params_path + ".seed"));
        }
        for (int64_t k = 0; k < n; ++k) seeds.push_back(base + static_cast<uint64_t>(k));
      }
      std::string base_name = e.generator;
      bool name_given = false;
      if (name) {
        base_name = *name;
        name_given = true;
      } else if (const YAML::Node& cp = e.params; cp && cp.IsMap() && cp["name"] && cp["name"].IsScalar()) {
        base_name = cp["name"].Scalar();
        name_given = true;
      }
      m.Finish();
      if (seeds.empty()) {
        e.name = base_name;
        add(e, name_given, augment, m);
        continue;
      }
      const bool templated =
          base_name.find("{seed}") != std::string::npos || base_name.find("{index}") != std::string::npos;
      for (size_t k = 0; k < seeds.size(); ++k) {
        SuiteEntry copy = e;
        copy.seed = seeds[k];
        copy.name = templated ? ReplaceAll(ReplaceAll(base_name, "{seed}", std::to_string(seeds[k])),
                                           "{index}", std::to_string(k))
                              : base_name + "_s" + std::to_string(seeds[k]);
        add(std::move(copy), name_given, augment, m);
      }
      continue;
    }

    e.kind = SuiteEntry::Kind::kFile;
    if (m.Has("file")) {
      const std::string given = m.Require<std::string>("file");
      e.path = ResolvePath(given, base_dir);
      if (!fs::is_regular_file(e.path)) {
        m.Fail("file", "graph file '" + given + "' not found",
               "paths are relative to the suite's folder or the working directory");
      }
      e.shapes = ParseShapes(m);
      m.Finish();
      e.name = name ? *name : FileStem(e.path);
      add(e, name.has_value(), augment, m);
      continue;
    }
    const std::string pattern = m.Require<std::string>("glob");
    if (name) m.Fail("name", "a glob entry cannot be named; its graphs are named after their files");
    e.shapes = ParseShapes(m);
    m.Finish();
    std::vector<std::string> files;
    if (fs::path(pattern).is_absolute()) {
      files = Glob(pattern);
    } else {
      if (!base_dir.empty()) files = Glob((fs::path(base_dir) / pattern).lexically_normal().string());
      if (files.empty()) files = Glob(pattern);
    }
    if (files.empty() && notes)
      notes->push_back(m.Where("glob").ToString() + ": glob '" + pattern + "' matched no file");
    for (const std::string& f : files) {
      SuiteEntry copy = e;
      copy.path = f;
      copy.name = FileStem(f);
      add(std::move(copy), false, augment, m);
    }
  }
  return out;
}

// Assigns the entries without a split from the suite's `split` mapping.
void AssignSplits(Parsed& parsed, YamlMap& split) {
  std::map<std::string, double> amounts;
  for (const std::string& s : kSplits) amounts[s] = split.Get<double>(s, 0.0);
  const int64_t seed = split.Get<int64_t>("seed", 0);
  split.Finish();
  std::vector<int64_t> units;  // units without an explicit split, in order
  for (size_t i = 0; i < parsed.entries.size(); ++i) {
    if (parsed.entries[i].split.empty() && (units.empty() || units.back() != parsed.unit[i])) {
      units.push_back(parsed.unit[i]);
    }
  }
  const int64_t n = static_cast<int64_t>(units.size());
  double sum = 0.0;
  for (const auto& [s, v] : amounts) {
    if (!std::isfinite(v) || v < 0) split.Fail(s, "split amounts must be non-negative numbers");
    sum += v;
  }
  std::map<std::string, int64_t> counts;
  if (std::fabs(sum - 1.0) < 1e-9) {
    counts["valid"] = std::llround(amounts["valid"] * static_cast<double>(n));
    counts["test"] = std::llround(amounts["test"] * static_cast<double>(n));
    counts["train"] = std::max<int64_t>(0, n - counts["valid"] - counts["test"]);
  } else {
    for (const auto& [s, v] : amounts) {
      if (v != std::floor(v)) {
        split.Fail(s, "split amounts are either fractions adding up to 1 or whole counts",
                   "e.g. {train: 0.8, valid: 0.1, test: 0.1} or {train: 100, valid: 10, test: 10}");
      }
      counts[s] = static_cast<int64_t>(v);
    }
    const int64_t total = counts["train"] + counts["valid"] + counts["test"];
    if (total != n) {
      split.Fail("",
                 "the split counts add up to " + std::to_string(total) + " but " + std::to_string(n) +
                     " graphs have no explicit split",
                 "make the counts add up to the number of graphs, or use fractions");
    }
  }
  Rng rng(static_cast<uint64_t>(seed));
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(units[static_cast<size_t>(i)], units[rng.UniformInt(static_cast<uint64_t>(i) + 1)]);
  }
  std::map<int64_t, std::string> unit_split;
  int64_t k = 0;
  for (const std::string& s : kSplits) {
    for (int64_t j = 0; j < counts[s] && k < n; ++j) unit_split[units[static_cast<size_t>(k++)]] = s;
  }
  for (size_t i = 0; i < parsed.entries.size(); ++i) {
    if (parsed.entries[i].split.empty()) parsed.entries[i].split = unit_split[parsed.unit[i]];
  }
}

std::string FlowScalar(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

}  // namespace

std::string SuiteEntry::Spec() const {
  std::string s;
  if (kind == Kind::kGenerator) {
    s = "gen:" + generator;
    std::map<std::string, std::string> kv;
    if (params && params.IsMap()) {
      for (auto it = params.begin(); it != params.end(); ++it) {
        const std::string key = it->first.Scalar();
        if (key == "name" || (key == "seed" && seed)) continue;
        kv[key] = FlowScalar(it->second);
      }
    }
    std::vector<std::string> parts;
    for (const auto& [k, v] : kv) parts.push_back(k + "=" + v);
    if (!parts.empty()) s += ":" + Join(parts, ",");
    if (seed) s += "#seed=" + std::to_string(*seed);
  } else {
    s = "file:" + path;
    if (!shapes.dims.empty()) {
      std::vector<std::string> parts;
      for (const auto& [dim, size] : shapes.dims) parts.push_back(dim + "=" + std::to_string(size));
      s += "#dims=" + Join(parts, ",");
    }
    if (!shapes.input_shapes.empty()) {
      std::vector<std::string> parts;
      for (const auto& [input, shape] : shapes.input_shapes) {
        std::vector<std::string> sizes;
        for (int64_t d : shape) sizes.push_back(std::to_string(d));
        parts.push_back(input + "=" + Join(sizes, "x"));
      }
      s += "#input_shapes=" + Join(parts, ",");
    }
  }
  if (augment_index > 0) s += "#aug=" + std::to_string(augment_index);
  return s;
}

const SuiteEntry* Suite::Find(const std::string& name) const {
  for (const SuiteEntry& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> Suite::Names() const {
  std::vector<std::string> names;
  for (const SuiteEntry& e : entries) names.push_back(e.name);
  return names;
}

std::vector<const SuiteEntry*> Suite::EntriesOf(const std::string& split) const {
  std::vector<const SuiteEntry*> out;
  for (const SuiteEntry& e : entries) {
    if (e.split == split) out.push_back(&e);
  }
  return out;
}

std::vector<SuiteEntry> ParseSuiteEntries(const YAML::Node& list, const std::string& file,
                                          const std::string& yaml_path, const std::string& base_dir,
                                          std::vector<std::string>* notes) {
  return ParseEntries(list, file, yaml_path, base_dir, notes).entries;
}

Suite LoadSuite(const std::string& given) {
  const std::string path = ResolveDataPath(given);
  const YAML::Node root = LoadYamlFile(path);
  if (!root.IsMap()) throw ConfigError("a suite file must be a mapping", YamlLocation(root, path, ""));
  YamlMap m = YamlMap::Root(root, path);
  Suite suite;
  suite.path = path;
  suite.name = m.Get<std::string>("name", FileStem(path));
  suite.description = m.Get<std::string>("description", "");
  const bool has_split = m.Has("split");
  YamlMap split = m.Child("split");
  const YAML::Node graphs = m.Node("graphs");
  if (!graphs) m.Fail("", "the suite has no 'graphs' list", "add graphs: [...]");
  m.Finish();
  Parsed parsed = ParseEntries(graphs, path, "graphs", fs::path(path).parent_path().string(), &suite.notes);
  if (has_split) AssignSplits(parsed, split);
  suite.entries = std::move(parsed.entries);
  return suite;
}

Graph MaterializeGraph(const SuiteEntry& entry) {
  Graph g;
  if (entry.kind == SuiteEntry::Kind::kGenerator) {
    // The params mapping is shared by every copy of an entry and only read;
    // name and seed come as overrides (fresh nodes, so the suite's YAML
    // document is never touched).
    GeneratorParams::Overrides overrides{{"name", YAML::Node(entry.name)}};
    if (entry.seed) overrides.emplace_back("seed", YAML::Node(static_cast<int64_t>(*entry.seed)));
    g = Generate(entry.generator, entry.params, entry.where.file, entry.params_path, std::move(overrides));
  } else {
    g = LoadGraph(entry.path, entry.shapes);
  }
  if (entry.augment_index > 0) {
    g = AugmentTensorSizes(g, entry.augment_seed, entry.augment_index, entry.augment_sigma, entry.name);
  }
  return g;
}

}  // namespace gosim::graphs
