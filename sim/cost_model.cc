// The cost model registry, MakeKernelWork and the three built-in models.
#include "sim/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "core/registry.h"
#include "core/strings.h"
#include "graphs/op_costs.h"
#include "sim/cost_models.h"

namespace gosim::sim {
namespace {

using graphs::OpClass;

constexpr const char* kOptionsPath = "cost_model.options";

// One number in (0, 1].
double ReadEfficiency(const YAML::Node& node, const std::string& file, const std::string& path) {
  const double e = YamlAs<double>(node, file, path);
  if (!(e > 0.0 && e <= 1.0)) {
    throw ConfigError("an efficiency must be in (0, 1], not " + node.Scalar(), YamlLocation(node, file, path),
                      "it is the fraction of the device's peak that the op reaches");
  }
  return e;
}

// compute_efficiency / memory_efficiency: {default: e, <class>: e, ...}.
void ReadClassEfficiencies(YamlMap& m, const std::string& key, double Efficiency::*field,
                           std::array<Efficiency, graphs::kNumOpClasses>* by_class) {
  const YAML::Node node = m.Node(key);
  if (!node || node.IsNull()) return;
  if (!node.IsMap()) m.Fail(key, "expected a mapping {default: e, matmul: e, ...}");
  std::vector<std::string> valid{"default"};
  for (const OpClass c : graphs::AllOpClasses()) valid.emplace_back(graphs::OpClassName(c));
  std::array<bool, graphs::kNumOpClasses> explicit_class{};
  std::optional<double> fallback;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string path = m.ChildPath(key) + "." + name;
    if (name == "default") {
      fallback = ReadEfficiency(it->second, m.file(), path);
      continue;
    }
    const std::optional<OpClass> c = graphs::ParseOpClass(name);
    if (!c) {
      throw ConfigError("unknown op class '" + name + "'." + DidYouMean(name, valid),
                        YamlLocation(it->first, m.file(), path), "valid keys: " + Join(valid, ", "));
    }
    (*by_class)[static_cast<size_t>(*c)].*field = ReadEfficiency(it->second, m.file(), path);
    explicit_class[static_cast<size_t>(*c)] = true;
  }
  if (fallback) {
    for (size_t i = 0; i < by_class->size(); ++i) {
      if (!explicit_class[i]) (*by_class)[i].*field = *fallback;
    }
  }
}

Fallback ReadFallback(YamlMap& m, const char* default_fallback = "roofline") {
  const std::string text = m.Get<std::string>("fallback", default_fallback);
  if (text == "roofline") return Fallback::kRoofline;
  if (text == "error") return Fallback::kError;
  m.Fail("fallback",
         "fallback must be roofline or error, not '" + text + "'." + DidYouMean(text, {"roofline", "error"}));
}

RooflineOptions ReadNestedRoofline(YamlMap& m) {
  YamlMap nested = m.Child("roofline");
  RooflineOptions options = RooflineOptions::FromYaml(nested);
  nested.Finish();
  return options;
}

YamlMap OptionsMap(const YAML::Node& options, const std::string& source) {
  if (options && !options.IsNull() && !options.IsMap()) {
    throw ConfigError("cost model options must be a mapping", YamlLocation(options, source, kOptionsPath));
  }
  return YamlMap(options, source, kOptionsPath);
}

graphs::DType NodeDType(const graphs::Node& node) {
  return node.outputs.empty() ? graphs::DType::kFloat32 : node.outputs.front().dtype;
}

double NodeBytes(const graphs::Node& node) {
  return static_cast<double>(node.bytes_read) + static_cast<double>(node.bytes_written);
}

bool Empty(double flops, double bytes) {
  return flops == 0.0 && bytes == 0.0;
}

[[noreturn]] void NoData(const std::string& model, const std::string& what, const graphs::Graph& graph,
                         const DeviceSpec& device, const std::string& hint) {
  throw ConfigError(model + " cost model: " + what + " for device kind '" + device.kind + "'",
                    Location(graph.source()), hint);
}

using CostModelRegistry = Registry<std::shared_ptr<const CostModel>, const YAML::Node&, const std::string&>;

const CostModelRegistry& CostModels() {
  static const CostModelRegistry* registry = [] {
    auto* r = new CostModelRegistry("cost model");
    r->Register(
        "auto",
        [](const YAML::Node& options, const std::string& source) -> std::shared_ptr<const CostModel> {
          YamlMap m = OptionsMap(options, source);
          AutoOptions o;
          o.profiles_dir = m.Get<std::string>("profiles_dir", o.profiles_dir);
          if (m.Has("profile")) o.profiles.push_back(m.Get<std::string>("profile", ""));
          if (m.Has("profiles")) {
            for (const std::string& p : m.Get<std::vector<std::string>>("profiles", {}))
              o.profiles.push_back(p);
          }
          o.measured.add_launch_overhead = m.Get<bool>("add_launch_overhead", false);
          o.measured.roofline = ReadNestedRoofline(m);
          o.multi_tensor_updates = m.Get<bool>("multi_tensor_updates", o.multi_tensor_updates);
          m.Finish();
          return std::make_shared<AutoCostModel>(std::move(o));
        },
        "per node: measured time for the device kind, else the committed profile of the kind "
        "(configs/calibrated/<kind>.yaml), else roofline (the default)");
    r->Register(
        "roofline",
        [](const YAML::Node& options, const std::string& source) -> std::shared_ptr<const CostModel> {
          YamlMap m = OptionsMap(options, source);
          RooflineOptions o = RooflineOptions::FromYaml(m);
          m.Finish();
          return std::make_shared<RooflineCostModel>(std::move(o));
        },
        "launch + max(FLOPs / (peak x efficiency), bytes / (bandwidth x efficiency)), per op class");
    r->Register(
        "measured",
        [](const YAML::Node& options, const std::string& source) -> std::shared_ptr<const CostModel> {
          YamlMap m = OptionsMap(options, source);
          MeasuredOptions o;
          o.fallback = ReadFallback(m);
          o.add_launch_overhead = m.Get<bool>("add_launch_overhead", false);
          o.roofline = ReadNestedRoofline(m);
          m.Finish();
          return std::make_shared<MeasuredCostModel>(std::move(o));
        },
        "the graph's measured time per device kind (else 'any'), else roofline");
    r->Register(
        "calibrated",
        [](const YAML::Node& options, const std::string& source) -> std::shared_ptr<const CostModel> {
          YamlMap m = OptionsMap(options, source);
          CalibratedOptions o;
          o.fallback = ReadFallback(m, "error");
          o.roofline = ReadNestedRoofline(m);
          o.calibrate_links = m.Get<bool>("calibrate_links", o.calibrate_links);
          o.multi_tensor_updates = m.Get<bool>("multi_tensor_updates", o.multi_tensor_updates);
          o.min_link_samples = m.Get<int>("min_link_samples", o.min_link_samples);
          if (o.min_link_samples < 1) m.Fail("min_link_samples", "min_link_samples must be >= 1");
          std::vector<std::string> paths;
          if (m.Has("profile")) paths.push_back(m.Get<std::string>("profile", ""));
          if (m.Has("profiles")) {
            for (const std::string& p : m.Get<std::vector<std::string>>("profiles", {})) paths.push_back(p);
          }
          m.Finish();
          if (paths.empty()) {
            m.Fail("", "the calibrated cost model needs a profile",
                   "set options: {profile: configs/calibrated/NAME.yaml} (written by gosim calibrate)");
          }
          std::vector<DeviceProfile> profiles;
          for (const std::string& p : paths) profiles.push_back(LoadDeviceProfile(p));
          return std::make_shared<CalibratedCostModel>(std::move(profiles), std::move(o));
        },
        "linear kernel-time fits from calibrated device profiles (configs/calibrated/), else roofline");
    return r;
  }();
  return *registry;
}

}  // namespace

