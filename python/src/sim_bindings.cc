// The simulator for Python: gosim.Simulator over sim::Evaluator.
//
// Decisions arrive as NumPy arrays (a device per node; optional priority per
// node and fusion group per node). evaluate() and evaluate_batch() release
// the GIL; the batch runs on the Evaluator's oneTBB workers, one decision
// per thread, so its results do not depend on the number of threads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "python/src/bindings.h"
#include "python/src/simulator.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "sim/result.h"
#include "sim/timeline.h"

namespace py = pybind11;

namespace gosim::python {
namespace {

// An integer NumPy array (any integer dtype) or sequence as int32 values.
std::vector<int32_t> IntVector(const py::handle& value, const char* what) {
  const py::array array = py::array::ensure(value);
  if (!array) throw DecisionError(std::string(what) + " must be an array of integers");
  const char kind = array.dtype().kind();
  if (array.size() > 0 && kind != 'i' && kind != 'u') {
    throw DecisionError(
        std::string(what) + " must hold integers, not " + py::cast<std::string>(py::str(array.dtype())), {},
        "pass e.g. numpy.asarray(devices, dtype=numpy.int32)");
  }
  if (array.ndim() != 1)
    throw DecisionError(std::string(what) + " must be one-dimensional (one value per node)");
  const auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  std::vector<int32_t> out(static_cast<size_t>(values.size()));
  const int64_t* data = values.data();
  for (size_t i = 0; i < out.size(); ++i) {
    if (data[i] < INT32_MIN || data[i] > INT32_MAX)
      throw DecisionError(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(data[i]) +
                          " is out of range");
    out[i] = static_cast<int32_t>(data[i]);
  }
  return out;
}

std::vector<double> DoubleVector(const py::handle& value, const char* what) {
  const auto values = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
  if (!values || values.ndim() != 1)
    throw DecisionError(std::string(what) + " must be a one-dimensional array of numbers");
  return std::vector<double>(values.data(), values.data() + values.size());
}

// The decision of evaluate() / simulate(): a placement with its optional
// parts, or `data_parallel` DDP replicas of the whole graph (no placement).
sim::Decision DecisionOf(const Simulator& s, const py::handle& devices, const py::handle& priority,
                         const py::handle& fusion, const py::handle& transfer_priority, int data_parallel) {
  if (data_parallel == 0) {
    if (devices.is_none())
      throw DecisionError("no decision: give devices (a device per node) or data_parallel=N", {},
                          "e.g. sim.evaluate(numpy.zeros(sim.num_nodes, numpy.int32)) or "
                          "sim.evaluate(data_parallel=sim.num_devices)");
    return MakeDecision(devices, priority, fusion, transfer_priority);
  }
  if (!devices.is_none() || !priority.is_none() || !fusion.is_none() || !transfer_priority.is_none())
    throw DecisionError(
        "data_parallel=" + std::to_string(data_parallel) +
            " replicates the whole graph: give no devices, priority, fusion or transfer_priority",
        {}, "drop the placement arrays, or data_parallel");
  // A negative count would read as a placement (is_data_parallel() is
  // false): refused here; the rest is checked where the decision is used
  // (the evaluator, save_decision), as a placement is.
  if (data_parallel < 0)
    throw DecisionError(
        "data_parallel=" + std::to_string(data_parallel) + " is negative", {},
        "give 2 to " + std::to_string(s.cluster()->num_devices()) + " replicas, or 0 for a placement");
  return sim::DataParallelDecision(*s.graph(), data_parallel);
}

py::array_t<int64_t> Peaks(const std::vector<int64_t>& peaks) {
  return py::array_t<int64_t>(static_cast<py::ssize_t>(peaks.size()), peaks.data());
}

}  // namespace

sim::Decision MakeDecision(const py::handle& devices, const py::handle& priority, const py::handle& fusion,
                           const py::handle& transfer_priority) {
  sim::Decision d;
  d.placement = IntVector(devices, "devices");
  if (!priority.is_none()) d.priority = DoubleVector(priority, "priority");
  if (!fusion.is_none()) d.fusion_group = IntVector(fusion, "fusion");
  if (!transfer_priority.is_none())
    d.transfer_priority = DoubleVector(transfer_priority, "transfer_priority");
  return d;
}

Simulator::Simulator(GraphPtr graph, ClusterPtr cluster, const std::string& cost_model,
                     const py::object& cost_model_options, const py::object& options)
    : graph_(std::move(graph)), cluster_(std::move(cluster)), cost_model_name_(cost_model) {
  // The name first, located at its own parameter; then the options, located
  // at theirs (MakeCostModel names `cost_model_options` in its errors).
  const std::vector<std::string> names = sim::CostModelNames();
  if (std::find(names.begin(), names.end(), cost_model) == names.end()) {
    throw ConfigError("unknown cost model '" + cost_model + "'." + DidYouMean(cost_model, names),
                      Location{"cost_model"}, "valid values are: " + Join(names, ", "));
  }
  const auto model = sim::MakeCostModel(cost_model, ToYaml(cost_model_options), "cost_model_options");
  YAML::Node sim_node = ToYaml(options);
  YamlMap sim_map(sim_node, "options", "");
  const sim::SimOptions sim_options = experiments::ParseSimOptions(sim_map);
  cost_model_used_ = model->Describe(*graph_, *cluster_);
  evaluator_ = std::make_unique<sim::Evaluator>(*graph_, *cluster_, model, sim_options);
}

EvalResult Simulator::Evaluate(const sim::Decision& decision) const {
  EvalResult r;
  r.peak.resize(static_cast<size_t>(cluster_->num_devices()));
  {
    py::gil_scoped_release release;
    r.eval = evaluator_->Evaluate(decision, r.peak);
  }
  return r;
}

void BindSim(py::module_& m) {
  m.def(
      "set_num_threads",
      [](int threads) {
        // One global_control at a time: replacing it lifts the previous limit.
        static std::unique_ptr<tbb::global_control> control;
        control.reset();
        if (threads > 0)
          control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                          static_cast<size_t>(threads));
      },
      py::arg("threads"),
      "Caps the threads of gosim's thread pool (evaluate_batch, agents); 0 lifts the cap.");

