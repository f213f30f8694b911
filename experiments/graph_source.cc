#include "experiments/graph_source.h"

#include <filesystem>

#include "core/data_path.h"
#include "core/strings.h"
#include "graphs/generators/generators.h"

namespace gosim::experiments {

namespace {

GraphEntry Wrap(graphs::SuiteEntry entry) {
  GraphEntry out;
  out.name = entry.name;
  out.split = entry.split;
  out.identity = entry.Spec();
  out.where = entry.where;
  out.entry = std::move(entry);
  return out;
}

std::vector<GraphEntry> WrapAll(std::vector<graphs::SuiteEntry> entries) {
  std::vector<GraphEntry> out;
  out.reserve(entries.size());
  for (graphs::SuiteEntry& entry : entries) out.push_back(Wrap(std::move(entry)));
  return out;
}

}  // namespace

std::vector<GraphEntry> LoadSuiteEntries(const std::string& given, const Location& where) {
  const std::string path = ResolveDataPath(given);
  if (!std::filesystem::is_regular_file(path)) {
    throw ConfigError("no suite file '" + path + "'", where,
                      "give the path of a suite YAML, e.g. configs/suites/quickstart.yaml");
  }
  return WrapAll(graphs::LoadSuite(path).entries);
}

std::vector<GraphEntry> ParseGraphEntries(const YAML::Node& list, const std::string& file,
                                          const std::string& path) {
  const std::string base_dir = file.empty() ? "." : std::filesystem::path(file).parent_path().string();
  return WrapAll(graphs::ParseSuiteEntries(list, file, path, base_dir.empty() ? "." : base_dir));
}

GraphEntry ParseGraphArgument(const std::string& text) {
  // One inline suite entry, so that names, paths and specs follow the suite rules.
  YAML::Node entry(YAML::NodeType::Map);
  if (StartsWith(text, "gen:")) {
    auto [name, params] = graphs::ParseGeneratorSpec(text.substr(4));
    entry["generator"] = name;
    if (params && !params.IsNull()) entry["params"] = params;
  } else {
    if (!std::filesystem::is_regular_file(text)) {
      throw ConfigError("no graph file '" + text + "'", Location{"--graph"},
                        "give a graph file (.json, .json.gz, .pbtxt, .onnx) or gen:NAME[:k=v,...]");
    }
    entry["file"] = text;
  }
  YAML::Node list(YAML::NodeType::Sequence);
  list.push_back(entry);
  std::vector<GraphEntry> entries = WrapAll(graphs::ParseSuiteEntries(list, "--graph", "graph", "."));
  if (entries.size() != 1) {
    throw ConfigError("'" + text + "' names " + std::to_string(entries.size()) + " graphs",
                      Location{"--graph"}, "give exactly one graph");
  }
  return std::move(entries.front());
}

graphs::Graph MaterializeGraph(const GraphEntry& entry) {
  return graphs::MaterializeGraph(entry.entry);
}

}  // namespace gosim::experiments
