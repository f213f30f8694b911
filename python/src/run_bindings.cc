// Agents and experiments for Python: gosim._optimize (behind
// gosim.optimize) and gosim.run_experiment.
//
// Agents are built only through the agent registry (agents::MakeAgent), so
// every registered agent is reachable by name, and an unknown one is the
// registry's one-line ConfigError listing the valid names.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "core/error.h"
#include "core/yaml.h"
#include "experiments/experiment_config.h"
#include "experiments/runner.h"
#include "python/src/bindings.h"
#include "python/src/simulator.h"
#include "sim/decision.h"

namespace py = pybind11;

namespace gosim::python {
namespace {

struct OptimizeResult {
  std::string agent;
  GraphPtr graph;  // what the decision is for, to save it
  ClusterPtr cluster;
  std::string cost_model;  // Simulator::cost_model_used
  sim::Decision best;
  sim::Evaluation final;  // the best decision, re-simulated
  std::vector<int64_t> peak;
  double objective = 0.0;
  int64_t evaluations = 0;
  double wall_seconds = 0.0;
  std::vector<agents::CurvePoint> curve;
  std::map<std::string, double> extra;
};

OptimizeResult Optimize(const Simulator& s, const std::string& agent_name, int64_t budget,
                        double wall_seconds, const py::object& options, uint64_t seed,
                        const py::object& objective) {
  YAML::Node options_node = ToYaml(options);
  YamlMap options_map(options_node, "options", "");
  std::unique_ptr<agents::Agent> agent = agents::MakeAgent(agent_name, options_map);
  const agents::Objective parsed = experiments::ParseObjective(ToYaml(objective), "objective", "objective");
  if (budget < 0 || !(wall_seconds >= 0.0)) {
    throw ConfigError("a budget must be >= 0", Location{"budget"},
                      "give budget=N (evaluations) and/or wall_seconds=S; 0 = the agent's default");
  }
  OptimizeResult r;
  r.agent = agent_name;
  r.graph = s.graph();
  r.cluster = s.cluster();
  r.cost_model = s.cost_model_used();
  py::gil_scoped_release release;
  const agents::Problem problem{*s.graph(), *s.cluster(),           s.evaluator(),
                                parsed,     {budget, wall_seconds}, seed};
  experiments::SolveResult solved = experiments::Solve(*agent, problem);
  r.best = std::move(solved.result.best);
  r.peak.resize(static_cast<size_t>(s.cluster()->num_devices()));
  r.final = s.evaluator().Evaluate(r.best, r.peak);
  r.objective = solved.score;
  r.evaluations = solved.result.evaluations;
  r.wall_seconds = solved.wall_seconds;
  r.curve = std::move(solved.result.curve);
  r.extra = std::move(solved.result.extra);
  return r;
}

template <typename T>
py::object ArrayOrNone(const std::vector<T>& v) {
  if (v.empty()) return py::none();
  return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data());
}

}  // namespace

