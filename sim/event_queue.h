// The engine's event queue: a binary min-heap of typed events ordered by
// (time, insertion sequence), over storage that is reused between runs.
//
// Invariant (asserted in debug builds): popped times never decrease, and no
// event is pushed earlier than the last popped time. Events at equal times pop
// first-in first-out, so a run is a deterministic function of its inputs.
#ifndef GOSIM_SIM_EVENT_QUEUE_H_
#define GOSIM_SIM_EVENT_QUEUE_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gosim::sim {

enum class EventKind : uint8_t {
  kOpFinish,   // id = task (the node id of a kernel, or a fused group's smallest node id)
  kHopFinish,  // id = transfer; the transfer's current hop ended
};

struct Event {
  double time = 0.0;  // seconds
  uint32_t seq = 0;   // insertion order
  uint32_t tag = 0;   // kind in the top bit, id below

  EventKind kind() const { return (tag >> 31) != 0 ? EventKind::kHopFinish : EventKind::kOpFinish; }
  int32_t id() const { return static_cast<int32_t>(tag & 0x7fffffffu); }
};

class EventQueue {
 public:
  // Empties the queue, keeping its storage.
  void Clear() {
    size_ = 0;
    seq_ = 0;
    now_ = 0.0;
  }
  // Makes room for `n` events (the engine never has more than one per device
  // and one per link in flight), so that Push does not allocate.
  void Reserve(size_t n) {
    if (heap_.size() < n) heap_.resize(n);
  }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] double top_time() const { return heap_[0].time; }

  // `id` >= 0.
  void Push(double time, EventKind kind, int32_t id) {
    assert(time >= now_ && "event scheduled in the past");
    assert(id >= 0);
    if (size_ == heap_.size()) heap_.resize(std::max<size_t>(16, 2 * size_));
    const Event e{time, seq_++,
                  static_cast<uint32_t>(id) | (kind == EventKind::kHopFinish ? 0x80000000u : 0u)};
    Event* h = heap_.data();
    size_t hole = size_++;
    while (hole > 0) {
      const size_t parent = (hole - 1) / 2;
      if (!Before(e, h[parent])) break;
      h[hole] = h[parent];
      hole = parent;
    }
    h[hole] = e;
  }

  Event Pop() {
    assert(size_ > 0);
    Event* h = heap_.data();
    const Event top = h[0];
    const size_t n = --size_;
    if (n > 0) {
      const Event last = h[n];
      size_t hole = 0;
      for (;;) {
        size_t child = 2 * hole + 1;
        if (child >= n) break;
        if (child + 1 < n && Before(h[child + 1], h[child])) ++child;
        if (!Before(h[child], last)) break;
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
  static bool Before(const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.seq < b.seq);
  }

  std::vector<Event> heap_;  // heap_[0, size_) is the heap
  size_t size_ = 0;
  uint32_t seq_ = 0;
  double now_ = 0.0;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_EVENT_QUEUE_H_
