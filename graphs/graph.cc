#include "graphs/graph.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace gosim::graphs {
namespace {

struct DTypeEntry {
  DType dtype;
  std::string_view name;
  int size;
};

constexpr std::array<DTypeEntry, 12> kDTypes{{
    {DType::kUnknown, "unknown", 0},   {DType::kFloat32, "float32", 4},
    {DType::kFloat16, "float16", 2},   {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat64, "float64", 8},   {DType::kInt64, "int64", 8},
    {DType::kInt32, "int32", 4},       {DType::kInt16, "int16", 2},
    {DType::kInt8, "int8", 1},         {DType::kUInt8, "uint8", 1},
    {DType::kBool, "bool", 1},         {DType::kTFloat32, "tfloat32", 4},
}};

}  // namespace

std::string_view DTypeName(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].name; }
int DTypeSize(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].size; }

DType ParseDType(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t.rfind("torch.", 0) == 0) t = t.substr(6);
  if (t.rfind("dt_", 0) == 0) t = t.substr(3);  // TensorFlow DT_FLOAT
  for (const auto& e : kDTypes) {
    if (t == e.name) return e.dtype;
  }
  if (t == "float" || t == "f32" || t == "fp32") return DType::kFloat32;
  if (t == "half" || t == "f16" || t == "fp16") return DType::kFloat16;
  if (t == "bf16") return DType::kBFloat16;
  if (t == "tf32") return DType::kTFloat32;
  if (t == "double" || t == "f64" || t == "fp64") return DType::kFloat64;
  if (t == "long" || t == "i64") return DType::kInt64;
  if (t == "int" || t == "i32") return DType::kInt32;
  if (t == "short") return DType::kInt16;
  if (t == "char") return DType::kInt8;
  if (t == "byte") return DType::kUInt8;
  if (t == "c10::half") return DType::kFloat16;
  if (t == "c10::bfloat16") return DType::kBFloat16;
  return DType::kUnknown;
}

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kUpdate: return "update";
  }
  return "forward";
}

bool ParsePhase(std::string_view text, Phase* phase) {
  if (text == "forward") *phase = Phase::kForward;
  else if (text == "backward") *phase = Phase::kBackward;
  else if (text == "update") *phase = Phase::kUpdate;
  else return false;
  return true;
}

NodeId Graph::tensor_producer(TensorId t) const {
  auto it = std::upper_bound(tensor_offsets_.begin(), tensor_offsets_.end(), t);
  return static_cast<NodeId>(it - tensor_offsets_.begin()) - 1;
}

int32_t Graph::FindOpType(std::string_view name) const {
  for (size_t i = 0; i < op_types_.size(); ++i) {
    if (op_types_[i] == name) return static_cast<int32_t>(i);
  }
  return -1;
}

std::optional<NodeId> Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gosim::graphs
