// The Kineto / PyTorch-profiler reader (current and legacy schemas).
#include <cmath>
#include <limits>
#include <string>

#include "calibration/trace_parse.h"
#include "core/strings.h"

namespace gosim::calibration::internal {
namespace {

enum class Category { kIgnored, kOp, kAnnotation, kRuntime, kKernel, kMemcpy, kMemset, kSync };

Category Classify(const std::string& cat, bool* legacy) {
  if (cat == "cpu_op") return Category::kOp;
  if (cat == "user_annotation" || cat == "python_function") return Category::kAnnotation;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return Category::kRuntime;
  if (cat == "kernel") return Category::kKernel;
  if (cat == "gpu_memcpy") return Category::kMemcpy;
  if (cat == "gpu_memset") return Category::kMemset;
  if (cat == "cuda_sync") return Category::kSync;
  // Legacy schema (PyTorch <= 1.8 Kineto).
  if (cat == "Operator") {
    *legacy = true;
    return Category::kOp;
  }
  if (cat == "Runtime") {
    *legacy = true;
    return Category::kRuntime;
  }
  if (cat == "Kernel") {
    *legacy = true;
    return Category::kKernel;
  }
  if (cat == "Memcpy") {
    *legacy = true;
    return Category::kMemcpy;
  }
  if (cat == "Memset") {
    *legacy = true;
    return Category::kMemset;
  }
  return Category::kIgnored;
}

// "Memcpy HtoD (Pageable -> Device)" -> kHtoD, pageable.
CopyKind ParseCopyKind(const std::string& name, bool* pageable) {
  *pageable = name.find("Pageable") != std::string::npos;
  if (name.find("HtoD") != std::string::npos) return CopyKind::kHtoD;
  if (name.find("DtoH") != std::string::npos) return CopyKind::kDtoH;
  if (name.find("DtoD") != std::string::npos) return CopyKind::kDtoD;
  if (name.find("PtoP") != std::string::npos) return CopyKind::kPtoP;
  return CopyKind::kOther;
}

int32_t CheckedInt32(const EventView& e, const char* key, int64_t value) {
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    e.Fail(std::string("args.") + key, std::string("'") + key + "' is out of range", "");
  }
  return static_cast<int32_t>(value);
}

// The stream of a GPU event: args.stream, else the number in tid ("stream 7").
int32_t StreamOf(const EventView& e) {
  if (const auto s = e.ArgInt("stream")) return CheckedInt32(e, "stream", *s);
  const std::string tid = e.IdText("tid");
  size_t i = tid.find_first_of("0123456789");
  if (i == std::string::npos) return 0;
  int64_t v = 0;
  for (; i < tid.size() && std::isdigit(static_cast<unsigned char>(tid[i])) && v < (1LL << 31); ++i) {
    v = v * 10 + (tid[i] - '0');
  }
  return v < (1LL << 31) ? static_cast<int32_t>(v) : 0;
}

int32_t DeviceOf(const EventView& e) {
  if (const auto d = e.ArgInt("device")) return CheckedInt32(e, "device", *d);
  const std::string pid = e.IdText("pid");
  if (!pid.empty() && pid.size() < 9 && std::all_of(pid.begin(), pid.end(), ::isdigit)) return std::stoi(pid);
  return 0;
}

void ReadDeviceProperties(const Json& root, const std::string& source, Trace* trace) {
  const auto it = root.find("deviceProperties");
  if (it == root.end() || it->is_null()) return;
  Location where{source};
  where.path = "deviceProperties";
  if (!it->is_array()) throw TraceError("'deviceProperties' is not a list", where, "");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& d = (*it)[i];
    where.path = "deviceProperties[" + std::to_string(i) + "]";
    if (!d.is_object()) throw TraceError("a device entry is not an object", where, "");
    DeviceProperties props;
    auto int_field = [&](const char* key, int64_t fallback) -> int64_t {
      const auto f = d.find(key);
      if (f == d.end() || f->is_null()) return fallback;
      if (!f->is_number_integer()) {
        Location w = where;
        w.path += std::string(".") + key;
        throw TraceError(std::string("'") + key + "' is not an integer", w, "");
      }
      return f->get<int64_t>();
    };
    const int64_t id = int_field("id", static_cast<int64_t>(i));
    if (id < 0 || id > (1 << 20)) throw TraceError("device id out of range", where, "");
    props.id = static_cast<int32_t>(id);
    const auto name = d.find("name");
    if (name != d.end() && name->is_string()) props.name = name->get<std::string>();
    props.total_memory = int_field("totalGlobalMem", 0);
    props.compute_major = static_cast<int32_t>(std::clamp<int64_t>(int_field("computeMajor", 0), 0, 1000));
    props.compute_minor = static_cast<int32_t>(std::clamp<int64_t>(int_field("computeMinor", 0), 0, 1000));
    props.num_sms = static_cast<int32_t>(std::clamp<int64_t>(int_field("numSms", 0), 0, 1 << 20));
    trace->devices.push_back(std::move(props));
  }
}

