// The TensorFlow timeline reader (tensorflow.python.client.timeline).
//
// Processes are named after devices ("process_name" metadata), e.g.
//   "/job:localhost/replica:0/task:0/device:GPU:0 Compute"
//   "/device:GPU:0/stream:7 Compute", "/device:GPU:0/memcpy Compute"
//   "/job:localhost/replica:0/task:0/device:CPU:0 Compute".
// Every "Op" event becomes an op (name = args.op, node = args.name); on a GPU
// process it is also the GPU activity of that op (a kernel, or a memcpy on a
// memcpy process). When per-stream processes exist, the aggregated
// "stream:all" process is skipped and the device's executor process
// ("/job:.../device:GPU:0 Compute") gives ops but no kernels, so that no
// kernel is counted twice.
#include <regex>
#include <string>

#include "calibration/trace_parse.h"

namespace gosim::calibration::internal {
namespace {

struct TfProcess {
  bool gpu = false;
  bool memcpy = false;
  bool all_streams = false;
  bool stream_named = false;  // "/device:GPU:0/stream:N": kernels, not the executor
  int32_t device = 0;
  int32_t stream = 0;
};

TfProcess ParseProcessName(const std::string& name) {
  TfProcess p;
  static const std::regex kGpu("(?:device:)?GPU:(\\d+)", std::regex::icase);
  static const std::regex kStream("stream:(\\d+)");
  std::smatch m;
  if (std::regex_search(name, m, kGpu) && m[1].length() < 6) {
    p.gpu = true;
    p.device = std::stoi(m[1].str());
  }
  if (std::regex_search(name, m, kStream) && m[1].length() < 9) p.stream = std::stoi(m[1].str());
  p.all_streams = name.find("stream:all") != std::string::npos;
  p.stream_named = name.find("stream:") != std::string::npos;
  p.memcpy = name.find("memcpy") != std::string::npos || name.find("Memcpy") != std::string::npos;
  return p;
}

}  // namespace

Trace ReadTfTimelineEvents(const Json& events, const std::string& source, const ReadOptions& options) {
  Trace trace;
  trace.source = source;
  trace.schema = TraceSchema::kTfTimeline;
  const TimeBase time = TimeBase::FromEvents(events);
  trace.origin_us = time.origin_us();
  ThreadTable threads(&trace);

  std::map<std::string, TfProcess> processes;
  bool per_stream = false;
  for (size_t i = 0; i < events.size(); ++i) {
    const EventView e(events[i], static_cast<int64_t>(i), source);
    if (e.Str("ph") != "M" || e.OptStr("name") != "process_name") continue;
    const std::optional<std::string> name = e.ArgStr("name");
    if (!name) continue;
    TfProcess p = ParseProcessName(*name);
    if (p.gpu && !p.all_streams && !p.memcpy && name->find("stream:") != std::string::npos) per_stream = true;
    processes[e.IdText("pid")] = p;
  }

  for (size_t i = 0; i < events.size(); ++i) {
    const EventView e(events[i], static_cast<int64_t>(i), source);
    if (e.Str("ph") != "X" || e.OptStr("cat") != "Op") continue;
    const std::string pid = e.IdText("pid");
    const auto proc = processes.find(pid);
    const TfProcess p = proc == processes.end() ? TfProcess{} : proc->second;
    if (p.gpu && p.all_streams && per_stream) continue;
    e.Num("ts");
    const double start = time.Seconds(e.json().at("ts"));
    const double dur = e.Num("dur");
    if (dur < 0.0) e.Fail("dur", "negative duration", "durations are microseconds >= 0");
    TraceOp op;
    op.name = e.ArgStr("op").value_or(e.Str("name"));
    op.node = e.ArgStr("name").value_or("");
    op.thread = threads.Get(pid, e.IdText("tid"));
    op.start = start;
    op.duration = dur * 1e-6;
    op.event = static_cast<int32_t>(i);
    const int32_t op_index = static_cast<int32_t>(trace.ops.size());
    trace.ops.push_back(op);
    // With per-stream processes, the device's executor process only shows
    // when ops were scheduled; their kernels are on the stream processes.
    if (!p.gpu || (per_stream && !p.stream_named && !p.memcpy)) continue;
    GpuActivity a;
    a.name = op.name;
    a.kind = p.memcpy ? ActivityKind::kMemcpy : ActivityKind::kKernel;
    if (p.memcpy) {
      const std::string& n = op.name;
      a.copy = n.find("HtoD") != std::string::npos   ? CopyKind::kHtoD
               : n.find("DtoH") != std::string::npos ? CopyKind::kDtoH
               : n.find("DtoD") != std::string::npos ? CopyKind::kDtoD
                                                     : CopyKind::kOther;
    }
    a.device = p.device;
    a.stream = p.stream;
    a.start = op.start;
    a.duration = op.duration;
    a.op = op_index;
    a.event = op.event;
    trace.activities.push_back(std::move(a));
  }
  if (trace.ops.empty()) {
    throw TraceError(
        "TensorFlow timeline without complete Op events", Location{source},
        "expected events such as {\"ph\": \"X\", \"cat\": \"Op\", \"args\": {\"name\": ..., \"op\": ...}}");
  }
  ReaderExtras extras;
  FinishTrace(&trace, extras, options);
  // Activities were linked to their op directly, not through runtime calls.
  trace.join = JoinStats{};
  trace.join.by_activity_id = static_cast<int64_t>(trace.activities.size());
  return trace;
}

}  // namespace gosim::calibration::internal