// ---------------------------------------------------------------------------
// Registry and shared helpers.

std::shared_ptr<const CostModel> MakeCostModel(const std::string& name, const YAML::Node& options,
                                               const std::string& source) {
  return CostModels().Create(name, options, source, Location(source));
}

std::vector<std::string> CostModelNames() {
  return CostModels().Names();
}

double NodeChannelExtent(const graphs::Graph& graph, const graphs::Node& node) {
  for (const graphs::TensorInfo& out : node.outputs) {
    if (!out.shape.empty()) return graphs::ChannelExtent(graph.op_type_name(node.op), out.shape);
  }
  return 0.0;
}

graphs::ConvKind NodeConvKind(const graphs::Graph& graph, graphs::NodeId id) {
  const graphs::Node& node = graph.node(id);
  const std::string_view type = graph.op_type_name(node.op);
  const graphs::OpClass op_class = graphs::ClassifyOp(type);
  if (op_class != graphs::OpClass::kConv && op_class != graphs::OpClass::kConvBackward) {
    return graphs::ConvKind::kDense;
  }
  if (const graphs::ConvKind named = graphs::TypeConvKind(type); named != graphs::ConvKind::kDense)
    return named;
  if (ContainsIgnoreCase(type, "depthwise")) return graphs::ConvKind::kDepthwise;
  if (ContainsIgnoreCase(type, "transpose")) return graphs::ConvKind::kDense;
  const auto shape_of = [&](const graphs::Edge& edge) -> const std::vector<int64_t>* {
    const graphs::Node& src = graph.node(edge.src);
    if (edge.is_control() || edge.output_index >= static_cast<int32_t>(src.outputs.size())) return nullptr;
    return &src.outputs[static_cast<size_t>(edge.output_index)].shape;
  };
  const std::vector<int64_t>* weight = nullptr;
  for (const graphs::EdgeId e : graph.in_edges(id)) {
    const graphs::Edge& edge = graph.edge(e);
    const std::vector<int64_t>* shape = shape_of(edge);
    if (shape != nullptr && shape->size() >= 3 && graph.node(edge.src).persistent_bytes > 0) {
      weight = shape;
      break;
    }
  }
  if (weight == nullptr) return graphs::ConvKind::kDense;
  int64_t channels = 0;
  for (const graphs::EdgeId e : graph.in_edges(id)) {
    const std::vector<int64_t>* shape = shape_of(graph.edge(e));
    if (shape == nullptr || shape == weight || shape->size() != weight->size()) continue;
    channels = channels == 0 ? (*shape)[1] : std::min(channels, (*shape)[1]);
  }
  return graphs::ConvKindOf((*weight)[1], channels);
}

