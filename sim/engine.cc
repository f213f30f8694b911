// Engine: the model built once per (graph, cluster, cost model) and the
// entry points that pick a Run (sim/engine_run.h) for a decision.
#include "sim/engine_run.h"

namespace gosim::sim {

Engine::Engine(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
               const SimOptions& options)
    : graph_(graph),
      cluster_(cluster),
      cost_model_(cost_model),
      options_(options),
      host_(ResolveHost(options, cluster, cost_model)),
      model_(BuildEngineModel(graph, cluster, cost_model, host_.execution != Execution::kNone,
                              host_.execution == Execution::kEager)),
      max_load_(model_, cluster) {
  if (host_.execution == Execution::kCaptured) {
    for (int32_t v = 0; v < model_.num_nodes; ++v) {
      if (model_.host_sync[static_cast<size_t>(v)]) {
        throw ConfigError("execution captured cannot capture '" + graph.node(v).name + "' (" +
                              graph.op_type_name_of(v) + "): it makes the host wait for the device",
                          {}, "use execution eager, or remove the synchronizing op from the step");
      }
    }
  }
}

template <bool kFull>
RunOutcome Engine::Dispatch(const Decision& decision, Workspace& ws) const {
  const bool fusion = decision.has_fusion();
  if (host_.execution != Execution::kNone) {
    return fusion ? Run<kFull, true, true>(*this, decision, ws).Execute()
                  : Run<kFull, false, true>(*this, decision, ws).Execute();
  }
  return fusion ? Run<kFull, true, false>(*this, decision, ws).Execute()
                : Run<kFull, false, false>(*this, decision, ws).Execute();
}

Evaluation Engine::Evaluate(const Decision& decision, Workspace& ws) const {
  const RunOutcome out = Dispatch<false>(decision, ws);
  Evaluation eval;
  eval.feasible = out.oom.device < 0;
  eval.oom_device = out.oom.device;
  eval.step_time =
      eval.feasible || options_.infeasible_step_time <= 0.0 ? out.makespan : options_.infeasible_step_time;
  int64_t peak = 0;
  for (int64_t p : ws.peak) peak = std::max(peak, p);
  eval.peak_memory = static_cast<double>(peak);
  eval.host_busy = out.host_busy;
  if (options_.max_load) eval.max_load = max_load_.Evaluate(decision.placement);
  return eval;
}

SimResult Engine::Simulate(const Decision& decision, bool timeline, Workspace& ws) const {
  const RunOutcome out = Dispatch<true>(decision, ws);
  SimResult result = AssembleResult(model_, ws, out, timeline);
  result.execution = host_.execution;
  result.processes = host_.processes;
  result.max_load = max_load_.Evaluate(decision.placement);
  return result;
}

}  // namespace gosim::sim
