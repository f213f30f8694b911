// Spreading Evaluator::EvaluateBatch over processes that run the same
// program in lockstep (`mpirun -np N gosim train ...`: every process runs the
// same seeded training, so every process builds the same batches). Each
// process simulates the decisions i with i % size == rank and an exchange
// hands every process all the results, in index order: the results, and so
// everything computed from them, are those of a single process.
//
// The exchange applies to EvaluateBatch calls made on the thread that
// installed it while no LocalBatches scope is open there; calls on other
// threads (oneTBB workers running whole searches in parallel) and inside a
// LocalBatches scope stay local. The program installs the exchange (the sim
// module knows nothing of MPI: experiments/mpi.h implements it).
#ifndef GOSIM_SIM_BATCH_EXCHANGE_H_
#define GOSIM_SIM_BATCH_EXCHANGE_H_

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/evaluator.h"

namespace gosim::sim {

class BatchExchange {
 public:
  virtual ~BatchExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Collective: every process calls it, in the same order; returns every
  // process's `mine`, by rank.
  virtual std::vector<std::string> AllGather(const std::string& mine) const = 0;
};

// The indices of `count` items this process owns: rank, rank + size, ...
std::vector<size_t> OwnedIndices(const BatchExchange& exchange, size_t count);

// All processes' `mine` (one record of `record_size` bytes per owned index,
// in OwnedIndices order) laid out in index order: `count` records.
std::string GatherByIndex(const BatchExchange& exchange, const std::string& mine, size_t count,
                          size_t record_size);

// Installs `exchange` for EvaluateBatch calls on the calling thread (nullptr
// uninstalls). Not thread-safe: call it once at start-up, before any batch.
void SetBatchExchange(std::shared_ptr<const BatchExchange> exchange);

// The exchange EvaluateBatch should use on the calling thread now, or
// nullptr (none installed, another thread, a LocalBatches scope open, or a
// world of one process).
const BatchExchange* ActiveBatchExchange();

// While alive, EvaluateBatch calls on this thread stay local: for code where
// processes do different work (e.g. jobs dealt to processes by index).
class LocalBatches {
 public:
  LocalBatches();
  ~LocalBatches();
  LocalBatches(const LocalBatches&) = delete;
  LocalBatches& operator=(const LocalBatches&) = delete;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_BATCH_EXCHANGE_H_
