// The discrete-event engine behind Evaluator.
//
// EngineModel holds everything about (graph, cluster, cost model) that does
// not depend on the decision: per-(node, device-kind) kernel times, flat CSR
// arrays of tensor consumers, node inputs and control successors, routes and
// per-link transfer parameters. It is built once and read concurrently.
//
// Workspace holds the per-run state (queues, counters, memory) in vectors that
// keep their capacity, so that a thread reusing one Workspace allocates
// nothing per run after the first (warm-up) runs.
//
// Engine::Evaluate / Simulate run one decision in one Workspace. The
// semantics are in docs/SIMULATOR.md ("The engine"); in short: one compute
// stream per device serving its ready queue (FIFO by ready time, or by
// priority), one FIFO (or transfer-priority) queue per link, shared resources
// held for a transfer's whole duration, store-and-forward routes, memory
// tracked per tensor copy.
#ifndef GOSIM_SIM_ENGINE_H_
#define GOSIM_SIM_ENGINE_H_

#include <cstdint>
#include <vector>

#include "graphs/graph.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/decision.h"
#include "sim/evaluator.h"
#include "sim/event_queue.h"
#include "sim/msr.h"
#include "sim/options.h"
#include "sim/result.h"
#include "sim/service_queue.h"

namespace gosim::sim {

struct EngineModel {
  // Hot per-node and per-tensor data are packed so that one node's (one
  // tensor's) fields share a cache line.
  struct NodeInfo {
    int32_t out_begin, out_end;    // output tensors
    int32_t in_begin, in_end;      // into inputs
    int32_t ctrl_begin, ctrl_end;  // into ctrl (control successors)
    int64_t out_bytes;             // resident bytes of all outputs (aliases take none)
  };
  struct TensorInfo {
    int64_t bytes;                 // what a transfer moves (graphs::TensorInfo::bytes)
    int32_t cons_begin, cons_end;  // into consumers
    int32_t producer;
    int32_t alias;  // 1: a view (graphs::TensorInfo::alias): no memory of its own where produced
    int64_t resident() const { return alias != 0 ? 0 : bytes; }
  };
  struct Consumer {  // a distinct node reading a tensor
    int32_t node;
    int32_t input;  // the matching entry of `inputs`
  };
  struct Input {  // a distinct tensor read by a node
    int32_t tensor;
    int32_t producer;
  };

  int32_t num_nodes = 0;
  int32_t num_tensors = 0;
  int32_t num_devices = 0;
  int32_t num_links = 0;
  int32_t num_resources = 0;

  // Devices with identical specs (all but the name) share a class, and so
  // their kernel times: op_time[node * num_classes + device_class[d]].
  int32_t num_classes = 0;
  std::vector<int32_t> device_class;
  std::vector<double> op_time;    // seconds, launch overhead included
  std::vector<int64_t> capacity;  // bytes per device

  std::vector<NodeInfo> nodes;
  std::vector<TensorInfo> tensors;
  std::vector<Consumer> consumers;   // per tensor, ascending node
  std::vector<Input> inputs;         // per node, ascending tensor
  std::vector<int32_t> input_off;    // [node + 1] into inputs (nodes[v].in_begin, in_end)
  std::vector<int32_t> ctrl;         // per node: distinct control successors, ascending
  std::vector<int32_t> ctrl_in_off;  // [node + 1] into ctrl_in
  std::vector<int32_t> ctrl_in;      // distinct control predecessors, ascending
  std::vector<int32_t> deps;         // [node] inputs + control predecessors
  std::vector<int32_t> sources;      // nodes with no dependencies, ascending (ready at time 0)
  std::vector<int64_t> persistent;   // [node]
  bool has_alias = false;            // some tensor is an alias

