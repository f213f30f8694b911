// The queue in front of a device compute stream or a link: entries (task or
// transfer ids) are served by priority (higher first), then by the time they
// were queued (earlier first), then by id (smaller first).
//
// Two representations, chosen per run:
//   FIFO  (no priorities): entries arrive in time order, so an array whose
//         tail batch (the entries queued at the current instant) is kept
//         sorted by id is already in service order; push and pop are O(1)
//         amortized (insertion within one instant's batch).
//   heap  (priorities): a binary heap of (priority, time, id).
// Storage is kept between runs, so a warm queue never allocates.
#ifndef GOSIM_SIM_SERVICE_QUEUE_H_
#define GOSIM_SIM_SERVICE_QUEUE_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gosim::sim {

class ServiceQueue {
 public:
  struct Entry {
    double priority;
    double time;
    int32_t id;
  };

  bool empty() const { return head_ == tail_ && heap_.empty(); }
  void Clear() {
    heap_.clear();
    head_ = tail_ = batch_ = 0;
    batch_time_ = -1.0;
  }

  // FIFO mode: queues `id` at time `now` (non-decreasing between calls).
  [[gnu::always_inline]] void PushFifo(int32_t id, double now) {
    assert(now >= batch_time_);
    if (batch_time_ != now) {  // the first entry of a new instant
      batch_ = tail_;
      batch_time_ = now;
    }
    if (tail_ == fifo_.size()) [[unlikely]]
      Grow();
    // Insertion into the instant's batch (the part not served yet), by id.
    int32_t* f = fifo_.data();
    const size_t lo = std::max(batch_, head_);
    size_t i = tail_++;
    for (; i > lo && f[i - 1] > id; --i) f[i] = f[i - 1];
    f[i] = id;
  }
  int32_t FrontFifo() const { return fifo_[head_]; }
  [[gnu::always_inline]] int32_t PopFifo() {
    const int32_t id = fifo_[head_++];
    if (head_ == tail_) head_ = tail_ = batch_ = 0;
    return id;
  }

  // Heap mode.
  void PushHeap(double priority, int32_t id, double now) {
    heap_.push_back(Entry{priority, now, id});
    std::push_heap(heap_.begin(), heap_.end(), ServedAfter);
  }
  const Entry& FrontHeap() const { return heap_.front(); }
  int32_t PopHeap() {
    std::pop_heap(heap_.begin(), heap_.end(), ServedAfter);
    const int32_t id = heap_.back().id;
    heap_.pop_back();
    return id;
  }

  // True when `a` is served after `b`.
  static bool ServedAfter(const Entry& a, const Entry& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.time != b.time) return a.time > b.time;
    return a.id > b.id;
  }

 private:
  [[gnu::noinline]] void Grow() { fifo_.resize(std::max<size_t>(16, 2 * fifo_.size())); }

  std::vector<int32_t> fifo_;
  size_t head_ = 0;
  size_t tail_ = 0;
  size_t batch_ = 0;
  double batch_time_ = -1.0;
  std::vector<Entry> heap_;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_SERVICE_QUEUE_H_
