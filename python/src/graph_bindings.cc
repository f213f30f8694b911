// Graphs, suites and clusters for Python: gosim.Graph, gosim.Suite,
// gosim.Cluster and the functions that load or generate them.
//
// Per-node fields live in an array of structs (graphs::Node), so their NumPy
// arrays are copies; the edge fields are zero-copy strided views into the
// graph's edge array, read-only, kept alive by the Graph object.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/experiment_config.h"
#include "experiments/graph_source.h"
#include "graphs/generators/generators.h"
#include "graphs/graph.h"
#include "graphs/io.h"
#include "graphs/json_format.h"
#include "graphs/stats.h"
#include "graphs/suite.h"
#include "python/src/bindings.h"
#include "sim/cluster.h"

namespace py = pybind11;

namespace gosim::python {
namespace {

using GraphPtr = std::shared_ptr<graphs::Graph>;
using ClusterPtr = std::shared_ptr<sim::Cluster>;

template <typename T, typename F>
py::array_t<T> PerNode(const graphs::Graph& g, F field) {
  py::array_t<T> out(g.num_nodes());
  T* data = out.mutable_data();
  for (graphs::NodeId i = 0; i < g.num_nodes(); ++i) data[i] = static_cast<T>(field(g.node(i)));
  return out;
}

// A read-only view of one field of every edge; `base` keeps the graph alive.
template <typename T>
py::array EdgeField(const GraphPtr& g, const T* first, py::handle base) {
  py::array view(py::dtype::of<T>(), {static_cast<py::ssize_t>(g->num_edges())},
                 {static_cast<py::ssize_t>(sizeof(graphs::Edge))}, first, base);
  py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

// CSR arrays (offsets of size nodes + 1, edge ids) of in- or out-edges.
py::tuple Csr(const graphs::Graph& g, bool in) {
  py::array_t<int32_t> offsets(g.num_nodes() + 1);
  py::array_t<int32_t> ids(g.num_edges());
  int32_t* off = offsets.mutable_data();
  int32_t* out = ids.mutable_data();
  int32_t k = 0;
  for (graphs::NodeId i = 0; i < g.num_nodes(); ++i) {
    off[i] = k;
    for (graphs::EdgeId e : in ? g.in_edges(i) : g.out_edges(i)) out[k++] = e;
  }
  off[g.num_nodes()] = k;
  return py::make_tuple(offsets, ids);
}

py::dict StatsDict(const graphs::GraphStats& s) {
  py::dict d;
  d["name"] = s.name;
  d["nodes"] = s.nodes;
  d["edges"] = s.edges;
  d["control_edges"] = s.control_edges;
  d["flops"] = s.flops;
  d["weight_bytes"] = s.weight_bytes;
  d["optimizer_bytes"] = s.optimizer_bytes;
  d["persistent_bytes"] = s.persistent_bytes;
  d["activation_bytes"] = s.activation_bytes;
  d["depth"] = s.depth;
  d["width"] = s.width;
  d["forward_nodes"] = s.forward_nodes;
  d["backward_nodes"] = s.backward_nodes;
  d["update_nodes"] = s.update_nodes;
  d["op_histogram"] = s.op_histogram;
  return d;
}

py::dict NodeDict(const graphs::Graph& g, graphs::NodeId id) {
  if (id < 0 || id >= g.num_nodes()) throw py::index_error("node id " + std::to_string(id) + " out of range");
  const graphs::Node& n = g.node(id);
  py::list outputs;
  for (const graphs::TensorInfo& t : n.outputs) {
    py::dict o;
    o["bytes"] = t.bytes;
    o["shape"] = t.shape;
    o["dtype"] = std::string(graphs::DTypeName(t.dtype));
    outputs.append(o);
  }
  py::dict d;
  d["id"] = id;
  d["name"] = n.name;
  d["op"] = g.op_type_name(n.op);
  d["flops"] = n.flops;
  d["bytes_read"] = n.bytes_read;
  d["bytes_written"] = n.bytes_written;
  d["persistent_bytes"] = n.persistent_bytes;
  d["outputs"] = outputs;
  d["colocation"] =
      n.colocation < 0 ? std::string() : g.colocation_groups()[static_cast<size_t>(n.colocation)];
  d["scope"] = n.scope;
  d["phase"] = std::string(graphs::PhaseName(n.phase));
  py::list inputs;
  for (graphs::EdgeId e : g.in_edges(id)) inputs.append(g.edge(e).src);
  d["inputs"] = inputs;
  return d;
}

py::dict DeviceDict(const sim::DeviceSpec& d) {
  py::dict o;
  o["name"] = d.name;
  o["kind"] = d.kind;
  o["peak_flops_fp32"] = d.peak_flops_fp32;
  o["peak_flops_fp16"] = d.peak_flops_fp16;
  o["peak_flops_fp64"] = d.peak_flops_fp64;
  o["peak_flops_tf32"] = d.peak_flops_tf32;
  o["memory_bandwidth"] = d.memory_bandwidth;
  o["memory_capacity"] = d.memory_capacity;
  o["launch_overhead"] = d.launch_overhead;
  return o;
}

GraphPtr Own(graphs::Graph g) {
  return std::make_shared<graphs::Graph>(std::move(g));
}

GraphPtr LoadGraph(const std::string& path_or_spec) {
  const experiments::GraphEntry entry = experiments::ParseGraphArgument(path_or_spec, {}, "graph");
  py::gil_scoped_release release;
  return Own(experiments::MaterializeGraph(entry));
}

ClusterPtr LoadCluster(const std::string& path_or_preset) {
  return std::make_shared<sim::Cluster>(experiments::LoadClusterAt(path_or_preset, Location{"cluster"}));
}

// A str or os.PathLike as a path; a ConfigError naming `what` otherwise.
std::string PathOf(const py::handle& value, const char* what, const char* expected) {
  if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"))
    return py::cast<std::string>(py::module_::import("os").attr("fspath")(value));
  throw ConfigError(std::string(what) + " must be " + expected + ", not " +
                    py::cast<std::string>(py::type::of(value).attr("__name__")));
}

}  // namespace

GraphPtr GraphOf(const py::handle& graph) {
  if (py::isinstance<graphs::Graph>(graph)) return py::cast<GraphPtr>(graph);
  return LoadGraph(PathOf(graph, "graph", "a gosim.Graph, a graph file or gen:NAME[:k=v,...]"));
}

ClusterPtr ClusterOf(const py::handle& cluster) {
  if (py::isinstance<sim::Cluster>(cluster)) return py::cast<ClusterPtr>(cluster);
  return LoadCluster(PathOf(cluster, "cluster", "a gosim.Cluster, a preset name or a cluster YAML file"));
}

ClusterPtr ClusterFor(const py::handle& cluster, const graphs::Graph& graph) {
  if (py::isinstance<py::str>(cluster) && py::cast<std::string>(cluster) == experiments::kClusterFromGraph) {
    return std::make_shared<sim::Cluster>(
        experiments::LoadClusterFor(experiments::kClusterFromGraph, graph, Location{"cluster"}));
  }
  return ClusterOf(cluster);
}

void BindGraphs(py::module_& m) {
  py::class_<graphs::Graph, GraphPtr>(m, "Graph",
                                      "An immutable computation graph; node ids are a topological order.")
      .def_property_readonly("name", &graphs::Graph::name)
      .def_property_readonly("source", &graphs::Graph::source,
                             "the file it was read from ('' when generated)")
      .def_property_readonly("num_nodes", &graphs::Graph::num_nodes)
      .def_property_readonly("num_edges", &graphs::Graph::num_edges)
      .def_property_readonly("num_tensors", &graphs::Graph::num_tensors)
      .def_property_readonly("op_types", &graphs::Graph::op_types, "op type names; `op` indexes them")
      .def_property_readonly("colocation_groups", &graphs::Graph::colocation_groups)
      .def_property_readonly("node_names",
                             [](const graphs::Graph& g) {
                               std::vector<std::string> names;
                               names.reserve(g.nodes().size());
                               for (const auto& n : g.nodes()) names.push_back(n.name);
                               return names;
                             })
      .def_property_readonly("scopes",
                             [](const graphs::Graph& g) {
                               std::vector<std::string> scopes;
                               scopes.reserve(g.nodes().size());
                               for (const auto& n : g.nodes()) scopes.push_back(n.scope);
                               return scopes;
                             })
      .def_property_readonly(
          "op",
          [](const graphs::Graph& g) { return PerNode<int32_t>(g, [](const auto& n) { return n.op; }); },
          "op type id per node (int32; names in op_types)")
      .def_property_readonly(
          "flops",
          [](const graphs::Graph& g) { return PerNode<double>(g, [](const auto& n) { return n.flops; }); })
      .def_property_readonly("bytes_read",
                             [](const graphs::Graph& g) {
                               return PerNode<int64_t>(g, [](const auto& n) { return n.bytes_read; });
                             })
      .def_property_readonly("bytes_written",
                             [](const graphs::Graph& g) {
                               return PerNode<int64_t>(g, [](const auto& n) { return n.bytes_written; });
                             })
      .def_property_readonly("persistent_bytes",
                             [](const graphs::Graph& g) {
                               return PerNode<int64_t>(g, [](const auto& n) { return n.persistent_bytes; });
                             })
      .def_property_readonly(
          "output_bytes",
          [](const graphs::Graph& g) {
            return PerNode<int64_t>(g, [](const graphs::Node& n) {
              int64_t bytes = 0;
              for (const auto& t : n.outputs) bytes += t.bytes;
              return bytes;
            });
          },
          "bytes of all outputs per node")
      .def_property_readonly(
          "phase",
          [](const graphs::Graph& g) { return PerNode<uint8_t>(g, [](const auto& n) { return n.phase; }); },
          "0 forward, 1 backward, 2 update (uint8)")
      .def_property_readonly(
          "colocation",
          [](const graphs::Graph& g) {
            return PerNode<int32_t>(g, [](const auto& n) { return n.colocation; });
          },
          "colocation group per node, -1 = none (names in colocation_groups)")
      .def_property_readonly(
          "edge_src",
          [](const GraphPtr& g) {
            return EdgeField(g, g->num_edges() ? &g->edge(0).src : nullptr, py::cast(g));
          },
          "zero-copy, read-only")
      .def_property_readonly(
          "edge_dst",
          [](const GraphPtr& g) {
            return EdgeField(g, g->num_edges() ? &g->edge(0).dst : nullptr, py::cast(g));
          },
          "zero-copy, read-only")
      .def_property_readonly(
          "edge_output",
          [](const GraphPtr& g) {
            return EdgeField(g, g->num_edges() ? &g->edge(0).output_index : nullptr, py::cast(g));
          },
          "output index of the source per edge, -1 for control edges (zero-copy, read-only)")
      .def_property_readonly(
          "edge_bytes",
          [](const GraphPtr& g) {
            return EdgeField(g, g->num_edges() ? &g->edge(0).bytes : nullptr, py::cast(g));
          },
          "zero-copy, read-only")
      .def(
          "in_csr", [](const graphs::Graph& g) { return Csr(g, true); },
          "(offsets[num_nodes + 1], edge ids): the in-edges of node i are ids[offsets[i]:offsets[i + 1]]")
      .def(
          "out_csr", [](const graphs::Graph& g) { return Csr(g, false); }, "as in_csr, for out-edges")
      .def("node", &NodeDict, py::arg("id"), "one node's fields as a dict")
      .def(
          "find_node",
          [](const graphs::Graph& g, const std::string& name) -> py::object {
            const auto id = g.FindNode(name);
            return id ? py::object(py::int_(*id)) : py::none();
          },
          py::arg("name"), "node id by name, or None")
      .def(
          "stats", [](const graphs::Graph& g) { return StatsDict(graphs::ComputeStats(g)); },
          "the figures of `gosim graphs stats`")
      .def(
          "to_json", [](const graphs::Graph& g) { return graphs::WriteGraphJson(g); },
          "native JSON text (docs/FORMATS.md)")
      .def(
          "save", [](const graphs::Graph& g, const std::string& path) { graphs::SaveGraph(g, path); },
          py::arg("path"), "writes the graph; the format follows the extension")
      .def("__len__", &graphs::Graph::num_nodes)
      .def("__repr__", [](const graphs::Graph& g) {
        return "<gosim.Graph '" + g.name() + "': " + std::to_string(g.num_nodes()) + " nodes, " +
               std::to_string(g.num_edges()) + " edges>";
      });

  m.def(
      "load_graph",
      [](const py::handle& path_or_spec) {
        return LoadGraph(PathOf(path_or_spec, "graph", "a graph file or gen:NAME[:k=v,...]"));
      },
      py::arg("path_or_spec"),
      "A graph file (native JSON, ONNX, CostGraphDef; .gz too) or gen:NAME[:k=v,...], as `gosim --graph`.");
  m.def(
      "graph_from_json",
      [](const std::string& text, const std::string& source) {
        return Own(graphs::ReadGraphJson(text, source.empty() ? "<json>" : source));
      },
      py::arg("text"), py::arg("source") = "", "A graph from native JSON text.");
  m.def(
      "generate",
      [](const std::string& name, const py::object& params) {
        return Own(graphs::Generate(name, ToYaml(params), "python", "params"));
      },
      py::arg("name"), py::arg("params") = py::none(),
      "A generated graph: generate('resnet', {'depth': 18}).");
  m.def(
      "generators",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& g : graphs::ListGenerators()) out.emplace_back(g.name, g.description);
        return out;
      },
      "(name, description) of every graph generator.");

