// Training checkpoints: model parameters and buffers, optimizer state, the
// trainer's RNG state, torch's default CPU generator state and the step, in
// one file written atomically (core/io.h WriteFileAtomic), so a killed run
// resumes exactly where its last checkpoint left it.
//
// Every checkpoint names the agent whose network it holds and that
// network's version (CheckpointKind); loading it as another agent's, or into
// a build whose network of that agent has another version, is refused with
// one StateError line naming both and how to fix it (train again, or use the
// committed checkpoint of configs/checkpoints/).
//
// A checkpoint also records a `signature` string (the model's shape and the
// options that must not change across a resume, e.g. GnnOptions::Signature
// plus the agent's own); LoadCheckpoint refuses a file whose signature
// differs with a StateError that says what differs.
//
// Format: torch's serialize::OutputArchive (torch::save's format), keys
//   model/...         the module's parameters and buffers
//   optimizer/...     the optimizer's state (Optimizer::save)
//   gosim/step, gosim/rng (4 x uint64 as int64), gosim/torch_rng,
//   gosim/signature (bytes), gosim/scalars/<name> (float64 scalars),
//   gosim_version (the file format, kFormatVersion in checkpoint.cc),
//   gosim_agent (bytes) and gosim_network_version (CheckpointKind).
#ifndef GOSIM_AGENTS_LEARNED_COMMON_CHECKPOINT_H_
#define GOSIM_AGENTS_LEARNED_COMMON_CHECKPOINT_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace gosim::agents::learned {

// The agent a checkpoint is for and the version of that agent's network.
// Bump `network_version` whenever a change to the network's code gives a
// saved parameter another meaning (a layer reordered, a feature added or
// reinterpreted) without changing the shape signature; then re-train the
// committed checkpoints (configs/checkpoints/README.md).
struct CheckpointKind {
  const char* agent = "";
  int64_t network_version = 0;
};

inline constexpr CheckpointKind kGoCheckpoint{"go", 1};
inline constexpr CheckpointKind kRegalCheckpoint{"regal", 1};
inline constexpr CheckpointKind kHrlCheckpoint{"hrl", 1};
inline constexpr CheckpointKind kMcmCheckpoint{"mcm", 1};

struct TrainingState {
  int64_t step = 0;                       // training steps completed
  std::array<uint64_t, 4> rng{};          // gosim::Rng::state() of the trainer
  std::map<std::string, double> scalars;  // e.g. baseline, best objective, evaluations, wall seconds
};

// Writes `model`, `optimizer` (may be null: inference-only files) and
// `state` to `path` atomically. IoError when the file cannot be written.
void SaveCheckpoint(const std::string& path, const CheckpointKind& kind, const std::string& signature,
                    torch::nn::Module& model, torch::optim::Optimizer* optimizer, const TrainingState& state);

// Reads a checkpoint into `model` (and `optimizer` when not null) and
// returns its state; also restores torch's default CPU generator. IoError
// when the file is missing or unreadable, StateError when it is not a gosim
// checkpoint, holds another agent's network or another network version than
// `kind`, or its signature differs from `signature`.
TrainingState LoadCheckpoint(const std::string& path, const CheckpointKind& kind,
                             const std::string& signature, torch::nn::Module& model,
                             torch::optim::Optimizer* optimizer);

// The `key=value` fields of a signature body ("hidden=64,layers=3;bins=16":
// groups split by ';', fields by ','). Returns false, with `bad` set to the
// offending token, when a field has no '='.
bool ParseSignatureFields(const std::string& body, std::map<std::string, std::string>* fields,
                          std::string* bad);

// The signature stored in checkpoint `path` (to rebuild the model it was
// written for before loading it), after checking its agent and network
// version against `kind`. IoError / StateError like LoadCheckpoint.
std::string ReadCheckpointSignature(const std::string& path, const CheckpointKind& kind);

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_CHECKPOINT_H_
