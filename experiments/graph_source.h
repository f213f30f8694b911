// The graphs of an experiment: entries of a suite file (graphs/suite.h) or
// listed inline under `graphs:` in the same entry syntax, and the `--graph`
// argument of `gosim optimize` (a file, or `gen:NAME[:k=v,...]`).
//
// An entry is only a description until the runner materializes it, one
// graph at a time, so that a large suite never sits in memory at once.
#ifndef GOSIM_EXPERIMENTS_GRAPH_SOURCE_H_
#define GOSIM_EXPERIMENTS_GRAPH_SOURCE_H_

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "graphs/graph.h"
#include "graphs/suite.h"

namespace gosim::experiments {

struct GraphEntry {
  std::string name;          // unique within the experiment; names rows, files and results
  std::string split;         // "train", "valid", "test" or "" when the entry has none
  graphs::SuiteEntry entry;  // what MaterializeGraph builds
  nlohmann::json identity;   // canonical description, part of each cell's identity
  Location where;            // the entry in its file, for messages
  // Non-empty for a test graph (experiments/splits.h): where it is a test
  // entry, e.g. "entry 'gnmt8' of the test split of configs/suites/x.yaml".
  std::string test_source;
};

// The entries of suite file `path`; `where` locates the `suite:` key.
std::vector<GraphEntry> LoadSuiteEntries(const std::string& path, const Location& where);

// Inline `graphs:` entries of an experiment, in the suite entry syntax.
std::vector<GraphEntry> ParseGraphEntries(const YAML::Node& list, const std::string& file,
                                          const std::string& path);

// The `--dim NAME=N` and `--input-shape INPUT=AxBx...` arguments of a
// command (sizes of an ONNX model's symbolic dimensions); ConfigError naming
// the option for anything but positive whole sizes.
graphs::OnnxShapes ParseShapeArguments(const std::vector<std::string>& dims,
                                       const std::vector<std::string>& input_shapes);

// `gen:NAME[:k=v,...]` or a graph file path (the syntax of `gosim graphs`),
// found like every file argument (core/data_path.h). `shapes` apply to an
// ONNX file; with a generator they are an error. Errors are located at
// `argument`: the command line's option, or the Python API's parameter.
GraphEntry ParseGraphArgument(const std::string& text, const graphs::OnnxShapes& shapes = {},
                              const std::string& argument = "--graph");

// Builds (generates or loads) the graph of `entry`.
graphs::Graph MaterializeGraph(const GraphEntry& entry);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_GRAPH_SOURCE_H_