  py::class_<graphs::Suite, std::shared_ptr<graphs::Suite>>(
      m, "Suite", "A graph suite file (graphs are built on demand).")
      .def_property_readonly("name", [](const graphs::Suite& s) { return s.name; })
      .def_property_readonly("names", &graphs::Suite::Names)
      .def(
          "split_of",
          [](const graphs::Suite& s, const std::string& name) {
            const graphs::SuiteEntry* e = s.Find(name);
            if (e == nullptr) throw ConfigError("suite " + s.name + " has no graph '" + name + "'");
            return e->split;
          },
          py::arg("name"))
      .def(
          "names_of",
          [](const graphs::Suite& s, const std::string& split) {
            std::vector<std::string> names;
            for (const graphs::SuiteEntry* e : s.EntriesOf(split)) names.push_back(e->name);
            return names;
          },
          py::arg("split"), "the entries of one split: train, valid, test or ''")
      .def(
          "graph",
          [](const graphs::Suite& s, const std::string& name) {
            const graphs::SuiteEntry* e = s.Find(name);
            if (e == nullptr) throw ConfigError("suite " + s.name + " has no graph '" + name + "'");
            py::gil_scoped_release release;
            return Own(graphs::MaterializeGraph(*e));
          },
          py::arg("name"), "builds (or loads) one entry's graph");
  m.def(
      "load_suite",
      [](const std::string& path) { return std::make_shared<graphs::Suite>(graphs::LoadSuite(path)); },
      py::arg("path"));

