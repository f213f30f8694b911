// YAML helpers: parse, then validate, then build.
//
// Configuration files are read into plain option structs through YamlMap,
// which records every key the reader asked for; Finish() then rejects any
// other key as a ConfigError naming the file, line and YAML path, with a
// did-you-mean. Type errors and missing keys are reported the same way.
//
//   YamlMap m = YamlMap::Root(LoadYamlFile(path), path);
//   options.budget = m.Get<int64_t>("budget", 5000);
//   YamlMap links = m.Child("links");   // a nested mapping
//   m.Finish();
#ifndef GOSIM_CORE_YAML_H_
#define GOSIM_CORE_YAML_H_

#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"

namespace gosim {

// Parses a YAML file (gzip'd or not: ReadFile) as LoadYamlString does.
YAML::Node LoadYamlFile(const std::string& path);
// Parses YAML text; `name` is used as the file name in errors. A syntax
// error becomes a ConfigError with its line. So does text that ends in a
// key (or a `-`) without a value (`budget:`, as a truncated file ends),
// which YAML would read as null, i.e. as the key left out; an explicit `~`
// or `{}` is accepted.
YAML::Node LoadYamlString(const std::string& text, const std::string& name = "<string>");

// The location of `node` (1-based line and column) in `file`, with `path`.
Location YamlLocation(const YAML::Node& node, const std::string& file, const std::string& path);

// Applies a command-line override `a.b[2].c=value` to `root`, creating maps
// as needed. The value is parsed as YAML (so `x=[1,2]` gives a list).
void ApplyOverride(YAML::Node& root, const std::string& assignment);

// A typed, key-checking view of one YAML mapping.
class YamlMap {
 public:
  static YamlMap Root(const YAML::Node& node, const std::string& file);
  YamlMap(const YAML::Node& node, std::string file, std::string path);

  bool Has(const std::string& key);
  // The value of `key` converted to T, or `fallback` when absent.
  template <typename T>
  T Get(const std::string& key, const T& fallback);
  // The value of `key`; missing is a ConfigError.
  template <typename T>
  T Require(const std::string& key);
  // Optional value: nullopt when absent.
  template <typename T>
  std::optional<T> Maybe(const std::string& key);
  // The raw node of `key` (a null node when absent); marks the key as used.
  YAML::Node Node(const std::string& key);
  // A nested mapping; missing gives an empty mapping.
  YamlMap Child(const std::string& key);
  // The elements of a sequence `key` as maps ("key[i]" paths).
  std::vector<YamlMap> ChildList(const std::string& key);
  // Marks keys as known without reading them (handled elsewhere).
  void Allow(std::initializer_list<const char*> keys);

  // Throws a ConfigError for the first key that was never asked for.
  void Finish() const;

  // A ConfigError at `key` (or at this map when key is empty).
  [[noreturn]] void Fail(const std::string& key, const std::string& message,
                         const std::string& hint = {}) const;
  // A ConfigError at this map: `message` about the absent `key`, with a
  // did-you-mean over the keys the map does have (a misspelt key is the
  // usual reason one is missing).
  [[noreturn]] void FailMissing(const std::string& key, const std::string& message,
                                const std::string& hint = {}) const;
  Location Where(const std::string& key = {}) const;
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }
  std::string ChildPath(const std::string& key) const;

 private:
  // Const lookup: never inserts `key` into the mapping.
  YAML::Node Lookup(const std::string& key) const {
    const YAML::Node& n = node_;
    if (!n || !n.IsMap()) return YAML::Node();
    return n[key];
  }

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::set<std::string> known_;
};

// Converts a scalar node to T with a ConfigError on failure.
template <typename T>
T YamlAs(const YAML::Node& node, const std::string& file, const std::string& path);

template <typename T>
T YamlMap::Get(const std::string& key, const T& fallback) {
  known_.insert(key);
  YAML::Node value = Lookup(key);
  if (!value || value.IsNull()) return fallback;
  return YamlAs<T>(value, file_, ChildPath(key));
}

template <typename T>
T YamlMap::Require(const std::string& key) {
  known_.insert(key);
  YAML::Node value = Lookup(key);
  if (!value || value.IsNull()) FailMissing(key, "missing required key '" + key + "'");
  return YamlAs<T>(value, file_, ChildPath(key));
}

template <typename T>
std::optional<T> YamlMap::Maybe(const std::string& key) {
  known_.insert(key);
  YAML::Node value = Lookup(key);
  if (!value || value.IsNull()) return std::nullopt;
  return YamlAs<T>(value, file_, ChildPath(key));
}

template <typename T>
T YamlAs(const YAML::Node& node, const std::string& file, const std::string& path) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    std::string expected = "a value of the right type";
    if constexpr (std::is_same_v<T, bool>)
      expected = "true or false";
    else if constexpr (std::is_integral_v<T>)
      expected = "an integer";
    else if constexpr (std::is_floating_point_v<T>)
      expected = "a number";
    else if constexpr (std::is_same_v<T, std::string>)
      expected = "a string";
    else
      expected = "a list of values of the right type";
    throw ConfigError("expected " + expected, YamlLocation(node, file, path));
  }
}

}  // namespace gosim

#endif  // GOSIM_CORE_YAML_H_
