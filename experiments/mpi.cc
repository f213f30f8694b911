#include "experiments/mpi.h"

#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <limits>

#include "core/error.h"

namespace gosim::experiments {
namespace {

bool LaunchedByMpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

void Check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw StateError(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(length)), {},
                   "check the MPI launch (mpirun -np N gosim ...)");
}

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int CountOf(const std::string& payload) {
  if (payload.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw StateError("an MPI message of " + std::to_string(payload.size()) + " bytes is too large");
  }
  return static_cast<int>(payload.size());
}

std::atomic<const Communicator*> started{nullptr};

}  // namespace

Communicator& Communicator::World() {
  static Communicator world;
  started.store(&world);
  return world;
}

const Communicator* Communicator::Started() {
  return started.load();
}

Communicator::Communicator() {
  if (!LaunchedByMpi()) return;
  int provided = 0;
  Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  initialized_ = true;
  std::atexit(FinalizeAtExit);
  Check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  Check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

void Communicator::Send(int destination, int tag, const std::string& payload) const {
  Check(MPI_Send(payload.data(), CountOf(payload), MPI_CHAR, destination, tag, MPI_COMM_WORLD), "MPI_Send");
}

std::string Communicator::ReceiveFrom(int source, int* tag) const {
  MPI_Status status;
  Check(MPI_Probe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &status), "MPI_Probe");
  int count = 0;
  Check(MPI_Get_count(&status, MPI_CHAR, &count), "MPI_Get_count");
  std::string payload(static_cast<size_t>(count), '\0');
  Check(MPI_Recv(payload.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE),
        "MPI_Recv");
  if (tag != nullptr) *tag = status.MPI_TAG;
  return payload;
}

std::string Communicator::Receive(int* source, int* tag) const {
  MPI_Status status;
  Check(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status), "MPI_Probe");
  if (source != nullptr) *source = status.MPI_SOURCE;
  return ReceiveFrom(status.MPI_SOURCE, tag);
}

std::string Communicator::Broadcast(const std::string& payload, int root) const {
  if (!distributed()) return payload;
  long long size = static_cast<long long>(payload.size());
  Check(MPI_Bcast(&size, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = rank_ == root ? payload : std::string(static_cast<size_t>(size), '\0');
  Check(MPI_Bcast(out.data(), CountOf(out), MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

std::vector<std::string> Communicator::AllGather(const std::string& mine) const {
  if (!distributed()) return {mine};
  const int count = CountOf(mine);
  std::vector<int> counts(static_cast<size_t>(size_));
  Check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  std::vector<int> offsets(static_cast<size_t>(size_), 0);
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<size_t>(r)];
  }
  if (total > std::numeric_limits<int>::max())
    throw StateError("an MPI exchange of " + std::to_string(total) + " bytes is too large");
  std::string all(static_cast<size_t>(total), '\0');
  Check(MPI_Allgatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r)
    out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                             static_cast<size_t>(counts[static_cast<size_t>(r)])));
  return out;
}

void Communicator::Barrier() const {
  if (distributed()) Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void Communicator::Abort(int code) const {
  if (initialized_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

namespace {

class MpiBatchExchange : public sim::BatchExchange {
 public:
  explicit MpiBatchExchange(const Communicator& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  std::vector<std::string> AllGather(const std::string& mine) const override { return comm_.AllGather(mine); }

 private:
  const Communicator& comm_;
};

}  // namespace

std::shared_ptr<const sim::BatchExchange> MakeBatchExchange(const Communicator& comm) {
  return std::make_shared<MpiBatchExchange>(comm);
}

}  // namespace gosim::experiments
