// The batch exchange of sim/batch_exchange.h with an in-process stand-in for
// the other process: EvaluateBatch gives the single-process results, calls
// on other threads and inside LocalBatches stay local.
#include "sim/batch_exchange.h"

#include <doctest/doctest.h>

#include <thread>

#include "core/error.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

// Process `rank` of two, whose partner's share is computed here by a second
// evaluator of the same problem: what the other process would send.
class PairExchange : public BatchExchange {
 public:
  PairExchange(int rank, const Evaluator& partner, std::vector<Decision> batch)
      : rank_(rank), partner_(partner), batch_(std::move(batch)) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::vector<std::string> AllGather(const std::string& mine) const override {
    ++calls_;
    std::string theirs;
    for (size_t i = static_cast<size_t>(1 - rank_); i < batch_.size(); i += 2) {
      const Evaluation e = partner_.Evaluate(batch_[i]);
      theirs.append(reinterpret_cast<const char*>(&e), sizeof(e));
    }
    return rank_ == 0 ? std::vector<std::string>{mine, theirs} : std::vector<std::string>{theirs, mine};
  }
  mutable int calls_ = 0;

 private:
  int rank_;
  const Evaluator& partner_;
  std::vector<Decision> batch_;
};

TEST_CASE("EvaluateBatch through a batch exchange gives the single-process results") {
  const graphs::Graph g = testing::LayeredGraph(64, 7);
  const Cluster cluster = testing::MeshCluster(3, 1e9, 1e-6);
  const Evaluator local(g, cluster, testing::Linear());
  const Evaluator partner(g, cluster, testing::Linear());
  std::vector<Decision> batch(7);
  for (size_t k = 0; k < batch.size(); ++k) {
    batch[k].placement.resize(static_cast<size_t>(g.num_nodes()));
    for (int32_t v = 0; v < g.num_nodes(); ++v) batch[k].placement[static_cast<size_t>(v)] = (v + k) % 3;
  }
  std::vector<Evaluation> expected(batch.size());
  local.EvaluateBatch(batch, expected);

  for (int rank : {0, 1}) {
    CAPTURE(rank);
    auto exchange = std::make_shared<PairExchange>(rank, partner, batch);
    SetBatchExchange(exchange);
    const Evaluator evaluator(g, cluster, testing::Linear());
    std::vector<Evaluation> out(batch.size());
    evaluator.EvaluateBatch(batch, out);
    CHECK(exchange->calls_ == 1);
    CHECK(evaluator.evaluations() == 7);  // every decision counts, as in one process
    for (size_t k = 0; k < batch.size(); ++k) {
      CHECK(out[k].step_time == expected[k].step_time);
      CHECK(out[k].peak_memory == expected[k].peak_memory);
    }
    {
      const LocalBatches scope;
      CHECK(ActiveBatchExchange() == nullptr);
      evaluator.EvaluateBatch(batch, out);
    }
    std::thread([&] { CHECK(ActiveBatchExchange() == nullptr); }).join();
    CHECK(exchange->calls_ == 1);
    CHECK(ActiveBatchExchange() == exchange.get());
  }
  SetBatchExchange(nullptr);
  CHECK(ActiveBatchExchange() == nullptr);
}

TEST_CASE("GatherByIndex lays records out by index and rejects a short share") {
  class Fixed : public BatchExchange {
   public:
    explicit Fixed(std::vector<std::string> parts) : parts_(std::move(parts)) {}
    int rank() const override { return 0; }
    int size() const override { return static_cast<int>(parts_.size()); }
    std::vector<std::string> AllGather(const std::string&) const override { return parts_; }
    std::vector<std::string> parts_;
  };
  // 3 processes, 7 records of 1 byte: process r owns r, r + 3, r + 6.
  const Fixed three({"adg", "be", "cf"});
  CHECK(OwnedIndices(three, 7) == std::vector<size_t>{0, 3, 6});
  CHECK(GatherByIndex(three, "", 7, 1) == "abcdefg");
  const Fixed short_share({"adg", "b", "cf"});
  CHECK_THROWS_AS(GatherByIndex(short_share, "", 7, 1), StateError);
}

}  // namespace
}  // namespace gosim::sim
