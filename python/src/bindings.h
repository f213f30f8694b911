// The pieces of the gosim._core extension module (pybind11), one function
// per part, called in order from module.cc.
//
// Objects shared between Python and C++ are held by std::shared_ptr: a
// Simulator keeps its graph and cluster alive, and NumPy views of a graph's
// arrays keep the graph alive through their base object.
#ifndef GOSIM_PYTHON_SRC_BINDINGS_H_
#define GOSIM_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>

#include "graphs/graph.h"
#include "sim/cluster.h"

namespace gosim::python {

// A gosim.Graph / gosim.Cluster argument, or what load_graph / load_cluster
// accept (a str or os.PathLike: a file, gen:NAME..., a preset name), loaded;
// errors are located at the parameter ("graph: no graph file 'x'").
std::shared_ptr<graphs::Graph> GraphOf(const pybind11::handle& graph);
std::shared_ptr<sim::Cluster> ClusterOf(const pybind11::handle& cluster);
// The same, and "from-graph": the machine `graph`'s file brings (msr-fiddle's problems).
std::shared_ptr<sim::Cluster> ClusterFor(const pybind11::handle& cluster, const graphs::Graph& graph);

// A Python dict / list / scalar (or None) as a YAML node, through JSON
// (Python's json module), so that options reach the same validating parsers
// as YAML files do.
YAML::Node ToYaml(const pybind11::handle& value);

void BindGraphs(pybind11::module_& m);
void BindSim(pybind11::module_& m);
void BindRun(pybind11::module_& m);

}  // namespace gosim::python

#endif  // GOSIM_PYTHON_SRC_BINDINGS_H_
