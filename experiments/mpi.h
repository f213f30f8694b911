// The processes of a distributed run: Open MPI's world when gosim was
// launched by `mpirun` / `srun` (docs/EXPERIMENTS.md, "Running on many
// processes"), else a world of one process.
//
// MPI is initialized on first use of World() only when the environment says
// a launcher started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
// PMI_SIZE), so a plain `gosim` never starts MPI. Initialization asks for
// MPI_THREAD_FUNNELED: only the thread that called World() first may call
// the other members. Messages are strings with a tag; MPI is finalized when
// the process exits normally, and Abort() ends every process of the world
// (for an error on one rank while the others wait for it).
#ifndef GOSIM_EXPERIMENTS_MPI_H_
#define GOSIM_EXPERIMENTS_MPI_H_

#include <memory>
#include <string>
#include <vector>

#include "sim/batch_exchange.h"

namespace gosim::experiments {

class Communicator {
 public:
  // The process's world (initializes MPI when launched by mpirun or srun).
  static Communicator& World();
  // The world if World() was called before, else nullptr (starts nothing).
  static const Communicator* Started();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }

  // Point to point: a string with a non-negative tag. Receive takes the next
  // message from any rank with any tag and reports both.
  void Send(int destination, int tag, const std::string& payload) const;
  std::string Receive(int* source, int* tag) const;
  // Receives the next message from `source` (any tag, reported).
  std::string ReceiveFrom(int source, int* tag) const;
  // `payload` of rank `root`, on every rank.
  std::string Broadcast(const std::string& payload, int root) const;
  // Every rank's `mine`, by rank, on every rank.
  std::vector<std::string> AllGather(const std::string& mine) const;
  void Barrier() const;
  // Terminates every process of the world with `code` (no return).
  [[noreturn]] void Abort(int code) const;

 private:
  Communicator();
  int rank_ = 0;
  int size_ = 1;
  bool initialized_ = false;
};

// `comm` as the simulator's batch exchange (sim/batch_exchange.h), for
// programs whose processes run in lockstep (`gosim train` under mpirun).
std::shared_ptr<const sim::BatchExchange> MakeBatchExchange(const Communicator& comm);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_MPI_H_
