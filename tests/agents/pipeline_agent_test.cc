// The `pipeline` agent (agents/pipeline_split.cc): contiguous stages of the
// forward pass balanced by time, backward ops with their scope, weights with
// their first reader; run as GPipe and 1F1B pipelines by the engine.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "agents/agent.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"

namespace gosim {
namespace {

agents::AgentResult RunPipeline(const graphs::Graph& g, const sim::Cluster& cluster,
                                const sim::Evaluator& evaluator, agents::ObjectiveKind kind) {
  YAML::Node none(YAML::NodeType::Map);
  YamlMap map(none, "test", "");
  agents::Objective objective;
  objective.kind = kind;
  const agents::Problem problem{g, cluster, evaluator, objective, agents::Budget{}, 0};
  return agents::MakeAgent("pipeline", map)->Optimize(problem);
}

}  // namespace

TEST_CASE("pipeline: one contiguous stage per GPU, faster than one GPU as a pipeline; 1F1B holds less") {
  const graphs::Graph g =
      graphs::Generate("bert", LoadYamlString("{layers: 4, training: true, batch: 8}"), "test", "");
  const sim::Cluster cluster = sim::LoadCluster("h100x8_nvswitch:gpus=4");
  auto options_for = [](sim::Schedule schedule) {
    sim::SimOptions o;
    o.micro_batches = 4;
    o.schedule = schedule;
    o.processes = sim::Processes::kPerDevice;  // one process per stage, as pipelines run
    return o;
  };
  const sim::Evaluator gpipe(g, cluster, sim::MakeCostModel("auto"), options_for(sim::Schedule::kGPipe));
  const sim::Evaluator one(g, cluster, sim::MakeCostModel("auto"), options_for(sim::Schedule::k1F1B));
  const agents::AgentResult r = RunPipeline(g, cluster, gpipe, agents::ObjectiveKind::kThroughput);
  CHECK(r.evaluations == 1);
  REQUIRE(r.best_evaluation.feasible);
  CHECK(r.extra.at("stages") == 4);
  // Contiguous: along the forward pass the stage never goes back.
  int32_t last = 0;
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    if (g.node(v).phase != graphs::Phase::kForward || g.in_edges(v).empty()) continue;
    const int32_t d = r.best.placement[static_cast<size_t>(v)];
    CHECK(d >= last);
    last = std::max(last, d);
  }
  CHECK(last == 3);
  // Every stage holds weights; the pipeline beats one GPU per micro-batch.
  const sim::SimResult piped = gpipe.Simulate(r.best);
  for (const sim::DeviceStats& d : piped.devices) CHECK(d.persistent_memory > 0);
  const sim::Decision single = sim::SingleDeviceDecision(g, 0);
  CHECK(gpipe.Evaluate(r.best).throughput < gpipe.Evaluate(single).throughput);
  // 1F1B (eager, per-device processes: its program order keeps each gated
  // forward behind the backwards it waits for) runs and holds no more
  // activations on the first stage than GPipe.
  const sim::SimResult interleaved = one.Simulate(r.best);
  CHECK(interleaved.feasible);
  CHECK(interleaved.devices[0].peak_memory <= piped.devices[0].peak_memory);
  // One process driving every stage (eager, in-order streams): the same.
  sim::SimOptions single_process = options_for(sim::Schedule::k1F1B);
  single_process.processes = sim::Processes::kOne;
  const sim::Evaluator one_process(g, cluster, sim::MakeCostModel("auto"), single_process);
  CHECK(one_process.Evaluate(r.best).feasible);
  // As a plain step objective it is a placement like any other.
  const sim::Evaluator step(g, cluster, sim::MakeCostModel("auto"), sim::SimOptions{});
  CHECK(RunPipeline(g, cluster, step, agents::ObjectiveKind::kStepTime).best_evaluation.feasible);
}

}  // namespace gosim
