#include "calibration/trace.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/strings.h"

namespace gosim::calibration {

std::string_view TraceSchemaName(TraceSchema schema) {
  switch (schema) {
    case TraceSchema::kKineto:
      return "kineto";
    case TraceSchema::kKinetoLegacy:
      return "kineto-legacy";
    case TraceSchema::kTfTimeline:
      return "tf-timeline";
  }
  return "kineto";
}

std::string_view CopyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::kNone:
      return "";
    case CopyKind::kHtoD:
      return "htod";
    case CopyKind::kDtoH:
      return "dtoh";
    case CopyKind::kDtoD:
      return "dtod";
    case CopyKind::kPtoP:
      return "ptop";
    case CopyKind::kOther:
      return "other";
  }
  return "";
}

int32_t Trace::MainDevice() const {
  std::map<int32_t, int64_t> counts;
  for (const GpuActivity& a : activities) ++counts[a.device];
  int32_t best = -1;
  int64_t best_count = 0;
  for (const auto& [device, count] : counts) {
    if (count > best_count) {
      best = device;
      best_count = count;
    }
  }
  return best;
}

const DeviceProperties* Trace::FindDevice(int32_t id) const {
  for (const DeviceProperties& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

std::string Trace::DeviceKind() const {
  const int32_t device = MainDevice();
  if (device < 0) return "cpu";
  const DeviceProperties* props = FindDevice(device);
  if (props == nullptr && !devices.empty()) props = &devices.front();
  if (props == nullptr) return "gpu";
  std::string kind = DeviceKindFromName(props->name);
  return kind.empty() ? "gpu" : kind;
}

std::string DeviceKindFromName(std::string_view device_name) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : device_name) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!current.empty()) tokens.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) tokens.push_back(current);
  static const std::vector<std::string> kVendor = {"NVIDIA", "Tesla", "GeForce", "Quadro", "AMD", "Radeon"};
  static const std::vector<std::string> kFamily = {"RTX", "GTX", "Instinct", "TITAN", "Titan"};
  size_t i = 0;
  while (i < tokens.size() && std::find(kVendor.begin(), kVendor.end(), tokens[i]) != kVendor.end()) ++i;
  if (i >= tokens.size()) return "";
  std::string kind = tokens[i];
  if (std::find(kFamily.begin(), kFamily.end(), kind) != kFamily.end() && i + 1 < tokens.size()) {
    kind += tokens[i + 1];
  }
  return kind;
}

graphs::DType DTypeFromProfilerType(std::string_view type) {
  using graphs::DType;
  static const std::map<std::string, DType, std::less<>> kTypes = {
      {"float", DType::kFloat32},       {"double", DType::kFloat64},
      {"c10::Half", DType::kFloat16},   {"c10::BFloat16", DType::kBFloat16},
      {"long int", DType::kInt64},      {"long", DType::kInt64},
      {"int", DType::kInt32},           {"short int", DType::kInt16},
      {"short", DType::kInt16},         {"signed char", DType::kInt8},
      {"unsigned char", DType::kUInt8}, {"bool", DType::kBool},
      {"int64_t", DType::kInt64},       {"int32_t", DType::kInt32},
      {"half", DType::kFloat16},
  };
  const auto it = kTypes.find(type);
  if (it != kTypes.end()) return it->second;
  return graphs::ParseDType(type);
}

graphs::DType DTypeFromCommsType(std::string_view type) {
  using graphs::DType;
  static const std::map<std::string, DType, std::less<>> kTypes = {
      {"Float", DType::kFloat32},     {"Double", DType::kFloat64}, {"Half", DType::kFloat16},
      {"BFloat16", DType::kBFloat16}, {"Long", DType::kInt64},     {"Int", DType::kInt32},
      {"Short", DType::kInt16},       {"Char", DType::kInt8},      {"Byte", DType::kUInt8},
      {"Bool", DType::kBool},
  };
  const auto it = kTypes.find(type);
  if (it != kTypes.end()) return it->second;
  return DTypeFromProfilerType(type);
}

std::string NormalizeCollective(std::string_view name) {
  std::string_view n = name;
  const size_t colon = n.rfind(':');
  if (colon != std::string_view::npos) n = n.substr(colon + 1);
  std::string out;
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c))) out.push_back(static_cast<char>(std::tolower(c)));
  }
  // Variants of one collective share a name: all_to_all_single, alltoall_base, ...
  static const std::vector<std::string> kBase = {"allreduce", "alltoall", "allgather", "reducescatter",
                                                 "broadcast", "sendrecv", "reduce",    "send",
                                                 "recv",      "gather",   "scatter",   "barrier"};
  for (const std::string& base : kBase) {
    if (StartsWith(out, base)) return base;
  }
  return out;
}

bool IsOperatorName(std::string_view name) {
  const size_t sep = name.find("::");
  if (sep == std::string_view::npos || sep == 0 || sep + 2 >= name.size()) return false;
  const std::string_view ns = name.substr(0, sep);
  const std::string_view op = name.substr(sep + 2);
  auto word = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  return word(ns) && word(op) && ns != "autograd";
}

int32_t TopLevelOp(const Trace& trace, int32_t op) {
  if (op < 0) return -1;
  int32_t top = -1;
  for (int32_t o = op; o >= 0; o = trace.ops[static_cast<size_t>(o)].parent) {
    if (IsOperatorName(trace.ops[static_cast<size_t>(o)].name)) top = o;
  }
  return top >= 0 ? top : op;
}

int32_t StepAt(const Trace& trace, double time) {
  // Steps are sorted by start and do not overlap.
  auto it = std::upper_bound(trace.steps.begin(), trace.steps.end(), time,
                             [](double t, const ProfilerStep& s) { return t < s.start; });
  if (it == trace.steps.begin()) return -1;
  --it;
  if (time < it->end()) return static_cast<int32_t>(it - trace.steps.begin());
  return -1;
}

void ThrowEventError(const std::string& source, int64_t event, const std::string& path,
                     const std::string& message, const std::string& hint) {
  Location where{source};
  where.path = "traceEvents[" + std::to_string(event) + "]" + (path.empty() ? "" : "." + path);
  throw TraceError(message, where, hint);
}

}  // namespace gosim::calibration
