// The built-in cost models behind sim/cost_model.h, for code that builds one
// directly (tests, calibration) instead of by name with MakeCostModel.
// Options and defaults are documented in docs/SIMULATOR.md ("Cost models").
#ifndef GOSIM_SIM_COST_MODELS_H_
#define GOSIM_SIM_COST_MODELS_H_

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/yaml.h"
#include "graphs/op_class.h"
#include "sim/cost_model.h"
#include "sim/device_profile.h"

namespace gosim::sim {

// Fractions of the peak (0 < e <= 1) that an op reaches.
struct Efficiency {
  double compute = 1.0;  // of DeviceSpec::PeakFlops(dtype)
  double memory = 1.0;   // of DeviceSpec::memory_bandwidth
};

struct RooflineOptions {
  // Per op class (graphs/op_class.h); the defaults are DefaultEfficiency().
  std::array<Efficiency, graphs::kNumOpClasses> by_class;
  // Per op type name, overriding its class (e.g. "aten::mm").
  std::map<std::string, Efficiency, std::less<>> by_op_type;
  // A node with no FLOPs and no bytes (a view, a source node, a NoOp) takes
  // 0 s when false; the launch overhead when true.
  bool charge_empty_ops = false;

  RooflineOptions();
  // Reads compute_efficiency, memory_efficiency, op_types and
  // charge_empty_ops from `m` (other keys are left to the caller).
  static RooflineOptions FromYaml(YamlMap& m);
};

// The documented default efficiencies of an op class.
Efficiency DefaultEfficiency(graphs::OpClass op_class);

// launch + max(flops / (peak(dtype) * compute), bytes / (bandwidth * memory)).
class RooflineCostModel : public CostModel {
 public:
  explicit RooflineCostModel(RooflineOptions options = {});
  std::string name() const override { return "roofline"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override;
  double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                    const DeviceSpec& device) const override;
  // The formula for one kernel of op type `op_type`; bytes = read + written.
  double Time(std::string_view op_type, double flops, double bytes, graphs::DType dtype,
              const DeviceSpec& device) const;
  const RooflineOptions& options() const { return options_; }

 private:
  RooflineOptions options_;
};

enum class Fallback { kRoofline, kError };

struct MeasuredOptions {
  Fallback fallback = Fallback::kRoofline;
  // Measured times are taken to include the launch overhead (profilers and
  // TensorFlow cost graphs time the whole op); true adds the device's.
  bool add_launch_overhead = false;
  RooflineOptions roofline;
};

// The node's measured time for the device (MeasuredTimeFor: its kind, else
// "cpu" for a CPU or "any" for an accelerator), else the fallback. A fused group whose nodes are all measured
// (KernelWork::nodes) takes sum(measured) * roofline(group) / sum(roofline(node)): the measured level, scaled
// by what fusion saves under the roofline model.
class MeasuredCostModel : public CostModel {
 public:
  explicit MeasuredCostModel(MeasuredOptions options = {});
  std::string name() const override { return "measured"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override;
  double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                    const DeviceSpec& device) const override;
  // Per device kind, how many nodes take a measured time, e.g.
  // "measured (K80: measured for 32 of 32 nodes; Haswell: roofline)".
  std::string Describe(const graphs::Graph& graph, const Cluster& cluster) const override;
  // The nodes of `graph` that take a measured time on `device`.
  int64_t MeasuredNodes(const graphs::Graph& graph, const DeviceSpec& device) const;

