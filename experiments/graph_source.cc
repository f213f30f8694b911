#include "experiments/graph_source.h"

#include <charconv>
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

graphs::OnnxShapes ParseShapeArguments(const std::vector<std::string>& dims,
                                       const std::vector<std::string>& input_shapes) {
  // A positive whole number, or a ConfigError at `option`.
  auto size = [](std::string_view text, const std::string& option, const std::string& argument,
                 const std::string& example) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value <= 0) {
      throw ConfigError("'" + argument + "': '" + std::string(text) + "' is not a positive whole number",
                        Location{option}, "write e.g. " + option + " " + example);
    }
    return value;
  };
  auto split = [](const std::string& argument, const std::string& option, const std::string& example) {
    const size_t eq = argument.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == argument.size()) {
      throw ConfigError("'" + argument + "' is not NAME=VALUE", Location{option},
                        "write e.g. " + option + " " + example);
    }
    return std::make_pair(argument.substr(0, eq), argument.substr(eq + 1));
  };
  graphs::OnnxShapes shapes;
  for (const std::string& argument : dims) {
    const auto [name, value] = split(argument, "--dim", "batch=32");
    if (shapes.dims.count(name)) {
      throw ConfigError("dimension '" + name + "' is given twice", Location{"--dim"}, "give it once");
    }
    shapes.dims[name] = size(value, "--dim", argument, "batch=32");
  }
  for (const std::string& argument : input_shapes) {
    const auto [name, value] = split(argument, "--input-shape", "input=32x3x224x224");
    if (shapes.input_shapes.count(name)) {
      throw ConfigError("input '" + name + "' is given twice", Location{"--input-shape"}, "give it once");
    }
    std::vector<int64_t>& shape = shapes.input_shapes[name];
    for (const std::string& part : Split(value, 'x'))
      shape.push_back(size(part, "--input-shape", argument, "input=32x3x224x224"));
  }
  return shapes;
}

GraphEntry ParseGraphArgument(const std::string& given, const graphs::OnnxShapes& shapes,
                              const std::string& argument) {
  // One inline suite entry, so that names, paths and specs follow the suite rules.
  YAML::Node entry(YAML::NodeType::Map);
  const std::string text = StartsWith(given, "gen:") ? given : ResolveDataPath(given);
  if (StartsWith(text, "gen:")) {
    if (!shapes.empty()) {
      throw ConfigError("--dim and --input-shape apply to ONNX files, not to generated graphs",
                        Location{argument},
                        "set a generator's sizes in its parameters, e.g. gen:resnet:batch=32");
    }
    auto [name, params] = graphs::ParseGeneratorSpec(text.substr(4));
    entry["generator"] = name;
    if (params && !params.IsNull()) entry["params"] = params;
  } else {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(text, ec);
    if (!std::filesystem::is_regular_file(status)) {
      const bool exists = std::filesystem::exists(status);
      throw ConfigError(
          (exists ? "'" + given + "' is not a graph file: it is " +
                        (std::filesystem::is_directory(status) ? "a folder" : "not a regular file")
                  : "no graph file '" + given + "'"),
          Location{argument}, "give a graph file (.json, .json.gz, .pbtxt, .onnx) or gen:NAME[:k=v,...]");
    }
    entry["file"] = text;
  }
  YAML::Node list(YAML::NodeType::Sequence);
  list.push_back(entry);
  std::vector<GraphEntry> entries = WrapAll(graphs::ParseSuiteEntries(list, argument, "graph", "."));
  if (entries.size() != 1) {
    throw ConfigError("'" + text + "' names " + std::to_string(entries.size()) + " graphs",
                      Location{argument}, "give exactly one graph");
  }
  GraphEntry out = std::move(entries.front());
  if (!shapes.empty()) {
    out.entry.shapes = shapes;
    out.identity = out.entry.Spec();
  }
  return out;
}

graphs::Graph MaterializeGraph(const GraphEntry& entry) {
  return graphs::MaterializeGraph(entry.entry);
}

}  // namespace gosim::experiments
