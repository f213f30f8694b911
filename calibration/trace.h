// The typed model of a profiler trace that every calibration step reads.
//
// A Trace is what the readers (kineto_reader.cc, tf_timeline_reader.cc) make
// of a PyTorch-profiler / Kineto Chrome trace or a TensorFlow timeline: CPU
// operators with their input shapes, CUDA runtime calls, GPU activities
// (kernels, memcpys, memsets) joined to the operator that launched them,
// collectives with their message sizes, profiler-step boundaries and the
// properties of the GPUs. Everything is indexed by position in the vectors
// below; -1 means "none".
//
// Units: times are seconds since the trace's origin (the earliest timestamp
// of any event), sizes are bytes.
#ifndef GOSIM_CALIBRATION_TRACE_H_
#define GOSIM_CALIBRATION_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "graphs/graph.h"

namespace gosim::calibration {

enum class TraceSchema : uint8_t {
  kKineto = 0,        // categories cpu_op, cuda_runtime, kernel, gpu_memcpy, gpu_memset
  kKinetoLegacy = 1,  // categories Operator, Runtime, Kernel, Memcpy, Memset
  kTfTimeline = 2,    // TensorFlow timeline: cat "Op", args.name, args.op
};
std::string_view TraceSchemaName(TraceSchema schema);

// One argument of an operator as the profiler recorded it ("Input Dims" and
// "Input type"). Non-tensor arguments (ints, lists, None) have is_tensor false.
struct OpInput {
  std::vector<int64_t> shape;              // tensor shape; empty = 0-d tensor or non-tensor
  std::vector<std::vector<int64_t>> list;  // shapes of a tensor list argument
  std::string type;                        // as recorded, e.g. "float", "c10::Half", "Scalar"
  // A scalar argument's value as the profiler's "Concrete Inputs" records
  // it (PyTorch >= 2.1 with record_shapes), e.g. "[3, 3]" or "False"; empty
  // for tensors and for traces without them.
  std::string value;
  graphs::DType dtype = graphs::DType::kUnknown;
  bool is_tensor = false;
};

struct TraceThread {
  std::string pid;   // process id as text (may be a name such as "Spans")
  std::string tid;   // thread id as text ("stream 7" in the legacy schema)
  std::string name;  // from thread_name metadata, may be empty
};

struct TraceOp {
  std::string name;  // e.g. "aten::conv2d", "ProfilerStep#16", "## forward ##"
  std::string node;  // the graph node name: TF timeline args.name, `gosim profile` "gosim node"; else empty
  // Traces written by `gosim profile`: the graph node's op type and work as
  // the simulator sees them (args "gosim op type", "gosim flops", "gosim
  // bytes"); empty / -1 otherwise.
  std::string graph_op_type;
  double graph_flops = -1.0;
  double graph_bytes = -1.0;
  bool annotation = false;       // a user annotation / profiler step rather than an operator
  int32_t thread = -1;           // index into Trace::threads
  double start = 0.0;            // seconds
  double duration = 0.0;         // seconds
  int64_t external_id = -1;      // "External id" / "external id"
  int64_t sequence_number = -1;  // autograd sequence number, -1 when absent
  int32_t parent = -1;           // innermost enclosing op on the same thread
  bool has_inputs = false;       // the trace recorded Input Dims for this op
  std::vector<OpInput> inputs;
  int32_t event = -1;  // index in the file's event list

  double end() const { return start + duration; }
};

// An operator called from the framework's caller (Python, the autograd
// engine) rather than from inside another operator: no enclosing op, or
// only annotations around it.
inline bool IsTopLevelOp(const std::vector<TraceOp>& ops, const TraceOp& op) {
  return !op.annotation && (op.parent < 0 || ops[static_cast<size_t>(op.parent)].annotation);
}

struct RuntimeCall {
  std::string name;  // e.g. "cudaLaunchKernel", "cudaStreamSynchronize"
  int32_t thread = -1;
  double start = 0.0;
  double duration = 0.0;
  int64_t correlation = -1;
  int64_t external_id = -1;
  int32_t op = -1;  // innermost op enclosing the call on its thread
  int32_t event = -1;

  double end() const { return start + duration; }
};

enum class ActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };
enum class CopyKind : uint8_t { kNone = 0, kHtoD, kDtoH, kDtoD, kPtoP, kOther };
// "htod", "dtoh", "dtod", "ptop", "other", "" (kNone).
std::string_view CopyKindName(CopyKind kind);

struct GpuActivity {
  std::string name;  // kernel name or "Memcpy HtoD (Pageable -> Device)"
  ActivityKind kind = ActivityKind::kKernel;
  CopyKind copy = CopyKind::kNone;
  bool pageable = false;  // a memcpy from/to pageable host memory
  int32_t device = 0;
  int32_t stream = 0;
  double start = 0.0;
  double duration = 0.0;
  int64_t bytes = 0;  // memcpy / memset size; 0 for kernels
  int64_t correlation = -1;
  int64_t external_id = -1;
  int32_t runtime = -1;     // the runtime call that launched it
  int32_t op = -1;          // the innermost op that launched it
  int32_t collective = -1;  // index into Trace::collectives for NCCL kernels
  int32_t event = -1;

