// The schema-independent tail of every reader: op nesting, the kernel -> op
// join, profiler steps and collectives.
#include <algorithm>
#include <cctype>
#include <limits>
#include <numeric>
#include <regex>
#include <unordered_map>

#include "calibration/trace_parse.h"
#include "core/strings.h"

namespace gosim::calibration::internal {
namespace {

// Timestamps are whole microseconds in many traces, so a child may appear to
// end up to 1 us after its parent.
constexpr double kNestTolerance = 1.0e-6;

// Sets TraceOp::parent and RuntimeCall::op with one sweep per thread.
void NestOpsAndCalls(Trace* trace) {
  struct Item {
    double start;
    double duration;
    bool is_call;
    int32_t index;
  };
  std::vector<std::vector<Item>> per_thread(trace->threads.size());
  for (size_t i = 0; i < trace->ops.size(); ++i) {
    const TraceOp& op = trace->ops[i];
    per_thread[static_cast<size_t>(op.thread)].push_back(
        {op.start, op.duration, false, static_cast<int32_t>(i)});
  }
  for (size_t i = 0; i < trace->runtime.size(); ++i) {
    const RuntimeCall& call = trace->runtime[i];
    per_thread[static_cast<size_t>(call.thread)].push_back(
        {call.start, call.duration, true, static_cast<int32_t>(i)});
  }
  std::vector<int32_t> stack;
  for (std::vector<Item>& items : per_thread) {
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.is_call != b.is_call) return !a.is_call;  // an op encloses a call starting with it
      if (a.duration != b.duration) return a.duration > b.duration;
      return a.index < b.index;
    });
    stack.clear();
    for (const Item& item : items) {
      const double end = item.start + item.duration;
      while (!stack.empty() && trace->ops[static_cast<size_t>(stack.back())].end() + kNestTolerance < end) {
        stack.pop_back();
      }
      const int32_t parent = stack.empty() ? -1 : stack.back();
      if (item.is_call) {
        trace->runtime[static_cast<size_t>(item.index)].op = parent;
      } else {
        trace->ops[static_cast<size_t>(item.index)].parent = parent;
        stack.push_back(item.index);
      }
    }
  }
}

bool Encloses(const TraceOp& op, const RuntimeCall& call) {
  return op.thread == call.thread && op.start <= call.start + kNestTolerance &&
         op.end() + kNestTolerance >= call.end();
}

void JoinActivities(Trace* trace) {
  std::unordered_map<int64_t, int32_t> by_correlation;
  for (size_t i = 0; i < trace->runtime.size(); ++i) {
    if (trace->runtime[i].correlation >= 0)
      by_correlation.emplace(trace->runtime[i].correlation, static_cast<int32_t>(i));
  }
  std::unordered_map<int64_t, int32_t> by_external;
  for (size_t i = 0; i < trace->ops.size(); ++i) {
    if (trace->ops[i].external_id >= 0)
      by_external.emplace(trace->ops[i].external_id, static_cast<int32_t>(i));
  }
  JoinStats& stats = trace->join;
  for (GpuActivity& a : trace->activities) {
    const auto r = a.correlation >= 0 ? by_correlation.find(a.correlation) : by_correlation.end();
    if (r != by_correlation.end()) {
      a.runtime = r->second;
      const RuntimeCall& call = trace->runtime[static_cast<size_t>(r->second)];
      const auto linked = call.external_id >= 0 ? by_external.find(call.external_id) : by_external.end();
      if (linked != by_external.end() && Encloses(trace->ops[static_cast<size_t>(linked->second)], call)) {
        a.op = linked->second;
        ++stats.by_external_id;
      } else if (call.op >= 0) {
        a.op = call.op;
        ++stats.by_enclosure;
      } else {
        ++stats.unattributed;
      }
      continue;
    }
    ++stats.no_runtime;
    const auto linked = a.external_id >= 0 && a.external_id != a.correlation ? by_external.find(a.external_id)
                                                                             : by_external.end();
    if (linked != by_external.end() && trace->ops[static_cast<size_t>(linked->second)].start <= a.start) {
      a.op = linked->second;
      ++stats.by_activity_id;
    } else {
      ++stats.unattributed;
    }
  }
}

int64_t TrailingNumber(const std::string& text) {
  size_t i = text.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))) --i;
  if (i == text.size() || text.size() - i > 15) return -1;
  return std::stoll(text.substr(i));
}

