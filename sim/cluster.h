// A multi-device machine: devices, links and the shared resources that
// transfers contend for. Loaded from YAML (configs/clusters/*.yaml).
//
// Units: FLOP/s, bytes/s, bytes, seconds.
#ifndef GOSIM_SIM_CLUSTER_H_
#define GOSIM_SIM_CLUSTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graphs/graph.h"

namespace gosim::sim {

struct DeviceSpec {
  std::string name;               // unique, e.g. "gpu0"
  std::string kind;               // model, e.g. "V100"; matches graphs' measured times
  double peak_flops_fp32 = 0.0;   // FLOP/s
  double peak_flops_fp16 = 0.0;   // FLOP/s (tensor cores where present); 0 = same as fp32
  double memory_bandwidth = 0.0;  // bytes/s
  int64_t memory_capacity = 0;    // bytes
  double launch_overhead = 0.0;   // seconds per kernel

  // Peak FLOP/s for ops whose output has `dtype`.
  double PeakFlops(graphs::DType dtype) const;
};

struct LinkSpec {
  std::string name;
  int32_t src = -1;               // device index, or Cluster::kHost
  int32_t dst = -1;               // device index, or Cluster::kHost
  double bandwidth = 0.0;         // bytes/s
  double latency = 0.0;           // seconds
  std::vector<int32_t> resources; // shared resources this link's transfers also occupy
};

struct SharedResource {
  std::string name;               // e.g. "pcie_switch0", "nic0"
  double bandwidth = 0.0;         // bytes/s shared by every transfer through it
};

class Cluster {
 public:
  static constexpr int32_t kHost = -2;

  const std::string& name() const { return name_; }
  int32_t num_devices() const { return static_cast<int32_t>(devices_.size()); }
  const DeviceSpec& device(int32_t d) const { return devices_[static_cast<size_t>(d)]; }
  const std::vector<DeviceSpec>& devices() const { return devices_; }
  const std::vector<LinkSpec>& links() const { return links_; }
  const std::vector<SharedResource>& resources() const { return resources_; }
  // Device index by name, or -1.
  int32_t FindDevice(const std::string& name) const;
  // The links a transfer from device `src` to device `dst` crosses, in order
  // (one for a direct link; device -> host -> device when there is none).
  const std::vector<int32_t>& Route(int32_t src, int32_t dst) const;

 private:
  friend Cluster ParseCluster(const std::string&, const std::string&);
  friend class ClusterBuilder;
  std::string name_;
  std::vector<DeviceSpec> devices_;
  std::vector<LinkSpec> links_;
  std::vector<SharedResource> resources_;
  std::vector<std::vector<int32_t>> routes_;  // src * n + dst
};

// Reads a cluster YAML file; every problem is a ConfigError with file, line
// and YAML path. Relative preset names ("dgx1_v100") are looked up in
// configs/clusters/.
Cluster LoadCluster(const std::string& path_or_preset);
Cluster ParseCluster(const std::string& yaml_text, const std::string& source);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_CLUSTER_H_
