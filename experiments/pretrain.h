// The pre-training cost of a cell's agent: the simulator evaluations that
// produced the network it starts from (amortised cost), reported in its own
// column beside the cell's own evaluations (docs/EXPERIMENTS.md).
//
// An agent that starts from a checkpoint (the `checkpoint` option of GO and
// REGAL; REGAL's default is configs/checkpoints/regal.pt) was pre-trained;
// everything else (non-learned agents, HRL and ColocRL, which train within
// the cell's budget, GO from a fresh network) has none. The count is read,
// in this order, from:
//   1. a sidecar `<checkpoint>.json` beside the file (committed checkpoints:
//      configs/checkpoints/*.pt.json): {"pretrain_evaluations": N,
//      "checkpoint_digest": HashHex of the file, "source": "..."}; a sidecar
//      whose digest is not the file's is stale and gives "unknown";
//   2. the training run folder the checkpoint is in (`gosim train` writes
//      checkpoint.pt and best.pt beside curves.csv): the largest value of the
//      curves' `evaluations` column, i.e. the whole run, since best.pt was
//      selected by it;
//   3. otherwise unknown (-1), shown as "?", never as 0.
#ifndef GOSIM_EXPERIMENTS_PRETRAIN_H_
#define GOSIM_EXPERIMENTS_PRETRAIN_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace gosim::experiments {

struct PretrainCost {
  static constexpr int64_t kUnknown = -1;
  int64_t evaluations = 0;  // kUnknown when it cannot be found
  std::string source;       // where the figure comes from, or why it is unknown
};

// The pre-training cost of agent `agent` with options `options` (as JSON,
// cells.h YamlToJson). A malformed sidecar is a StateError naming the file.
PretrainCost FindPretrainCost(const std::string& agent, const nlohmann::json& options);

// "0", "2,304", "?" (unknown) for tables.
std::string FormatPretrain(int64_t evaluations);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_PRETRAIN_H_
