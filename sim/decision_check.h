// Internal to sim/: decision validation with a caller-chosen way of naming
// where a problem is (vector indices for in-memory decisions, JSON paths and
// lines for files). Not part of the public API; use ValidateDecision.
#ifndef GOSIM_SIM_DECISION_CHECK_H_
#define GOSIM_SIM_DECISION_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>

#include "core/error.h"
#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/decision.h"

namespace gosim::sim::internal {

// What a problem is about, for locating it.
enum class Field { kPlacement, kPriority, kTransferPriority, kFusion, kWhole };

// Maps (field, node or group id or -1) to a Location.
using Locator = std::function<Location(Field field, int64_t index)>;

void CheckDecision(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                   bool check_colocation, const Locator& where);

}  // namespace gosim::sim::internal

#endif  // GOSIM_SIM_DECISION_CHECK_H_
