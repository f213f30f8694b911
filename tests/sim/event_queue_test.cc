// The engine's event queue against a plain reference: events pop by time,
// equal times first-in first-out, whatever the interleaving of pushes and pops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "core/rng.h"
#include "sim/event_queue.h"

namespace gosim::sim {
namespace {

struct Ref {
  double time;
  uint32_t seq;
  EventKind kind;
  int32_t id;
};

TEST_CASE("event queue: pops by (time, insertion order) under random interleavings") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    EventQueue q;
    std::vector<Ref> ref;  // pending events, unordered
    // A few runs per queue: Clear keeps the storage and restarts the sequence.
    for (int run = 0; run < 3; ++run) {
      q.Clear();
      ref.clear();
      const size_t cap = static_cast<size_t>(rng.UniformInt(int64_t{1}, int64_t{40}));
      q.Reserve(cap);
      uint32_t seq = 0;
      double now = 0.0;
      for (int step = 0; step < 2000; ++step) {
        const bool push = ref.empty() || (ref.size() < cap && rng.Bernoulli(0.5));
        if (push) {
          // Few distinct delays, so that equal times are common; -0.0 must
          // order like 0.0.
          const double delay =
              rng.Bernoulli(0.1) ? -0.0 : static_cast<double>(rng.UniformInt(uint64_t{4})) * 0.5;
          const double time = now == 0.0 && std::signbit(delay) ? -0.0 : now + delay;
          const auto kinds = rng.UniformInt(uint64_t{3});
          const EventKind kind = kinds == 0   ? EventKind::kOpFinish
                                 : kinds == 1 ? EventKind::kHopFinish
                                              : EventKind::kHostFinish;
          const auto id = static_cast<int32_t>(rng.UniformInt(uint64_t{1} << 30));
          q.Push(time, kind, id);
          ref.push_back(Ref{time, seq++, kind, id});
        } else {
          const auto it = std::min_element(ref.begin(), ref.end(), [](const Ref& a, const Ref& b) {
            return std::tie(a.time, a.seq) < std::tie(b.time, b.seq);
          });
          REQUIRE(q.top_time() == it->time);
          const Event e = q.Pop();
          CHECK(e.time == it->time);
          CHECK(e.kind() == it->kind);
          CHECK(e.id() == it->id);
          now = e.time;
          ref.erase(it);
        }
        REQUIRE(q.size() == ref.size());
      }
    }
  }
}

TEST_CASE("event queue: grows past its reservation without losing order") {
  EventQueue q;
  q.Clear();
  q.Reserve(2);
  for (int i = 0; i < 100; ++i) q.Push(static_cast<double>(99 - i), EventKind::kOpFinish, i);
  for (int i = 0; i < 100; ++i) {
    const Event e = q.Pop();
    CHECK(e.time == static_cast<double>(i));
    CHECK(e.id() == 99 - i);
  }
  CHECK(q.empty());
}

}  // namespace
}  // namespace gosim::sim
