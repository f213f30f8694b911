// Cost models: how long an op (or a fused group of ops) takes on a device.
// The engine reaches costs only through this interface; roofline, measured
// and calibrated models are implementations registered by name (their
// options and defaults are in docs/SIMULATOR.md, "Cost models"):
//
//   roofline    launch + max(FLOPs / (peak(dtype) x compute_eff(class)),
//                            bytes / (bandwidth x memory_eff(class)))
//   measured    the node's measured time for the device (MeasuredTimeFor),
//               else roofline (or an error)
//   calibrated  a fitted linear model per op type / op class from a
//               calibrated device profile (sim/device_profile.h); a device
//               kind without a profile is an error naming the kinds (or
//               roofline with fallback: roofline)
//   auto        (the default) per node: measured for the device, else
//               the committed profile of the kind (configs/calibrated/
//               <kind>.yaml), else roofline
//
// Links: latency + bytes / bandwidth (alpha-beta) with the link's figures
// from the cluster, except where the calibrated model has a fitted copy of
// that direction (LinkCostOf).
//
// Every implementation is immutable after construction; NodeTime,
// KernelTime and LinkCostOf are thread-safe and do not allocate.
#ifndef GOSIM_SIM_COST_MODEL_H_
#define GOSIM_SIM_COST_MODEL_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "graphs/graph.h"
#include "graphs/op_class.h"
#include "sim/cluster.h"

