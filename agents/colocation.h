// The colocation view every agent decides on: the units that must share a
// device. A unit is one colocation group of the graph (a weight, its
// optimizer state and update ops; graphs/graph.h) or one node outside every
// group. When the simulator does not enforce colocation
// (sim::SimOptions::enforce_colocation false) every node is its own unit, so
// agents behave as they did without the constraint.
//
// How the agents use it (docs/AGENTS.md, "Colocation"):
//   - SearchTracker keeps every decision it evaluates on whole units
//     (KeepTogether), so no agent can return a split decision;
//   - partitioners partition units (BuildPartitionGraph over units);
//   - list schedulers (HEFT, m-ETF, m-SCT) pin a node to the device of its
//     unit once any member is placed; they still walk nodes in a topological
//     order, so contracting groups (which can create cycles) is never needed;
//   - BRKGA decodes a unit's device from the summed affinities of its members;
//     random search, local search and simulated annealing sample and move
//     units.
#ifndef GOSIM_AGENTS_COLOCATION_H_
#define GOSIM_AGENTS_COLOCATION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "graphs/graph.h"
#include "sim/evaluator.h"

namespace gosim::agents {

class ColocationUnits {
 public:
  // Units of `graph`; with `enforce` false, one unit per node.
  ColocationUnits(const graphs::Graph& graph, bool enforce);
  // Units for the evaluator's graph, enforced as its simulator options say.
  explicit ColocationUnits(const sim::Evaluator& evaluator);
  // Given units: `unit_of_node` numbers each node's unit 0..k-1 in order of
  // the units' smallest nodes (ColocationRuns' groups), each unit a union of
  // whole colocation groups.
  ColocationUnits(const graphs::Graph& graph, std::span<const int32_t> unit_of_node);

  int32_t num_units() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  int32_t num_nodes() const { return static_cast<int32_t>(unit_.size()); }
  // Unit of node `v`. Units are numbered by their smallest node id.
  int32_t unit(graphs::NodeId v) const { return unit_[static_cast<size_t>(v)]; }
  // Nodes of unit `u`, ascending.
  std::span<const graphs::NodeId> members(int32_t u) const {
    return {members_.data() + offsets_[static_cast<size_t>(u)],
            static_cast<size_t>(offsets_[static_cast<size_t>(u) + 1] - offsets_[static_cast<size_t>(u)])};
  }
  // True when some unit has more than one node (otherwise the view is the
  // plain node view and every placement keeps it).
  bool grouped() const { return grouped_; }

  // True when some unit of `placement` (one device per node) spans devices.
  bool Splits(std::span<const int32_t> placement) const;
  // Moves every unit of `placement` onto one device: the device holding the
  // largest share of the unit's weight (persistent plus written bytes of its
  // members, so a group follows its weight and optimizer state; each member
  // also counts one byte so that weightless groups follow the majority of
  // their nodes), ties to the lower device. Returns the number of nodes
  // moved. `placement` has one entry per node.
  int32_t KeepTogether(std::span<int32_t> placement) const;
  // One device per unit -> one device per node.
  std::vector<int32_t> Expand(std::span<const int32_t> unit_device) const;

 private:
  // members_, offsets_ and weight_ from unit_ (units 0..units-1).
  void Index(const graphs::Graph& graph, int32_t units);
  std::vector<int32_t> unit_;            // per node
  std::vector<int32_t> offsets_;         // num_units + 1 offsets into members_
  std::vector<graphs::NodeId> members_;  // nodes grouped by unit
  std::vector<double> weight_;           // per node (KeepTogether)
  bool grouped_ = false;
};

// ColocRL's groups (Mirhoseini et al. 2017, Sec. 3): one group per
// colocation group of the graph (TensorFlow colocation constraints); an op
// without a colocation group joins the group of its only consumer when it
// has exactly one (chains of single-consumer ops stay together), else it
// forms its own group. When more than `max_groups` groups remain (0: no
// cap), groups ordered by their first op are merged into `max_groups`
// consecutive runs of about equal op count (docs/DEVIATIONS.md). Returns
// the group of every node; groups are numbered 0..count-1 in order of their
// first op. `count` receives the group count. HRL's locality prior and
// ColocRL's placer use them (agents/learned/hrl/grouping.h).
std::vector<int32_t> ColocationRuns(const graphs::Graph& graph, int32_t max_groups, int32_t* count);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_COLOCATION_H_
