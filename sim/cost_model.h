// Cost models: how long an op (or a fused group of ops) takes on a device.
// The engine reaches costs only through this interface; roofline, measured
// and calibrated models are implementations registered by name.
#ifndef GOSIM_SIM_COST_MODEL_H_
#define GOSIM_SIM_COST_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "graphs/graph.h"
#include "sim/cluster.h"

namespace gosim::sim {

// What one kernel does: a node, or a fused group seen as one kernel (the sum
// of its FLOPs; only the bytes that cross the group boundary).
struct KernelWork {
  int32_t op = 0;               // op type (of the group's most expensive node)
  double flops = 0.0;
  double bytes_read = 0.0;
  double bytes_written = 0.0;
  graphs::DType dtype = graphs::DType::kFloat32;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Seconds to run node `node` on `device`, launch overhead included.
  virtual double NodeTime(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec& device) const = 0;
  // Seconds to run `work` as one kernel on `device`, launch overhead included.
  virtual double KernelTime(const graphs::Graph& graph, const KernelWork& work,
                            const DeviceSpec& device) const = 0;
};

// Builds the cost model `name` ("roofline", "measured", "calibrated") from
// its YAML options; unknown names list the valid ones.
std::shared_ptr<const CostModel> MakeCostModel(const std::string& name, const YAML::Node& options = {},
                                               const std::string& source = {});
std::vector<std::string> CostModelNames();

}  // namespace gosim::sim

#endif  // GOSIM_SIM_COST_MODEL_H_