  // Route from s to d: route_links[route_off[s * D + d] .. route_off[s * D + d + 1]).
  std::vector<int32_t> route_off;
  std::vector<int32_t> route_links;
  std::vector<double> link_latency;    // seconds
  std::vector<double> link_bandwidth;  // bytes/s, min of the link and its resources
  std::vector<int32_t> link_res_off;   // [link + 1] into link_res
  std::vector<int32_t> link_res;       // shared resources a link occupies
  std::vector<int32_t> res_links_off;  // [resource + 1] into res_links
  std::vector<int32_t> res_links;      // links that use a resource

  // The host (Engine::execution() != kNone), per (node, device class): the
  // host seconds of dispatching the node (HostOf; a first update node of a
  // parameter also carries HostCosts::per_parameter under eager); per node
  // whether the host then waits for it; per device class the HostCosts.
  std::vector<double> host_time;       // [node * num_classes + class]; 0 for host sources
  std::vector<uint8_t> host_sync;      // [node]
  bool has_host_sync = false;          // some node's host_sync is set
  std::vector<uint8_t> host_has_work;  // [node]: FLOPs or bytes (graph execution prices it as a launch)
  std::vector<uint8_t> host_source;    // [node]: no inputs and no work (nothing dispatches it)
  std::vector<HostCosts> host_costs;   // [class]

  // Collectives (op types "nccl:..."): they run on their device's
  // communication stream, beside its compute stream, as NCCL kernels do.
  std::vector<uint8_t> comm;  // [node]
  bool has_comm = false;

  int64_t NumCopies() const { return static_cast<int64_t>(num_tensors) * num_devices; }
};

// Builds the model; throws ConfigError when two devices have no route.
// `host` fills the host fields (the cost model must price every device's
// host, CostModel::HostModelled); `eager` adds HostCosts::per_parameter to
// the first update node of each parameter.
EngineModel BuildEngineModel(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
                             bool host = false, bool eager = false);

// Throws DecisionError when `decision` does not fit the model: vector sizes,
// device indices, non-finite priorities, fusion group ids outside [-1, nodes).
// O(nodes); the deeper checks (convexity, colocation) are ValidateDecision's.
// With `check_devices = false` the per-node device range check is left to the
// caller (the engine does it in the pass that reads the placement anyway, and
// calls this again with true to throw the error).
void CheckDecision(const Decision& decision, const EngineModel& model, const graphs::Graph& graph,
                   bool check_devices = true);

// Per-run state, reused across runs. Internal to the engine.
struct Workspace {
  struct Transfer {
    int32_t tensor;
    int32_t src;
    int32_t dst;
    int32_t slot;  // once-per-edge mode: the consumer's entry in `consumers`; -1: every consumer on dst
    int32_t refs;  // consumers on dst that have not finished (the received copy's users)
    int64_t bytes;
    int32_t route;  // offset into route_links
    int16_t hops;
    int16_t hop;      // current hop
    double priority;  // in the link queues
    double queued;    // when the current hop entered its link's queue
    int32_t record;   // current hop record (full runs)
    int32_t cause;    // what made the current hop ready (full runs)
  };
  // Full runs only: one record per kernel and per hop, with the cause of its
  // start time (a task id, num_nodes + hop record, or -1).
  struct OpRec {
    int32_t task;
    int32_t device;
    double ready;
    double start;
    double end;
    int32_t cause;
    bool waited;  // started later than ready: waited for the device
  };
  struct HopRec {
    int32_t transfer;
    int32_t link;
    int32_t hop;
    double queued;
    double start;
    double end;
    int32_t cause;
    bool waited;
  };

