#include "sim/device_profile.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "core/yaml.h"

namespace gosim::sim {
namespace {

constexpr const char* kFormat = "gosim.device_profile";
constexpr int kVersion = 1;
constexpr const char* kProfileDir = "configs/calibrated";

double Finite(YamlMap& m, const std::string& key, double fallback, bool non_negative) {
  const double value = m.Get<double>(key, fallback);
  if (!std::isfinite(value) || (non_negative && value < 0.0)) {
    m.Fail(key, key + (non_negative ? " must be a finite number >= 0" : " must be a finite number"));
  }
  return value;
}

KernelFit ReadFit(YamlMap m) {
  m.Allow({"intercept", "per_flop", "per_byte", "per_channel_element", "samples", "mape"});
  m.Finish();
  KernelFit fit;
  fit.intercept = Finite(m, "intercept", 0.0, false);
  fit.per_flop = Finite(m, "per_flop", 0.0, true);
  fit.per_byte = Finite(m, "per_byte", 0.0, true);
  fit.per_channel_element = Finite(m, "per_channel_element", 0.0, true);
  fit.samples = m.Get<int64_t>("samples", 0);
  if (fit.samples < 0) m.Fail("samples", "samples must be >= 0");
  fit.mape = Finite(m, "mape", -1.0, false);
  return fit;
}

LinkFit ReadLink(YamlMap m) {
  m.Allow({"latency", "bandwidth", "samples"});
  m.Finish();
  LinkFit fit;
  fit.latency = Finite(m, "latency", 0.0, true);
  fit.bandwidth = Finite(m, "bandwidth", 0.0, true);
  if (fit.bandwidth <= 0.0) m.Fail("bandwidth", "a link fit needs a positive bandwidth (bytes/s)");
  fit.samples = m.Get<int64_t>("samples", 0);
  if (fit.samples < 0) m.Fail("samples", "samples must be >= 0");
  return fit;
}

HostOpFit ReadHostOp(YamlMap m) {
  m.Allow({"seconds", "kernels", "samples"});
  m.Finish();
  HostOpFit fit;
  fit.seconds = Finite(m, "seconds", 0.0, true);
  fit.kernels = Finite(m, "kernels", 0.0, true);
  fit.samples = m.Get<int64_t>("samples", 0);
  if (fit.samples < 0) m.Fail("samples", "samples must be >= 0");
  return fit;
}

void EmitHostOp(YAML::Emitter& out, const HostOpFit& fit) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "seconds" << YAML::Value << fit.seconds;
  if (fit.kernels > 0.0) out << YAML::Key << "kernels" << YAML::Value << fit.kernels;
  if (fit.samples > 0) out << YAML::Key << "samples" << YAML::Value << fit.samples;
  out << YAML::EndMap;
}

// The entries of mapping `key` as (name, sub-map) pairs, in file order.
std::vector<std::pair<std::string, YamlMap>> Entries(YamlMap& parent, const std::string& key) {
  std::vector<std::pair<std::string, YamlMap>> out;
  const YAML::Node node = parent.Node(key);
  if (!node || node.IsNull()) return out;
  if (!node.IsMap()) parent.Fail(key, "expected a mapping of name: {...}");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.Scalar();
    out.emplace_back(name, YamlMap(it->second, parent.file(), parent.ChildPath(key) + "." + name));
  }
  return out;
}

void EmitFit(YAML::Emitter& out, const KernelFit& fit) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "intercept" << YAML::Value << fit.intercept;
  out << YAML::Key << "per_flop" << YAML::Value << fit.per_flop;
  out << YAML::Key << "per_byte" << YAML::Value << fit.per_byte;
  if (fit.per_channel_element > 0.0) {
    out << YAML::Key << "per_channel_element" << YAML::Value << fit.per_channel_element;
  }
  if (fit.samples > 0) out << YAML::Key << "samples" << YAML::Value << fit.samples;
  if (fit.mape >= 0.0) out << YAML::Key << "mape" << YAML::Value << fit.mape;
  out << YAML::EndMap;
}

}  // namespace

double KernelFit::Time(double flops, double bytes, double channel_extent) const {
  return std::max(0.0,
                  intercept + per_flop * flops + per_byte * bytes + per_channel_element * channel_extent);
}

std::string_view PrecisionTag(graphs::DType dtype) {
  switch (dtype) {
    case graphs::DType::kBFloat16:
      return "bf16";
    case graphs::DType::kFloat16:
      return "fp16";
    case graphs::DType::kTFloat32:
      return "tf32";
    default:
      return "";
  }
}

