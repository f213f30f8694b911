// gosim_hw: a lean driver of the hardware executor for builds where the full
// `gosim` program (agents, learned agents) is not built. It does what
// `gosim profile`, `gosim calibrate --out` and `gosim replay` do, with the
// same library calls and defaults, for generated graphs and cluster files:
//   gosim_hw profile GEN_SPEC CLUSTER.yaml OUT.json.gz STEPS WARMUP
//   gosim_hw fit [--fit nnls|huber] TRACE.json.gz [TRACE.json.gz ...] OUT.yaml
//   gosim_hw replay GEN_SPEC CLUSTER.yaml PROFILE.yaml OUT.json REPEATS WARMUP DECISION.json...
// GEN_SPEC is NAME:k=v,... as after "gen:" in gosim.
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "calibration/fit.h"
#include "calibration/hardware/executor.h"
#include "calibration/hardware/replay_run.h"
#include "calibration/samples.h"
#include "calibration/trace_reader.h"
#include "core/error.h"
#include "core/io.h"
#include "graphs/generators/generators.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/device_profile.h"

namespace {

using namespace gosim;  // NOLINT: a small driver

graphs::Graph Generated(const std::string& spec) {
  const auto [name, params] = graphs::ParseGeneratorSpec(spec);
  return graphs::Generate(name, params, "command line");
}

int Run(const std::vector<std::string>& a) {
  if (a.size() >= 6 && a[0] == "profile") {
    const graphs::Graph graph = Generated(a[1]);
    const sim::Cluster cluster = sim::LoadCluster(a[2]);
    calibration::hardware::ExecutorOptions options;
    const int32_t cores = std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
    options.intra_op_threads = std::max<int32_t>(1, cores / cluster.num_devices());
    calibration::hardware::Executor executor(graph, options);
    const auto m =
        executor.Profile(sim::SingleDeviceDecision(graph, 0), std::stoi(a[5]), std::stoi(a[4]), a[3]);
    std::printf("%s: %d nodes, %d fallbacks; median step %.3f ms; trace %s\n", graph.name().c_str(),
                graph.num_nodes(), executor.plan().fallbacks, m.median_step_time * 1e3, a[3].c_str());
    return 0;
  }
  if (a.size() >= 3 && a[0] == "fit") {
    calibration::FitOptions fit;
    size_t first = 1;
    if (a.size() >= 5 && a[1] == "--fit") {  // as `gosim calibrate --fit`
      fit.method = calibration::ParseFitMethod(a[2]);
      first = 3;
    }
    std::vector<calibration::TraceSamples> parts;
    for (size_t i = first; i + 1 < a.size(); ++i)
      parts.push_back(calibration::ExtractSamples(calibration::ReadTrace(a[i])));
    const calibration::TraceSamples samples = calibration::MergeSamples(parts);
    const std::string& out = a.back();
    const sim::DeviceProfile profile = calibration::FitProfile(samples, fit, {}, samples.step_numbers);
    sim::SaveDeviceProfile(out, profile);
    std::printf(
        "%zu op samples, %zu steps from %zu trace(s), launch overhead %.2f us; profile for %s written to "
        "%s\n",
        samples.ops.size(), samples.step_numbers.size(), parts.size(), samples.launch_overhead * 1e6,
        profile.device_kind.c_str(), out.c_str());
    return 0;
  }
  if (a.size() >= 8 && a[0] == "replay") {
    const graphs::Graph graph = Generated(a[1]);
    const sim::Cluster cluster = sim::LoadCluster(a[2]);
    YAML::Node cost_options(YAML::NodeType::Map);
    cost_options["profile"] = a[3];
    cost_options["fallback"] = "error";
    const auto cost_model = sim::MakeCostModel("calibrated", cost_options, "profile");
    std::vector<sim::Decision> decisions;
    std::vector<std::string> names(a.begin() + 7, a.end());
    for (const std::string& path : names) decisions.push_back(sim::LoadDecision(path, graph, cluster));
    calibration::hardware::ReplayRunOptions options;
    options.repeats = std::stoi(a[5]);
    options.warmup = std::stoi(a[6]);
    options.profile_name = a[3];
    const auto summary =
        calibration::hardware::RunReplay(graph, cluster, cost_model, decisions, names, options, stdout);
    WriteFileAtomic(a[4], summary.dump(2) + "\n");
    return 0;
  }
  std::fprintf(stderr, "usage: see the comment at the top of calibration/hardware/hw_tool.cc\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const gosim::Error& e) {
    std::fprintf(stderr, "gosim_hw: %s: %s\n", e.kind(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gosim_hw: internal error: %s\n", e.what());
    return 1;
  }
}
