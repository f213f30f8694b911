#include "core/yaml.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include "core/strings.h"

namespace gosim {

YAML::Node LoadYamlString(const std::string& text, const std::string& name) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Location where{name, e.mark.line + 1, e.mark.column + 1};
    throw ConfigError("invalid YAML: " + e.msg, where, "fix the YAML syntax at this position");
  }
}

YAML::Node LoadYamlFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot open YAML file", Location{path}, "check the path");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return LoadYamlString(buffer.str(), path);
}

Location YamlLocation(const YAML::Node& node, const std::string& file, const std::string& path) {
  Location where{file};
  where.path = path;
  if (node) {
    const YAML::Mark mark = node.Mark();
    if (mark.line >= 0 && !mark.is_null()) {
      where.line = mark.line + 1;
      where.column = mark.column + 1;
    }
  }
  return where;
}

void ApplyOverride(YAML::Node& root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("override '" + assignment + "' is not of the form key.path=value", {},
                      "write e.g. budget.evaluations=1000");
  }
  const std::string key_path = assignment.substr(0, eq);
  const YAML::Node value = LoadYamlString(assignment.substr(eq + 1), "override " + key_path);
  const auto fail = [&](const std::string& what, const std::string& hint = {}) {
    throw ConfigError("override '" + assignment + "': " + what, {}, hint);
  };
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) fail("the configuration is not a mapping of key: value pairs");
  // Walk with a vector of node handles: yaml-cpp's operator= on a Node
  // rebinds it, so children must be reached through their parents each step.
  std::vector<YAML::Node> chain{root};
  const std::vector<std::string> parts = Split(key_path, '.');
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string& part = parts[p];
    std::string name = part;
    int64_t index = -1;
    const size_t bracket = part.find('[');
    if (bracket != std::string::npos) {
      name = part.substr(0, bracket);
      const std::string digits = part.substr(bracket + 1, part.size() - bracket - 2);
      const bool closed = part.back() == ']' && part.size() > bracket + 1;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (!closed || digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
          index < 0) {
        fail("bad index in '" + part + "'", "write a list element as key[0]");
      }
    }
    if (name.empty()) fail("empty key in '" + key_path + "'", "write e.g. budget.evaluations=1000");
    if (chain.back().IsScalar()) {
      // `budget: 1000` with `budget.evaluations=500`: the scalar (short) form
      // is replaced by the mapping form, here `budget: {evaluations: 500}`.
      // (Assigning to a node handle assigns to the node in the tree.)
      chain.back() = YAML::Node(YAML::NodeType::Map);
    } else if (chain.back().IsSequence()) {
      fail("'" + parts[p - 1] + "' is a list, not a mapping",
           "write an element as " + parts[p - 1] + "[0]." + part);
    }
    YAML::Node parent = chain.back();
    YAML::Node child = parent[name];
    if (index < 0) {
      chain.push_back(child);
      continue;
    }
    if (!child.IsSequence() || index >= static_cast<int64_t>(child.size())) {
      fail("'" + name + "' has no element " + std::to_string(index),
           child.IsSequence() ? "it has " + std::to_string(child.size()) + " elements" : "it is not a list");
    }
    chain.push_back(child[static_cast<size_t>(index)]);
  }
  chain.back() = value;
}

YamlMap YamlMap::Root(const YAML::Node& node, const std::string& file) {
  return YamlMap(node, file, "");
}

YamlMap::YamlMap(const YAML::Node& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) {
    throw ConfigError("expected a mapping of key: value pairs", YamlLocation(node_, file_, path_));
  }
}

std::string YamlMap::ChildPath(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool YamlMap::Has(const std::string& key) {
  known_.insert(key);
  const YAML::Node value = Lookup(key);
  return value && !value.IsNull();
}

YAML::Node YamlMap::Node(const std::string& key) {
  known_.insert(key);
  return Lookup(key);
}

YamlMap YamlMap::Child(const std::string& key) {
  YAML::Node child = Node(key);
  if (!child || child.IsNull()) return YamlMap(YAML::Node(YAML::NodeType::Map), file_, ChildPath(key));
  return YamlMap(child, file_, ChildPath(key));
}

std::vector<YamlMap> YamlMap::ChildList(const std::string& key) {
  YAML::Node list = Node(key);
  std::vector<YamlMap> out;
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) {
    throw ConfigError("expected a list", YamlLocation(list, file_, ChildPath(key)));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    out.emplace_back(list[i], file_, ChildPath(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

void YamlMap::Allow(std::initializer_list<const char*> keys) {
  for (const char* k : keys) known_.insert(k);
}

void YamlMap::Finish() const {
  if (!node_ || !node_.IsMap()) return;
  const std::vector<std::string> known(known_.begin(), known_.end());
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (known_.count(key)) continue;
    throw ConfigError("unknown key '" + key + "'." + DidYouMean(key, known),
                      YamlLocation(it->first, file_, ChildPath(key)),
                      "valid keys here: " + Join(known, ", "));
  }
}

void YamlMap::Fail(const std::string& key, const std::string& message, const std::string& hint) const {
  throw ConfigError(message, Where(key), hint);
}

void YamlMap::FailMissing(const std::string& key, const std::string& message, const std::string& hint) const {
  std::vector<std::string> present;
  if (node_.IsMap()) {
    for (const auto& entry : node_) {
      if (entry.first.IsScalar()) present.push_back(entry.first.Scalar());
    }
  }
  const std::string suggestion = DidYouMean(key, present);
  Fail("", suggestion.empty() ? message : message + "." + suggestion, hint);
}

Location YamlMap::Where(const std::string& key) const {
  if (!key.empty()) {
    const YAML::Node value = Lookup(key);
    if (value) return YamlLocation(value, file_, ChildPath(key));
  }
  return YamlLocation(node_, file_, path_);
}

}  // namespace gosim