KernelWork MakeKernelWork(const graphs::Graph& graph, std::span<const graphs::NodeId> nodes) {
  KernelWork work;
  work.nodes = nodes;
  const auto inside = [&](graphs::NodeId v) { return std::binary_search(nodes.begin(), nodes.end(), v); };
  double bytes_read = 0.0;
  double bytes_written = 0.0;
  double best = -1.0;
  const graphs::Node* op_node = nullptr;
  graphs::NodeId op_id = 0;
  for (const graphs::NodeId v : nodes) {
    const graphs::Node& node = graph.node(v);
    work.flops += node.flops;
    bytes_read += static_cast<double>(node.bytes_read);
    bytes_written += static_cast<double>(node.bytes_written);
    if (node.flops > best) {
      best = node.flops;
      work.op = node.op;
      work.dtype = NodeDType(node);
      op_node = &node;
      op_id = v;
    }
    // Each internal input tensor is read from inside the kernel, not memory;
    // in-edges come sorted by (src, output), so repeats are adjacent.
    int64_t last_src = -1;
    int32_t last_output = graphs::Edge::kControl;
    for (const graphs::EdgeId e : graph.in_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      if (edge.is_control() || !inside(edge.src)) continue;
      if (edge.src == last_src && edge.output_index == last_output) continue;
      last_src = edge.src;
      last_output = edge.output_index;
      bytes_read -= static_cast<double>(edge.bytes);
    }
    // An output consumed only inside the group is never written to memory.
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      bool consumed = false;
      bool escapes = false;
      for (const graphs::EdgeId e : graph.out_edges(v)) {
        const graphs::Edge& edge = graph.edge(e);
        if (edge.output_index != static_cast<int32_t>(k)) continue;
        consumed = true;
        escapes = escapes || !inside(edge.dst);
      }
      if (consumed && !escapes) bytes_written -= static_cast<double>(node.outputs[k].bytes);
    }
  }
  // Once, for the op node chosen (not for every node that led on the way).
  if (op_node != nullptr) {
    work.channel_extent = NodeChannelExtent(graph, *op_node);
    work.op_node = op_id;
  }
  work.bytes_read = std::max(0.0, bytes_read);
  work.bytes_written = std::max(0.0, bytes_written);
  return work;
}

// ---------------------------------------------------------------------------
// Roofline.

Efficiency DefaultEfficiency(OpClass op_class) {
  switch (op_class) {
    case OpClass::kMatMul:
      return {0.70, 0.70};
    case OpClass::kConv:
      return {0.60, 0.60};
    case OpClass::kConvBackward:
      return {0.50, 0.60};
    case OpClass::kElementwise:
      return {0.50, 0.75};
    case OpClass::kReduction:
      return {0.50, 0.60};
    case OpClass::kPooling:
      return {0.50, 0.60};
    case OpClass::kNormalization:
      return {0.50, 0.60};
    case OpClass::kSoftmax:
      return {0.50, 0.60};
    case OpClass::kEmbedding:
      return {0.50, 0.40};
    case OpClass::kOptimizer:
      return {0.50, 0.70};
    case OpClass::kMemory:
      return {0.50, 0.75};
    case OpClass::kCommunication:
      return {0.50, 0.70};
    case OpClass::kOther:
      return {0.50, 0.50};
  }
  return {0.50, 0.50};
}

RooflineOptions::RooflineOptions() {
  for (const OpClass c : graphs::AllOpClasses()) by_class[static_cast<size_t>(c)] = DefaultEfficiency(c);
}

