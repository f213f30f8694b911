#include "agents/colocation.h"

#include <algorithm>

namespace gosim::agents {

ColocationUnits::ColocationUnits(const graphs::Graph& graph, bool enforce) {
  const int32_t n = graph.num_nodes();
  unit_.assign(static_cast<size_t>(n), -1);
  weight_.resize(static_cast<size_t>(n));
  std::vector<int32_t> unit_of_group(graph.colocation_groups().size(), -1);
  int32_t units = 0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    const graphs::Node& node = graph.node(v);
    weight_[static_cast<size_t>(v)] =
        1.0 + static_cast<double>(node.persistent_bytes) + static_cast<double>(node.bytes_written);
    const int32_t group = enforce ? node.colocation : -1;
    if (group < 0) {
      unit_[static_cast<size_t>(v)] = units++;
      continue;
    }
    int32_t& u = unit_of_group[static_cast<size_t>(group)];
    if (u < 0) {
      u = units++;
    } else {
      grouped_ = true;
    }
    unit_[static_cast<size_t>(v)] = u;
  }
  // Counting sort of the nodes by unit (members ascending).
  offsets_.assign(static_cast<size_t>(units) + 1, 0);
  for (int32_t u : unit_) ++offsets_[static_cast<size_t>(u) + 1];
  for (size_t u = 0; u < static_cast<size_t>(units); ++u) offsets_[u + 1] += offsets_[u];
  members_.resize(static_cast<size_t>(n));
  std::vector<int32_t> next(offsets_.begin(), offsets_.end() - 1);
  for (graphs::NodeId v = 0; v < n; ++v)
    members_[static_cast<size_t>(next[unit_[static_cast<size_t>(v)]]++)] = v;
}

ColocationUnits::ColocationUnits(const sim::Evaluator& evaluator)
    : ColocationUnits(evaluator.graph(), evaluator.options().enforce_colocation) {}

bool ColocationUnits::Splits(std::span<const int32_t> placement) const {
  if (!grouped_) return false;
  for (size_t v = 0; v < unit_.size(); ++v) {
    const graphs::NodeId first = members(unit_[v]).front();
    if (placement[v] != placement[static_cast<size_t>(first)]) return true;
  }
  return false;
}

int32_t ColocationUnits::KeepTogether(std::span<int32_t> placement) const {
  if (!grouped_) return 0;
  int32_t moved = 0;
  std::vector<double> share;
  for (int32_t u = 0; u < num_units(); ++u) {
    const std::span<const graphs::NodeId> nodes = members(u);
    if (nodes.size() < 2) continue;
    share.clear();
    for (graphs::NodeId v : nodes) {
      const auto d = static_cast<size_t>(std::max(0, placement[static_cast<size_t>(v)]));
      if (d >= share.size()) share.resize(d + 1, 0.0);
      share[d] += weight_[static_cast<size_t>(v)];
    }
    const auto best = static_cast<int32_t>(std::max_element(share.begin(), share.end()) - share.begin());
    for (graphs::NodeId v : nodes) {
      int32_t& d = placement[static_cast<size_t>(v)];
      if (d != best) {
        d = best;
        ++moved;
      }
    }
  }
  return moved;
}

std::vector<int32_t> ColocationUnits::Expand(std::span<const int32_t> unit_device) const {
  std::vector<int32_t> out(unit_.size());
  for (size_t v = 0; v < unit_.size(); ++v) out[v] = unit_device[static_cast<size_t>(unit_[v])];
  return out;
}

}  // namespace gosim::agents
