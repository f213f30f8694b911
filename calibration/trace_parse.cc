// Checked JSON access for the readers, and the schema dispatch of ReadTrace.
#include "calibration/trace_parse.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "calibration/trace_reader.h"
#include "core/io.h"
#include "core/json_text.h"

namespace gosim::calibration {
namespace internal {
namespace {

std::string TypeName(const Json& j) {
  return j.type_name();
}

bool IsIntegral(const Json& j) {
  if (j.is_number_integer()) return true;
  if (!j.is_number_float()) return false;
  const double v = j.get<double>();
  return std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 9.0e18;
}

int64_t AsInt(const Json& j) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return static_cast<int64_t>(j.get<double>());
}

}  // namespace

EventView::EventView(const Json& event, int64_t index, const std::string& source)
    : event_(event), index_(index), source_(source) {
  if (!event_.is_object()) {
    Fail("", "event is a JSON " + TypeName(event_) + ", not an object",
         "every entry of traceEvents must be an object such as {\"ph\": \"X\", ...}");
  }
  const auto it = event_.find("args");
  if (it != event_.end() && !it->is_null()) {
    if (!it->is_object())
      Fail("args", "'args' is a JSON " + TypeName(*it) + ", not an object", "write args as {...}");
    args_ = &*it;
  }
}

void EventView::Fail(const std::string& path, const std::string& message, const std::string& hint) const {
  ThrowEventError(source_, index_, path, message, hint);
}

bool EventView::Has(const char* key) const {
  return event_.contains(key);
}
bool EventView::HasArg(const char* key) const {
  return args_ != nullptr && args_->contains(key);
}

std::string EventView::Str(const char* key) const {
  const auto it = event_.find(key);
  if (it == event_.end())
    Fail(key, std::string("missing field '") + key + "'", "re-export the trace with the profiler");
  if (!it->is_string())
    Fail(key, std::string("'") + key + "' is a " + TypeName(*it) + ", expected a string", "");
  return it->get<std::string>();
}

std::string EventView::OptStr(const char* key, const std::string& fallback) const {
  const auto it = event_.find(key);
  if (it == event_.end() || it->is_null()) return fallback;
  if (!it->is_string())
    Fail(key, std::string("'") + key + "' is a " + TypeName(*it) + ", expected a string", "");
  return it->get<std::string>();
}

std::optional<std::string> EventView::ArgStr(const char* key) const {
  if (args_ == nullptr) return std::nullopt;
  const auto it = args_->find(key);
  if (it == args_->end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    Fail(std::string("args.") + key,
         std::string("'") + key + "' is a " + TypeName(*it) + ", expected a string", "");
  }
  return it->get<std::string>();
}

double EventView::Num(const char* key) const {
  const auto it = event_.find(key);
  if (it == event_.end()) {
    Fail(key, std::string("missing field '") + key + "'",
         "complete events (ph \"X\") need ts and dur in microseconds");
  }
  if (!it->is_number())
    Fail(key, std::string("'") + key + "' is a " + TypeName(*it) + ", expected a number", "");
  const double v = it->get<double>();
  if (!std::isfinite(v)) Fail(key, std::string("'") + key + "' is not finite", "");
  return v;
}

std::optional<int64_t> EventView::ArgInt(const char* key) const {
  if (args_ == nullptr) return std::nullopt;
  const auto it = args_->find(key);
  if (it == args_->end() || it->is_null()) return std::nullopt;
  if (!IsIntegral(*it)) {
    Fail(std::string("args.") + key,
         std::string("'") + key + "' is a " + TypeName(*it) + ", expected an integer", "");
  }
  return AsInt(*it);
}

std::optional<double> EventView::ArgNum(const char* key) const {
  if (args_ == nullptr) return std::nullopt;
  const auto it = args_->find(key);
  if (it == args_->end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    Fail(std::string("args.") + key, std::string("'") + key + "' is not a finite number", "");
  }
  return it->get<double>();
}

std::string EventView::IdText(const char* key) const {
  const auto it = event_.find(key);
  if (it == event_.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (IsIntegral(*it)) return std::to_string(AsInt(*it));
  Fail(key, std::string("'") + key + "' is a " + TypeName(*it) + ", expected an integer or a string", "");
}

TimeBase TimeBase::FromEvents(const Json& events) {
  TimeBase base;
  double smallest = std::numeric_limits<double>::infinity();
  for (const Json& e : events) {
    if (!e.is_object()) continue;
    const auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get_ref<const std::string&>() != "X") continue;
    const auto ts = e.find("ts");
    if (ts == e.end() || !ts->is_number()) continue;
    const double v = ts->get<double>();
    if (std::isfinite(v) && v < smallest) smallest = v;
  }
  if (std::isfinite(smallest) && std::fabs(smallest) < 9.0e18)
    base.origin_ = static_cast<int64_t>(std::floor(smallest));
  return base;
}

double TimeBase::Seconds(const Json& ts) const {
  if (ts.is_number_integer()) return static_cast<double>(AsInt(ts) - origin_) * 1e-6;
  return (ts.get<double>() - static_cast<double>(origin_)) * 1e-6;
}

int32_t ThreadTable::Get(const std::string& pid, const std::string& tid) {
  const auto key = std::make_pair(pid, tid);
  const auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(trace_->threads.size());
  trace_->threads.push_back({pid, tid, ""});
  index_.emplace(key, id);
  return id;
}

void ReadOpInputs(const EventView& event, TraceOp* op) {
  const Json* args = event.Args();
  if (args == nullptr) return;
  const auto dims = args->find("Input Dims");
  if (dims == args->end() || dims->is_null()) return;
  if (!dims->is_array())
    event.Fail("args.Input Dims", "'Input Dims' is not a list", "expected [[d0, d1], [], ...]");
  std::vector<std::string> types;
  const auto type_it = args->find("Input type");
  if (type_it != args->end() && !type_it->is_null()) {
    if (!type_it->is_array())
      event.Fail("args.Input type", "'Input type' is not a list", "expected [\"float\", ...]");
    for (const Json& t : *type_it) types.push_back(t.is_string() ? t.get<std::string>() : "");
  }
  // Scalar arguments' values (a pooling window, a stride); anything that
  // is not a list of strings is ignored, as older traces have none.
  std::vector<std::string> values;
  const auto value_it = args->find("Concrete Inputs");
  if (value_it != args->end() && value_it->is_array()) {
    for (const Json& v : *value_it) values.push_back(v.is_string() ? v.get<std::string>() : "");
  }
  auto read_shape = [&](const Json& j, size_t i) {
    std::vector<int64_t> shape;
    for (const Json& d : j) {
      if (!IsIntegral(d) || AsInt(d) < 0) {
        event.Fail("args.Input Dims[" + std::to_string(i) + "]", "a dimension is not a non-negative integer",
                   "dimensions are lists of non-negative integers");
      }
      shape.push_back(AsInt(d));
    }
    return shape;
  };
  op->has_inputs = true;
  for (size_t i = 0; i < dims->size(); ++i) {
    const Json& d = (*dims)[i];
    if (!d.is_array())
      event.Fail("args.Input Dims[" + std::to_string(i) + "]", "an input's dims are not a list", "");
    OpInput input;
    input.type = i < types.size() ? types[i] : "";
    input.value = i < values.size() ? values[i] : "";
    const bool nested = !d.empty() && d.front().is_array();
    if (nested) {
      for (const Json& element : d) {
        if (!element.is_array())
          event.Fail("args.Input Dims[" + std::to_string(i) + "]", "mixed tensor list", "");
        input.list.push_back(read_shape(element, i));
      }
    } else {
      input.shape = read_shape(d, i);
    }
    input.dtype = DTypeFromProfilerType(input.type);
    const bool list_type = input.type.find("List") != std::string::npos;
    input.is_tensor =
        !nested && !list_type &&
        (input.dtype != graphs::DType::kUnknown || (input.type.empty() && !input.shape.empty()));
    if (nested && input.dtype == graphs::DType::kUnknown) input.dtype = graphs::DType::kFloat32;
    op->inputs.push_back(std::move(input));
  }
}

std::optional<CommsArgs> ReadCommsArgs(const EventView& event) {
  const std::optional<std::string> name = event.ArgStr("Collective name");
  if (!name) return std::nullopt;
  CommsArgs comms;
  comms.name = *name;
  comms.nelems = event.ArgInt("In msg nelems").value_or(-1);
  comms.dtype = event.ArgStr("dtype").value_or("");
  const int64_t group = event.ArgInt("Group size").value_or(0);
  comms.group_size = group > 0 && group < (1 << 30) ? static_cast<int32_t>(group) : 0;
  return comms;
}

}  // namespace internal

