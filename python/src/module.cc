// gosim._core: the extension module behind the `gosim` Python package.
//
// gosim::Error and its subclasses become Python exceptions of the same
// kinds (gosim.Error, gosim.ConfigError, ...; I/O errors are also OSErrors)
// carrying the same one-line message as the command line prints.
#include <pybind11/pybind11.h>

#include "core/allocator.h"
#include "core/error.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace gosim::python {

YAML::Node ToYaml(const py::handle& value) {
  if (value.is_none()) return YAML::Node(YAML::NodeType::Map);
  const py::object dumps = py::module_::import("json").attr("dumps");
  // JSON is YAML; the default= turns NumPy scalars and the like into plain
  // values or, failing that, reports them as the options parser would.
  const std::string text = py::cast<std::string>(
      dumps(value, py::arg("default") = py::cpp_function([](py::handle v) {
                     if (py::hasattr(v, "item")) return py::object(v.attr("item")());
                     throw ConfigError("an option value of type " +
                                       py::cast<std::string>(py::str(py::type::of(v).attr("__name__"))) +
                                       " is not a number, string, bool, list or dict");
                   })));
  return YAML::Load(text);
}

}  // namespace gosim::python

PYBIND11_MODULE(_core, m) {
  m.doc() = "gosim's C++ core: graphs, clusters, the simulator, agents and experiments";
  // The allocator settings gosim's own program starts with (core/allocator.h),
  // set with mallopt() here, as the interpreter is already running: without
  // them a GO run from Python spends about a third of its CPU time faulting
  // in freed tensors again (docs/BENCHMARKS.md, "Allocator settings"). A
  // GLIBC_TUNABLES or MALLOC_* variable of the user's, or
  // GOSIM_NO_ALLOCATOR_TUNING, leaves the process's allocator as it is.
  gosim::TuneAllocator(nullptr);

  static py::exception<gosim::Error> error(m, "Error");
  static py::exception<gosim::ConfigError> config_error(m, "ConfigError", error.ptr());
  static py::exception<gosim::GraphError> graph_error(m, "GraphError", error.ptr());
  static py::exception<gosim::TraceError> trace_error(m, "TraceError", error.ptr());
  static py::exception<gosim::DecisionError> decision_error(m, "DecisionError", error.ptr());
  static py::exception<gosim::StateError> state_error(m, "StateError", error.ptr());
  // I/O errors are also OSErrors, so that `except OSError` catches them.
  static py::object io_error = [&] {
    py::object type =
        py::module_::import("builtins")
            .attr("type")("IoError", py::make_tuple(error, py::module_::import("builtins").attr("OSError")),
                          py::dict(py::arg("__module__") = "gosim",
                                   py::arg("__doc__") = "A file could not be read or written."));
    m.attr("IoError") = type;
    return type;
  }();
  for (py::handle e :
       {py::handle(error), py::handle(config_error), py::handle(graph_error), py::handle(trace_error),
        py::handle(decision_error), py::handle(state_error), py::handle(io_error)})
    e.attr("__module__") = "gosim";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gosim::ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    } catch (const gosim::GraphError& e) {
      PyErr_SetString(graph_error.ptr(), e.what());
    } catch (const gosim::TraceError& e) {
      PyErr_SetString(trace_error.ptr(), e.what());
    } catch (const gosim::DecisionError& e) {
      PyErr_SetString(decision_error.ptr(), e.what());
    } catch (const gosim::StateError& e) {
      PyErr_SetString(state_error.ptr(), e.what());
    } catch (const gosim::IoError& e) {
      PyErr_SetString(io_error.ptr(), e.what());
    } catch (const gosim::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  gosim::python::BindGraphs(m);
  gosim::python::BindSim(m);
  gosim::python::BindRun(m);
}
