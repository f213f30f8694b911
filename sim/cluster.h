// A multi-device machine: devices, links and the shared resources that
// transfers contend for. Loaded from YAML (configs/clusters/*.yaml; the schema
// is in docs/SIMULATOR.md) or built in code with ClusterBuilder.
//
// Links are directed (a full-duplex cable is two links). Every ordered pair
// of distinct devices has a route, computed once when the cluster is built:
// the direct link when there is one, else device -> host -> device over the
// host links. A cluster is immutable and safe to share between threads.
//
// Units: FLOP/s, bytes/s, bytes, seconds.
#ifndef GOSIM_SIM_CLUSTER_H_
#define GOSIM_SIM_CLUSTER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "graphs/graph.h"
#include "sim/options.h"

namespace gosim::sim {

// What a device is to a graph's measured times (MeasuredTimeFor in
// sim/cost_model.h). An accelerator takes the times of its own kind, else
// those for "any" (a profiled or traced graph's times, which are a GPU's);
// a CPU takes the times of its own kind, else those for "cpu", never those
// for "any". YAML `role: cpu | accelerator`; the default is cpu for a
// device of kind "cpu" (any case), accelerator otherwise.
enum class DeviceRole { kAccelerator, kCpu };
const char* DeviceRoleName(DeviceRole role);

struct DeviceSpec {
  std::string name;               // unique, e.g. "gpu0"
  std::string kind;               // model, e.g. "V100"; matches graphs' measured times
  double peak_flops_fp32 = 0.0;   // FLOP/s
  double peak_flops_fp16 = 0.0;   // FLOP/s (tensor cores where present); 0 = same as fp32
  double memory_bandwidth = 0.0;  // bytes/s
  int64_t memory_capacity = 0;    // bytes
  double launch_overhead = 0.0;   // seconds per kernel
  double peak_flops_fp64 = 0.0;   // FLOP/s; 0 = same as fp32
  // FLOP/s of fp32 matrix work on tensor cores (TF32, Ampere and later;
  // cuDNN convolutions use it by default); 0 = none. PeakFlops gives it to
  // tfloat32 nodes (matrix products exported with tf32) and CeilingFlops to
  // every fp32 node: the roofline keeps pricing float32 ops at
  // peak_flops_fp32.
  double peak_flops_tf32 = 0.0;
  // Every device of one kind has the same role (ClusterBuilder checks).
  DeviceRole role = DeviceRole::kAccelerator;

  // Peak FLOP/s for ops whose output has `dtype`: fp16 for float16 and
  // bfloat16, fp64 for float64, TF32 for tfloat32 (each falling back to
  // fp32 when 0), fp32 for every other dtype (integer ALUs run at about the
  // fp32 rate).
  double PeakFlops(graphs::DType dtype) const;
  // The fastest any kernel on `dtype` can compute: PeakFlops, or for
  // float32 the TF32 peak where it is higher (an H200's fp32 convolutions
  // run at about 100 TFLOP/s in the traces, above its 67 TFLOP/s fp32
  // peak). The auto cost model's floor.
  double CeilingFlops(graphs::DType dtype) const;
};

// The host CPU: the far end of device <-> host links, and what drives the
// devices: how a framework runs on it (SimOptions::execution and
// ::processes, which override these; kAuto = the simulator's default).
// The host's speed is the cost model's (a calibrated profile's host table).
struct HostSpec {
  std::string name = "host";
  std::string kind;             // e.g. "2x Xeon E5-2698 v4"
  int64_t memory_capacity = 0;  // bytes; 0 = unknown
  Execution execution = Execution::kAuto;
  Processes processes = Processes::kAuto;
};

struct LinkSpec {
  std::string name;                // "src->dst", e.g. "gpu0->gpu1"
  std::string type;                // free label from the YAML, e.g. "nvlink", "pcie"
  int32_t src = -1;                // device index, or Cluster::kHost
  int32_t dst = -1;                // device index, or Cluster::kHost
  double bandwidth = 0.0;          // bytes/s
  double latency = 0.0;            // seconds
  std::vector<int32_t> resources;  // shared resources this link's transfers also occupy
};

struct SharedResource {
  std::string name;        // e.g. "pcie_switch0", "nic0"
  double bandwidth = 0.0;  // bytes/s shared by every transfer through it
};

// What `PRESET:gpus=N` means for a cluster (the YAML's `scaling` mapping,
// docs/SIMULATOR.md "Presets with parameters"):
//   kNone    the cluster takes no parameters;
//   kSubset  the first N devices with the links and resources among them
//            (N <= the file's count; the DGX-1 hybrid cube mesh);
//   kGroups  groups of `group` devices (a board, a PCIe switch) replicated
//            with their links to each other and to the host; devices of
//            different groups reach each other through the host;
//   kFabric  every pair of devices directly linked (NVSwitch), any N; host
//            links and their resources replicated per `group` devices.
// In kGroups and kFabric, devices are named PREFIX0..PREFIX(count-1); a
// resource named "<device>.x" belongs to that device, one with a number in
// its name (pcie_switch1.up) to the group of that index, any other is shared
// by all.
struct ClusterScaling {
  enum class Mode { kNone, kSubset, kGroups, kFabric };
  Mode mode = Mode::kNone;
  int32_t group = 1;     // devices per replicated group (kGroups, kFabric)
  bool partial = false;  // kGroups: N need not be a multiple of `group` (the last group is smaller)
  int32_t max = 0;       // most devices N may ask for (0: the count of the file, or 1024)
};

class Cluster {
 public:
  static constexpr int32_t kHost = -2;

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const HostSpec& host() const { return host_; }
  int32_t num_links() const { return static_cast<int32_t>(links_.size()); }
  int32_t num_resources() const { return static_cast<int32_t>(resources_.size()); }
  const LinkSpec& link(int32_t l) const { return links_[static_cast<size_t>(l)]; }
  const SharedResource& resource(int32_t r) const { return resources_[static_cast<size_t>(r)]; }
  int32_t num_devices() const { return static_cast<int32_t>(devices_.size()); }
  const DeviceSpec& device(int32_t d) const { return devices_[static_cast<size_t>(d)]; }
  const std::vector<DeviceSpec>& devices() const { return devices_; }
  const std::vector<LinkSpec>& links() const { return links_; }
  const std::vector<SharedResource>& resources() const { return resources_; }
  // Device index by name, or -1.
  int32_t FindDevice(const std::string& name) const;
  // Resource index by name, or -1.
  int32_t FindResource(const std::string& name) const;
  // The link from `src` to `dst` (device indices or kHost), or -1.
  int32_t FindLink(int32_t src, int32_t dst) const;
  // A device's name, or the host's name for kHost.
  const std::string& EndpointName(int32_t endpoint) const;
  // The links a transfer from device `src` to device `dst` crosses, in order
  // (one for a direct link; device -> host -> device when there is none).
  const std::vector<int32_t>& Route(int32_t src, int32_t dst) const;
  // How `gpus=N` rescales this cluster (from its YAML; kNone otherwise).
  const ClusterScaling& scaling() const { return scaling_; }