 private:
  // Measured seconds of `node` on `device` (launch as configured), or nullopt.
  std::optional<double> Measured(const graphs::Graph& graph, graphs::NodeId node,
                                 const DeviceSpec& device) const;
  MeasuredOptions options_;
  RooflineCostModel roofline_;
};

struct CalibratedOptions {
  // For device kinds without a profile: an error naming the kinds (the
  // default), or roofline when asked for explicitly.
  Fallback fallback = Fallback::kError;
  RooflineOptions roofline;
  // Replace a link's latency and bandwidth with the profile's fit of copies in
  // that direction: `memcpy_ptop` (device to device, the source device's
  // profile), `memcpy_dtoh` (device to host), `memcpy_htod` (host to device,
  // the destination's profile). Links without such a fit keep the cluster's.
  bool calibrate_links = true;
  // PyTorch's optimizers run their per-parameter update as multi-tensor
  // (`_foreach_*`) kernels, one call per op over every parameter of a
  // device: an update-phase node of an `aten::` type whose `_foreach_`
  // type the profile has a fit for (`aten::add_` -> `aten::_foreach_add_`)
  // costs that call's launch overhead and intercept divided over the
  // parameters the graph's nodes of its type update
  // (graphs::Graph::update_parameters), plus its own FLOP and byte terms;
  // fp32 nodes priced alone (not fused) only. An out-of-place type without
  // a `_foreach_` fit takes its in-place sibling's (`aten::add`, weight
  // decay, -> `aten::_foreach_add_`). false: every node is its own
  // kernel (an optimizer run with foreach=False). docs/CALIBRATION.md,
  // "Multi-tensor optimizer updates".
  bool multi_tensor_updates = true;
  // A link fit is used only when it rests on at least `min_link_samples`
  // copies and its bandwidth lies within [link_band_low, link_band_high]
  // times the cluster's (datasheet) bandwidth of the link; otherwise the
  // link keeps the cluster's figures and Warnings() says why (a fit of 5
  // all-to-all samples at 90 MB/s once made a step 60x too slow).
  int min_link_samples = 10;
  double link_band_low = 0.05;
  double link_band_high = 1.5;
};

// Why a profile's link fit is not used for `link` (CalibratedOptions), or
// "" when it is.
std::string LinkFitRejection(const LinkFit& fit, double datasheet_bandwidth,
                             const CalibratedOptions& options);

// DeviceProfile::KernelTime for devices whose kind has a profile; the
// profile's launch overhead replaces the device's. Zero-work nodes follow
// RooflineOptions::charge_empty_ops.
class CalibratedCostModel : public CostModel {
 public:
  // ConfigError when two profiles are for the same device kind.
  CalibratedCostModel(std::vector<DeviceProfile> profiles, CalibratedOptions options = {});
  std::string name() const override { return "calibrated"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override;
  double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                    const DeviceSpec& device) const override;
  LinkCost LinkCostOf(const Cluster& cluster, const LinkSpec& link) const override;
  // One line per link fit of the cluster's links that is not used (LinkFitRejection).
  std::vector<std::string> Warnings(const graphs::Graph& graph, const Cluster& cluster) const override;
  // The profile of a device kind, or nullptr.
  const DeviceProfile* ProfileFor(std::string_view device_kind) const;
  const std::vector<DeviceProfile>& profiles() const { return profiles_; }
  // Nodes of `graph` run in 16 bits (with `tf32`: in tfloat32) whose
  // precision the device's profile has no fit for
  // (DeviceProfile::HasPrecision): roofline prices them (at the dtype's
  // peak, DeviceSpec::PeakFlops), or (fallback: error) they are refused.
  // `example` gets the first's name.
  int64_t PrecisionMisses(const graphs::Graph& graph, const DeviceSpec& device,
                          std::string* example = nullptr, bool tf32 = false) const;
  // The fit an update node takes as a share of a multi-tensor call
  // (CalibratedOptions::multi_tensor_updates) and the parameters it is
  // shared over; {nullptr, 0} for every other node.
  struct MultiTensorShare {
    const KernelFit* fit = nullptr;
    int32_t parameters = 0;
  };
  MultiTensorShare MultiTensorOf(const graphs::Graph& graph, graphs::NodeId node,
                                 const DeviceSpec& device) const;
  // The launch overhead `node` pays on a profiled device: the profile's, or
  // its share of a multi-tensor call's (node -1: the profile's). The
  // device's for a kind without one.
  double LaunchOf(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const;
  // Nodes of `graph` priced as shares of multi-tensor calls on `device`.
  int64_t MultiTensorNodes(const graphs::Graph& graph, const DeviceSpec& device) const;
  // Nodes whose fit is faster than the device's peak-based time, which
  // prices them instead (a class fitted without a FLOP term).
  int64_t PeakRaised(const graphs::Graph& graph, const DeviceSpec& device) const;
  std::string Describe(const graphs::Graph& graph, const Cluster& cluster) const override;
  // The host: the profile's host table (DeviceProfile::host). An
  // update-phase node that multi_tensor_updates prices as a share of a
  // `_foreach_` call takes the same share of that call's host time.
  bool HostModelled(const DeviceSpec& device) const override;
  HostWork HostOf(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override;
  HostCosts HostCostsOf(const DeviceSpec& device) const override;
  // The profile's launch_overhead (its roofline fallback's: the device's)
  // replaced by kernel_gap per kernel the op launches (the host table's
  // mean, at least one); a multi-tensor share takes its share of both.
  double HostedLaunchDelta(const graphs::Graph& graph, graphs::NodeId node,
                           const DeviceSpec& device) const override;
  double HostedKernelLaunchDelta(const graphs::Graph& graph, const KernelWork& work,
                                 const DeviceSpec& device) const override;

 private:
  // The fit of `op_type` in `dtype` (a convolution's by its kind, from
  // `op_node`'s weight; -1: dense), or nullptr (FitOfPrecision).
  const KernelFit* FitOf(const DeviceProfile& profile, const graphs::Graph& graph, std::string_view op_type,
                         graphs::OpClass op_class, graphs::DType dtype, graphs::NodeId op_node) const;
  // HostedLaunchDelta of work of `op_type` (`op_node` -1: a fused group).
  double LaunchDelta(const graphs::Graph& graph, std::string_view op_type, double flops, double bytes,
                     graphs::DType dtype, graphs::NodeId op_node, bool alone, const DeviceSpec& device) const;
  // `alone`: the work is one node's (a fused group is one kernel, never a
  // share of a multi-tensor call).
  // `raised` (may be null): set when the fit was raised to the device's
  // peak-based time.
  double Time(const graphs::Graph& graph, std::string_view op_type, double flops, double bytes,
              double channel_extent, graphs::DType dtype, graphs::NodeId op_node, bool alone,
              const DeviceSpec& device, bool* raised = nullptr) const;
  [[noreturn]] void NoKindProfile(const graphs::Graph& graph, const DeviceSpec& device) const;
  std::vector<DeviceProfile> profiles_;
  // Per profile (parallel to profiles_): a per-parameter update type ->
  // the fit of its multi-tensor call ("aten::add_" ->
  // "aten::_foreach_add_"; "aten::add", which no trace ran as a foreach
  // call, -> its in-place sibling's), built once (MultiTensorOf).
  std::vector<std::map<std::string, KernelFit, std::less<>>> foreach_fits_;
  // The same for the host table's `_foreach_` entries.
  std::vector<std::map<std::string, HostOpFit, std::less<>>> foreach_host_;
  CalibratedOptions options_;
  RooflineCostModel roofline_;
};

struct AutoOptions {
  // Where the per-kind profiles are: `<dir>/<device kind in lower case>.yaml`
  // (e.g. configs/calibrated/v100.yaml for kind V100); a file there is used
  // only when its device_kind matches its name.
  std::string profiles_dir = "configs/calibrated";
  // Explicit profiles (paths or names) instead of the directory's.
  std::vector<std::string> profiles;
  MeasuredOptions measured;
  // The profiled kinds' CalibratedOptions::multi_tensor_updates.
  bool multi_tensor_updates = true;
};

// The default cost model. Per node: its measured time for the device
// (MeasuredTimeFor) when the graph has one; else the calibrated profile of the
// device kind when one is committed, never below the device's roofline at
// efficiency 1 (plus the profile's launch overhead); else roofline. A fused
// group is measured only when all its nodes are.
class AutoCostModel : public CostModel {
 public:
  // Loads the profiles (ConfigError for a broken profile file).
  explicit AutoCostModel(AutoOptions options = {});
  // The same with profiles already in memory (e.g. fitted leave-one-out by
  // `gosim calibrate --validate`), each named by `label` in Describe;
  // AutoOptions::profiles_dir and ::profiles are not read.
  static std::shared_ptr<const AutoCostModel> WithProfiles(std::vector<DeviceProfile> profiles,
                                                           const std::string& label,
                                                           AutoOptions options = {});
  std::string name() const override { return "auto"; }
  double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override;
  double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                    const DeviceSpec& device) const override;
  LinkCost LinkCostOf(const Cluster& cluster, const LinkSpec& link) const override;
  std::string Describe(const graphs::Graph& graph, const Cluster& cluster) const override;
  std::vector<std::string> Warnings(const graphs::Graph& graph, const Cluster& cluster) const override;
  bool HostModelled(const DeviceSpec& device) const override { return calibrated_.HostModelled(device); }
  HostWork HostOf(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const override {
    return calibrated_.HostOf(graph, node, device);
  }
  HostCosts HostCostsOf(const DeviceSpec& device) const override { return calibrated_.HostCostsOf(device); }
  // Measured nodes keep their time (it has no launch in it by default).
  double HostedLaunchDelta(const graphs::Graph& graph, graphs::NodeId node,
                           const DeviceSpec& device) const override;
  double HostedKernelLaunchDelta(const graphs::Graph& graph, const KernelWork& work,
                                 const DeviceSpec& device) const override;
  // The profile used for a device kind, or nullptr (roofline).
  const DeviceProfile* ProfileFor(std::string_view device_kind) const {
    return calibrated_.ProfileFor(device_kind);
  }

 private:
  AutoCostModel(const AutoOptions& options, std::vector<std::pair<std::string, DeviceProfile>> loaded);
  bool HasMeasured(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const;
  // `launch`: the overhead the work pays (CalibratedCostModel::LaunchOf).
  double Floored(double seconds, double flops, double bytes, graphs::DType dtype, double launch,
                 const DeviceSpec& device) const;
  MeasuredCostModel measured_;
  CalibratedCostModel calibrated_;
  std::vector<std::string> profile_paths_;  // parallel to the loaded profiles, for Describe
};

// The committed per-kind profiles of `dir` (see AutoOptions::profiles_dir),
// with their paths; an unreadable directory gives none.
std::vector<std::pair<std::string, DeviceProfile>> KindProfiles(const std::string& dir);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_COST_MODELS_H_