void FindSteps(Trace* trace, const ReadOptions& options) {
  std::regex pattern;
  try {
    pattern = std::regex(options.step_pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError("invalid step pattern '" + options.step_pattern + "': " + e.what(), {},
                      "give an ECMAScript regular expression, e.g. '^ProfilerStep#(\\d+)$'");
  }
  std::vector<int32_t> matches;
  std::vector<int64_t> numbers;
  for (size_t i = 0; i < trace->ops.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(trace->ops[i].name, m, pattern)) continue;
    matches.push_back(static_cast<int32_t>(i));
    int64_t number = -1;
    if (m.size() > 1 && m[1].matched) {
      const std::string g = m[1].str();
      if (!g.empty() && g.size() < 16 && std::all_of(g.begin(), g.end(), ::isdigit)) number = std::stoll(g);
    }
    if (number < 0) number = TrailingNumber(trace->ops[i].name);
    numbers.push_back(number);
  }
  // Keep the innermost matches: drop a match that encloses another one.
  std::vector<size_t> order(matches.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TraceOp& x = trace->ops[static_cast<size_t>(matches[a])];
    const TraceOp& y = trace->ops[static_cast<size_t>(matches[b])];
    if (x.start != y.start) return x.start < y.start;
    return x.duration > y.duration;
  });
  // order is by start; a match encloses another when some later match ends
  // no later than it (found with a suffix minimum of (end, -start)).
  const size_t n = order.size();
  std::vector<std::pair<double, double>> suffix(n + 1, {std::numeric_limits<double>::infinity(), 0.0});
  for (size_t p = n; p-- > 0;) {
    const TraceOp& op = trace->ops[static_cast<size_t>(matches[order[p]])];
    suffix[p] = std::min(suffix[p + 1], std::make_pair(op.end(), -op.start));
  }
  std::vector<size_t> kept;
  for (size_t p = 0; p < n; ++p) {
    const TraceOp& op = trace->ops[static_cast<size_t>(matches[order[p]])];
    const auto [min_end, neg_start] = suffix[p + 1];
    if (min_end < op.end() || (min_end == op.end() && -neg_start > op.start)) continue;
    if (!kept.empty()) {
      const TraceOp& last = trace->ops[static_cast<size_t>(matches[kept.back()])];
      if (op.start + kNestTolerance < last.end()) continue;  // overlapping steps: keep the earlier one
    }
    kept.push_back(order[p]);
  }
  bool numbered = !kept.empty();
  std::vector<int64_t> seen;
  for (size_t k : kept) {
    if (numbers[k] < 0 || std::find(seen.begin(), seen.end(), numbers[k]) != seen.end()) numbered = false;
    seen.push_back(numbers[k]);
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const TraceOp& op = trace->ops[static_cast<size_t>(matches[kept[i]])];
    ProfilerStep step;
    step.name = op.name;
    step.number = numbered ? numbers[kept[i]] : static_cast<int64_t>(i);
    step.start = op.start;
    step.duration = op.duration;
    step.thread = op.thread;
    step.op = matches[kept[i]];
    trace->steps.push_back(std::move(step));
  }
}

int64_t InputBytes(const TraceOp& op) {
  double bytes = 0.0;
  for (const OpInput& in : op.inputs) {
    const int size = in.dtype == graphs::DType::kUnknown ? 4 : graphs::DTypeSize(in.dtype);
    double n = 1.0;
    for (int64_t d : in.shape) n *= static_cast<double>(d);
    if (in.is_tensor) bytes += n * size;
  }
  return bytes > 9.0e18 ? 0 : static_cast<int64_t>(bytes);
}

// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> "allreduce".
std::string CollectiveFromKernel(const std::string& name) {
  std::string rest = name;
  for (const char* prefix : {"ncclKernel_", "ncclDevKernel_", "nccl"}) {
    if (StartsWith(rest, prefix)) {
      rest = rest.substr(std::string(prefix).size());
      break;
    }
  }
  const size_t end = rest.find_first_of("_(");
  return NormalizeCollective(rest.substr(0, end));
}

bool IsNcclKernel(const GpuActivity& a) {
  if (a.kind != ActivityKind::kKernel || a.name.size() < 4) return false;
  std::string head = a.name.substr(0, 4);
  std::transform(head.begin(), head.end(), head.begin(), ::tolower);
  return head == "nccl";
}

void BuildCollectives(Trace* trace, const ReaderExtras& extras) {
  for (size_t i = 0; i < trace->activities.size(); ++i) {
    GpuActivity& a = trace->activities[i];
    const auto own = extras.activity_comms.find(static_cast<int32_t>(i));
    if (!IsNcclKernel(a) && own == extras.activity_comms.end()) continue;
    Collective c;
    c.activity = static_cast<int32_t>(i);
    const CommsArgs* comms = own != extras.activity_comms.end() ? &own->second : nullptr;
    for (int32_t o = a.op; o >= 0; o = trace->ops[static_cast<size_t>(o)].parent) {
      const auto it = extras.op_comms.find(o);
      if (it != extras.op_comms.end()) {
        if (comms == nullptr) comms = &it->second;
        c.op = o;
        break;
      }
      const TraceOp& op = trace->ops[static_cast<size_t>(o)];
      if (StartsWith(op.name, "nccl:")) {
        c.op = o;
        if (comms == nullptr) {
          c.name = NormalizeCollective(op.name);
          c.bytes = InputBytes(op);
        }
        break;
      }
    }
    if (comms != nullptr) {
      c.name = NormalizeCollective(comms->name);
      const graphs::DType dtype = DTypeFromCommsType(comms->dtype);
      const int size = dtype == graphs::DType::kUnknown ? 4 : graphs::DTypeSize(dtype);
      c.bytes = comms->nelems > 0 ? comms->nelems * size : 0;
      c.group_size = comms->group_size;
      c.dtype = comms->dtype;
    }
    if (c.name.empty()) c.name = CollectiveFromKernel(a.name);
    a.collective = static_cast<int32_t>(trace->collectives.size());
    trace->collectives.push_back(std::move(c));
  }
}

}  // namespace

void FinishTrace(Trace* trace, const ReaderExtras& extras, const ReadOptions& options) {
  NestOpsAndCalls(trace);
  JoinActivities(trace);
  FindSteps(trace, options);
  BuildCollectives(trace, extras);
}

}  // namespace gosim::calibration::internal