 private:
  friend Cluster ParseCluster(const std::string&, const std::string&);
  friend class ClusterBuilder;
  std::string name_;
  std::string description_;
  HostSpec host_;
  std::vector<DeviceSpec> devices_;
  std::vector<LinkSpec> links_;
  std::vector<SharedResource> resources_;
  std::vector<std::vector<int32_t>> routes_;  // src * n + dst
  ClusterScaling scaling_;
};

// Builds a Cluster from specs, validating as it goes. Every Add* takes the
// Location of what it adds so that errors point at the YAML that caused them.
//
//   ClusterBuilder b("two_gpus");
//   b.AddDevice(gpu0_spec);
//   b.AddDevice(gpu1_spec);
//   b.AddLink(link_spec);   // src 0, dst 1, bandwidth 25e9, ...
//   Cluster c = b.Build();
class ClusterBuilder {
 public:
  // Limits that keep malformed input from exhausting memory or time.
  static constexpr int32_t kMaxDevices = 1024;
  static constexpr int32_t kMaxResources = 1 << 16;
  static constexpr int32_t kMaxLinks = 1 << 20;

  explicit ClusterBuilder(std::string name, std::string source = {});
  void SetDescription(std::string description);
  void SetScaling(ClusterScaling scaling) { cluster_.scaling_ = scaling; }
  void SetHost(HostSpec host, Location where = {});
  // Returns the device index. ConfigError on a duplicate name or a
  // non-positive peak, bandwidth or capacity, or a negative launch overhead.
  int32_t AddDevice(DeviceSpec device, Location where = {});
  // Returns the resource index. ConfigError on a duplicate name or a
  // non-positive bandwidth.
  int32_t AddResource(SharedResource resource, Location where = {});
  // Returns the link index. An empty name becomes "src->dst". ConfigError on
  // an unknown endpoint or resource, src == dst, a second link for the same
  // ordered pair, a non-positive bandwidth or a negative latency.
  int32_t AddLink(LinkSpec link, Location where = {});
  int32_t num_devices() const { return static_cast<int32_t>(cluster_.devices_.size()); }
  // Computes every route; ConfigError (at the first device's location) for
  // a pair of devices with no route, or a cluster without devices.
  Cluster Build();

 private:
  Cluster cluster_;
  std::string source_;
  std::vector<Location> device_where_;
  std::vector<Location> link_where_;
  std::unordered_map<std::string, int32_t> device_index_;
  std::unordered_map<std::string, int32_t> resource_index_;
  std::unordered_map<int64_t, int32_t> link_index_;  // (src + 2) * (kMaxDevices + 2) + dst + 2
};

// Expands a name pattern with bracket ranges: "gpu[0-3]" -> gpu0..gpu3,
// "n[0-1]_gpu[0,2]" -> n0_gpu0, n0_gpu2, n1_gpu0, n1_gpu2; a name without
// brackets is itself. ConfigError (without location) on a malformed range.
std::vector<std::string> ExpandNamePattern(const std::string& pattern);

// `base` with `devices` devices as its scaling() says; ConfigError at `where`
// (one line naming what the cluster allows) for a count it cannot have.
// The result is named "<base>:gpus=N" and takes no further parameters.
Cluster ScaleCluster(const Cluster& base, int32_t devices, const Location& where = {});

// Reads a cluster YAML file; every problem is a ConfigError with file, line
// and YAML path. Relative preset names ("dgx1_v100") are looked up in
// configs/clusters/, files like every data path (core/data_path.h). A
// `:gpus=N` suffix (`p100x4_pcie:gpus=6`, `my.yaml:gpus=2`) rescales the
// cluster with ScaleCluster.
Cluster LoadCluster(const std::string& path_or_preset);
Cluster ParseCluster(const std::string& yaml_text, const std::string& source);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_CLUSTER_H_
