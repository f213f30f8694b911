#include "agents/brkga/chromosome.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <vector>

namespace gosim::agents::brkga {

ChromosomeLayout::ChromosomeLayout(int32_t num_nodes, int32_t num_tensors, int32_t num_devices,
                                   bool priority_genes, bool transfer_genes,
                                   std::shared_ptr<const ColocationUnits> units)
    : num_nodes_(num_nodes),
      num_tensors_(num_tensors),
      num_devices_(num_devices),
      priority_genes_(priority_genes),
      transfer_genes_(transfer_genes && num_devices > 1) {
  priority_offset_ = static_cast<size_t>(num_nodes_) * num_devices_;
  transfer_offset_ = priority_offset_ + (priority_genes_ ? static_cast<size_t>(num_nodes_) : 0);
  size_ = transfer_offset_ + (transfer_genes_ ? static_cast<size_t>(num_tensors_) * num_devices_ : 0);
  if (units != nullptr && units->grouped() && num_devices_ > 1) {
    assert(units->num_nodes() == num_nodes_);
    units_ = std::move(units);
  }
}

void ChromosomeLayout::Decode(std::span<const double> genes, sim::Decision* out) const {
  assert(genes.size() == size_);
  out->placement.resize(static_cast<size_t>(num_nodes_));
  const double* affinity = genes.data();
  if (units_ == nullptr) {
    for (int32_t v = 0; v < num_nodes_; ++v) {
      const double* row = affinity + static_cast<size_t>(v) * num_devices_;
      int32_t best = 0;
      for (int32_t d = 1; d < num_devices_; ++d) {
        if (row[d] > row[best]) best = d;
      }
      out->placement[static_cast<size_t>(v)] = best;
    }
  } else {
    std::vector<double> sum(static_cast<size_t>(num_devices_));
    for (int32_t u = 0; u < units_->num_units(); ++u) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (graphs::NodeId v : units_->members(u)) {
        const double* row = affinity + static_cast<size_t>(v) * num_devices_;
        for (int32_t d = 0; d < num_devices_; ++d) sum[static_cast<size_t>(d)] += row[d];
      }
      const auto best = static_cast<int32_t>(std::max_element(sum.begin(), sum.end()) - sum.begin());
      for (graphs::NodeId v : units_->members(u)) out->placement[static_cast<size_t>(v)] = best;
    }
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

namespace {

// Writes the ranks of `values`, scaled into (0, 1), to `out`. Among equal
// values the lower index gets the higher rank, as the simulator's queues
// break priority ties by lower id first.
void RankScaled(std::span<const double> values, double* out) {
  std::vector<int32_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const double va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
    return va < vb || (va == vb && a > b);
  });
  const double n = static_cast<double>(values.size());
  for (size_t r = 0; r < order.size(); ++r) {
    out[static_cast<size_t>(order[r])] = (static_cast<double>(r) + 0.5) / n;
  }
}

}  // namespace

void ChromosomeLayout::Encode(const sim::Decision& decision, std::span<double> genes) const {
  assert(genes.size() == size_);
  assert(decision.placement.size() == static_cast<size_t>(num_nodes_));
  for (int32_t v = 0; v < num_nodes_; ++v) {
    const int32_t device = decision.placement[static_cast<size_t>(v)];
    for (int32_t d = 0; d < num_devices_; ++d) genes[placement_gene(v, d)] = d == device ? 0.75 : 0.25;
  }
  if (priority_genes_) {
    double* out = genes.data() + priority_offset_;
    if (decision.has_priority()) {
      RankScaled(decision.priority, out);
    } else {
      // Higher runs first: node 0 gets the highest priority.
      for (int32_t v = 0; v < num_nodes_; ++v) {
        out[v] = (static_cast<double>(num_nodes_ - v) - 0.5) / static_cast<double>(num_nodes_);
      }
    }
  }
  if (transfer_genes_) {
    double* out = genes.data() + transfer_offset_;
    if (decision.has_transfer_priority() && decision.transfer_priority.size() == size_ - transfer_offset_) {
      RankScaled(decision.transfer_priority, out);
    } else {
      std::fill(out, genes.data() + size_, 0.5);
    }
  }
}

}  // namespace gosim::agents::brkga
