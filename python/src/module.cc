// gosim._core: the extension module behind the `gosim` Python package.
//
// gosim::Error and its subclasses become the Python exceptions of the same
// names (gosim/_errors.py: gosim.Error, gosim.ConfigError, ...; I/O errors
// are also OSErrors) carrying the same one-line message as the command line
// prints.
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

  // The exception types are Python classes (gosim/_errors.py), so that they
  // exist where the compiled module does not (gosim.torch's export).
  // References kept for the life of the process (never released: the
  // interpreter may be gone when static destructors run).
  const py::module_ errors = py::module_::import("gosim._errors");
  const auto type = [&errors, &m](const char* name) {
    py::object type_object = errors.attr(name);
    m.attr(name) = type_object;
    return type_object.release().ptr();
  };
  static PyObject* const error = type("Error");
  static PyObject* const config_error = type("ConfigError");
  static PyObject* const graph_error = type("GraphError");
  static PyObject* const trace_error = type("TraceError");
  static PyObject* const decision_error = type("DecisionError");
  static PyObject* const state_error = type("StateError");
  static PyObject* const io_error = type("IoError");  // also an OSError
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gosim::ConfigError& e) {
      PyErr_SetString(config_error, e.what());
    } catch (const gosim::GraphError& e) {
      PyErr_SetString(graph_error, e.what());
    } catch (const gosim::TraceError& e) {
      PyErr_SetString(trace_error, e.what());
    } catch (const gosim::DecisionError& e) {
      PyErr_SetString(decision_error, e.what());
    } catch (const gosim::StateError& e) {
      PyErr_SetString(state_error, e.what());
    } catch (const gosim::IoError& e) {
      PyErr_SetString(io_error, e.what());
    } catch (const gosim::Error& e) {
      PyErr_SetString(error, e.what());
    }
  });

  gosim::python::BindGraphs(m);
  gosim::python::BindSim(m);
  gosim::python::BindRun(m);
}
