#include "experiments/pretrain.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include "agents/learned_agents.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "experiments/cells.h"

namespace gosim::experiments {
namespace {

// The checkpoint an agent starts from ("" for none).
std::string CheckpointOf(const std::string& agent, const nlohmann::json& options) {
  const auto it = options.find("checkpoint");
  if (it != options.end() && it->is_string()) return it->get<std::string>();
  // REGAL and GO load their committed networks when no checkpoint is named
  // (GO: unless `preset: paper`, a fresh network; agents/learned/go/go_agent.h
  // kGoDefaultCheckpoint).
  if (agent == "regal") return "configs/checkpoints/regal.pt";
  if (agent == "go") {
    const auto preset = options.find("preset");
    const bool paper =
        preset != options.end() && preset->is_string() && preset->get<std::string>() == "paper";
    return paper ? "" : "configs/checkpoints/go.pt";
  }
  return "";
}

PretrainCost FromSidecar(const std::string& sidecar, const std::string& checkpoint) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(ReadFile(sidecar));
  } catch (const nlohmann::json::exception& e) {
    throw StateError(std::string("not valid JSON: ") + e.what(), Location{sidecar},
                     "fix the sidecar (docs/FORMATS.md, pre-training sidecar) or delete it");
  }
  const auto evaluations = json.find("pretrain_evaluations");
  const auto digest = json.find("checkpoint_digest");
  if (!json.is_object() || evaluations == json.end() || !evaluations->is_number_integer() ||
      evaluations->get<int64_t>() < 0 || digest == json.end() || !digest->is_string()) {
    throw StateError(
        "a pre-training sidecar needs \"pretrain_evaluations\" (an integer >= 0) and "
        "\"checkpoint_digest\" (a string)",
        Location{sidecar}, "see docs/FORMATS.md, pre-training sidecar");
  }
  const std::string actual = HashHex(ReadFile(checkpoint));
  if (digest->get<std::string>() != actual) {
    return {PretrainCost::kUnknown, "stale sidecar " + sidecar + " (digest " + digest->get<std::string>() +
                                        ", the checkpoint's is " + actual + ")"};
  }
  return {evaluations->get<int64_t>(), "sidecar " + sidecar};
}

// The largest `evaluations` of a training run's curves.csv, or kUnknown.
PretrainCost FromCurves(const std::string& curves) {
  std::istringstream in(ReadFile(curves));
  std::string line;
  if (!std::getline(in, line)) return {PretrainCost::kUnknown, "empty " + curves};
  const std::vector<std::string> header = Split(line, ',');
  const auto column = std::find(header.begin(), header.end(), "evaluations");
  if (column == header.end()) return {PretrainCost::kUnknown, curves + " has no evaluations column"};
  const size_t index = static_cast<size_t>(column - header.begin());
  int64_t most = -1;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> fields = Split(line, ',');
    if (fields.size() <= index) continue;
    try {
      most = std::max<int64_t>(most, static_cast<int64_t>(std::stod(fields[index])));
    } catch (const std::exception&) {
      return {PretrainCost::kUnknown, curves + ": unreadable evaluations '" + fields[index] + "'"};
    }
  }
  if (most < 0) return {PretrainCost::kUnknown, curves + " has no training step"};
  return {most, "training run " + curves};
}

}  // namespace

PretrainCost FindPretrainCost(const std::string& agent, const nlohmann::json& options) {
  if (!agents::IsLearnedAgent(agent)) return {0, "none (not a learned agent)"};
  const std::string named = CheckpointOf(agent, options);
  if (named.empty()) return {0, "none (no checkpoint: trained within the cell's budget)"};
  const std::string path = ResolveDataPath(named);
  if (!FileExists(path)) return {PretrainCost::kUnknown, "checkpoint " + named + " missing"};
  if (FileExists(path + ".json")) return FromSidecar(path + ".json", path);
  const std::string curves = (std::filesystem::path(path).parent_path() / "curves.csv").string();
  if (FileExists(curves)) return FromCurves(curves);
  return {PretrainCost::kUnknown, "no sidecar " + named + ".json and no curves.csv beside " + named};
}

std::string FormatPretrain(int64_t evaluations) {
  if (evaluations < 0) return "?";
  std::string digits = std::to_string(evaluations);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

}  // namespace gosim::experiments
