// The event loop. One Run is one simulation of one decision in one
// Workspace. Run<kFull = true> also records every kernel and hop with the
// cause of its start time (for the critical path, the timeline and the
// out-of-memory report); Run<false, ...> is the lean path of Evaluate.
// kFusion selects the node -> task mapping of fused groups (without fusion a
// task is its node, and the mapping costs nothing). kHost adds the host
// threads that dispatch every task before its kernel can start
// (docs/SIMULATOR.md, "The host"): a task then waits for its launch as for
// one more input, and under eager and captured execution also for the task
// launched before it on its device (a CUDA stream runs in launch order).
//
// Time advances in instants: all events at time t are handled first (kernels
// and hops end: memory is freed, successors become ready, transfers are
// queued), then idle devices and links pick their next work in a fixed order
// (devices by index, then links by the service order of their head
// transfers). Hence frees precede allocations at one instant, and a ready
// queue sees every task that became ready at t before choosing.
//
// This header is internal to the engine. The class's members are defined by
// section in engine_setup.cc (setup, fused groups, the out-of-memory
// report), engine_loop.cc (the event loop, kernels, gates and links) and
// engine_host.cc (the host threads). A member called from one file only is
// defined `inline` there; the few called from another file (the loop's
// calls into the host, setup's into the loop) are instantiated by their file
// for the eight runs of GOSIM_SIM_FOR_EACH_RUN (Engine::Dispatch picks one);
// small members that several files call on the hot path are defined here.
#ifndef GOSIM_SIM_ENGINE_RUN_H_
#define GOSIM_SIM_ENGINE_RUN_H_

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "sim/engine.h"

// X(kFull, kFusion, kHost) for every Run.
// clang-format off
#define GOSIM_SIM_FOR_EACH_RUN(X)                                                         \
  X(false, false, false) X(false, false, true) X(false, true, false) X(false, true, true) \
  X(true, false, false) X(true, false, true) X(true, true, false) X(true, true, true)
// clang-format on

namespace gosim::sim {

template <bool kFull, bool kFusion, bool kHost>
class Run {
 public:
  Run(const Engine& engine, const Decision& decision, Workspace& ws)
      : e_(engine), m_(engine.model_), opt_(engine.options_), dec_(decision), ws_(ws) {}

  // Cause codes (full runs): a task id, num_nodes + a hop record, or a host
  // record as -2 - record; -1 = none.
  static int32_t HostCause(int32_t record) { return -2 - record; }

  RunOutcome Execute();

 private:
  template <typename T>
  static void Fill(std::vector<T>& v, size_t n, T value) {
    v.assign(n, value);  // keeps capacity: no allocation once warmed up
  }

  using TaskState = Workspace::TaskState;
  using CopyState = Workspace::CopyState;
  using Transfer = Workspace::Transfer;

  // ---- setup (engine_setup.cc) ------------------------------------------
  void Setup();

  // Maps every node to its task (a fused group runs as its smallest node id)
  // and computes each group's kernel time, external inputs, allocation and
  // priority.
  void BuildGroups();

  int32_t Task(int32_t node) const {
    if constexpr (kFusion) {
      return task_of_[node];
    } else {
      return node;
    }
  }
  int64_t TaskAlloc(int32_t task) const {
    if constexpr (kFusion) {
      return talloc_[task];
    } else {
      return m_.nodes[task].out_bytes;
    }
  }

  // A fused group's output is materialized when something outside the group
  // reads it, or when nothing reads it at all (a graph output).
  bool Materialized(int32_t t, int32_t task) const {
    const EngineModel::TensorInfo& info = m_.tensors[t];
    if (info.cons_begin == info.cons_end) return true;
    for (int32_t i = info.cons_begin; i < info.cons_end; ++i) {
      if (Task(m_.consumers[i].node) != task) return true;
    }
    return false;
  }

  // Whether tensor t is an alias here: a view takes no memory of its own,
  // except as the output of a fused group, which its kernel writes.
  bool Aliased(int32_t t) const {
    const EngineModel::TensorInfo& info = m_.tensors[t];
    if (info.alias == 0) return false;
    if constexpr (kFusion) return ws_.group_size[Task(info.producer)] == 1;
    return true;
  }

  template <typename F>
  void ForEachMember(int32_t task, F&& f) {
    if (!kFusion || ws_.group_size[task] == 1) {
      f(task);
    } else {
      for (int32_t k = ws_.member_off[task]; k < ws_.member_off[task + 1]; ++k) f(ws_.members[k]);
    }
  }