bool PrecisionSensitive(graphs::OpClass op_class) {
  return op_class == graphs::OpClass::kMatMul || op_class == graphs::OpClass::kConv ||
         op_class == graphs::OpClass::kConvBackward || op_class == graphs::OpClass::kNormalization;
}

std::string_view TypePrecisionTag(std::string_view op_type) {
  if (op_type.empty() || op_type.back() != ']') return "";
  const size_t open = op_type.rfind(" [");
  return open == std::string_view::npos ? "" : op_type.substr(open + 2, op_type.size() - open - 3);
}

namespace {

// The fit of an op, most specific first (the order FitFor documents), or
// nullptr where the op has a precision to look for (a 16-bit op of a
// PrecisionSensitive class, or a tagged type) and the profile no fit of
// it. With `precision` false, tags are ignored: the fp32 fits, never null.
}  // namespace

std::string_view OpTypeAlias(std::string_view op_type, int k, char* buffer, size_t size) {
  constexpr std::string_view kAten = "aten::";
  if (!op_type.starts_with(kAten)) return {};
  std::string_view base = op_type.substr(kAten.size());
  if (base.starts_with("native_")) base.remove_prefix(7);
  const std::string_view prefix = k == 0 ? "aten::" : "aten::cudnn_";
  if (prefix.size() + base.size() > size) return {};
  std::copy(prefix.begin(), prefix.end(), buffer);
  std::copy(base.begin(), base.end(), buffer + prefix.size());
  const std::string_view alias(buffer, prefix.size() + base.size());
  return alias == op_type ? std::string_view() : alias;
}

namespace {

const KernelFit* Lookup(const DeviceProfile& p, std::string_view op_type, graphs::OpClass op_class,
                        graphs::DType dtype, graphs::ConvKind kind, bool precision) {
  std::string_view tag = precision ? TypePrecisionTag(op_type) : std::string_view();
  const bool tagged = !tag.empty();
  if (precision && !tagged && PrecisionSensitive(op_class)) tag = PrecisionTag(dtype);
  // The type without its tag, and the tag as a suffix (" [bf16]" or "").
  const std::string_view bare = tagged ? op_type.substr(0, op_type.size() - tag.size() - 3) : op_type;
  const std::string suffix = tag.empty() ? std::string() : " [" + std::string(tag) + "]";
  const graphs::ConvKind type_kind = graphs::TypeConvKind(bare);
  if (type_kind != graphs::ConvKind::kDense) kind = type_kind;
  const auto type_fit = [&](std::string_view key) -> const KernelFit* {
    const auto it = p.op_types.find(key);
    return it == p.op_types.end() ? nullptr : &it->second;
  };
  if (kind != graphs::ConvKind::kDense) {
    // The kind's fits in the op's precision, then in fp32: depthwise and
    // grouped kernels run without tensor cores, at about the same speed
    // in bf16 as in fp32 (EfficientNet-B0 on an H200: depthwise backward
    // 9.2 ms per step under bf16 autocast, 9.0 ms in fp32), so their kind
    // says more than their precision (docs/CALIBRATION.md, "Fitting").
    const std::string kind_suffix = graphs::ConvKindSuffix(kind);
    const std::string class_kind = std::string(graphs::OpClassName(op_class)) + kind_suffix;
    // A type that names its kind already is looked up as it is.
    const std::string typed =
        type_kind != graphs::ConvKind::kDense ? std::string(bare) : std::string(bare) + kind_suffix;
    for (const std::string& precision_suffix : {suffix, std::string()}) {
      if (const KernelFit* fit = type_fit(typed + precision_suffix)) return fit;
      const auto it = p.op_class_kinds.find(class_kind + precision_suffix);
      if (it != p.op_class_kinds.end()) return &it->second;
      if (suffix.empty()) break;
    }
  }
  // The type in its precision: as given, unless the tag comes from the
  // dtype (the only case that builds a key; op_types compares views).
  const KernelFit* typed_fit =
      tag.empty() || tagged ? type_fit(op_type) : type_fit(std::string(op_type) + suffix);
  if (typed_fit != nullptr) return typed_fit;
  if (tag.empty()) {
    const std::optional<KernelFit>& by_class = p.op_classes[static_cast<size_t>(op_class)];
    return by_class ? &*by_class : &p.fallback;
  }
  if (const auto it = p.op_class_precisions.find(tag); it != p.op_class_precisions.end()) {
    const std::optional<KernelFit>& fit = it->second[static_cast<size_t>(op_class)];
    if (fit) return &*fit;
  }
  return nullptr;
}

}  // namespace

