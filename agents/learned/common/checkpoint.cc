#include "agents/learned/common/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/io.h"

namespace gosim::agents::learned {

namespace {

// 2: adds gosim_agent and gosim_network_version (CheckpointKind).
constexpr int64_t kFormatVersion = 2;

// How to get a checkpoint this build reads, for the errors below.
std::string HowToFix(const CheckpointKind& kind) {
  return "train it again with this build (`gosim train`), or use the committed configs/checkpoints/" +
         std::string(kind.agent) + ".pt (configs/checkpoints/README.md)";
}

torch::Tensor BytesTensor(const std::string& s) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string TensorBytes(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous().to(torch::kUInt8);
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

torch::Tensor ReadTensor(torch::serialize::InputArchive& archive, const std::string& key,
                         const std::string& path) {
  torch::Tensor t;
  if (!archive.try_read(key, t)) {
    throw StateError("checkpoint has no '" + key + "'", Location{path},
                     "the file is not a complete gosim checkpoint; train again or pick another file");
  }
  return t;
}

}  // namespace

void SaveCheckpoint(const std::string& path, const CheckpointKind& kind, const std::string& signature,
                    torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                    const TrainingState& state) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive optimizer_archive;
    optimizer->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }
  archive.write("gosim_version", torch::tensor(kFormatVersion));
  archive.write("gosim_agent", BytesTensor(kind.agent));
  archive.write("gosim_network_version", torch::tensor(kind.network_version));
  archive.write("gosim_step", torch::tensor(state.step));
  torch::Tensor rng = torch::empty({4}, torch::kInt64);
  for (size_t i = 0; i < 4; ++i) rng[static_cast<int64_t>(i)] = static_cast<int64_t>(state.rng[i]);
  archive.write("gosim_rng", rng);
  {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    archive.write("gosim_torch_rng", generator.get_state());
  }
  archive.write("gosim_signature", BytesTensor(signature));
  std::string names;
  std::vector<double> values;
  for (const auto& [name, value] : state.scalars) {
    names += name + "\n";
    values.push_back(value);
  }
  archive.write("gosim_scalar_names", BytesTensor(names));
  torch::Tensor scalar_values = torch::zeros({static_cast<int64_t>(values.size())}, torch::kFloat64);
  for (size_t i = 0; i < values.size(); ++i) scalar_values[static_cast<int64_t>(i)] = values[i];
  archive.write("gosim_scalar_values", scalar_values);
  std::ostringstream out;
  archive.save_to(out);
  WriteFileAtomic(path, out.str());
}

namespace {

torch::serialize::InputArchive OpenArchive(const std::string& path, const CheckpointKind& kind) {
  if (!FileExists(path)) {
    throw IoError(
        "checkpoint not found", Location{path},
        "give the path of a checkpoint written by `gosim train` (run folder/best.pt or checkpoint.pt)");
  }
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(ReadFile(path));
    archive.load_from(in);
  } catch (const c10::Error& e) {
    throw StateError("not a readable checkpoint: " + std::string(e.what_without_backtrace()), Location{path},
                     "give a checkpoint written by `gosim train`");
  }
  const int64_t version = ReadTensor(archive, "gosim_version", path).item<int64_t>();
  if (version != kFormatVersion) {
    throw StateError("checkpoint format version " + std::to_string(version) + ", this build reads version " +
                         std::to_string(kFormatVersion) + " (" + kind.agent + " network version " +
                         std::to_string(kind.network_version) + ")",
                     Location{path}, HowToFix(kind));
  }
  const std::string agent = TensorBytes(ReadTensor(archive, "gosim_agent", path));
  const int64_t network_version = ReadTensor(archive, "gosim_network_version", path).item<int64_t>();
  if (agent != kind.agent) {
    throw StateError(
        "checkpoint holds a " + agent + " network (version " + std::to_string(network_version) + "), not a " +
            kind.agent + " one (version " + std::to_string(kind.network_version) + ")",
        Location{path}, "give a checkpoint of agent " + std::string(kind.agent) + ": " + HowToFix(kind));
  }
  if (network_version != kind.network_version) {
    throw StateError("checkpoint holds " + agent + " network version " + std::to_string(network_version) +
                         ", this build's " + kind.agent + " network is version " +
                         std::to_string(kind.network_version),
                     Location{path}, HowToFix(kind));
  }
  return archive;
}

}  // namespace

std::string ReadCheckpointSignature(const std::string& path, const CheckpointKind& kind) {
  torch::serialize::InputArchive archive = OpenArchive(path, kind);
  return TensorBytes(ReadTensor(archive, "gosim_signature", path));
}

TrainingState LoadCheckpoint(const std::string& path, const CheckpointKind& kind,
                             const std::string& signature, torch::nn::Module& model,
                             torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive archive = OpenArchive(path, kind);
  TrainingState state;
  const std::string saved = TensorBytes(ReadTensor(archive, "gosim_signature", path));
  if (saved != signature) {
    throw StateError(
        "checkpoint is incompatible: it was written for '" + saved + "', this model is '" + signature + "'",
        Location{path}, "use the agent options the checkpoint was trained with, or train again");
  }
  try {
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model.load(model_archive);
    if (optimizer != nullptr) {
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer->load(optimizer_archive);
    }
  } catch (const c10::Error& e) {
    throw StateError("checkpoint does not fit the model: " + std::string(e.what_without_backtrace()),
                     Location{path}, "use the agent options the checkpoint was trained with, or train again");
  }
  state.step = ReadTensor(archive, "gosim_step", path).item<int64_t>();
  const torch::Tensor rng = ReadTensor(archive, "gosim_rng", path);
  for (size_t i = 0; i < 4; ++i)
    state.rng[i] = static_cast<uint64_t>(rng[static_cast<int64_t>(i)].item<int64_t>());
  {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(ReadTensor(archive, "gosim_torch_rng", path));
  }
  const std::string names = TensorBytes(ReadTensor(archive, "gosim_scalar_names", path));
  const torch::Tensor values =
      ReadTensor(archive, "gosim_scalar_values", path).to(torch::kFloat64).contiguous();
  size_t start = 0;
  int64_t index = 0;
  while (start < names.size()) {
    const size_t end = names.find('\n', start);
    if (end == std::string::npos || index >= values.numel()) {
      throw StateError("checkpoint scalars are corrupt", Location{path}, "train again");
    }
    state.scalars[names.substr(start, end - start)] = values[index++].item<double>();
    start = end + 1;
  }
  return state;
}

bool ParseSignatureFields(const std::string& body, std::map<std::string, std::string>* fields,
                          std::string* bad) {
  std::istringstream in(body);
  std::string token;
  while (std::getline(in, token, ';')) {
    std::istringstream parts(token);
    std::string part;
    while (std::getline(parts, part, ',')) {
      const size_t eq = part.find('=');
      if (eq == std::string::npos) {
        *bad = part;
        return false;
      }
      (*fields)[part.substr(0, eq)] = part.substr(eq + 1);
    }
  }
  return true;
}

}  // namespace gosim::agents::learned
