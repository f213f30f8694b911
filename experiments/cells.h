// The cells of an experiment grid and their identity.
//
// A cell is one (graph, cluster, agent, seed) optimization run. Its identity
// is a 64-bit hash of everything that changes its result: the graph entry
// (generator and parameters, or file path), the cluster as written, the cost
// model and its options, the simulator options, the objective, the agent's
// name and options, the digest of a checkpoint the options name, the seed,
// the budget, the code version (core/version.h: git commit and dirty flag of
// the build) and the mode (full or quick). Labels and the experiment name are not part of it, so
// renaming never re-runs anything, while changing a budget or an option, or
// training a new network into the same checkpoint file, or rebuilding gosim
// from other code, makes new cells beside the old ones.
#ifndef GOSIM_EXPERIMENTS_CELLS_H_
#define GOSIM_EXPERIMENTS_CELLS_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/experiment_config.h"

namespace gosim::experiments {

struct Cell {
  std::string id;       // 16 lowercase hex digits
  int32_t graph = 0;    // index into ExperimentConfig::graphs
  int32_t cluster = 0;  // index into ExperimentConfig::clusters
  int32_t agent = 0;    // index into ExperimentConfig::agents
  uint64_t seed = 0;
  agents::Budget budget;
  nlohmann::json identity;  // what `id` hashes (canonical, keys sorted)

  // "<graph>.<cluster>.<label>.s<seed>.<id>", safe as a file name.
  std::string FileStem(const ExperimentConfig& config) const;
};

// Every cell, graph-major then cluster, agent, seed (the run order).
std::vector<Cell> ExpandGrid(const ExperimentConfig& config);

// A YAML tree as JSON with typed scalars (null, bool, integer, number,
// string) and sorted keys; used for identities and the results lines.
nlohmann::json YamlToJson(const YAML::Node& node);

// What a cell's identity records of a checkpoint named in agent options
// (the `checkpoint` key of GO and REGAL): the digest of the file's
// contents, "missing" if there is no such file yet, or null when the
// options name no checkpoint (such cells keep the identity they had before
// checkpoints were digested).
nlohmann::json CheckpointDigest(const nlohmann::json& options);

// `identity` without its code version (to match cells across builds), and
// the code version it records ("unrecorded" for lines written before cells
// carried one).
nlohmann::json IdentityWithoutCode(const nlohmann::json& identity);
std::string IdentityCode(const nlohmann::json& identity);

// FNV-1a 64 of `text` followed by a SplitMix64 finalizer, as 16 hex digits.
std::string HashHex(const std::string& text);

// Replaces characters outside [A-Za-z0-9._-] by '_' (for file names).
std::string SafeFileName(const std::string& text);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_CELLS_H_