const KernelFit& DeviceProfile::FitFor(std::string_view op_type, graphs::OpClass op_class,
                                       graphs::DType dtype, graphs::ConvKind kind) const {
  if (const KernelFit* fit = Lookup(*this, op_type, op_class, dtype, kind, true)) return *fit;
  // No fit of the op's precision: the fp32 ones (the caller refuses or
  // prices it otherwise, HasPrecision).
  return *Lookup(*this, op_type, op_class, dtype, kind, false);
}

const KernelFit* DeviceProfile::FitOfPrecision(std::string_view op_type, graphs::OpClass op_class,
                                               graphs::DType dtype, graphs::ConvKind kind) const {
  return Lookup(*this, op_type, op_class, dtype, kind, true);
}

bool DeviceProfile::HasPrecision(std::string_view op_type, graphs::OpClass op_class, graphs::DType dtype,
                                 graphs::ConvKind kind) const {
  return FitOfPrecision(op_type, op_class, dtype, kind) != nullptr;
}

double DeviceProfile::KernelTime(std::string_view op_type, graphs::OpClass op_class, double flops,
                                 double bytes, double channel_extent, graphs::DType dtype,
                                 graphs::ConvKind kind) const {
  return launch_overhead + FitFor(op_type, op_class, dtype, kind).Time(flops, bytes, channel_extent);
}

const HostOpFit& HostFit::For(std::string_view op_type, graphs::OpClass op_class, bool has_work) const {
  if (const auto it = op_types.find(op_type); it != op_types.end()) return it->second;
  // Aliases: an exporter on the CPU records aten::native_batch_norm where the
  // GPU trace has aten::batch_norm (and aten::cudnn_batch_norm below it),
  // aten::native_batch_norm_backward where it has
  // aten::cudnn_batch_norm_backward.
  for (int k = 0; k < 2; ++k) {
    char buffer[160];
    const std::string_view alias = OpTypeAlias(op_type, k, buffer, sizeof(buffer));
    if (alias.empty()) continue;
    if (const auto it = op_types.find(alias); it != op_types.end()) return it->second;
  }
  if (!has_work) return view;
  if (const auto& fit = op_classes[static_cast<size_t>(op_class)]; fit) return *fit;
  return launch;
}