  py::class_<EvalResult>(m, "Evaluation", "The summary of one simulated decision.")
      .def_property_readonly(
          "step_time_s", [](const EvalResult& r) { return r.eval.step_time; },
          "seconds; options['infeasible_step_time'] (100 s by default) when infeasible")
      .def_property_readonly(
          "feasible", [](const EvalResult& r) { return r.eval.feasible; },
          "False when some device ran out of memory")
      .def_property_readonly(
          "peak_memory_bytes", [](const EvalResult& r) { return Peaks(r.peak); },
          "per device (int64), up to the out-of-memory event when infeasible")
      .def_property_readonly("max_peak_memory_bytes", [](const EvalResult& r) { return r.eval.peak_memory; })
      .def_property_readonly(
          "oom_device", [](const EvalResult& r) { return r.eval.oom_device; },
          "first device that ran out of memory, or -1")
      .def_property_readonly(
          "host_busy_s", [](const EvalResult& r) { return r.eval.host_busy; },
          "seconds the busiest host thread dispatched (0 when the host is not modelled)")
      .def("__repr__", [](const EvalResult& r) {
        return "<gosim.Evaluation step_time_s=" + std::to_string(r.eval.step_time) +
               " feasible=" + (r.eval.feasible ? "True" : "False") + ">";
      });

  py::class_<BatchResult>(m, "BatchEvaluation", "The summaries of a batch of decisions, as arrays.")
      .def_readonly("step_time_s", &BatchResult::step_time_s, "(N,) float64")
      .def_readonly("feasible", &BatchResult::feasible, "(N,) bool")
      .def_readonly("peak_memory_bytes", &BatchResult::peak_memory_bytes, "(N, num_devices) int64")
      .def_readonly("oom_device", &BatchResult::oom_device, "(N,) int32, -1 when feasible")
      .def("__len__", [](const BatchResult& b) { return b.step_time_s.size(); });

