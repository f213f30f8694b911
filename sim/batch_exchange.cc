#include "sim/batch_exchange.h"

#include <thread>

#include "core/error.h"

namespace gosim::sim {
namespace {

std::shared_ptr<const BatchExchange> installed;
std::thread::id owner;
thread_local int local_scopes = 0;

}  // namespace

void SetBatchExchange(std::shared_ptr<const BatchExchange> exchange) {
  installed = std::move(exchange);
  owner = std::this_thread::get_id();
}

const BatchExchange* ActiveBatchExchange() {
  if (installed == nullptr || installed->size() <= 1 || local_scopes > 0) return nullptr;
  return std::this_thread::get_id() == owner ? installed.get() : nullptr;
}

std::vector<size_t> OwnedIndices(const BatchExchange& exchange, size_t count) {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(exchange.rank()); i < count; i += static_cast<size_t>(exchange.size()))
    out.push_back(i);
  return out;
}

std::string GatherByIndex(const BatchExchange& exchange, const std::string& mine, size_t count,
                          size_t record_size) {
  const std::vector<std::string> parts = exchange.AllGather(mine);
  const auto size = static_cast<size_t>(exchange.size());
  std::string out(count * record_size, '\0');
  for (size_t r = 0; r < parts.size(); ++r) {
    const size_t owned = count > r ? (count - r + size - 1) / size : 0;
    if (parts[r].size() != owned * record_size) {
      throw StateError("process " + std::to_string(r) + " sent " + std::to_string(parts[r].size()) +
                           " bytes of results, expected " + std::to_string(owned * record_size),
                       {}, "every process must run the same program with the same inputs");
    }
    for (size_t k = 0; k < owned; ++k)
      parts[r].copy(out.data() + (r + k * size) * record_size, record_size, k * record_size);
  }
  return out;
}

LocalBatches::LocalBatches() {
  ++local_scopes;
}
LocalBatches::~LocalBatches() {
  --local_scopes;
}

}  // namespace gosim::sim