  double end() const { return start + duration; }
};

// A communication collective with its message size.
struct Collective {
  std::string name;        // normalized: "allreduce", "alltoall", "broadcast", ...
  int64_t bytes = 0;       // input message size in bytes; 0 = unknown
  int32_t group_size = 0;  // ranks in the group; 0 = unknown
  std::string dtype;       // as recorded, e.g. "Float"
  int32_t activity = -1;   // the NCCL kernel
  int32_t op = -1;         // record_param_comms / nccl:* annotation, -1 if none
};

// A GPU-side synchronization the trace recorded (Kineto "cuda_sync").
struct GpuSync {
  std::string kind;                 // "Stream Sync", "Context Sync", "Event Sync", "Stream Wait Event"
  int32_t stream = -1;              // waiting stream; -1 = every stream (context sync)
  int32_t wait_on_stream = -1;      // Stream Wait Event: the stream recorded on
  int64_t correlation = -1;         // the runtime call that issued it
  int64_t record_correlation = -1;  // Stream Wait Event: the cudaEventRecord call
  double start = 0.0;
  int32_t event = -1;
};

struct ProfilerStep {
  std::string name;     // "ProfilerStep#16" or the matched annotation
  int64_t number = -1;  // 16; the ordinal among matches when the name has no number
  double start = 0.0;
  double duration = 0.0;
  int32_t thread = -1;
  int32_t op = -1;  // the annotation op

  double end() const { return start + duration; }
};

struct DeviceProperties {
  int32_t id = 0;
  std::string name;          // e.g. "Tesla V100-DGXS-32GB"
  int64_t total_memory = 0;  // bytes
  int32_t compute_major = 0;
  int32_t compute_minor = 0;
  int32_t num_sms = 0;
};

// How the kernels were joined to ops (for reports and tests).
struct JoinStats {
  int64_t by_external_id = 0;  // runtime External id named an op enclosing the call
  int64_t by_enclosure = 0;    // innermost op enclosing the runtime call
  int64_t by_activity_id = 0;  // no runtime call; the activity's own External id
  int64_t unattributed = 0;    // no op found
  int64_t no_runtime = 0;      // activities whose runtime call is not in the trace
};

struct Trace {
  std::string source;  // the file it was read from
  TraceSchema schema = TraceSchema::kKineto;
  int32_t rank = -1;  // distributedInfo.rank, -1 when absent
  int32_t world_size = -1;
  std::vector<DeviceProperties> devices;
  std::vector<TraceThread> threads;
  std::vector<TraceOp> ops;
  std::vector<RuntimeCall> runtime;
  std::vector<GpuActivity> activities;
  std::vector<Collective> collectives;
  std::vector<GpuSync> syncs;
  std::vector<ProfilerStep> steps;
  JoinStats join;
  double origin_us = 0.0;  // the file timestamp (microseconds) of time 0

  // The device the GPU activities ran on (the most frequent one), or -1.
  int32_t MainDevice() const;
  // Properties of device `id`, or nullptr.
  const DeviceProperties* FindDevice(int32_t id) const;
  // The device kind ("V100", "A100", ...) of the main device, "gpu" when the
  // trace has no device properties, "cpu" when it has no GPU activity.
  std::string DeviceKind() const;
};

// "Tesla V100-DGXS-32GB" -> "V100", "NVIDIA A100-PG509-200" -> "A100",
// "NVIDIA GeForce RTX 3090" -> "RTX3090"; "" -> "".
std::string DeviceKindFromName(std::string_view device_name);

// The dtype of a profiler "Input type" string: "float", "c10::Half",
// "c10::BFloat16", "double", "long int", "int", "bool", "unsigned char", ...
graphs::DType DTypeFromProfilerType(std::string_view type);
// The dtype of a record_param_comms "dtype" ("Float", "Half", "Long", "Byte", ...).
graphs::DType DTypeFromCommsType(std::string_view type);

// Normalizes a collective name: "all_reduce", "allreduce", "nccl:all_reduce",
// "AllReduce" -> "allreduce"; "all_to_all", "alltoall_base" -> "alltoall".
std::string NormalizeCollective(std::string_view name);

// The op that stands for `op` in fitting: the outermost operator (a name of
// the form "namespace::name", e.g. "aten::conv2d", but not "autograd::...")
// among `op` and its ancestors; `op` itself when none is an operator; -1 for -1.
int32_t TopLevelOp(const Trace& trace, int32_t op);
// True for operator names of the form "ns::name" with ns != "autograd".
bool IsOperatorName(std::string_view name);

// Assigns ops, runtime calls and activities to steps by time: the index of
// the step whose window [start, end) holds `time`, or -1.
int32_t StepAt(const Trace& trace, double time);

// Throws a TraceError about event `event` (index in the file) at JSON path
// `path` (e.g. "args.correlation").
[[noreturn]] void ThrowEventError(const std::string& source, int64_t event, const std::string& path,
                                  const std::string& message, const std::string& hint);

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_TRACE_H_
