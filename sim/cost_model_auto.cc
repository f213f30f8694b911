// The `auto` cost model (the default): measured times where the graph has
// them, else the committed calibrated profile of the device kind, else
// roofline; and the per-kind profile lookup it uses.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "core/data_path.h"
#include "core/error.h"
#include "core/strings.h"
#include "sim/cost_models.h"

namespace gosim::sim {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

CalibratedOptions CalibratedFor(const AutoOptions& o) {
  CalibratedOptions c;
  c.fallback = Fallback::kRoofline;  // kinds without a profile: roofline, by design
  c.roofline = o.measured.roofline;
  c.multi_tensor_updates = o.multi_tensor_updates;
  return c;
}

std::vector<std::pair<std::string, DeviceProfile>> LoadProfiles(const AutoOptions& o) {
  if (o.profiles.empty()) return KindProfiles(o.profiles_dir);
  std::vector<std::pair<std::string, DeviceProfile>> out;
  for (const std::string& p : o.profiles) out.emplace_back(p, LoadDeviceProfile(p));
  return out;
}

std::vector<DeviceProfile> ProfilesOnly(const std::vector<std::pair<std::string, DeviceProfile>>& loaded) {
  std::vector<DeviceProfile> out;
  for (const auto& [path, profile] : loaded) out.push_back(profile);
  return out;
}

std::vector<std::string> PathsOnly(const std::vector<std::pair<std::string, DeviceProfile>>& loaded) {
  std::vector<std::string> out;
  for (const auto& [path, profile] : loaded) out.push_back(path);
  return out;
}

// The distinct device kinds of the cluster, in device order.
std::vector<std::string> Kinds(const Cluster& cluster) {
  std::vector<std::string> kinds;
  for (const DeviceSpec& d : cluster.devices()) {
    if (std::find(kinds.begin(), kinds.end(), d.kind) == kinds.end()) kinds.push_back(d.kind);
  }
  return kinds;
}

// The first device of a kind from Kinds(cluster).
const DeviceSpec& FirstOfKind(const Cluster& cluster, const std::string& kind) {
  const auto& devices = cluster.devices();
  return *std::find_if(devices.begin(), devices.end(), [&](const DeviceSpec& d) { return d.kind == kind; });
}

}  // namespace

std::vector<std::pair<std::string, DeviceProfile>> KindProfiles(const std::string& dir) {
  std::vector<std::pair<std::string, DeviceProfile>> out;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(ResolveDataPath(dir), ec)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    // Only files named after a device kind; the others (per-trace fits such
    // as v100_resnet50.yaml, this machine's local.yaml) are used by name.
    const std::string stem = file.stem().string();
    DeviceProfile profile = LoadDeviceProfile(file.string());
    if (Lower(profile.device_kind) != stem) continue;
    out.emplace_back(dir + "/" + file.filename().string(), std::move(profile));
  }
  return out;
}

AutoCostModel::AutoCostModel(AutoOptions options) : AutoCostModel(options, LoadProfiles(options)) {}

std::shared_ptr<const AutoCostModel> AutoCostModel::WithProfiles(std::vector<DeviceProfile> profiles,
                                                                 const std::string& label,
                                                                 AutoOptions options) {
  std::vector<std::pair<std::string, DeviceProfile>> loaded;
  for (DeviceProfile& p : profiles) loaded.emplace_back(label, std::move(p));
  return std::shared_ptr<const AutoCostModel>(new AutoCostModel(options, std::move(loaded)));
}

AutoCostModel::AutoCostModel(const AutoOptions& options,
                             std::vector<std::pair<std::string, DeviceProfile>> loaded)
    : measured_(options.measured),
      calibrated_(ProfilesOnly(loaded), CalibratedFor(options)),
      profile_paths_(PathsOnly(loaded)) {}

bool AutoCostModel::HasMeasured(const graphs::Graph& graph, graphs::NodeId node,
                                const DeviceSpec& device) const {
  return MeasuredTimeFor(graph.node(node), device) != nullptr;
}

double AutoCostModel::Floored(double seconds, double flops, double bytes, graphs::DType dtype, double launch,
                              const DeviceSpec& device) const {
  const DeviceProfile* profile = calibrated_.ProfileFor(device.kind);
  if (profile == nullptr || (flops == 0.0 && bytes == 0.0)) return seconds;
  // No kernel beats the device's peak: a fit extrapolated past its samples
  // (a class fitted on small products pricing a large one by bytes alone)
  // is raised to the roofline at efficiency 1. The peak is the fastest any
  // kernel on the dtype reaches (CeilingFlops: TF32 for fp32 where the
  // device has it), or the floor would raise the fp32 convolutions that
  // cuDNN runs on tensor cores above their measured times.
  const double compute = flops > 0.0 ? flops / device.CeilingFlops(dtype) : 0.0;
  const double memory = bytes > 0.0 ? bytes / device.memory_bandwidth : 0.0;
  return std::max(seconds, launch + std::max(compute, memory));
}

double AutoCostModel::NodeTime(const graphs::Graph& graph, graphs::NodeId node,
                               const DeviceSpec& device) const {
  if (HasMeasured(graph, node, device)) return measured_.NodeTime(graph, node, device);
  const graphs::Node& n = graph.node(node);
  return Floored(calibrated_.NodeTime(graph, node, device), n.flops,
                 static_cast<double>(n.bytes_read) + static_cast<double>(n.bytes_written),
                 n.outputs.empty() ? graphs::DType::kFloat32 : n.outputs.front().dtype,
                 calibrated_.LaunchOf(graph, node, device), device);
}