namespace {

using internal::Json;

Json ParseJson(std::string_view text, const std::string& source) {
  // Traces are often one long line: errors give the byte offset.
  return ParseJsonText<TraceError, Json>(
      text, source, "export the trace again from the profiler (a truncated file ends early)",
      /*lines=*/false);
}

}  // namespace

Trace ParseTrace(std::string_view text, const std::string& source, const ReadOptions& options) {
  const Json root = ParseJson(text, source);
  const Json* events = nullptr;
  if (root.is_array()) {
    events = &root;
  } else if (root.is_object()) {
    const auto it = root.find("traceEvents");
    if (it == root.end()) {
      Location where{source};
      where.path = "traceEvents";
      throw TraceError(
          "unknown trace schema: the JSON object has no 'traceEvents'", where,
          "expected a Chrome trace: {\"traceEvents\": [...]} from the PyTorch profiler, Kineto or a "
          "TensorFlow timeline");
    }
    if (!it->is_array()) {
      Location where{source};
      where.path = "traceEvents";
      throw TraceError("'traceEvents' is not a list", where, "expected \"traceEvents\": [{...}, ...]");
    }
    events = &*it;
  } else {
    throw TraceError("unknown trace schema: the file is a JSON " + std::string(root.type_name()),
                     Location{source}, "expected a Chrome trace object or a list of events");
  }
  // TensorFlow timelines are recognized by their "Op" events and the absence
  // of Kineto categories.
  bool tf_ops = false;
  bool kineto = false;
  for (const Json& e : *events) {
    if (!e.is_object()) continue;
    const auto cat = e.find("cat");
    if (cat == e.end() || !cat->is_string()) continue;
    const std::string& c = cat->get_ref<const std::string&>();
    if (c == "Op") tf_ops = true;
    if (c == "cpu_op" || c == "kernel" || c == "cuda_runtime" || c == "Operator" || c == "Kernel" ||
        c == "Runtime" || c == "gpu_memcpy" || c == "Memcpy" || c == "user_annotation") {
      kineto = true;
    }
  }
  try {
    if (tf_ops && !kineto) return internal::ReadTfTimelineEvents(*events, source, options);
    return internal::ReadKinetoEvents(root, *events, source, options);
  } catch (const Json::exception& e) {
    // Defensive: every access is checked, but a JSON library error must still
    // surface as a trace error, never as a crash.
    throw TraceError(std::string("malformed trace: ") + e.what(), Location{source}, "export the trace again");
  }
}

Trace ReadTrace(const std::string& path, const ReadOptions& options) {
  if (!FileExists(path)) throw IoError("trace file not found", Location{path}, "check the path");
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const IoError& e) {
    // A corrupt or truncated gzip stream is a broken trace, not an OS error.
    if (e.message().find("gzip") != std::string::npos) throw TraceError(e.message(), e.where(), e.hint());
    throw;
  }
  return ParseTrace(text, path, options);
}

}  // namespace gosim::calibration