DeviceProfile ParseDeviceProfile(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root_node = LoadYamlString(yaml_text, source);
  if (!root_node.IsMap()) {
    throw ConfigError("a device profile must be a mapping (format, version, device_kind, ...)",
                      YamlLocation(root_node, source, ""), "see docs/FORMATS.md, Calibrated device profile");
  }
  YamlMap root = YamlMap::Root(root_node, source);
  root.Allow({"format", "version", "device_kind", "source", "launch_overhead", "kernel_gap", "cpu", "host",
              "default", "op_classes", "op_types", "links"});
  root.Finish();
  if (root.Get<std::string>("format", "") != kFormat) {
    root.Fail(root.Has("format") ? "format" : "",
              std::string("not a device profile: format must be ") + kFormat);
  }
  if (root.Require<int>("version") != kVersion)
    root.Fail("version", "unsupported profile version (expected 1)");
  DeviceProfile p;
  p.device_kind = root.Require<std::string>("device_kind");
  if (p.device_kind.empty()) root.Fail("device_kind", "device_kind must not be empty");
  p.source = YAML::Clone(root.Node("source"));
  p.launch_overhead = Finite(root, "launch_overhead", 0.0, true);
  p.kernel_gap = Finite(root, "kernel_gap", 0.0, true);
  if (root.Has("cpu")) {
    YamlMap cpu = root.Child("cpu");
    cpu.Allow({"per_call", "per_op", "per_top_op", "samples"});
    cpu.Finish();
    CpuFit fit;
    fit.per_call = Finite(cpu, "per_call", 0.0, true);
    fit.per_op = Finite(cpu, "per_op", 0.0, true);
    fit.per_top_op = Finite(cpu, "per_top_op", 0.0, true);
    fit.samples = cpu.Get<int64_t>("samples", 0);
    if (fit.samples < 0) cpu.Fail("samples", "samples must be >= 0");
    p.cpu = fit;
  }
  if (root.Has("host")) {
    YamlMap host = root.Child("host");
    host.Allow(
        {"profiler_factor", "profiler_samples", "per_parameter", "launch", "view", "op_classes", "op_types"});
    host.Finish();
    HostFit fit;
    fit.profiler_factor = Finite(host, "profiler_factor", 1.0, true);
    fit.profiler_samples = host.Get<int64_t>("profiler_samples", 0);
    if (fit.profiler_samples < 0) host.Fail("profiler_samples", "profiler_samples must be >= 0");
    fit.per_parameter = Finite(host, "per_parameter", 0.0, true);
    if (!host.Has("launch")) {
      host.Fail("", "missing required key 'launch'", "give launch: {seconds: S} (an op with GPU work)");
    }
    fit.launch = ReadHostOp(host.Child("launch"));
    if (host.Has("view")) fit.view = ReadHostOp(host.Child("view"));
    for (auto& [name, m] : Entries(host, "op_classes")) {
      const std::optional<graphs::OpClass> c = graphs::ParseOpClass(name);
      if (!c) {
        std::vector<std::string> names;
        for (const graphs::OpClass k : graphs::AllOpClasses()) names.emplace_back(graphs::OpClassName(k));
        throw ConfigError("unknown op class '" + name + "'." + DidYouMean(name, names),
                          YamlLocation(m.node(), source, m.path()), "op classes: " + Join(names, ", "));
      }
      fit.op_classes[static_cast<size_t>(*c)] = ReadHostOp(m);
    }
    for (auto& [name, m] : Entries(host, "op_types")) fit.op_types.emplace(name, ReadHostOp(m));
    p.host = std::move(fit);
  }
  if (!root.Has("default"))
    root.Fail("", "missing required key 'default'", "give default: {intercept, per_flop, per_byte}");
  p.fallback = ReadFit(root.Child("default"));
  std::vector<std::string> class_names;
  for (const graphs::OpClass c : graphs::AllOpClasses()) class_names.emplace_back(graphs::OpClassName(c));
  for (auto& [name, m] : Entries(root, "op_classes")) {
    // "matmul" or, for 16-bit kernels, "matmul [bf16]"; "conv (depthwise)"
    // or "conv_backward (grouped) [bf16]" for a kind of convolution.
    const std::string_view tag = TypePrecisionTag(name);
    std::string base = tag.empty() ? name : name.substr(0, name.size() - tag.size() - 3);
    const graphs::ConvKind kind = graphs::TypeConvKind(base);
    base.resize(base.size() - graphs::ConvKindSuffix(kind).size());
    const std::optional<graphs::OpClass> c = graphs::ParseOpClass(base);
    if (!c) {
      throw ConfigError(
          "unknown op class '" + base + "'." + DidYouMean(base, class_names),
          YamlLocation(m.node(), source, m.path()),
          "op classes: " + Join(class_names, ", ") +
              ", each optionally with [bf16], [fp16] or [tf32]; conv and conv_backward also with "
              "(depthwise) or (grouped) before it");
    }
    if (!tag.empty() && tag != "bf16" && tag != "fp16" && tag != "tf32") {
      throw ConfigError("unknown precision '[" + std::string(tag) + "]' of op class '" + base + "'",
                        YamlLocation(m.node(), source, m.path()),
                        "write '" + base + " [bf16]', '" + base + " [fp16]' or '" + base + " [tf32]'");
    }
    if (kind != graphs::ConvKind::kDense) {
      if (*c != graphs::OpClass::kConv && *c != graphs::OpClass::kConvBackward) {
        throw ConfigError(
            "op class '" + base + "' has no kinds; only conv and conv_backward do",
            YamlLocation(m.node(), source, m.path()),
            "write '" + base + "', or 'conv (" + std::string(graphs::ConvKindName(kind)) + ")'");
      }
      p.op_class_kinds[name] = ReadFit(m);
    } else if (tag.empty()) {
      p.op_classes[static_cast<size_t>(*c)] = ReadFit(m);
    } else {
      p.op_class_precisions[std::string(tag)][static_cast<size_t>(*c)] = ReadFit(m);
    }
  }
  for (auto& [name, m] : Entries(root, "op_types")) p.op_types.emplace(name, ReadFit(m));
  for (auto& [name, m] : Entries(root, "links")) p.links.emplace(name, ReadLink(m));
  return p;
}

DeviceProfile LoadDeviceProfile(const std::string& path_or_name) {
  std::string path = path_or_name;
  const bool bare =
      path.find('/') == std::string::npos && !EndsWith(path, ".yaml") && !EndsWith(path, ".yml");
  if (bare) path = std::string(kProfileDir) + "/" + path_or_name + ".yaml";
  path = ResolveDataPath(path);
  if (!FileExists(path)) {
    throw ConfigError(
        "no device profile '" + path + "'", Location{path_or_name},
        "give a path, or a name in " + std::string(kProfileDir) + " (written by gosim calibrate)");
  }
  return ParseDeviceProfile(ReadFile(path), path);
}