RooflineOptions RooflineOptions::FromYaml(YamlMap& m) {
  RooflineOptions o;
  ReadClassEfficiencies(m, "compute_efficiency", &Efficiency::compute, &o.by_class);
  ReadClassEfficiencies(m, "memory_efficiency", &Efficiency::memory, &o.by_class);
  const YAML::Node types = m.Node("op_types");
  if (types && !types.IsNull()) {
    if (!types.IsMap()) m.Fail("op_types", "expected a mapping {op_type: {compute: e, memory: e}, ...}");
    for (auto it = types.begin(); it != types.end(); ++it) {
      const std::string name = it->first.Scalar();
      YamlMap entry(it->second, m.file(), m.ChildPath("op_types") + "." + name);
      entry.Allow({"compute", "memory"});
      entry.Finish();
      Efficiency e = o.by_class[static_cast<size_t>(graphs::ClassifyOp(name))];
      if (entry.Has("compute"))
        e.compute = ReadEfficiency(entry.Node("compute"), m.file(), entry.ChildPath("compute"));
      if (entry.Has("memory"))
        e.memory = ReadEfficiency(entry.Node("memory"), m.file(), entry.ChildPath("memory"));
      o.by_op_type[name] = e;
    }
  }
  o.charge_empty_ops = m.Get<bool>("charge_empty_ops", false);
  return o;
}

RooflineCostModel::RooflineCostModel(RooflineOptions options) : options_(std::move(options)) {}

double RooflineCostModel::Time(std::string_view op_type, double flops, double bytes, graphs::DType dtype,
                               const DeviceSpec& device) const {
  if (Empty(flops, bytes) && !options_.charge_empty_ops) return 0.0;
  const auto it = options_.by_op_type.find(op_type);
  const Efficiency& e = it != options_.by_op_type.end()
                            ? it->second
                            : options_.by_class[static_cast<size_t>(graphs::ClassifyOp(op_type))];
  const double compute = flops > 0.0 ? flops / (device.PeakFlops(dtype) * e.compute) : 0.0;
  const double memory = bytes > 0.0 ? bytes / (device.memory_bandwidth * e.memory) : 0.0;
  return device.launch_overhead + std::max(compute, memory);
}

double RooflineCostModel::NodeTime(const graphs::Graph& graph, graphs::NodeId node,
                                   const DeviceSpec& device) const {
  const graphs::Node& n = graph.node(node);
  return Time(graph.op_type_name(n.op), n.flops, NodeBytes(n), NodeDType(n), device);
}

double RooflineCostModel::KernelTime(const graphs::Graph& graph, const KernelWork& work,
                                     const DeviceSpec& device) const {
  return Time(graph.op_type_name(work.op), work.flops, work.bytes_read + work.bytes_written, work.dtype,
              device);
}

// ---------------------------------------------------------------------------
// Measured.

MeasuredCostModel::MeasuredCostModel(MeasuredOptions options)
    : options_(std::move(options)), roofline_(options_.roofline) {}

const graphs::MeasuredTime* MeasuredTimeFor(const graphs::Node& node, const DeviceSpec& device) {
  const std::string_view fallback = device.role == DeviceRole::kCpu ? "cpu" : "any";
  const graphs::MeasuredTime* found = nullptr;
  for (const graphs::MeasuredTime& m : node.measured) {
    if (m.device_kind == device.kind) return &m;
    if (m.device_kind == fallback) found = &m;
  }
  return found;
}

std::optional<double> MeasuredCostModel::Measured(const graphs::Graph& graph, graphs::NodeId node,
                                                  const DeviceSpec& device) const {
  const graphs::MeasuredTime* m = MeasuredTimeFor(graph.node(node), device);
  if (m == nullptr) return std::nullopt;
  return m->seconds + (options_.add_launch_overhead ? device.launch_overhead : 0.0);
}

int64_t MeasuredCostModel::MeasuredNodes(const graphs::Graph& graph, const DeviceSpec& device) const {
  int64_t count = 0;
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v)
    count += MeasuredTimeFor(graph.node(v), device) != nullptr;
  return count;
}

std::string MeasuredCostModel::Describe(const graphs::Graph& graph, const Cluster& cluster) const {
  std::vector<std::string> parts;
  std::vector<std::string> kinds;
  const char* fallback = options_.fallback == Fallback::kError ? "error" : "roofline";
  for (const DeviceSpec& d : cluster.devices()) {
    if (std::find(kinds.begin(), kinds.end(), d.kind) != kinds.end()) continue;
    kinds.push_back(d.kind);
    const int64_t measured = MeasuredNodes(graph, d);
    if (measured == 0) {
      parts.push_back(d.kind + ": " + fallback);
    } else if (measured == graph.num_nodes()) {
      parts.push_back(d.kind + ": measured for all " + std::to_string(measured) + " nodes");
    } else {
      parts.push_back(d.kind + ": measured for " + std::to_string(measured) + " of " +
                      std::to_string(graph.num_nodes()) + " nodes, else " + fallback);
    }
  }
  return "measured (" + Join(parts, "; ") + ")";
}