double AutoCostModel::KernelTime(const graphs::Graph& graph, const KernelWork& work,
                                 const DeviceSpec& device) const {
  bool measured = !work.nodes.empty();
  for (const graphs::NodeId v : work.nodes) measured = measured && HasMeasured(graph, v, device);
  if (measured) return measured_.KernelTime(graph, work, device);
  // A fused group is one kernel with a whole launch; one node may share a
  // multi-tensor call's (CalibratedOptions::multi_tensor_updates).
  const double launch = calibrated_.LaunchOf(graph, work.nodes.size() <= 1 ? work.op_node : -1, device);
  return Floored(calibrated_.KernelTime(graph, work, device), work.flops,
                 work.bytes_read + work.bytes_written, work.dtype, launch, device);
}

double AutoCostModel::HostedLaunchDelta(const graphs::Graph& graph, graphs::NodeId node,
                                        const DeviceSpec& device) const {
  return HasMeasured(graph, node, device) ? 0.0 : calibrated_.HostedLaunchDelta(graph, node, device);
}

double AutoCostModel::HostedKernelLaunchDelta(const graphs::Graph& graph, const KernelWork& work,
                                              const DeviceSpec& device) const {
  bool measured = !work.nodes.empty();
  for (const graphs::NodeId v : work.nodes) measured = measured && HasMeasured(graph, v, device);
  return measured ? 0.0 : calibrated_.HostedKernelLaunchDelta(graph, work, device);
}

LinkCost AutoCostModel::LinkCostOf(const Cluster& cluster, const LinkSpec& link) const {
  return calibrated_.LinkCostOf(cluster, link);
}

std::string AutoCostModel::Describe(const graphs::Graph& graph, const Cluster& cluster) const {
  std::vector<std::string> parts;
  for (const std::string& kind : Kinds(cluster)) {
    // Only the nodes whose measured time this kind takes (by its role).
    const int64_t measured = measured_.MeasuredNodes(graph, FirstOfKind(cluster, kind));
    std::string part = kind + ": ";
    if (measured > 0)
      part += "measured for " + std::to_string(measured) + " of " + std::to_string(graph.num_nodes()) +
              " nodes, else ";
    const DeviceProfile* profile = calibrated_.ProfileFor(kind);
    if (profile != nullptr) {
      size_t i = 0;
      while (calibrated_.profiles()[i].device_kind != kind) ++i;
      part += "calibrated (" + profile_paths_[i] + ")";
      const int64_t misses = calibrated_.PrecisionMisses(graph, FirstOfKind(cluster, kind));
      if (misses > 0) part += ", roofline for " + std::to_string(misses) + " 16-bit nodes it has no fit for";
      const int64_t tf32 = calibrated_.PrecisionMisses(graph, FirstOfKind(cluster, kind), nullptr, true);
      if (tf32 > 0)
        part += ", roofline at the TF32 peak for " + std::to_string(tf32) + " tf32 nodes it has no fit for";
      const int64_t shares = calibrated_.MultiTensorNodes(graph, FirstOfKind(cluster, kind));
      if (shares > 0) part += ", " + std::to_string(shares) + " update nodes as shares of multi-tensor calls";
    } else {
      part += "roofline";
    }
    parts.push_back(part);
  }
  return "auto (" + Join(parts, "; ") + ")";
}

std::vector<std::string> AutoCostModel::Warnings(const graphs::Graph& graph, const Cluster& cluster) const {
  std::vector<std::string> out = calibrated_.Warnings(graph, cluster);
  for (const std::string& kind : Kinds(cluster)) {
    const DeviceSpec& device = FirstOfKind(cluster, kind);
    // Nodes that would cost nothing or nearly nothing for want of data: no
    // FLOPs and no measured time for this kind, while they have measured
    // times for another kind or are of a class that computes.
    int64_t missing = 0;
    std::set<std::string> other_kinds;
    std::string example;
    for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v) {
      const graphs::Node& n = graph.node(v);
      if (n.flops > 0.0 || HasMeasured(graph, v, device)) continue;
      const graphs::OpClass c = graphs::ClassifyOp(graph.op_type_name(n.op));
      const bool compute =
          c == graphs::OpClass::kMatMul || c == graphs::OpClass::kConv || c == graphs::OpClass::kConvBackward;
      if (n.measured.empty() && !compute) continue;
      for (const graphs::MeasuredTime& m : n.measured) other_kinds.insert(m.device_kind);
      if (missing++ == 0) example = n.name;
    }
    std::string example16;
    const int64_t misses16 = calibrated_.PrecisionMisses(graph, FirstOfKind(cluster, kind), &example16);
    if (misses16 > 0) {
      out.push_back("cost model auto: " + std::to_string(misses16) + " of " +
                    std::to_string(graph.num_nodes()) + " nodes of graph '" + graph.name() +
                    "' run in 16 bits, and the " + kind +
                    " profile has no fit of their precision for their op class (e.g. '" + example16 +
                    "'); roofline prices them (docs/CALIBRATION.md, \"Fitting\")");
    }
    if (missing == 0) continue;
    std::string line = "cost model auto: " + std::to_string(missing) + " of " +
                       std::to_string(graph.num_nodes()) + " nodes of graph '" + graph.name() +
                       "' have neither FLOPs nor a measured time for device kind '" + kind + "' (e.g. '" +
                       example + "')";
    if (!other_kinds.empty()) {
      line += "; measured times exist for " +
              Join(std::vector<std::string>(other_kinds.begin(), other_kinds.end()), ", ") +
              ": simulate on that kind";
      // "any" is an accelerator's time, which a CPU device does not take.
      if (device.role == DeviceRole::kCpu && other_kinds.count("any") > 0)
        line += " (a CPU device takes times measured for \"" + kind + "\" or \"cpu\", not \"any\")";
    } else {
      line += "; they cost only their bytes (or nothing)";
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace gosim::sim