  py::class_<sim::Cluster, ClusterPtr>(m, "Cluster",
                                       "Devices, links and shared resources of one machine or cluster.")
      .def_property_readonly("name", &sim::Cluster::name)
      .def_property_readonly("description", &sim::Cluster::description)
      .def_property_readonly("num_devices", &sim::Cluster::num_devices)
      .def_property_readonly("device_names",
                             [](const sim::Cluster& c) {
                               std::vector<std::string> names;
                               for (const auto& d : c.devices()) names.push_back(d.name);
                               return names;
                             })
      .def_property_readonly("devices",
                             [](const sim::Cluster& c) {
                               py::list out;
                               for (const auto& d : c.devices()) out.append(DeviceDict(d));
                               return out;
                             })
      .def_property_readonly(
          "links",
          [](const sim::Cluster& c) {
            py::list out;
            for (const auto& l : c.links()) {
              py::dict o;
              o["name"] = l.name;
              o["type"] = l.type;
              o["src"] = l.src;
              o["dst"] = l.dst;
              o["bandwidth"] = l.bandwidth;
              o["latency"] = l.latency;
              out.append(o);
            }
            return out;
          },
          "src/dst are device indices, or -1 for the host")
      .def("__repr__", [](const sim::Cluster& c) {
        return "<gosim.Cluster '" + c.name() + "': " + std::to_string(c.num_devices()) + " devices>";
      });
  m.def(
      "load_cluster",
      [](const py::handle& path_or_preset) {
        return LoadCluster(PathOf(path_or_preset, "cluster", "a preset name or a cluster YAML file"));
      },
      py::arg("path_or_preset"), "A preset name (configs/clusters/NAME.yaml) or a cluster YAML file.");
}

}  // namespace gosim::python