  struct TaskState {  // per task (indexed by node id; a fused group is its smallest node id)
    double time;      // kernel duration on its device
    int32_t pending;  // inputs and control predecessors not yet available
    int32_t device;
  };
  struct CopyState {  // per tensor: the copy on its producer's device
    int64_t bytes;
    int32_t refs;    // local consumers + outgoing transfers not yet done
    int32_t device;  // the producer's device (valid once the producer ended)
  };
  std::vector<TaskState> tasks;
  std::vector<CopyState> copies;
  std::vector<int32_t> held;           // [node] its alias outputs still alive: its inputs stay allocated
  std::vector<int32_t> in_copy;        // [input entry] transfer that brought a remote input
  std::vector<int32_t> seen_transfer;  // [device] transfer made for the current tensor
  // Fusion only.
  std::vector<int32_t> task_of;     // [node]
  std::vector<int64_t> task_alloc;  // [task] bytes allocated at start
  std::vector<double> task_priority;
  std::vector<int32_t> group_leader;  // [group id]
  std::vector<int32_t> member_off;    // [node + 1]
  std::vector<int32_t> members;
  std::vector<int32_t> group_size;  // [node]
  std::vector<int32_t> scratch;     // [node]
  // Per device.
  std::vector<int64_t> mem;
  std::vector<int64_t> peak;
  std::vector<int64_t> persistent;
  std::vector<int32_t> running;
  std::vector<double> busy;       // full runs only: compute stream
  std::vector<double> comm_busy;  // full runs only: communication stream
  std::vector<int32_t> kernels;   // full runs only
  // Devices whose stream may pick a new kernel at the current instant, as a
  // bitset ([d / 64] bit d % 64), so that they are visited by index order.
  std::vector<uint64_t> dirty_device_words;
  std::vector<int32_t> seen;  // destination stamps while fanning out a tensor
  std::vector<ServiceQueue> ready;
  // Counted gates (Decision::gate): per counter its count and the tasks
  // ready but waiting for it (a heap by -need); per task, with fusion, the
  // group's gate and need.
  std::vector<int32_t> gate_count;
  std::vector<ServiceQueue> gate_parked;
  std::vector<int32_t> task_gate;
  std::vector<int32_t> task_gate_need;
  std::vector<int32_t> gate_list_count;  // per counter, while the program order is built
  std::vector<int32_t> members_scratch;
  // Per link and resource.
  std::vector<uint8_t> link_busy;
  std::vector<uint8_t> link_dirty;
  std::vector<int32_t> dirty_links;
  std::vector<ServiceQueue::Entry> link_heads;  // scratch for DispatchLinks
  std::vector<ServiceQueue> link_queue;
  std::vector<uint8_t> res_busy;
  // Full runs only: what crossed each link and resource.
  std::vector<double> link_busy_time;
  std::vector<int64_t> link_bytes;
  std::vector<int32_t> link_hops;
  std::vector<double> res_busy_time;
  std::vector<int64_t> res_bytes;
  std::vector<int32_t> res_hops;
  std::vector<Transfer> transfers;
  EventQueue events;
  // Full runs only.
  std::vector<int32_t> data_cause;     // [task]
  std::vector<double> ready_time;      // [task]
  std::vector<int32_t> op_rec_of;      // [task]
  std::vector<int32_t> last_task;      // [device] last kernel started
  std::vector<int32_t> link_last_hop;  // [link]
  std::vector<int32_t> res_last_hop;   // [resource]
  std::vector<int32_t> live;           // [tensor * D + device] live copies
  std::vector<OpRec> op_recs;
  std::vector<HopRec> hop_recs;

