// The engine's event queue: a 4-ary min-heap of typed events ordered by
// (time, insertion sequence), over storage that is reused between runs.
//
// Invariant (asserted in debug builds): popped times never decrease, and no
// event is pushed earlier than the last popped time. Events at equal times pop
// first-in first-out, so a run is a deterministic function of its inputs (the
// order matters: it fixes the creation order of transfers, which breaks ties
// in the link queues, and the causes recorded for the critical path).
//
// Why this shape: the engine has at most one event per device and one per link
// in flight (up to a few dozen on an 8-GPU machine while many transfers are
// in flight, a handful otherwise). A 4-ary heap is half as deep as a binary
// one, its four children share a cache line, and a push (usually of a late
// event) stops after one comparison. (time, sequence) is compared as one
// 128-bit integer, and the least child is picked with conditional moves: which
// child is least is data-dependent, and mispredicted branches cost more than
// the extra instructions. Storage is reserved for the most events a run can
// have, so a push never allocates.
#ifndef GOSIM_SIM_EVENT_QUEUE_H_
#define GOSIM_SIM_EVENT_QUEUE_H_

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gosim::sim {

enum class EventKind : uint8_t {
  kOpFinish = 0,    // id = task (the node id of a kernel, or a fused group's smallest node id)
  kHopFinish = 1,   // id = transfer; the transfer's current hop ended
  kHostFinish = 2,  // id = host thread; its dispatch of the current op ended
  kLaunch = 3,      // id = task; its launch (run ahead by the host, Run::HostRun) takes effect
};

struct Event {
  double time = 0.0;   // seconds, >= 0
  uint64_t order = 0;  // insertion sequence in the high 32 bits; kind in bits 30-31, id below

  EventKind kind() const { return static_cast<EventKind>((order >> 30) & 0x3u); }
  int32_t id() const { return static_cast<int32_t>(order & 0x3fffffffu); }
};

class EventQueue {
 public:
  // Empties the queue, keeping its storage.
  void Clear() {
    size_ = 0;
    seq_ = 0;
    now_ = 0.0;
  }
  // Makes room for `n` events: at most `n` may be in the queue at once (the
  // engine never has more than one per device and one per link in flight).
  void Reserve(size_t n) {
    if (heap_.size() < n) heap_.resize(n);
  }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] double top_time() const { return heap_[0].time; }

  // Push and Pop are forced inline: they run once per kernel and per hop,
  // and a call costs about as much as a push into a small heap.
  // 0 <= `id` < 2^30.
  [[gnu::always_inline]] void Push(double time, EventKind kind, int32_t id) {
    assert(time >= now_ && "event scheduled in the past");
    assert(id >= 0 && id < (1 << 30));
    if (size_ == heap_.size()) [[unlikely]] {
      heap_.resize(std::max<size_t>(16, 2 * size_));  // only if Reserve was too small
    }
    const uint32_t tag = static_cast<uint32_t>(id) | (static_cast<uint32_t>(kind) << 30);
    // + 0.0 turns a -0.0 into +0.0, so that the bit pattern orders like the value.
    const Event e{time + 0.0, (static_cast<uint64_t>(seq_++) << 32) | tag};
    Event* h = heap_.data();
    size_t hole = size_++;
    while (hole > 0) {
      const size_t parent = (hole - 1) / kArity;
      if (!Before(e, h[parent])) break;
      h[hole] = h[parent];
      hole = parent;
    }
    h[hole] = e;
  }

  [[gnu::always_inline]] Event Pop() {
    assert(size_ > 0);
    Event* h = heap_.data();
    const Event top = h[0];
    const size_t n = --size_;
    if (n > 0) {
      // Sift the last event down from the root, moving the least child up
      // (picked without branches: which child is least is unpredictable).
      const Event last = h[n];
      const Key last_key = KeyOf(last);
      size_t hole = 0;
      for (;;) {
        const size_t first = kArity * hole + 1;
        if (first >= n) break;
        const size_t end = std::min(first + kArity, n);
        size_t child = first;
        Key best = KeyOf(h[first]);
        for (size_t c = first + 1; c < end; ++c) {
          const Key k = KeyOf(h[c]);
          child = k < best ? c : child;
          best = k < best ? k : best;
        }
        if (!(best < last_key)) break;
        h[hole] = h[child];
        hole = child;
      }
      h[hole] = last;
    }
    assert(top.time >= now_ && "time went backwards");
    now_ = top.time;
    return top;
  }

 private:
  static constexpr size_t kArity = 4;

  // The total order of events: by time, then first pushed first, as one
  // 128-bit unsigned key (time bits above, then the sequence number). Times
  // are >= 0 (and never -0.0), and the bit patterns of non-negative doubles
  // order like their values, so a comparison is two integer instructions and
  // no branch. The tag below the sequence number never decides: sequence
  // numbers are unique.
  using Key = unsigned __int128;
  static Key KeyOf(const Event& e) {
    return (static_cast<Key>(std::bit_cast<uint64_t>(e.time)) << 64) | e.order;
  }
  static bool Before(const Event& a, const Event& b) { return KeyOf(a) < KeyOf(b); }

  std::vector<Event> heap_;  // heap_[0, size_) is the heap
  size_t size_ = 0;
  uint32_t seq_ = 0;
  double now_ = 0.0;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_EVENT_QUEUE_H_