void ReadDistributedInfo(const Json& root, Trace* trace) {
  const auto it = root.find("distributedInfo");
  if (it == root.end() || !it->is_object()) return;
  const auto rank = it->find("rank");
  if (rank != it->end() && rank->is_number_integer()) {
    trace->rank = static_cast<int32_t>(std::clamp<int64_t>(rank->get<int64_t>(), -1, 1 << 24));
  }
  const auto world = it->find("world_size");
  if (world != it->end() && world->is_number_integer()) {
    trace->world_size = static_cast<int32_t>(std::clamp<int64_t>(world->get<int64_t>(), -1, 1 << 24));
  }
}

// ts and dur of a complete event, in seconds.
void ReadSpan(const EventView& e, const TimeBase& time, double* start, double* duration) {
  e.Num("ts");  // type check
  *start = time.Seconds(e.json().at("ts"));
  const double dur = e.Num("dur");
  if (dur < 0.0) e.Fail("dur", "negative duration", "durations are microseconds >= 0");
  *duration = dur * 1e-6;
}

}  // namespace

Trace ReadKinetoEvents(const Json& root, const Json& events, const std::string& source,
                       const ReadOptions& options) {
  Trace trace;
  trace.source = source;
  if (root.is_object()) {
    ReadDeviceProperties(root, source, &trace);
    ReadDistributedInfo(root, &trace);
  }
  const TimeBase time = TimeBase::FromEvents(events);
  trace.origin_us = time.origin_us();
  ThreadTable threads(&trace);
  ReaderExtras extras;
  bool legacy = false;
  bool current = false;
  std::map<std::pair<std::string, std::string>, std::string> thread_names;

  for (size_t i = 0; i < events.size(); ++i) {
    const EventView e(events[i], static_cast<int64_t>(i), source);
    const std::string ph = e.Str("ph");
    if (ph == "M") {
      if (e.OptStr("name") == "thread_name") {
        if (const auto n = e.ArgStr("name")) thread_names[{e.IdText("pid"), e.IdText("tid")}] = *n;
      }
      continue;
    }
    if (ph != "X") continue;
    bool is_legacy = false;
    const Category category = Classify(e.OptStr("cat"), &is_legacy);
    if (category == Category::kIgnored) continue;
    (is_legacy ? legacy : current) = true;
    double start = 0.0;
    double duration = 0.0;
    ReadSpan(e, time, &start, &duration);
    const std::string name = e.Str("name");
    const int64_t external_id = e.ArgInt("External id").value_or(e.ArgInt("external id").value_or(-1));
    const int64_t correlation = e.ArgInt("correlation").value_or(-1);

    switch (category) {
      case Category::kOp:
      case Category::kAnnotation: {
        TraceOp op;
        op.name = name;
        op.annotation = category == Category::kAnnotation;
        op.thread = threads.Get(e.IdText("pid"), e.IdText("tid"));
        op.start = start;
        op.duration = duration;
        op.external_id = external_id;
        op.sequence_number = e.ArgInt("Sequence number").value_or(-1);
        op.graph_op_type = e.ArgStr("gosim op type").value_or("");
        if (!op.graph_op_type.empty()) {
          op.graph_flops = static_cast<double>(e.ArgInt("gosim flops").value_or(-1));
          op.graph_bytes = static_cast<double>(e.ArgInt("gosim bytes").value_or(-1));
          op.node = e.ArgStr("gosim node").value_or("");
        }
        op.event = static_cast<int32_t>(i);
        ReadOpInputs(e, &op);
        if (auto comms = ReadCommsArgs(e)) extras.op_comms[static_cast<int32_t>(trace.ops.size())] = *comms;
        trace.ops.push_back(std::move(op));
        break;
      }
      case Category::kRuntime: {
        RuntimeCall call;
        call.name = name;
        call.thread = threads.Get(e.IdText("pid"), e.IdText("tid"));
        call.start = start;
        call.duration = duration;
        call.correlation = correlation;
        call.external_id = external_id;
        call.event = static_cast<int32_t>(i);
        trace.runtime.push_back(std::move(call));
        break;
      }
      case Category::kKernel:
      case Category::kMemcpy:
      case Category::kMemset: {
        GpuActivity a;
        a.name = name;
        a.kind = category == Category::kKernel   ? ActivityKind::kKernel
                 : category == Category::kMemcpy ? ActivityKind::kMemcpy
                                                 : ActivityKind::kMemset;
        if (a.kind == ActivityKind::kMemcpy) a.copy = ParseCopyKind(name, &a.pageable);
        a.device = DeviceOf(e);
        a.stream = StreamOf(e);
        a.start = start;
        a.duration = duration;
        const int64_t bytes = e.ArgInt("bytes").value_or(0);
        if (bytes < 0) e.Fail("args.bytes", "negative size", "sizes are bytes >= 0");
        a.bytes = bytes;
        a.correlation = correlation;
        a.external_id = external_id;
        a.event = static_cast<int32_t>(i);
        if (auto comms = ReadCommsArgs(e))
          extras.activity_comms[static_cast<int32_t>(trace.activities.size())] = *comms;
        trace.activities.push_back(std::move(a));
        break;
      }
      case Category::kSync: {
        GpuSync sync;
        sync.kind = e.ArgStr("cuda_sync_kind").value_or(name);
        const int64_t stream = e.ArgInt("stream").value_or(-1);
        sync.stream = stream >= 0 && stream < (1LL << 31) ? static_cast<int32_t>(stream) : -1;
        const int64_t wait_stream = e.ArgInt("wait_on_stream").value_or(-1);
        sync.wait_on_stream =
            wait_stream >= 0 && wait_stream < (1LL << 31) ? static_cast<int32_t>(wait_stream) : -1;
        sync.correlation = correlation;
        sync.record_correlation = e.ArgInt("wait_on_cuda_event_record_corr_id").value_or(-1);
        sync.start = start;
        sync.event = static_cast<int32_t>(i);
        trace.syncs.push_back(std::move(sync));
        break;
      }
      case Category::kIgnored:
        break;
    }
  }
  if (trace.ops.empty() && trace.activities.empty() && trace.runtime.empty()) {
    throw TraceError(
        "unknown trace schema: no event has a category this reader knows", Location{source},
        "expected PyTorch profiler / Kineto events (cat cpu_op, kernel, cuda_runtime or the legacy "
        "Operator, Kernel, Runtime) or a TensorFlow timeline (cat Op)");
  }
  trace.schema = legacy && !current ? TraceSchema::kKinetoLegacy : TraceSchema::kKineto;
  for (size_t t = 0; t < trace.threads.size(); ++t) {
    const auto it = thread_names.find({trace.threads[t].pid, trace.threads[t].tid});
    if (it != thread_names.end()) trace.threads[t].name = it->second;
  }
  FinishTrace(&trace, extras, options);
  return trace;
}

}  // namespace gosim::calibration::internal