  // ---- the loop (engine_loop.cc) ----------------------------------------
  void Loop();

  void Dispatch();

  // Branch-free: sets the device's bit and its word's summary bit.
  void MarkDevice(int32_t d) {
    dirty_words_[d >> 6] |= uint64_t{1} << (d & 63);
    dirty_summary_ |= uint64_t{1} << (d >> 6);
  }
  void MarkLink(int32_t l);

  // The stream a task runs on: its device's compute stream, or, for a
  // collective (EngineModel::comm), its device's communication stream.
  int32_t Lane(int32_t task) const {
    return comm_ != nullptr && comm_[task] ? tasks_[task].device + nd_ : tasks_[task].device;
  }

  // A task whose inputs are all there: ready now, or, when the host ran
  // ahead and launches it later, at its launch (a kLaunch event).
  void MakeReady(int32_t task, int32_t cause) {
    if constexpr (kHost) {
      if (launch_time_ != nullptr && launch_time_[task] > now_) {
        ws_.events.Push(launch_time_[task], EventKind::kLaunch, task);
        return;
      }
    }
    MakeReadyNow(task, cause);
  }

  void MakeReadyNow(int32_t task, int32_t cause) {
    if (gate_ != nullptr) [[unlikely]] {
      const int32_t g = gate_[task];
      if (g >= 0 && gate_count_[g] < gate_need_[task]) {
        ws_.gate_parked[static_cast<size_t>(g)].PushHeap(-static_cast<double>(gate_need_[task]), task, now_);
        return;
      }
    }
    EnqueueTask(task, cause);
  }

  // Into its stream's ready queue.
  [[gnu::always_inline]] void EnqueueTask(int32_t task, int32_t cause) {
    const int32_t d = Lane(task);
    if (tprio_ != nullptr) {
      ready_[d].PushHeap(tprio_[task], task, now_);
    } else {
      ready_[d].PushFifo(task, now_);
    }
    // A busy device needs no mark: if its kernel ends at this instant, that
    // event marks it; otherwise it could not start anything now anyway.
    if (running_[d] < 0) MarkDevice(d);
    if constexpr (kFull) {
      ws_.ready_time[task] = now_;
      ws_.data_cause[task] = cause;
    }
  }

  // Idle devices with ready kernels start one, by device index (the set bits
  // in ascending order). Starting a kernel marks no device.
  void DispatchDevices();

  void StartOp(int32_t task, int32_t lane);

  void OpFinish(int32_t task);

  // ---- counted gates (Decision::gate; engine_loop.cc) --------------------
  void SetupGates();

  // A finished task adds its members' signals; waiting tasks whose need is
  // reached become ready, least need first.
  [[gnu::noinline]] void Signal(int32_t task);

  // Hands node v's outputs to their consumers (locally or through
  // transfers), releases v's control successors and its inputs.
  void FinishNode(int32_t v, int32_t task, int32_t d);

  // Node v (of `task`, on device d) no longer needs its inputs.
  void ReleaseInputs(int32_t v, int32_t task, int32_t d);

  // The last user of tensor t's copy on its producer's device is done. An
  // alias frees nothing itself; the last of its node's live aliases lets the
  // node's inputs go (which may be aliases in turn).
  void ReleaseCopy(int32_t t);

  // Creates the transfer of tensor t to device dst (for the consumer entry
  // `slot`, or -1 for every consumer there) and queues its first hop.
  int32_t NewTransfer(int32_t t, int32_t src, int32_t dst, int32_t slot, int32_t cause);

  void Enqueue(int32_t x, int32_t link);

  void HopFinish(int32_t x);

  bool ResourcesFree(int32_t link) const;

  void DispatchLinks();

  // The head transfer of a link's queue as (priority, queued time, transfer).
  ServiceQueue::Entry Head(int32_t l) const;

  void StartHop(int32_t x, int32_t link);

  // The hop that held `link` or one of its resources until now (the reason a
  // queued transfer started late), as a cause code.
  int32_t Blocker(int32_t link) const;

  // ---- the host (kHost; engine_host.cc) ---------------------------------
  // Host threads: process p owns threads [p * tpp, (p + 1) * tpp). A thread
  // is idle (nothing it may dispatch), busy (dispatching thread_task until
  // its kHostFinish), or blocked: in a launch whose device queue is full, or
  // waiting for a synchronizing task to finish.
  enum HostState : uint8_t { kIdle = 0, kBusy = 1, kBlockedQueue = 2, kBlockedSync = 3 };

