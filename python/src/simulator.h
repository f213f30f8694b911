// gosim.Simulator's C++ side, shared by the simulator and agent bindings.
#ifndef GOSIM_PYTHON_SRC_SIMULATOR_H_
#define GOSIM_PYTHON_SRC_SIMULATOR_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "experiments/experiment_config.h"
#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"

namespace gosim::python {

using GraphPtr = std::shared_ptr<graphs::Graph>;
using ClusterPtr = std::shared_ptr<sim::Cluster>;

// One evaluation with the per-device peaks.
struct EvalResult {
  sim::Evaluation eval;
  std::vector<int64_t> peak;  // bytes per device
};

struct BatchResult {
  pybind11::array_t<double> step_time_s;
  pybind11::array_t<bool> feasible;
  pybind11::array_t<int64_t> peak_memory_bytes;
  pybind11::array_t<int32_t> oom_device;
};

// A decision from NumPy arrays (None for the optional parts). Sizes and
// values are checked by the simulator (DecisionError).
sim::Decision MakeDecision(const pybind11::handle& devices, const pybind11::handle& priority,
                           const pybind11::handle& fusion,
                           const pybind11::handle& transfer_priority = pybind11::none());

// Owns an Evaluator and keeps its graph and cluster alive.
class Simulator {
 public:
  Simulator(GraphPtr graph, ClusterPtr cluster, const std::string& cost_model,
            const pybind11::object& cost_model_options, const pybind11::object& options);

  const GraphPtr& graph() const { return graph_; }
  const ClusterPtr& cluster() const { return cluster_; }
  const std::string& cost_model_name() const { return cost_model_name_; }
  // CostModel::Describe for this graph and cluster: what `gosim simulate` prints.
  const std::string& cost_model_used() const { return cost_model_used_; }
  const sim::Evaluator& evaluator() const { return *evaluator_; }
  // Releases the GIL while simulating.
  EvalResult Evaluate(const sim::Decision& decision) const;

 private:
  GraphPtr graph_;
  ClusterPtr cluster_;
  std::string cost_model_name_;
  std::string cost_model_used_;
  std::unique_ptr<sim::Evaluator> evaluator_;
};

}  // namespace gosim::python

#endif  // GOSIM_PYTHON_SRC_SIMULATOR_H_
