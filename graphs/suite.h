// Graph suites: named lists of graphs with train / valid / test splits.
//
// A suite is a YAML file (configs/suites/*.yaml):
//
//   name: regal_synthetic
//   description: REGAL-style random DAGs
//   split: {train: 10000, valid: 1000, test: 1000, seed: 0}  # optional
//   graphs:
//     - generator: resnet            # a generator with parameters
//       params: {depth: 50, batch: 32, training: true}
//       name: resnet50               # optional; defaults to a canonical spec
//       split: test                  # optional; explicit split of this entry
//     - file: graphs/data/resnet50_train_b32.json.gz
//     - file: models/alexnet.onnx    # ONNX: sizes of symbolic dimensions
//       dims: {batch: 32}            # by name, or whole input shapes:
//       input_shapes: {input: [32, 3, 224, 224]}   # (graphs/onnx_format.h)
//     - glob: graphs/data/*.json.gz  # zero or more files, sorted
//     - generator: regal_random
//       name: regal_{seed}           # {seed} / {index} are replaced per copy
//       seeds: {from: 0, count: 12000}   # or a list [1, 5, 9], or repeat: N
//       augment: 100                 # optional: REGAL augmentation copies
//
// Relative paths and globs are tried against the suite file's folder first,
// then against the working directory (the repository root). A glob that
// matches nothing is allowed (the suite then lists fewer graphs) and noted.
//
// Splits: an entry's own `split` wins; the entries without one are assigned
// by the suite's `split` (counts that add up to their number, or fractions
// that add up to 1) after a shuffle seeded by `split.seed`; without a suite
// `split` they have none (""). Copies made by `seeds`/`repeat` are split
// individually; augmentation copies follow their base graph.
//
// Loading a suite does not build its graphs: MaterializeGraph builds one
// entry at a time. Every problem is a ConfigError with the file, line and
// YAML path.
#ifndef GOSIM_GRAPHS_SUITE_H_
#define GOSIM_GRAPHS_SUITE_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "graphs/graph.h"
#include "graphs/onnx_format.h"

namespace gosim::graphs {

struct SuiteEntry {
  enum class Kind { kGenerator, kFile };
  Kind kind = Kind::kGenerator;
  std::string name;   // unique within the suite; the materialized graph's name for generators
  std::string split;  // "train", "valid", "test" or "" (none)

  // kGenerator
  std::string generator;
  YAML::Node params;             // the entry's params mapping (null when absent); read-only
  std::optional<uint64_t> seed;  // set by seeds/repeat; overrides params.seed
  // kFile
  std::string path;   // resolved path of the graph file
  OnnxShapes shapes;  // `dims` / `input_shapes` of an ONNX file (or glob) entry

  // REGAL augmentation: index > 0 re-draws tensor sizes (AugmentTensorSizes).
  int64_t augment_index = 0;
  double augment_sigma = 0.5;
  uint64_t augment_seed = 0;

  Location where;           // the entry in its file
  std::string params_path;  // YAML path of `params`, e.g. "graphs[2].params"

  // A canonical one-line description, e.g.
  // "gen:resnet:batch=32,depth=50,training=true" or "file:graphs/data/x.json.gz",
  // with "#dims=batch=32", "#input_shapes=x=1x3x8x8", "#seed=N" and "#aug=K"
  // suffixes when they apply.
  std::string Spec() const;
};

struct Suite {
  std::string name;
  std::string description;
  std::string path;  // the suite file
  std::vector<SuiteEntry> entries;
  std::vector<std::string> notes;  // e.g. globs that matched no file

  // The entries of one split ("train", "valid", "test" or "").
  std::vector<const SuiteEntry*> EntriesOf(const std::string& split) const;
  // The entry named `name`, or nullptr; and every entry's name, in order.
  const SuiteEntry* Find(const std::string& name) const;
  std::vector<std::string> Names() const;
};

// Reads and validates suite file `path`.
Suite LoadSuite(const std::string& path);

// Parses a list of entries in suite syntax (e.g. an experiment's inline
// `graphs:` list). `file` and `yaml_path` locate `list` for errors; relative
// paths are resolved against `base_dir`, then the working directory. Entries
// keep their explicit splits ("" otherwise). Notes (empty globs) are
// appended to `notes` when given.
std::vector<SuiteEntry> ParseSuiteEntries(const YAML::Node& list, const std::string& file,
                                          const std::string& yaml_path, const std::string& base_dir,
                                          std::vector<std::string>* notes = nullptr);

// Builds the graph of `entry`: runs its generator or loads its file, then
// applies the augmentation. Thread-safe.
Graph MaterializeGraph(const SuiteEntry& entry);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_SUITE_H_