std::string DeviceProfileToYaml(const DeviceProfile& p) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormat;
  out << YAML::Key << "version" << YAML::Value << kVersion;
  out << YAML::Key << "device_kind" << YAML::Value << p.device_kind;
  if (p.source && !p.source.IsNull()) out << YAML::Key << "source" << YAML::Value << p.source;
  out << YAML::Key << "launch_overhead" << YAML::Value << p.launch_overhead;
  if (p.kernel_gap > 0.0) out << YAML::Key << "kernel_gap" << YAML::Value << p.kernel_gap;
  if (p.cpu) {
    out << YAML::Key << "cpu" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "per_call" << YAML::Value << p.cpu->per_call;
    out << YAML::Key << "per_op" << YAML::Value << p.cpu->per_op;
    if (p.cpu->per_top_op > 0.0) out << YAML::Key << "per_top_op" << YAML::Value << p.cpu->per_top_op;
    if (p.cpu->samples > 0) out << YAML::Key << "samples" << YAML::Value << p.cpu->samples;
    out << YAML::EndMap;
  }
  if (p.host) {
    const HostFit& h = *p.host;
    out << YAML::Key << "host" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "profiler_factor" << YAML::Value << h.profiler_factor;
    out << YAML::Key << "profiler_samples" << YAML::Value << h.profiler_samples;
    out << YAML::Key << "per_parameter" << YAML::Value << h.per_parameter;
    out << YAML::Key << "launch" << YAML::Value;
    EmitHostOp(out, h.launch);
    out << YAML::Key << "view" << YAML::Value;
    EmitHostOp(out, h.view);
    bool any_class = false;
    for (const auto& fit : h.op_classes) any_class = any_class || fit.has_value();
    if (any_class) {
      out << YAML::Key << "op_classes" << YAML::Value << YAML::BeginMap;
      for (const graphs::OpClass c : graphs::AllOpClasses()) {
        if (!h.op_classes[static_cast<size_t>(c)]) continue;
        out << YAML::Key << std::string(graphs::OpClassName(c)) << YAML::Value;
        EmitHostOp(out, *h.op_classes[static_cast<size_t>(c)]);
      }
      out << YAML::EndMap;
    }
    if (!h.op_types.empty()) {
      out << YAML::Key << "op_types" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, fit] : h.op_types) {
        out << YAML::Key << name << YAML::Value;
        EmitHostOp(out, fit);
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "default" << YAML::Value;
  EmitFit(out, p.fallback);
  bool any_class = false;
  for (const auto& fit : p.op_classes) any_class = any_class || fit.has_value();
  for (const auto& [tag, fits] : p.op_class_precisions) {
    for (const auto& fit : fits) any_class = any_class || fit.has_value();
  }
  any_class = any_class || !p.op_class_kinds.empty();
  if (any_class) {
    out << YAML::Key << "op_classes" << YAML::Value << YAML::BeginMap;
    for (const graphs::OpClass c : graphs::AllOpClasses()) {
      const std::optional<KernelFit>& fit = p.op_classes[static_cast<size_t>(c)];
      if (!fit) continue;
      out << YAML::Key << std::string(graphs::OpClassName(c)) << YAML::Value;
      EmitFit(out, *fit);
    }
    for (const auto& [tag, fits] : p.op_class_precisions) {
      for (const graphs::OpClass c : graphs::AllOpClasses()) {
        const std::optional<KernelFit>& fit = fits[static_cast<size_t>(c)];
        if (!fit) continue;
        out << YAML::Key << std::string(graphs::OpClassName(c)) + " [" + tag + "]" << YAML::Value;
        EmitFit(out, *fit);
      }
    }
    for (const auto& [name, fit] : p.op_class_kinds) {
      out << YAML::Key << name << YAML::Value;
      EmitFit(out, fit);
    }
    out << YAML::EndMap;
  }
  if (!p.op_types.empty()) {
    out << YAML::Key << "op_types" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, fit] : p.op_types) {
      out << YAML::Key << name << YAML::Value;
      EmitFit(out, fit);
    }
    out << YAML::EndMap;
  }
  if (!p.links.empty()) {
    out << YAML::Key << "links" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, fit] : p.links) {
      out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "latency" << YAML::Value << fit.latency;
      out << YAML::Key << "bandwidth" << YAML::Value << fit.bandwidth;
      if (fit.samples > 0) out << YAML::Key << "samples" << YAML::Value << fit.samples;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void SaveDeviceProfile(const std::string& path, const DeviceProfile& profile) {
  WriteFileAtomic(path, DeviceProfileToYaml(profile));
}

}  // namespace gosim::sim