double MeasuredCostModel::NodeTime(const graphs::Graph& graph, graphs::NodeId node,
                                   const DeviceSpec& device) const {
  if (const std::optional<double> t = Measured(graph, node, device)) return *t;
  if (options_.fallback == Fallback::kError) {
    NoData("measured", "node '" + graph.node(node).name + "' has no measured time", graph, device,
           "profile the graph on this kind of device, or set fallback: roofline");
  }
  return roofline_.NodeTime(graph, node, device);
}

double MeasuredCostModel::KernelTime(const graphs::Graph& graph, const KernelWork& work,
                                     const DeviceSpec& device) const {
  const double group = roofline_.KernelTime(graph, work, device);
  double measured = 0.0;
  double separate = 0.0;
  bool complete = !work.nodes.empty();
  for (const graphs::NodeId v : work.nodes) {
    const std::optional<double> t = Measured(graph, v, device);
    if (!t) {
      complete = false;
      break;
    }
    measured += *t;
    separate += roofline_.NodeTime(graph, v, device);
  }
  if (complete) return separate > 0.0 ? measured * (group / separate) : measured;
  if (options_.fallback == Fallback::kError) {
    NoData("measured",
           "a fused group " +
               std::string(work.nodes.empty() ? "given without its nodes" : "with unmeasured nodes") +
               " has no measured time",
           graph, device, "set fallback: roofline");
  }
  return group;
}

// ---------------------------------------------------------------------------
// Calibrated.

CalibratedCostModel::CalibratedCostModel(std::vector<DeviceProfile> profiles, CalibratedOptions options)
    : profiles_(std::move(profiles)), options_(std::move(options)), roofline_(options_.roofline) {
  for (size_t i = 0; i < profiles_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (profiles_[i].device_kind == profiles_[j].device_kind) {
        throw ConfigError("two calibrated profiles for device kind '" + profiles_[i].device_kind + "'", {},
                          "give one profile per device kind");
      }
    }
  }
  // The multi-tensor fits by the per-parameter type they price, once.
  constexpr std::string_view kForeach = "aten::_foreach_";
  for (const DeviceProfile& p : profiles_) {
    std::map<std::string, KernelFit, std::less<>>& fits = foreach_fits_.emplace_back();
    for (const auto& [type, fit] : p.op_types) {
      if (type.starts_with(kForeach)) fits.emplace("aten::" + type.substr(kForeach.size()), fit);
    }
    // An out-of-place op no trace ran as a foreach call (weight decay's
    // `_foreach_add`) takes its in-place sibling's fit: the same reads and
    // writes per tensor. emplace keeps a type's own fit.
    std::vector<std::pair<std::string, KernelFit>> siblings;
    for (const auto& [type, fit] : fits) {
      if (type.ends_with('_')) siblings.emplace_back(type.substr(0, type.size() - 1), fit);
    }
    for (auto& [type, fit] : siblings) fits.emplace(std::move(type), fit);
    std::map<std::string, HostOpFit, std::less<>>& host = foreach_host_.emplace_back();
    if (p.host) {
      for (const auto& [type, fit] : p.host->op_types) {
        if (type.starts_with(kForeach)) host.emplace("aten::" + type.substr(kForeach.size()), fit);
      }
      std::vector<std::pair<std::string, HostOpFit>> host_siblings;
      for (const auto& [type, fit] : host) {
        if (type.ends_with('_')) host_siblings.emplace_back(type.substr(0, type.size() - 1), fit);
      }
      for (auto& [type, fit] : host_siblings) host.emplace(std::move(type), fit);
    }
  }
}

void CalibratedCostModel::NoKindProfile(const graphs::Graph& graph, const DeviceSpec& device) const {
  std::vector<std::string> kinds;
  for (const DeviceProfile& p : profiles_) kinds.push_back(p.device_kind);
  NoData(
      "calibrated", "no profile (the profiles given are for " + Join(kinds, ", ") + ")", graph, device,
      "give a profile fitted on " + device.kind +
          " (gosim calibrate), use --cost-model auto, or set fallback: roofline to price it with roofline");
}