  int32_t ProcessOf(int32_t device) const { return per_device_ ? device : 0; }

  void SetupHost();

  // Adds the copy calls to the dispatch costs: for each tensor and each
  // device other than its producer's that reads it, one copy call to the
  // first task reading it there (consumer lists ascend by node id), and,
  // across processes, a send call to the producer. One pass over the
  // nodes' inputs in node order; a (tensor, device) pair is counted once
  // through a per-tensor device mask, cleared again afterwards.
  void AddCopyCalls(double* cost);

  // The same count, tensor by tensor (any number of devices).
  void AddCopyCallsByTensor(double* cost);

  void MarkThread(int32_t th) {
    ws_.dirty_thread_words[static_cast<size_t>(th >> 6)] |= uint64_t{1} << (th & 63);
    dirty_thread_summary_ |= uint64_t{1} << (th >> 6);
  }

  // The program order of eager and captured execution with priorities or
  // fusion groups, into ws_.scratch: a list schedule of the tasks (Kahn's
  // algorithm; among the tasks whose predecessors are scheduled, the
  // highest priority first, then the smallest id).
  void ListSchedule();

  // Graph execution: a task whose inputs are all there to dispatch.
  void PushHostReady(int32_t task) {
    ws_.host_ready[static_cast<size_t>(ProcessOf(tasks_[task].device))].PushFifo(task, now_);
    const int32_t p = ProcessOf(tasks_[task].device);
    for (int32_t th = p * tpp_; th < (p + 1) * tpp_; ++th) {
      if (thread_state_[th] == kIdle) MarkThread(th);
    }
  }

  // Graph execution: one input of `task` is there (a same-device
  // predecessor dispatched, an input from another device arrived, a control
  // predecessor on another device finished); `cause` its cause code.
  void HostInputReady(int32_t task, int32_t cause) {
    if (--ws_.host_pending[static_cast<size_t>(task)] != 0) return;
    PushHostReady(task);
    if constexpr (kFull) {
      const int32_t p = ProcessOf(tasks_[task].device);
      for (int32_t th = p * tpp_; th < (p + 1) * tpp_; ++th) {
        if (thread_state_[th] == kIdle) ws_.thread_cause[static_cast<size_t>(th)] = cause;
      }
    }
  }

  // The next task process p dispatches, or -1.
  int32_t NextHostTask(int32_t p);

  void DispatchHosts();

  // An idle thread dispatches until it starts a costly dispatch, blocks, or
  // has nothing to dispatch. Ops without host cost launch at once.
  void HostRun(int32_t th);

  // Eager execution: the thread dispatches in program order on its own
  // clock, ahead of the event loop, launching each task at the end of its
  // dispatch (Launch with that time; the task becomes ready no earlier,
  // MakeReady). It runs ahead as long as what it does is already decided:
  // it stops at a synchronizing task (until the task finishes) and at a
  // launch into a queue that is full now. Launches counted ahead only add
  // to a queue, so a queue with room now has room then; a full one may free
  // a slot before the dispatch ends, which the device's next kernel finish
  // tells (HostOnFinish). The result is the event-by-event one's; events
  // remain only for launches whose inputs are there before them.
  void RunAhead(int32_t th, int32_t p);

  void StartHostOp(int32_t th, int32_t task, double cost);

  void RecordHostOp(int32_t th, int32_t task, double start, double cost);

  void HostFinish(int32_t th);

  bool InQueue(int32_t task) const;

  // Thread th launches `task` at time `at` (now, or ahead of the loop in
  // eager execution): false when it blocks (a full launch queue, or a
  // synchronizing task).
  [[gnu::always_inline]] bool Launch(int32_t th, int32_t task, double at);

  [[gnu::always_inline]] void LaunchNow(int32_t th, int32_t task, double at);

  // Graph execution: the same-device successors of a dispatched task may
  // become dispatchable.
  void Dispatched(int32_t task);

  // Eager, the usual case of a host far ahead of its GPUs: thread th is
  // blocked on device d's full launch queue, a kernel of d ended, and the
  // thread's next task after the one it waits to launch goes to d too. The
  // freed slot takes the waiting task, which fills the queue again, so the
  // thread dispatches the next task and blocks on d once more: what waking
  // it (MarkThread, RunAhead) would do, without leaving and re-entering the
  // wait list. `waiting` launches at `at`. False, and nothing changed, in
  // any other case.
  bool Relaunch(int32_t th, int32_t waiting, int32_t d, double at);