namespace gosim::sim {

// What one kernel does: a node, or a fused group seen as one kernel (the sum
// of its FLOPs; only the bytes that cross the group boundary).
struct KernelWork {
  int32_t op = 0;  // op type (of the group's most expensive node)
  double flops = 0.0;
  double bytes_read = 0.0;
  double bytes_written = 0.0;
  graphs::DType dtype = graphs::DType::kFloat32;
  // The op node's elements per channel when it is a batch norm
  // (NodeChannelExtent), else 0; only the calibrated model uses it.
  double channel_extent = 0.0;
  // The node `op` comes from (-1 = unknown): the calibrated model reads a
  // convolution's kind from it (NodeConvKind).
  graphs::NodeId op_node = -1;
  // The fused nodes, when the caller has them (empty = unknown). Only the
  // measured model uses them: it scales the members' measured times.
  std::span<const graphs::NodeId> nodes = {};
};

// graphs::ChannelExtent of a node: its op type over the shape of its first
// output with a known shape (a batch norm's output, or its gradient w.r.t.
// the input, has the input's shape); 0 when no output has one.
double NodeChannelExtent(const graphs::Graph& graph, const graphs::Node& node);

// The kind of a convolution node (forward or backward; dense for any other
// node): depthwise when its type says so (TensorFlow's
// DepthwiseConv2dNative*, a calibrated "(depthwise)" type), else by its
// weight, the input of rank >= 3 read from a node with persistent bytes (a
// parameter): graphs::ConvKindOf(weight dimension 1, the fewest channels,
// dimension 1, among its other inputs of the weight's rank; a backward's
// grad_output has the output's channels, at least the input's for a
// depthwise or grouped convolution). Dense when the weight is not an input
// (TensorFlow's filter gradients) or a transposed one. An ONNX Conv, whose
// weight is an initializer, names its kind in its op type ("Conv
// (depthwise)", graphs/onnx_format.cc).
graphs::ConvKind NodeConvKind(const graphs::Graph& graph, graphs::NodeId node);

// The measured time of `node` that `device` takes, or nullptr: the entry of
// the device's kind; else, by its role (DeviceRole), the entry for "cpu"
// (a CPU) or for "any" (an accelerator: a profiled or traced graph's times
// are a GPU's, never a CPU's).
const graphs::MeasuredTime* MeasuredTimeFor(const graphs::Node& node, const DeviceSpec& device);

// The work of one node, or of a fused group: summed FLOPs, bytes read from
// outside the group, bytes written that leave the group (a tensor consumed
// only inside the group is neither written nor read; graph outputs without
// consumers stay written), op and dtype of the node with the most FLOPs.
// `nodes` must be sorted ascending; the result keeps a view of it.
KernelWork MakeKernelWork(const graphs::Graph& graph, std::span<const graphs::NodeId> nodes);

// The alpha-beta parameters of one link: a transfer of b bytes takes
// latency + b / bandwidth seconds (before shared-resource limits).
struct LinkCost {
  double latency = 0.0;    // seconds
  double bandwidth = 0.0;  // bytes/s
};

// What the host does to run one node (docs/SIMULATOR.md, "The host").
struct HostWork {
  double seconds = 0.0;  // host-thread time to dispatch it: framework, dispatcher, launch calls
  bool sync = false;     // the host then waits until the node has finished on its device
};

// The host figures of one device kind (CostModel::HostOf).
struct HostCosts {
  double copy = 0.0;           // a cross-device copy call (tensor.to(device)), seconds
  double per_parameter = 0.0;  // per parameter an optimizer step updates, seconds
  double launch_call = 0.0;    // one launch call (a captured graph's), seconds
  // Under execution graph (an executor without Python): an op with GPU
  // work, one without (the profile's per-call and per-op dispatch costs).
  double graph_op = 0.0;
  double graph_view = 0.0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Seconds to run node `node` on `device`, launch overhead included.
  virtual double NodeTime(const graphs::Graph& graph, graphs::NodeId node,
                          const DeviceSpec& device) const = 0;
  // Seconds to run `work` as one kernel on `device`, launch overhead included.
  virtual double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                            const DeviceSpec& device) const = 0;
  // Latency and bandwidth of transfers over `link` (the engine takes the
  // minimum of the bandwidth and the link's shared resources'). Default: the
  // link's own figures from the cluster description.
  virtual LinkCost LinkCostOf(const Cluster& cluster, const LinkSpec& link) const {
    (void)cluster;
    return {link.latency, link.bandwidth};
  }
  // Whether the model prices the host of devices of this kind (a profile
  // with a host table). The engine models the host (SimOptions::execution
  // eager, graph or captured) only where every device's kind is priced.
  virtual bool HostModelled(const DeviceSpec& device) const {
    (void)device;
    return false;
  }
  // The host work of `node` run on `device`. Only called where HostModelled.
  virtual HostWork HostOf(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const {
    (void)graph;
    (void)node;
    (void)device;
    return {};
  }
  virtual HostCosts HostCostsOf(const DeviceSpec& device) const {
    (void)device;
    return {};
  }
  // Where the engine models the host: the change (seconds, usually
  // negative) to NodeTime / KernelTime when the launch overhead they include
  // is replaced by the GPU idle between kernels queued back to back. A
  // profile's launch_overhead is the mean GPU idle per op of GPU-bound
  // traces: without a host it stands for the launches; with the host
  // modelled, the idle a slow host leaves comes from the engine itself and
  // only the queued gap is the device's (docs/SIMULATOR.md, "The host").
  // Default: no change.
  virtual double HostedLaunchDelta(const graphs::Graph& graph, graphs::NodeId node,
                                   const DeviceSpec& device) const {
    (void)graph;
    (void)node;
    (void)device;
    return 0.0;
  }
  virtual double HostedKernelLaunchDelta(const graphs::Graph& graph, const KernelWork& work,
                                         const DeviceSpec& device) const {
    (void)graph;
    (void)work;
    (void)device;
    return 0.0;
  }
  // What the model uses for this graph and cluster, in a few words for
  // table headers (e.g. "auto: calibrated V100 profile"). Default: name().
  virtual std::string Describe(const graphs::Graph& graph, const Cluster& cluster) const {
    (void)graph;
    (void)cluster;
    return name();
  }
  // One-line warnings about numbers this model would get silently wrong on
  // this graph and cluster (the Evaluator logs each distinct one once).
  virtual std::vector<std::string> Warnings(const graphs::Graph& graph, const Cluster& cluster) const {
    (void)graph;
    (void)cluster;
    return {};
  }
};

// Builds the cost model `name` ("auto", "roofline", "measured", "calibrated") from
// its YAML options (a mapping, or null for the defaults); `source` names the
// file the options come from. Unknown names and invalid options are
// ConfigErrors with the valid names / the YAML line and path.
std::shared_ptr<const CostModel> MakeCostModel(const std::string& name, const YAML::Node& options = {},
                                               const std::string& source = {});
std::vector<std::string> CostModelNames();

// The name of the default cost model: "auto".
inline constexpr const char* kDefaultCostModel = "auto";

}  // namespace gosim::sim

#endif  // GOSIM_SIM_COST_MODEL_H_