void BindRun(py::module_& m) {
  py::class_<OptimizeResult>(m, "OptimizeResult",
                             "What an agent found: its best decision and how it got there.")
      .def_readonly("agent", &OptimizeResult::agent)
      .def_property_readonly(
          "devices",
          [](const OptimizeResult& r) {
            return r.best.is_data_parallel() ? py::object(py::none()) : ArrayOrNone(r.best.placement);
          },
          "device per node of the best decision (int32); None for a data-parallel one")
      .def_property_readonly(
          "data_parallel", [](const OptimizeResult& r) { return r.best.data_parallel; },
          "DDP replicas of a data-parallel decision (agent data_parallel), 0 for a placement")
      .def_property_readonly(
          "priority", [](const OptimizeResult& r) { return ArrayOrNone(r.best.priority); },
          "scheduling priority per node, or None")
      .def_property_readonly(
          "fusion", [](const OptimizeResult& r) { return ArrayOrNone(r.best.fusion_group); },
          "fusion group per node, or None")
      .def_property_readonly(
          "transfer_priority", [](const OptimizeResult& r) { return ArrayOrNone(r.best.transfer_priority); },
          "priority per (tensor, destination device), or None")
      .def(
          "decision",
          [](const OptimizeResult& r) {
            py::dict d;
            if (r.best.is_data_parallel()) {
              d["data_parallel"] = r.best.data_parallel;
              return d;
            }
            d["devices"] = ArrayOrNone(r.best.placement);
            d["priority"] = ArrayOrNone(r.best.priority);
            d["fusion"] = ArrayOrNone(r.best.fusion_group);
            d["transfer_priority"] = ArrayOrNone(r.best.transfer_priority);
            return d;
          },
          "the best decision as keyword arguments of Simulator.evaluate: sim.evaluate(**r.decision()) "
          "({'data_parallel': N} for a data-parallel one)")
      .def(
          "save",
          [](const OptimizeResult& r, const std::string& path) {
            sim::SaveDecision(path, r.best, *r.graph, *r.cluster);
          },
          py::arg("path"),
          "Writes the best decision, all of its parts (placement, priorities, fusion, transfer priorities), "
          "as "
          "a decision JSON file that `gosim simulate --decision` and Simulator.load_decision read.")
      .def_readonly("cost_model", &OptimizeResult::cost_model,
                    "the cost model the agent's simulator used (Simulator.cost_model_used)")
      .def_property_readonly("step_time_s", [](const OptimizeResult& r) { return r.final.step_time; })
      .def_property_readonly("feasible", [](const OptimizeResult& r) { return r.final.feasible; })
      .def_property_readonly(
          "peak_memory_bytes", [](const OptimizeResult& r) { return ArrayOrNone(r.peak); },
          "per device (int64)")
      .def_readonly("objective", &OptimizeResult::objective, "the objective's score of the best decision")
      .def_readonly("evaluations", &OptimizeResult::evaluations, "simulator evaluations the agent used")
      .def_readonly("wall_seconds", &OptimizeResult::wall_seconds)
      .def_readonly("extra", &OptimizeResult::extra, "agent-specific figures (e.g. bound and gap)")
      .def_property_readonly(
          "curve",
          [](const OptimizeResult& r) {
            const auto n = static_cast<py::ssize_t>(r.curve.size());
            py::array_t<int64_t> evals(n);
            py::array_t<double> wall(n), best(n);
            for (py::ssize_t i = 0; i < n; ++i) {
              evals.mutable_at(i) = r.curve[static_cast<size_t>(i)].evaluations;
              wall.mutable_at(i) = r.curve[static_cast<size_t>(i)].wall_seconds;
              best.mutable_at(i) = r.curve[static_cast<size_t>(i)].best_objective;
            }
            py::dict d;
            d["evaluations"] = evals;
            d["wall_seconds"] = wall;
            d["best_objective"] = best;
            return d;
          },
          "best-so-far curve: {'evaluations', 'wall_seconds', 'best_objective'} arrays")
      .def("__repr__", [](const OptimizeResult& r) {
        return "<gosim.OptimizeResult agent=" + r.agent +
               " step_time_s=" + std::to_string(r.final.step_time) +
               " evaluations=" + std::to_string(r.evaluations) + ">";
      });

  m.def("_optimize", &Optimize, py::arg("simulator"), py::arg("agent"), py::arg("budget"),
        py::arg("wall_seconds"), py::arg("options"), py::arg("seed"), py::arg("objective"));
  m.def(
      "agents",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const std::string& name : agents::AgentNames())
          out.emplace_back(name, agents::AgentDescription(name));
        return out;
      },
      "(name, description) of every registered agent.");
  m.def("cost_models", &sim::CostModelNames, "The names of the cost models.");

  m.def(
      "run_experiment",
      [](const std::string& path, const std::vector<std::string>& overrides, int64_t max_cells, bool progress,
         const std::vector<std::string>& only, bool final, bool quick) {
        const experiments::ExperimentConfig config = experiments::LoadExperiment(path, overrides, quick);
        experiments::RunOptions options;
        options.max_cells = max_cells;
        options.progress = progress;
        options.only_agents = only;
        options.final = final;
        experiments::RunReport report;
        {
          py::gil_scoped_release release;
          report = experiments::RunExperiment(config, options);
        }
        py::dict d;
        d["folder"] = report.folder;
        d["total_cells"] = report.total_cells;
        d["already_finished"] = report.already_finished;
        d["reused"] = report.reused;
        d["ran"] = report.ran;
        d["held_back"] = report.held_back;
        d["failed"] = report.failed;
        return d;
      },
      py::arg("path"), py::arg("overrides") = std::vector<std::string>{}, py::arg("max_cells") = -1,
      py::arg("progress") = false, py::arg("only") = std::vector<std::string>{}, py::arg("final") = false,
      py::arg("quick") = false,
      "Runs (or resumes) a YAML experiment as `gosim run` does; overrides are 'key=value' strings, `only` "
      "the agent labels to run now (`--only`), `final` allows test graphs (`--final`, logged in the run "
      "folder), `quick` applies the experiment's quick: overrides first (`--quick`). Returns {'folder', "
      "'total_cells', 'already_finished', 'reused', 'ran', 'held_back', "
      "'failed'}; read_results(folder) reads what it wrote.");
}

}  // namespace gosim::python