std::string CalibratedCostModel::Describe(const graphs::Graph& graph, const Cluster& cluster) const {
  std::vector<std::string> parts;
  for (const DeviceSpec& d : cluster.devices()) {
    std::string part = d.kind + (ProfileFor(d.kind) != nullptr ? " profile" : " roofline");
    if (const int64_t shares = ProfileFor(d.kind) != nullptr ? MultiTensorNodes(graph, d) : 0; shares > 0)
      part += ", " + std::to_string(shares) + " update nodes as shares of multi-tensor calls";
    if (const int64_t raised = PeakRaised(graph, d); raised > 0)
      part +=
          ", " + std::to_string(raised) + " nodes raised to the device's peak (their fits would be faster)";
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  return "calibrated (" + Join(parts, "; ") + ")";
}

const DeviceProfile* CalibratedCostModel::ProfileFor(std::string_view device_kind) const {
  for (const DeviceProfile& p : profiles_) {
    if (p.device_kind == device_kind) return &p;
  }
  return nullptr;
}

const KernelFit* CalibratedCostModel::FitOf(const DeviceProfile& profile, const graphs::Graph& graph,
                                            std::string_view op_type, graphs::OpClass op_class,
                                            graphs::DType dtype, graphs::NodeId op_node) const {
  // Only a convolution has a kind: the other nodes skip its in-edge scan.
  const graphs::ConvKind conv_kind =
      op_node >= 0 && (op_class == graphs::OpClass::kConv || op_class == graphs::OpClass::kConvBackward)
          ? NodeConvKind(graph, op_node)
          : graphs::ConvKind::kDense;
  return profile.FitOfPrecision(op_type, op_class, dtype, conv_kind);
}

double CalibratedCostModel::Time(const graphs::Graph& graph, std::string_view op_type, double flops,
                                 double bytes, double channel_extent, graphs::DType dtype,
                                 graphs::NodeId op_node, bool alone, const DeviceSpec& device,
                                 bool* raised) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (profile == nullptr) return roofline_.Time(op_type, flops, bytes, dtype, device);
  if (Empty(flops, bytes) && !options_.roofline.charge_empty_ops) return 0.0;
  // No fit prices a kernel faster than the device's peak (a class fitted
  // without a FLOP term, on one small matmul, priced a 1024^3 GEMM 2.6x
  // faster than a V100 can run it): the roofline at efficiency 1, with the
  // fastest peak of the dtype (DeviceSpec::CeilingFlops), plus the launch.
  const auto floored = [&](double seconds, double launch) {
    const double compute = flops > 0.0 ? flops / device.CeilingFlops(dtype) : 0.0;
    const double memory = bytes > 0.0 ? bytes / device.memory_bandwidth : 0.0;
    const double floor = launch + std::max(compute, memory);
    if (raised != nullptr) *raised = floor > seconds;
    return std::max(seconds, floor);
  };
  if (alone) {
    if (const MultiTensorShare share = MultiTensorOf(graph, op_node, device); share.fit != nullptr) {
      const KernelFit& f = *share.fit;
      return floored(std::max(0.0, (profile->launch_overhead + f.intercept) / share.parameters +
                                       f.per_flop * flops + f.per_byte * bytes),
                     profile->launch_overhead / share.parameters);
    }
  }
  const graphs::OpClass op_class = graphs::ClassifyOp(op_type);
  const KernelFit* fit = FitOf(*profile, graph, op_type, op_class, dtype, op_node);
  if (fit == nullptr) {
    // fp32 fits would price a 16-bit matmul several times too slow.
    if (options_.fallback == Fallback::kError) {
      NoData(
          "calibrated",
          "the profile has no " + std::string(PrecisionTag(dtype)) + " fit for " +
              std::string(graphs::OpClassName(op_class)) + " ops (op type '" + std::string(op_type) + "')",
          graph, device,
          "fit one on traces recorded in that precision (gosim calibrate --also T.json.gz; "
          "docs/CALIBRATION.md), use --cost-model auto (roofline for those ops) or set fallback: roofline");
    }
    return roofline_.Time(op_type, flops, bytes, dtype, device);
  }
  return floored(profile->launch_overhead + fit->Time(flops, bytes, channel_extent),
                 profile->launch_overhead);
}

int64_t CalibratedCostModel::PrecisionMisses(const graphs::Graph& graph, const DeviceSpec& device,
                                             std::string* example, bool tf32) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (profile == nullptr) return 0;
  int64_t misses = 0;
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    const graphs::Node& n = graph.node(v);
    const std::string_view type = graph.op_type_name(n.op);
    if ((NodeDType(n) == graphs::DType::kTFloat32) != tf32) continue;
    if (profile->HasPrecision(type, graphs::ClassifyOp(type), NodeDType(n), NodeConvKind(graph, v))) continue;
    if (misses++ == 0 && example != nullptr) *example = n.name;
  }
  return misses;
}

double CalibratedCostModel::NodeTime(const graphs::Graph& graph, graphs::NodeId node,
                                     const DeviceSpec& device) const {
  if (options_.fallback == Fallback::kError && ProfileFor(device.kind) == nullptr) {
    NoKindProfile(graph, device);
  }
  const graphs::Node& n = graph.node(node);
  return Time(graph, graph.op_type_name(n.op), n.flops, NodeBytes(n), NodeChannelExtent(graph, n),
              NodeDType(n), node, true, device);
}