  py::class_<Simulator>(m, "Simulator", R"(The simulator bound to one graph and cluster.

cost_model: "auto" (default), "roofline", "measured" or "calibrated", with
cost_model_options (e.g. {"profile": "configs/calibrated/a100.yaml"});
options: simulator options as in an experiment's `sim:` mapping
(track_memory, infeasible_step_time, stop_at_oom, reuse_transfers,
oom_live_tensors, execution, processes, micro_batches, schedule, max_load);
cluster "from-graph" takes the machine an msr-fiddle problem file brings.)")
      .def(py::init([](const py::handle& graph, const py::handle& cluster, const std::string& cost_model,
                       const py::object& cost_model_options, const py::object& options) {
             GraphPtr g = GraphOf(graph);
             ClusterPtr c = ClusterFor(cluster, *g);
             return std::make_unique<Simulator>(std::move(g), std::move(c), cost_model, cost_model_options,
                                                options);
           }),
           py::arg("graph"), py::arg("cluster"), py::arg("cost_model") = "auto",
           py::arg("cost_model_options") = py::none(), py::arg("options") = py::none())
      .def_property_readonly("graph", &Simulator::graph)
      .def_property_readonly("cluster", &Simulator::cluster)
      .def_property_readonly("cost_model", &Simulator::cost_model_name,
                             "the cost model's name as given (\"auto\", \"roofline\", ...)")
      .def_property_readonly(
          "cost_model_used", &Simulator::cost_model_used,
          "what the cost model uses for this graph and cluster, as the command line prints it "
          "(e.g. \"auto (H100: calibrated (configs/calibrated/h100.yaml))\")")
      .def_property_readonly("num_nodes", [](const Simulator& s) { return s.graph()->num_nodes(); })
      .def_property_readonly("num_devices", [](const Simulator& s) { return s.cluster()->num_devices(); })
      .def_property_readonly(
          "evaluations", [](const Simulator& s) { return s.evaluator().evaluations(); },
          "simulations run so far")
      .def(
          "evaluate",
          [](const Simulator& s, const py::handle& devices, const py::handle& priority,
             const py::handle& fusion, const py::handle& transfer_priority, int data_parallel) {
            return s.Evaluate(DecisionOf(s, devices, priority, fusion, transfer_priority, data_parallel));
          },
          py::arg("devices") = py::none(), py::arg("priority") = py::none(), py::arg("fusion") = py::none(),
          py::arg("transfer_priority") = py::none(), py::kw_only(), py::arg("data_parallel") = 0,
          "Simulates one decision: a device index per node (integer array); optional priority per node "
          "(higher runs first), fusion group per node (-1 = not fused) and priority per (tensor, "
          "destination device), indexed tensor * num_devices + device (REGAL's tensor genes). Or "
          "data_parallel=N instead of a placement: PyTorch DDP over devices 0..N-1, a replica of the "
          "graph's batch each; step_time_s is the DDP step / N (per graph batch, docs/AGENTS.md). "
          "Releases the GIL.")
      .def(
          "evaluate_batch",
          [](const Simulator& s, const py::iterable& decisions, const py::object& priorities,
             const py::object& fusions, const py::object& transfer_priorities) {
            std::vector<sim::Decision> batch;
            for (py::handle d : decisions) batch.push_back(MakeDecision(d, py::none(), py::none()));
            // Optional per-decision parts: an iterable with one entry (or None) per decision.
            const auto parts = [&batch](const py::object& values, const char* what, auto set) {
              if (values.is_none()) return;
              size_t i = 0;
              for (py::handle v : values) {
                if (i >= batch.size()) throw DecisionError(std::string("more ") + what + " than decisions");
                if (!v.is_none()) set(batch[i], v);
                ++i;
              }
              if (i != batch.size()) throw DecisionError(std::string("fewer ") + what + " than decisions");
            };
            parts(priorities, "priorities",
                  [](sim::Decision& d, py::handle v) { d.priority = DoubleVector(v, "priority"); });
            parts(fusions, "fusions",
                  [](sim::Decision& d, py::handle v) { d.fusion_group = IntVector(v, "fusion"); });
            parts(transfer_priorities, "transfer priorities", [](sim::Decision& d, py::handle v) {
              d.transfer_priority = DoubleVector(v, "transfer_priority");
            });
            const size_t n = batch.size();
            const size_t devices = static_cast<size_t>(s.cluster()->num_devices());
            std::vector<sim::Evaluation> out(n);
            std::vector<int64_t> peaks(n * devices);
            {
              py::gil_scoped_release release;
              s.evaluator().EvaluateBatch(batch, out, peaks);
            }
            BatchResult r;
            r.step_time_s = py::array_t<double>(static_cast<py::ssize_t>(n));
            r.feasible = py::array_t<bool>(static_cast<py::ssize_t>(n));
            r.oom_device = py::array_t<int32_t>(static_cast<py::ssize_t>(n));
            r.peak_memory_bytes =
                py::array_t<int64_t>({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(devices)});
            auto st = r.step_time_s.mutable_unchecked<1>();
            auto fe = r.feasible.mutable_unchecked<1>();
            auto oo = r.oom_device.mutable_unchecked<1>();
            for (size_t i = 0; i < n; ++i) {
              st(i) = out[i].step_time;
              fe(i) = out[i].feasible;
              oo(i) = out[i].oom_device;
            }
            std::copy(peaks.begin(), peaks.end(), r.peak_memory_bytes.mutable_data());
            return r;
          },
          py::arg("decisions"), py::arg("priorities") = py::none(), py::arg("fusions") = py::none(),
          py::arg("transfer_priorities") = py::none(),
          "Simulates many placements (an iterable of integer arrays, or a 2-D array with one row per "
          "decision; the optional parts as iterables with an array or None per decision) in parallel "
          "on gosim's thread pool, with the GIL released.")
      .def(
          "_time_evaluate",
          [](const Simulator& s, const py::handle& devices, int repeats) {
            // For tests/bench/python_bench.py: seconds per Evaluate timed
            // inside C++, the baseline of the Python call's overhead.
            const sim::Decision d = MakeDecision(devices, py::none(), py::none());
            std::vector<int64_t> peak(static_cast<size_t>(s.cluster()->num_devices()));
            py::gil_scoped_release release;
            const auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < repeats; ++i) s.evaluator().Evaluate(d, peak);
            const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
            return elapsed.count() / std::max(repeats, 1);
          },
          py::arg("devices"), py::arg("repeats"))
      .def(
          "simulate",
          [](const Simulator& s, const py::handle& devices, const py::handle& priority,
             const py::handle& fusion, const py::handle& transfer_priority, bool timeline,
             const std::string& trace, int data_parallel) {
            const sim::Decision d =
                DecisionOf(s, devices, priority, fusion, transfer_priority, data_parallel);
            if (data_parallel > 0 && (timeline || !trace.empty()))
              throw DecisionError("simulate: no timeline or trace for a data-parallel decision", {},
                                  "`gosim simulate --data-parallel " + std::to_string(data_parallel) +
                                      " --trace FILE` writes the DDP step's timeline");
            std::string text;
            {
              py::gil_scoped_release release;
              const sim::SimResult r = s.evaluator().Simulate(d, timeline || !trace.empty());
              if (!trace.empty())
                sim::WriteChromeTrace(trace, r, s.evaluator().simulated_graph(), *s.cluster(),
                                      s.cost_model_used());
              if (!trace.empty() && !timeline) {
                sim::SimResult summary = r;
                summary.ops.clear();
                summary.transfer_hops.clear();
                text = sim::SimResultToJson(summary, s.evaluator().simulated_graph(), *s.cluster(),
                                            s.cost_model_used());
              } else {
                text = sim::SimResultToJson(r, s.evaluator().simulated_graph(), *s.cluster(),
                                            s.cost_model_used());
              }
            }
            return py::module_::import("json").attr("loads")(text);
          },
          py::arg("devices") = py::none(), py::arg("priority") = py::none(), py::arg("fusion") = py::none(),
          py::arg("transfer_priority") = py::none(), py::arg("timeline") = false, py::arg("trace") = "",
          py::kw_only(), py::arg("data_parallel") = 0,
          "The full result as a dict, the JSON of `gosim simulate --json` (with the timeline when asked; "
          "'cost_model' is Simulator.cost_model_used); trace=PATH also writes the Chrome trace (opens in "
          "Perfetto; its otherData names the cost model too). data_parallel=N: the DDP step of N replicas "
          "('ddp_step_time_s', and 'step_time_s' per graph batch), as evaluate().")
      .def(
          "load_decision",
          [](const Simulator& s, const std::string& path) {
            const sim::Decision d = sim::LoadDecision(path, *s.graph(), *s.cluster());
            py::dict out;
            if (d.is_data_parallel()) {
              out["data_parallel"] = d.data_parallel;
              return out;
            }
            out["devices"] =
                py::array_t<int32_t>(static_cast<py::ssize_t>(d.placement.size()), d.placement.data());
            out["priority"] =
                d.priority.empty()
                    ? py::object(py::none())
                    : py::array_t<double>(static_cast<py::ssize_t>(d.priority.size()), d.priority.data());
            out["transfer_priority"] =
                d.transfer_priority.empty()
                    ? py::object(py::none())
                    : py::array_t<double>(static_cast<py::ssize_t>(d.transfer_priority.size()),
                                          d.transfer_priority.data());
            out["fusion"] = d.fusion_group.empty()
                                ? py::object(py::none())
                                : py::array_t<int32_t>(static_cast<py::ssize_t>(d.fusion_group.size()),
                                                       d.fusion_group.data());
            return out;
          },
          py::arg("path"),
          "A decision JSON file as {'devices', 'priority', 'fusion', 'transfer_priority'} arrays (None when "
          "absent), or {'data_parallel': N} for a data-parallel decision (evaluate(**it) simulates either).")
      .def(
          "save_decision",
          [](const Simulator& s, const std::string& path, const py::object& decision,
             const py::handle& priority, const py::handle& fusion, const py::handle& transfer_priority) {
            sim::Decision d;
            // An OptimizeResult, or a dict of the parts (OptimizeResult.decision(),
            // load_decision()): every part it has is written, none dropped.
            py::object parts = py::hasattr(decision, "decision") && !py::isinstance<py::array>(decision)
                                   ? decision.attr("decision")()
                                   : decision;
            if (py::isinstance<py::dict>(parts)) {
              if (!priority.is_none() || !fusion.is_none() || !transfer_priority.is_none())
                throw DecisionError(
                    "save_decision: give a decision (an OptimizeResult or a dict) or arrays, not both");
              const py::dict dict = parts;
              for (const auto& [key, value] : dict) {
                const std::string k = py::cast<std::string>(key);
                if (k != "devices" && k != "priority" && k != "fusion" && k != "transfer_priority" &&
                    k != "data_parallel")
                  throw DecisionError("save_decision: unknown decision part '" + k + "'", {},
                                      "the parts are devices, priority, fusion, transfer_priority and "
                                      "data_parallel");
              }
              const auto part = [&dict](const char* key) -> py::handle {
                return dict.contains(key) ? py::handle(dict[key]) : py::handle(py::none());
              };
              const int replicas = part("data_parallel").is_none() ? 0 : py::cast<int>(part("data_parallel"));
              if (replicas == 0 && !dict.contains("devices"))
                throw DecisionError("save_decision: the decision has no 'devices' (nor 'data_parallel')");
              d = DecisionOf(s, part("devices"), part("priority"), part("fusion"), part("transfer_priority"),
                             replicas);
            } else {
              d = MakeDecision(parts, priority, fusion, transfer_priority);
            }
            sim::ValidateDecision(d, *s.graph(), *s.cluster());
            sim::SaveDecision(path, d, *s.graph(), *s.cluster());
          },
          py::arg("path"), py::arg("decision"), py::arg("priority") = py::none(),
          py::arg("fusion") = py::none(), py::arg("transfer_priority") = py::none(),
          "Writes a decision JSON file (docs/FORMATS.md) that `gosim simulate --decision` reads: an "
          "OptimizeResult or a dict of parts (all of its parts; {'data_parallel': N} for DDP), or a device "
          "array with the optional parts.");
}

}  // namespace gosim::python