  // A kernel ended: its stream's next task may start; a thread blocked on
  // the device's queue or on this task may go on.
  void HostOnFinish(int32_t task, int32_t d, int32_t lane);

  // ---- memory (the out-of-memory report: engine_setup.cc) ----------------
  // Inlined on the hot path; the out-of-memory report is out of line.
  [[gnu::always_inline]] void Alloc(int32_t d, int64_t bytes, int32_t node, int32_t tensor) {
    const int64_t mem = mem_[d] + bytes;
    mem_[d] = mem;
    if (mem > peak_[d]) {
      peak_[d] = mem;
      if (mem > m_.capacity[d] && out_.oom.device < 0) [[unlikely]]
        RecordOom(d, bytes, node, tensor);
    }
  }

  void Free(int32_t d, int64_t bytes, int32_t t) {
    mem_[d] -= bytes;
    if constexpr (kFull) --ws_.live[static_cast<int64_t>(t) * nd_ + d];
  }

  [[gnu::noinline]] void RecordOom(int32_t d, int64_t requested, int32_t node, int32_t tensor);

  const Engine& e_;
  const EngineModel& m_;
  const SimOptions& opt_;
  const Decision& dec_;
  Workspace& ws_;
  RunOutcome out_;

  int32_t nd_ = 0;
  int32_t nlanes_ = 0;             // streams: nd_, or 2 * nd_ with collectives (lane d + nd_)
  const uint8_t* comm_ = nullptr;  // EngineModel::comm when the graph has collectives
  bool track_ = true;
  bool reuse_ = true;
  bool stop_at_oom_ = true;
  TaskState* tasks_ = nullptr;
  int32_t* running_ = nullptr;
  uint64_t* dirty_words_ = nullptr;
  uint64_t dirty_summary_ = 0;  // bit w: dirty_words_[w] != 0
  int64_t* mem_ = nullptr;
  int64_t* peak_ = nullptr;
  CopyState* copies_ = nullptr;
  int32_t* held_ = nullptr;
  int32_t* in_copy_ = nullptr;
  int32_t* seen_ = nullptr;
  int32_t* seen_transfer_ = nullptr;
  uint8_t* link_busy_ = nullptr;
  uint8_t* link_dirty_ = nullptr;
  uint8_t* res_busy_ = nullptr;
  ServiceQueue* ready_ = nullptr;
  ServiceQueue* link_queue_ = nullptr;
  const int32_t* task_of_ = nullptr;  // fusion only
  const int64_t* talloc_ = nullptr;   // fusion only
  const double* tprio_ = nullptr;     // null: FIFO ready queues
  const double* xprio_ = nullptr;     // null: FIFO link queues
  const int32_t* gate_ = nullptr;     // null: no counted gates (Decision::gate), else per task
  const int32_t* gate_need_ = nullptr;
  const int32_t* gate_signal_ = nullptr;  // per node
  int32_t* gate_count_ = nullptr;
  size_t num_dirty_links_ = 0;
  // The host (kHost).
  Execution exec_ = Execution::kNone;
  bool sync_ = false;  // some task makes its thread wait for it (never under captured)
  // Raw views of the host's per-run arrays (SetupHost; none is resized during the run).
  const double* host_cost_ = nullptr;
  const uint8_t* host_sync_ = nullptr;
  int32_t* outstanding_ = nullptr;
  int32_t* last_launched_ = nullptr;
  int32_t* stream_next_ = nullptr;
  int32_t* sync_waiter_ = nullptr;
  int32_t* wait_head_ = nullptr;
  int32_t* wait_tail_ = nullptr;
  int32_t* wait_next_ = nullptr;
  int32_t* thread_task_ = nullptr;
  uint8_t* thread_state_ = nullptr;
  double* thread_clock_ = nullptr;
  double* thread_busy_ = nullptr;
  int32_t* proc_cursor_ = nullptr;
  const int32_t* proc_order_ = nullptr;
  const int32_t* proc_off_ = nullptr;
  bool per_device_ = false;
  bool in_order_ = true;
  bool fast_order_ = true;
  int32_t nproc_ = 1;
  int32_t tpp_ = 1;
  int32_t nthreads_ = 0;
  int32_t queue_cap_ = 0;
  bool identity_order_ = false;    // eager/captured program order is 0..n-1 (NextHostTask)
  double* launch_time_ = nullptr;  // eager execution: Workspace::launch_time; else null
  uint64_t dirty_thread_summary_ = 0;
  double now_ = 0.0;
  int32_t tasks_total_ = 0;
  int32_t tasks_done_ = 0;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_ENGINE_RUN_H_