double CalibratedCostModel::KernelTime(const graphs::Graph& graph, const KernelWork& work,
                                       const DeviceSpec& device) const {
  if (options_.fallback == Fallback::kError && ProfileFor(device.kind) == nullptr) {
    NoKindProfile(graph, device);
  }
  return Time(graph, graph.op_type_name(work.op), work.flops, work.bytes_read + work.bytes_written,
              work.channel_extent, work.dtype, work.op_node, work.nodes.size() <= 1, device);
}

CalibratedCostModel::MultiTensorShare CalibratedCostModel::MultiTensorOf(const graphs::Graph& graph,
                                                                         graphs::NodeId node,
                                                                         const DeviceSpec& device) const {
  if (!options_.multi_tensor_updates || node < 0) return {};
  const graphs::Node& n = graph.node(node);
  if (n.phase != graphs::Phase::kUpdate || NodeDType(n) != graphs::DType::kFloat32) return {};
  const int32_t parameters = graph.update_parameters(n.op);
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (parameters < 1 || profile == nullptr) return {};
  const auto& fits = foreach_fits_[static_cast<size_t>(profile - profiles_.data())];
  const auto it = fits.find(graph.op_type_name(n.op));
  if (it == fits.end()) return {};
  return {&it->second, parameters};
}

double CalibratedCostModel::LaunchOf(const graphs::Graph& graph, graphs::NodeId node,
                                     const DeviceSpec& device) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (profile == nullptr) return device.launch_overhead;
  const MultiTensorShare share = MultiTensorOf(graph, node, device);
  return share.fit != nullptr ? profile->launch_overhead / share.parameters : profile->launch_overhead;
}

int64_t CalibratedCostModel::PeakRaised(const graphs::Graph& graph, const DeviceSpec& device) const {
  if (ProfileFor(device.kind) == nullptr) return 0;
  int64_t count = 0;
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
    const graphs::Node& n = graph.node(v);
    bool raised = false;
    (void)Time(graph, graph.op_type_name(n.op), n.flops, NodeBytes(n), NodeChannelExtent(graph, n),
               NodeDType(n), v, true, device, &raised);
    count += raised;
  }
  return count;
}

int64_t CalibratedCostModel::MultiTensorNodes(const graphs::Graph& graph, const DeviceSpec& device) const {
  int64_t count = 0;
  for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v)
    count += MultiTensorOf(graph, v, device).fit != nullptr;
  return count;
}

bool CalibratedCostModel::HostModelled(const DeviceSpec& device) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  return profile != nullptr && profile->host.has_value();
}

HostWork CalibratedCostModel::HostOf(const graphs::Graph& graph, graphs::NodeId node,
                                     const DeviceSpec& device) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (profile == nullptr || !profile->host) return {};
  const graphs::Node& n = graph.node(node);
  const std::string_view type = graph.op_type_name(n.op);
  HostWork work;
  work.sync = graphs::SynchronizesHost(type);
  const bool has_work = !Empty(n.flops, NodeBytes(n));
  // A source (an input, a parameter, a constant): not an op anyone calls.
  if (!has_work && graph.in_degree(node) == 0) return work;
  if (options_.multi_tensor_updates && n.phase == graphs::Phase::kUpdate) {
    const int32_t parameters = graph.update_parameters(n.op);
    const auto& shares = foreach_host_[static_cast<size_t>(profile - profiles_.data())];
    if (const auto it = shares.find(type); parameters > 0 && it != shares.end()) {
      work.seconds = it->second.seconds / parameters;
      return work;
    }
  }
  work.seconds = profile->host->For(type, graphs::ClassifyOp(type), has_work).seconds;
  return work;
}

double CalibratedCostModel::LaunchDelta(const graphs::Graph& graph, std::string_view op_type, double flops,
                                        double bytes, graphs::DType dtype, graphs::NodeId op_node, bool alone,
                                        const DeviceSpec& device) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (profile == nullptr || !profile->host) return 0.0;
  if (Empty(flops, bytes) && !options_.roofline.charge_empty_ops) return 0.0;  // Time is 0: no kernel
  const graphs::OpClass op_class = graphs::ClassifyOp(op_type);
  const double kernels = std::max(1.0, profile->host->For(op_type, op_class, true).kernels);
  if (alone) {
    if (const MultiTensorShare share = MultiTensorOf(graph, op_node, device); share.fit != nullptr)
      return (profile->kernel_gap - profile->launch_overhead) / share.parameters;
  }
  // Without a fit of its precision, Time priced it by roofline, with the
  // device's launch overhead.
  const double included = FitOf(*profile, graph, op_type, op_class, dtype, op_node) != nullptr
                              ? profile->launch_overhead
                              : device.launch_overhead;
  return kernels * profile->kernel_gap - included;
}

