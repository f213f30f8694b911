// Internal to the trace readers: checked access to Chrome-trace events and
// the steps shared by every schema (nesting, joining, steps, collectives).
#ifndef GOSIM_CALIBRATION_TRACE_PARSE_H_
#define GOSIM_CALIBRATION_TRACE_PARSE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/trace.h"
#include "calibration/trace_reader.h"

namespace gosim::calibration::internal {

using Json = nlohmann::json;

// One event of the file with type-checked field access: every mismatch is a
// TraceError naming the event index and the field.
class EventView {
 public:
  EventView(const Json& event, int64_t index, const std::string& source);

  const Json& json() const { return event_; }
  int64_t index() const { return index_; }
  bool Has(const char* key) const;
  bool HasArg(const char* key) const;
  // Required / optional string fields of the event or of its args.
  std::string Str(const char* key) const;
  std::string OptStr(const char* key, const std::string& fallback = {}) const;
  std::optional<std::string> ArgStr(const char* key) const;
  // Numbers (JSON numbers only).
  double Num(const char* key) const;
  std::optional<int64_t> ArgInt(const char* key) const;
  std::optional<double> ArgNum(const char* key) const;
  // pid / tid as text: integers and strings are accepted.
  std::string IdText(const char* key) const;
  // The args object, or nullptr when absent.
  const Json* Args() const { return args_; }

  [[noreturn]] void Fail(const std::string& path, const std::string& message, const std::string& hint) const;

 private:
  const Json& event_;
  const Json* args_ = nullptr;
  int64_t index_;
  const std::string& source_;
};

// Converts file timestamps (microseconds) to seconds since the origin.
class TimeBase {
 public:
  // The origin is the floor of the smallest "ts" of any complete ("X") event.
  static TimeBase FromEvents(const Json& events);
  double Seconds(const Json& ts) const;
  double origin_us() const { return static_cast<double>(origin_); }

 private:
  int64_t origin_ = 0;
};

// Interns (pid, tid) pairs as Trace::threads.
class ThreadTable {
 public:
  explicit ThreadTable(Trace* trace) : trace_(trace) {}
  int32_t Get(const std::string& pid, const std::string& tid);

 private:
  Trace* trace_;
  std::map<std::pair<std::string, std::string>, int32_t> index_;
};

// Communication arguments recorded on an op (record_param_comms) or on an
// NCCL kernel.
struct CommsArgs {
  std::string name;        // "Collective name"
  int64_t nelems = -1;     // "In msg nelems"
  std::string dtype;       // "dtype"
  int32_t group_size = 0;  // "Group size"
};

// What a reader collects besides the Trace itself.
struct ReaderExtras {
  std::map<int32_t, CommsArgs> op_comms;        // by op index
  std::map<int32_t, CommsArgs> activity_comms;  // by activity index
};

// Parses "Input Dims" / "Input type" of an op event into `op`.
void ReadOpInputs(const EventView& event, TraceOp* op);
// Reads CommsArgs from an event's args when it has "Collective name".
std::optional<CommsArgs> ReadCommsArgs(const EventView& event);

// Common tail of every reader: nests ops, joins activities to ops, finds the
// profiler steps and builds the collectives. Throws TraceError when the trace
// holds nothing a calibration can use.
void FinishTrace(Trace* trace, const ReaderExtras& extras, const ReadOptions& options);

// Schema readers (kineto_reader.cc, tf_timeline_reader.cc).
Trace ReadKinetoEvents(const Json& root, const Json& events, const std::string& source,
                       const ReadOptions& options);
Trace ReadTfTimelineEvents(const Json& events, const std::string& source, const ReadOptions& options);

}  // namespace gosim::calibration::internal

#endif  // GOSIM_CALIBRATION_TRACE_PARSE_H_
