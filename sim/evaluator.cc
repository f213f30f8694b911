// Evaluator: an Engine plus one reusable Workspace per thread.
#include "sim/evaluator.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "core/error.h"
#include "sim/batch_exchange.h"
#include "sim/engine.h"

namespace gosim::sim {

struct Evaluator::Impl {
  Impl(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
       const SimOptions& options)
      : engine(graph, cluster, cost_model, options) {}

  Engine engine;
  // Thread-local workspaces: a thread (TBB worker or caller) always reuses
  // its own, so evaluations allocate nothing once every workspace is warm.
  mutable tbb::enumerable_thread_specific<Workspace> workspaces;
};

Evaluator::Evaluator(const graphs::Graph& graph, const Cluster& cluster,
                     std::shared_ptr<const CostModel> cost_model, SimOptions options)
    : graph_(graph), cluster_(cluster), cost_model_(std::move(cost_model)), options_(options) {
  if (cost_model_ == nullptr)
    throw ConfigError("Evaluator needs a cost model", {}, "pass MakeCostModel(\"roofline\")");
  impl_ = std::make_unique<Impl>(graph_, cluster_, *cost_model_, options_);
}

Evaluator::~Evaluator() = default;

Evaluation Evaluator::Evaluate(const Decision& decision) const {
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  return impl_->engine.Evaluate(decision, impl_->workspaces.local());
}

Evaluation Evaluator::Evaluate(const Decision& decision, std::span<int64_t> device_peak) const {
  const size_t devices = static_cast<size_t>(cluster_.num_devices());
  if (device_peak.size() != devices) {
    throw DecisionError("Evaluate got room for " + std::to_string(device_peak.size()) +
                            " device peaks but the cluster has " + std::to_string(devices) + " devices",
                        {}, "pass a span of cluster().num_devices() values");
  }
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  Workspace& ws = impl_->workspaces.local();
  const Evaluation evaluation = impl_->engine.Evaluate(decision, ws);
  std::copy(ws.peak.begin(), ws.peak.end(), device_peak.begin());
  return evaluation;
}

void Evaluator::EvaluateBatch(std::span<const Decision> decisions, std::span<Evaluation> out,
                              std::span<int64_t> device_peaks) const {
  const size_t devices = static_cast<size_t>(cluster_.num_devices());
  if (decisions.size() != out.size() || device_peaks.size() != decisions.size() * devices) {
    throw DecisionError("EvaluateBatch got " + std::to_string(decisions.size()) + " decisions, " +
                            std::to_string(out.size()) + " result slots and " +
                            std::to_string(device_peaks.size()) + " device-peak slots",
                        {}, "pass one result and num_devices peak slots per decision");
  }
  evaluations_.fetch_add(static_cast<int64_t>(decisions.size()), std::memory_order_relaxed);
  // One thread simulates each decision whole, as in the overload above.
  tbb::parallel_for(tbb::blocked_range<size_t>(0, decisions.size()),
                    [&](const tbb::blocked_range<size_t>& range) {
                      Workspace& ws = impl_->workspaces.local();
                      for (size_t i = range.begin(); i != range.end(); ++i) {
                        out[i] = impl_->engine.Evaluate(decisions[i], ws);
                        std::copy(ws.peak.begin(), ws.peak.end(), device_peaks.begin() + i * devices);
                      }
                    });
}

void Evaluator::EvaluateBatch(std::span<const Decision> decisions, std::span<Evaluation> out) const {
  if (decisions.size() != out.size()) {
    throw DecisionError("EvaluateBatch got " + std::to_string(decisions.size()) + " decisions but " +
                            std::to_string(out.size()) + " result slots",
                        {}, "pass an output span of the same size");
  }
  evaluations_.fetch_add(static_cast<int64_t>(decisions.size()), std::memory_order_relaxed);
  if (const BatchExchange* exchange = ActiveBatchExchange()) {
    // This process's share (i % size == rank), then everyone's results
    // (Evaluation is trivially copyable: sent as its bytes).
    static_assert(std::is_trivially_copyable_v<Evaluation>);
    const std::vector<size_t> owned = OwnedIndices(*exchange, decisions.size());
    std::vector<Evaluation> local(owned.size());
    tbb::parallel_for(tbb::blocked_range<size_t>(0, owned.size()),
                      [&](const tbb::blocked_range<size_t>& range) {
                        Workspace& ws = impl_->workspaces.local();
                        for (size_t k = range.begin(); k != range.end(); ++k)
                          local[k] = impl_->engine.Evaluate(decisions[owned[k]], ws);
                      });
    const std::string all = GatherByIndex(
        *exchange,
        std::string(reinterpret_cast<const char*>(local.data()), local.size() * sizeof(Evaluation)),
        decisions.size(), sizeof(Evaluation));
    std::memcpy(out.data(), all.data(), all.size());
    return;
  }
  // Each decision is simulated whole by one thread, so results cannot depend
  // on how the range is split.
  tbb::parallel_for(tbb::blocked_range<size_t>(0, decisions.size()),
                    [&](const tbb::blocked_range<size_t>& range) {
                      Workspace& ws = impl_->workspaces.local();
                      for (size_t i = range.begin(); i != range.end(); ++i)
                        out[i] = impl_->engine.Evaluate(decisions[i], ws);
                    });
}

SimResult Evaluator::Simulate(const Decision& decision, bool timeline) const {
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  return impl_->engine.Simulate(decision, timeline, impl_->workspaces.local());
}

}  // namespace gosim::sim