double CalibratedCostModel::HostedLaunchDelta(const graphs::Graph& graph, graphs::NodeId node,
                                              const DeviceSpec& device) const {
  const graphs::Node& n = graph.node(node);
  return LaunchDelta(graph, graph.op_type_name(n.op), n.flops, NodeBytes(n), NodeDType(n), node, true,
                     device);
}

double CalibratedCostModel::HostedKernelLaunchDelta(const graphs::Graph& graph, const KernelWork& work,
                                                    const DeviceSpec& device) const {
  return LaunchDelta(graph, graph.op_type_name(work.op), work.flops, work.bytes_read + work.bytes_written,
                     work.dtype, work.op_node, work.nodes.size() <= 1, device);
}

HostCosts CalibratedCostModel::HostCostsOf(const DeviceSpec& device) const {
  const DeviceProfile* profile = ProfileFor(device.kind);
  if (profile == nullptr || !profile->host) return {};
  const HostFit& h = *profile->host;
  HostCosts costs;
  costs.copy = h.For("aten::to", graphs::OpClass::kMemory, true).seconds;
  costs.per_parameter = h.per_parameter;
  costs.launch_call = profile->cpu ? profile->cpu->per_call * h.profiler_factor : h.launch.seconds;
  costs.graph_op =
      profile->cpu ? (profile->cpu->per_call + profile->cpu->per_op) * h.profiler_factor : h.launch.seconds;
  costs.graph_view = profile->cpu ? profile->cpu->per_op * h.profiler_factor : h.view.seconds;
  return costs;
}

std::string LinkFitRejection(const LinkFit& fit, double datasheet_bandwidth,
                             const CalibratedOptions& options) {
  char text[256];
  if (fit.samples < options.min_link_samples) {
    if (fit.samples == 0)
      return "it records no sample count (fewer than " + std::to_string(options.min_link_samples) +
             " copies cannot be ruled out)";
    std::snprintf(text, sizeof(text), "it rests on %lld copies, fewer than %d",
                  static_cast<long long>(fit.samples), options.min_link_samples);
    return text;
  }
  if (datasheet_bandwidth > 0.0 && (fit.bandwidth < options.link_band_low * datasheet_bandwidth ||
                                    fit.bandwidth > options.link_band_high * datasheet_bandwidth)) {
    std::snprintf(text, sizeof(text), "its %.3g GB/s lies outside [%.3g, %.3g] x the link's %.3g GB/s",
                  fit.bandwidth / 1e9, options.link_band_low, options.link_band_high,
                  datasheet_bandwidth / 1e9);
    return text;
  }
  return "";
}

namespace {

// The profile key of a link's copies: device to device, device to host,
// host to device; and the device whose profile holds it.
std::pair<const char*, int32_t> LinkKey(const LinkSpec& link) {
  const bool src_device = link.src >= 0, dst_device = link.dst >= 0;
  const char* key = src_device && dst_device ? "memcpy_ptop" : src_device ? "memcpy_dtoh" : "memcpy_htod";
  return {key, src_device ? link.src : link.dst};
}

}  // namespace

LinkCost CalibratedCostModel::LinkCostOf(const Cluster& cluster, const LinkSpec& link) const {
  const LinkCost own{link.latency, link.bandwidth};
  if (!options_.calibrate_links) return own;
  const auto [key, end] = LinkKey(link);
  if (end < 0) return own;  // host to host: not a device link
  const DeviceProfile* profile = ProfileFor(cluster.device(end).kind);
  if (profile == nullptr) return own;
  const auto it = profile->links.find(key);
  if (it == profile->links.end()) return own;
  if (!LinkFitRejection(it->second, link.bandwidth, options_).empty()) return own;
  return {it->second.latency, it->second.bandwidth};
}

std::vector<std::string> CalibratedCostModel::Warnings(const graphs::Graph& graph,
                                                       const Cluster& cluster) const {
  (void)graph;
  std::vector<std::string> out;
  if (!options_.calibrate_links) return out;
  std::set<std::string> seen;
  for (const LinkSpec& link : cluster.links()) {
    const auto [key, end] = LinkKey(link);
    if (end < 0) continue;
    const DeviceProfile* profile = ProfileFor(cluster.device(end).kind);
    if (profile == nullptr) continue;
    const auto it = profile->links.find(key);
    if (it == profile->links.end()) continue;
    const std::string why = LinkFitRejection(it->second, link.bandwidth, options_);
    if (why.empty()) continue;
    const std::string line = "cost model: the " + profile->device_kind + " profile's " + key +
                             " fit is not used on " +
                             (link.type.empty() ? std::string("its links") : link.type + " links") + ": " +
                             why + "; they keep the cluster's (datasheet) latency and bandwidth";
    if (seen.insert(line).second) out.push_back(line);
  }
  return out;
}

}  // namespace gosim::sim
