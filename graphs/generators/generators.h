// Deterministic graph generators, found by name.
//
// Each generator builds one graph from a YAML mapping of parameters; the same
// parameters always give the same graph, byte for byte (random generators
// take an explicit `seed`). Unknown or out-of-range parameters are
// ConfigErrors that name the file, line and key, with a did-you-mean.
//
//   Graph g = Generate("resnet", LoadYamlString("{depth: 50, batch: 32, training: true}"), "cli");
//
// Parameters every model generator accepts: name (the graph's name; a
// descriptive default), batch, dtype (float32, float16, bfloat16),
// training (adds backward and update ops), optimizer (sgd, momentum, adam).
// The generators and their parameters are listed in docs/GRAPHS.md.
#ifndef GOSIM_GRAPHS_GENERATORS_GENERATORS_H_
#define GOSIM_GRAPHS_GENERATORS_GENERATORS_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "core/yaml.h"
#include "graphs/generators/model_builder.h"
#include "graphs/graph.h"

namespace gosim::graphs {

// A generator's view of its parameters: typed, range-checked reads that
// record every key used, so Finish() can reject the others.
class GeneratorParams {
 public:
  // Values set from outside the mapping (e.g. a suite's name and seed),
  // read in place of the mapping's own.
  using Overrides = std::vector<std::pair<std::string, YAML::Node>>;

  // `params` is the mapping (a null node means no parameters); `file` and
  // `path` locate it for error messages (e.g. "suite.yaml", "graphs[2].params").
  // `params` is only read, never modified, so one mapping may be shared by
  // several generations (and threads).
  GeneratorParams(const YAML::Node& params, std::string file, std::string path, Overrides overrides = {});

  int64_t Int(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  double Double(const std::string& key, double fallback, double min, double max);
  bool Bool(const std::string& key, bool fallback);
  std::string String(const std::string& key, const std::string& fallback);
  // One of `choices`; anything else is an error listing them.
  std::string Choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& choices);
  std::vector<int64_t> IntList(const std::string& key, const std::vector<int64_t>& fallback, int64_t min,
                               int64_t max);
  uint64_t Seed() { return static_cast<uint64_t>(Int("seed", 0, 0, INT64_MAX)); }
  // batch, dtype, training, optimizer.
  gen::ModelOptions Model(int64_t default_batch, bool default_training = false);
  // The graph name: `name` when given, else `fallback`.
  std::string Name(const std::string& fallback) { return String("name", fallback); }

  // A ConfigError at `key`.
  [[noreturn]] void Fail(const std::string& key, const std::string& message,
                         const std::string& hint = {}) const;
  // Rejects keys that were never read.
  void Finish() const { map_.Finish(); }

  YamlMap& map() { return map_; }

 private:
  // The value of `key`: its override, or the mapping's (null when absent).
  YAML::Node Value(const std::string& key);
  template <typename T>
  T Read(const std::string& key, const T& fallback);

  YamlMap map_;
  Overrides overrides_;
};

using GeneratorRegistry = Registry<Graph, GeneratorParams&>;

// The registry of built-in generators (filled on first use).
const GeneratorRegistry& Generators();

struct GeneratorInfo {
  std::string name;
  std::string description;
};
// Every generator, sorted by name.
std::vector<GeneratorInfo> ListGenerators();

// Builds graph `name` from `params` (a mapping, or null for defaults).
// `source_for_errors` names where the parameters come from (a file, or
// "command line"); `params_path` is their YAML path in that file;
// `overrides` replace parameters of the mapping. Thread-safe.
Graph Generate(const std::string& name, const YAML::Node& params, const std::string& source_for_errors,
               const std::string& params_path = "params", GeneratorParams::Overrides overrides = {});

// Parses a command-line generator target "NAME" or "NAME:k=v,k=v" (values
// are YAML scalars or flow lists, e.g. "gnmt:layers=8,training=true" or
// "wavenet:dilations=[1,2,4]") into a name and a parameter mapping.
std::pair<std::string, YAML::Node> ParseGeneratorSpec(const std::string& spec);

// REGAL's augmentation: a copy of `graph` whose tensor sizes are each
// multiplied by a log-normal factor exp(N(0, sigma^2)) drawn from
// Rng::Derive(seed, {index}); edge bytes and bytes read/written follow.
// Index 0 returns an identical copy. Sizes stay multiples of 4 bytes (at
// least 4) where they were.
Graph AugmentTensorSizes(const Graph& graph, uint64_t seed, int64_t index, double sigma,
                         const std::string& new_name = {});

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_GENERATORS_GENERATORS_H_
