// Chrome trace JSON (the Trace Event Format) of a simulated step, for
// Perfetto (ui.perfetto.dev) or chrome://tracing.
//
// Process "devices" has one track (tid) per device compute stream, process
// "links" one per link; every kernel and transfer hop is a complete ("X")
// event with its node or tensor name and details in args. Times are in
// microseconds of simulated time. The output is deterministic: the same
// result gives the same bytes.
#ifndef GOSIM_SIM_TIMELINE_H_
#define GOSIM_SIM_TIMELINE_H_

#include <string>

#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/result.h"

namespace gosim::sim {

// The trace as JSON text. `result` must come from Simulate(..., timeline =
// true); an Error says so otherwise. A non-empty `cost_model`
// (CostModel::Describe) is recorded in otherData.
std::string ChromeTraceJson(const SimResult& result, const graphs::Graph& graph, const Cluster& cluster,
                            const std::string& cost_model = {});
// Writes ChromeTraceJson atomically to `path` (gzip'd when it ends in ".gz").
void WriteChromeTrace(const std::string& path, const SimResult& result, const graphs::Graph& graph,
                      const Cluster& cluster, const std::string& cost_model = {});

}  // namespace gosim::sim

#endif  // GOSIM_SIM_TIMELINE_H_
