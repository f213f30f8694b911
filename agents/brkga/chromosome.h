// REGAL's BRKGA chromosome and its decoder (Paliwal et al. 2020, Sec. 3;
// see ../shared/PAPERS.md).
//
// A chromosome is a vector of random keys in [0, 1], laid out as
//   [ops x devices]     op-to-device affinities   (placement genes)
//   [ops]               op priorities             (when priority genes are on)
//   [tensors x devices] tensor-to-device priorities (when transfer genes are on)
// The decoder places each op on the device with the largest affinity (ties:
// the lower device); with colocation units (agents/colocation.h) every node
// of a unit goes to the device with the largest affinity summed over the
// unit's members, so decoded decisions never split a colocation group; gives each op its priority gene as
// scheduling priority (higher runs first in the simulator's list scheduling), and orders the transfers of
// tensor t to device d by gene [t x devices + d], which is exactly sim::Decision::transfer_priority's
// indexing.
#ifndef GOSIM_AGENTS_BRKGA_CHROMOSOME_H_
#define GOSIM_AGENTS_BRKGA_CHROMOSOME_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "agents/colocation.h"
#include "sim/decision.h"

namespace gosim::agents::brkga {

class ChromosomeLayout {
 public:
  // Transfer genes are dropped on a single device (there are no transfers).
  // `units`, when given and grouped, makes the decoder place whole units.
  ChromosomeLayout(int32_t num_nodes, int32_t num_tensors, int32_t num_devices, bool priority_genes,
                   bool transfer_genes, std::shared_ptr<const ColocationUnits> units = nullptr);

  int32_t num_nodes() const { return num_nodes_; }
  int32_t num_tensors() const { return num_tensors_; }
  int32_t num_devices() const { return num_devices_; }
  bool priority_genes() const { return priority_genes_; }
  bool transfer_genes() const { return transfer_genes_; }

  // Gene index of node v's affinity to device d.
  size_t placement_gene(int32_t v, int32_t d) const { return static_cast<size_t>(v) * num_devices_ + d; }
  // Gene index of node v's priority (priority genes only).
  size_t priority_gene(int32_t v) const { return priority_offset_ + static_cast<size_t>(v); }
  // Gene index of tensor t's priority towards device d (transfer genes only).
  size_t transfer_gene(int32_t t, int32_t d) const {
    return transfer_offset_ + static_cast<size_t>(t) * num_devices_ + d;
  }
  size_t priority_offset() const { return priority_offset_; }
  size_t transfer_offset() const { return transfer_offset_; }
  // Genes per chromosome.
  size_t size() const { return size_; }

  // Writes the decision `genes` encode into `out`, reusing its storage.
  void Decode(std::span<const double> genes, sim::Decision* out) const;

  // A chromosome that decodes to `decision`'s placement (affinity 0.75 for
  // its device, 0.25 for the others, so that crossover of two encoded
  // parents keeps one parent's device), with its priorities (or, when it has
  // none, the topological order: earlier nodes first) and its transfer
  // priorities mapped by rank into (0, 1); without transfer priorities every
  // transfer gene is 0.5, which keeps the links FIFO exactly as without
  // them. Used to warm-start the population with heuristic decisions.
  // `genes` has size() elements.
  void Encode(const sim::Decision& decision, std::span<double> genes) const;

 private:
  int32_t num_nodes_;
  int32_t num_tensors_;
  int32_t num_devices_;
  bool priority_genes_;
  bool transfer_genes_;
  size_t priority_offset_;
  size_t transfer_offset_;
  size_t size_;
  std::shared_ptr<const ColocationUnits> units_;  // null when no unit has two nodes
};

}  // namespace gosim::agents::brkga

#endif  // GOSIM_AGENTS_BRKGA_CHROMOSOME_H_