  // The host (execution != none).
  struct HostRec {
    int32_t task;  // -1: a captured graph's launch
    int32_t thread;
    double start;
    double end;
    int32_t cause;  // a cause code (Run::kHostCause), or -1
  };
  std::vector<double> host_cost;         // [task] seconds of dispatch
  std::vector<uint64_t> copy_mask;       // [tensor] devices whose copy call is counted; all 0 between runs
  std::vector<int32_t> copy_touched;     // tensors with a copy_mask bit set in this run
  std::vector<int32_t> host_pending;     // [task] same-process predecessors not yet dispatched
  std::vector<int32_t> proc_order;       // tasks by process, in program order (fast path)
  std::vector<int32_t> proc_off;         // [process + 1] into proc_order
  std::vector<int32_t> proc_cursor;      // [process]
  std::vector<ServiceQueue> host_ready;  // [process] dispatchable tasks (heap or FIFO)
  std::vector<int32_t> thread_task;      // [thread] task being dispatched or waiting to launch, -1
  std::vector<uint8_t> thread_state;     // [thread] Run::HostState
  std::vector<double> thread_busy;       // [thread] seconds of dispatch
  std::vector<int32_t> thread_cause;     // [thread] full runs: cause of its next dispatch
  std::vector<int32_t> wait_next;        // [thread] next thread waiting on the same device's queue
  std::vector<uint64_t> dirty_thread_words;
  std::vector<int32_t> outstanding;    // [device] launched kernels not finished
  std::vector<int32_t> last_launched;  // [device] the last launched task not finished, -1
  std::vector<int32_t> wait_head;      // [device] first thread blocked on its launch queue
  std::vector<int32_t> wait_tail;      // [device]
  std::vector<int32_t> stream_next;    // [task] the task launched after it on its stream (once there is one)
  std::vector<int32_t> sync_waiter;    // [task] synchronizing tasks: the thread waiting for them
  std::vector<int32_t> launch_cause;   // [task] full runs: the host record of its launch
  // Eager execution runs each host thread ahead of the event loop (Run::HostRun).
  std::vector<double> launch_time;   // [task] when its launch takes effect (written at its launch)
  std::vector<double> thread_clock;  // [thread] when it has dispatched everything up to now
  std::vector<HostRec> host_recs;    // full runs
};

// What a run produced besides the workspace contents (internal).
struct RunOutcome {
  double makespan = 0.0;       // time of the last event processed
  bool stopped = false;        // stopped at the first out-of-memory event
  bool fusion = false;         // the decision had fusion groups (Workspace::group_size is valid)
  OomInfo oom;                 // device == -1 when every allocation fitted; `live` only in full runs
  double host_busy = 0.0;      // the busiest host thread's dispatch time (0 without a host)
  int32_t host_processes = 0;  // processes of the host threads (0 without a host)
};

// Builds the full result of a finished full run from the workspace.
SimResult AssembleResult(const EngineModel& model, const Workspace& ws, const RunOutcome& outcome,
                         bool timeline);

// The execution and processes `options` resolve to on this cluster and cost
// model (kAuto: the cluster's host settings, else eager where the cost model
// prices every device's host, else none; one process). ConfigError when a
// host execution is asked for where the cost model does not price the host
// of every device kind.
struct HostSetup {
  Execution execution = Execution::kNone;
  Processes processes = Processes::kOne;
};
HostSetup ResolveHost(const SimOptions& options, const Cluster& cluster, const CostModel& cost_model);

class Engine {
 public:
  // Keeps references to its arguments, which must outlive the engine.
  Engine(const graphs::Graph& graph, const Cluster& cluster, const CostModel& cost_model,
         const SimOptions& options);

  const EngineModel& model() const { return model_; }
  // What the options resolved to (ResolveHost).
  const HostSetup& host() const { return host_; }

  // Simulates `decision` and summarizes. Throws DecisionError when the
  // decision does not fit the graph and cluster (sizes, indices, non-finite
  // priorities, fusion across devices, fusion groups that deadlock).
  Evaluation Evaluate(const Decision& decision, Workspace& ws) const;
  // The full result; with `timeline`, every kernel and transfer hop.
  SimResult Simulate(const Decision& decision, bool timeline, Workspace& ws) const;

 private:
  template <bool kFull, bool kFusion, bool kHost>
  friend class Run;
  template <bool kFull>
  RunOutcome Dispatch(const Decision& decision, Workspace& ws) const;

  const graphs::Graph& graph_;
  const Cluster& cluster_;
  const CostModel& cost_model_;
  const SimOptions& options_;
  HostSetup host_;
  EngineModel model_;
  MaxLoadModel max_load_;
};

}  // namespace gosim::sim

#endif  // GOSIM_SIM_ENGINE_H_
