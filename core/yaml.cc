#include "core/yaml.h"

#include <charconv>

#include "core/io.h"
#include "core/strings.h"

namespace gosim {

namespace {

// Throws when the last value of `node` (the last entry of the last mapping
// or list, recursively) is a null that YAML inferred at the very end of
// `text`: a key (or a `-`) with nothing after it, as a truncated file ends.
// `key` is the key of `node` in its mapping (nullptr: a list entry, or the
// root). Recursive, without Node assignment: yaml-cpp's operator= rebinds
// the node inside its tree.
void CheckEndsInValue(const YAML::Node& node, const YAML::Node* key, const std::string& yaml_path,
                      const std::string& text, const std::string& file) {
  if (node.IsMap() && node.size() > 0) {
    YAML::const_iterator last = node.begin();
    for (auto it = node.begin(); it != node.end(); ++it) last = it;
    const std::string name = last->first.Scalar();
    return CheckEndsInValue(last->second, &last->first, yaml_path.empty() ? name : yaml_path + "." + name,
                            text, file);
  }
  if (node.IsSequence() && node.size() > 0) {
    return CheckEndsInValue(node[node.size() - 1], nullptr,
                            yaml_path + "[" + std::to_string(node.size() - 1) + "]", text, file);
  }
  if (!node.IsNull() || yaml_path.empty()) return;
  // An implicit null's mark is where YAML looked for the value: past every
  // byte but trailing blanks and comments. An explicit `~` has its own.
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.pos < 0) return;
  for (size_t i = static_cast<size_t>(mark.pos); i < text.size(); ++i) {
    if (text[i] == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
      return;  // the value's own text (an explicit ~ or null)
    }
  }
  const std::string what = key != nullptr && key->IsScalar() ? "key '" + key->Scalar() + "'" : "a list entry";
  throw ConfigError("the file ends in " + what + " without a value (is it truncated?)",
                    YamlLocation(key != nullptr ? *key : node, file, yaml_path),
                    "give it a value, or write ~ (or {} / []) for none");
}

}  // namespace

YAML::Node LoadYamlString(const std::string& text, const std::string& name) {
  const YAML::Node root = [&] {
    try {
      return YAML::Load(text);
    } catch (const YAML::Exception& e) {
      Location where{name, e.mark.line + 1, e.mark.column + 1};
      throw ConfigError("invalid YAML: " + e.msg, where, "fix the YAML syntax at this position");
    }
  }();
  CheckEndsInValue(root, nullptr, "", text, name);
  return root;
}

YAML::Node LoadYamlFile(const std::string& path) {
  if (!FileExists(path)) throw ConfigError("cannot open YAML file", Location{path}, "check the path");
  return LoadYamlString(ReadFile(path), path);
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
