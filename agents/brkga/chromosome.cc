#include "agents/brkga/chromosome.h"

#include <algorithm>
#include <cassert>

namespace gosim::agents::brkga {

ChromosomeLayout::ChromosomeLayout(int32_t num_nodes, int32_t num_tensors, int32_t num_devices,
                                   bool priority_genes, bool transfer_genes)
    : num_nodes_(num_nodes),
      num_tensors_(num_tensors),
      num_devices_(num_devices),
      priority_genes_(priority_genes),
      transfer_genes_(transfer_genes && num_devices > 1) {
  priority_offset_ = static_cast<size_t>(num_nodes_) * num_devices_;
  transfer_offset_ = priority_offset_ + (priority_genes_ ? static_cast<size_t>(num_nodes_) : 0);
  size_ = transfer_offset_ + (transfer_genes_ ? static_cast<size_t>(num_tensors_) * num_devices_ : 0);
}

void ChromosomeLayout::Decode(std::span<const double> genes, sim::Decision* out) const {
  assert(genes.size() == size_);
  out->placement.resize(static_cast<size_t>(num_nodes_));
  const double* affinity = genes.data();
  for (int32_t v = 0; v < num_nodes_; ++v) {
    const double* row = affinity + static_cast<size_t>(v) * num_devices_;
    int32_t best = 0;
    for (int32_t d = 1; d < num_devices_; ++d) {
      if (row[d] > row[best]) best = d;
    }
    out->placement[static_cast<size_t>(v)] = best;
  }
  if (priority_genes_) {
    out->priority.assign(genes.begin() + static_cast<std::ptrdiff_t>(priority_offset_),
                         genes.begin() + static_cast<std::ptrdiff_t>(transfer_offset_));
  } else {
    out->priority.clear();
  }
  if (transfer_genes_) {
    out->transfer_priority.assign(genes.begin() + static_cast<std::ptrdiff_t>(transfer_offset_), genes.end());
  } else {
    out->transfer_priority.clear();
  }
  out->fusion_group.clear();
}

}  // namespace gosim::agents::brkga
