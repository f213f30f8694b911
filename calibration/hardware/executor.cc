#include "calibration/hardware/executor.h"

#include <malloc.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <thread>

#include "calibration/hardware/op_recipes.h"
#include "calibration/hardware/rank_stats.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"

namespace gosim::calibration::hardware {
namespace {

using Clock = std::chrono::steady_clock;

struct ReadyEntry {
  double priority;
  double ready;
  graphs::NodeId node;
};
// The simulator's order: higher priority, then earlier ready, then lower id.
struct ReadyAfter {
  bool operator()(const ReadyEntry& a, const ReadyEntry& b) const {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.ready != b.ready) return a.ready > b.ready;
    return a.node > b.node;
  }
};

struct DeviceQueue {
  std::mutex mutex;
  std::condition_variable cv;
  std::priority_queue<ReadyEntry, std::vector<ReadyEntry>, ReadyAfter> heap;
  bool done = false;
};

// One recorded span (profiling only).
struct Span {
  bool copy = false;
  graphs::NodeId node = -1;
  int32_t device = 0;
  int32_t dst = 0;
  double start = 0.0;  // seconds since the run's origin
  double end = 0.0;
  int64_t bytes = 0;
};

void UpdatePeak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t seen = peak.load();
  while (value > seen && !peak.compare_exchange_weak(seen, value)) {
  }
}

}  // namespace

struct Executor::Impl {
  const graphs::Graph& graph;
  ExecutorOptions options;
  bool cuda = false;
  std::string backend;
  int32_t threads = 1;
  int32_t nd = 1;
  std::vector<Recipe> recipes;
  std::vector<int32_t> prepared_on;  // device index each recipe's constants live on, -1 = none
  std::vector<std::vector<at::Tensor>> source_outputs;  // per node without work
  std::vector<int32_t> source_on;
  PlanSummary summary;

  // Per step.
  const sim::Decision* decision = nullptr;
  std::vector<std::atomic<int32_t>> remaining;
  std::vector<at::Tensor> tensors;         // [tensor * nd + device]
  std::vector<uint8_t> counted;            // [tensor * nd + device]: in the live bytes
  std::vector<std::atomic<int32_t>> uses;  // [tensor * nd + device]
  std::vector<int32_t> uses_initial;       // per decision
  std::vector<std::atomic<int64_t>> live, peak;
  std::vector<int64_t> persistent;
  std::vector<std::unique_ptr<DeviceQueue>> queues;
  std::atomic<int32_t> completed{0};
  std::atomic<int64_t> copies{0}, copied_bytes{0};
  Clock::time_point origin;
  bool recording = false;
  std::vector<std::vector<Span>> spans;  // per worker

  // Worker pool.
  std::vector<std::thread> workers;
  std::mutex pool_mutex;
  std::condition_variable pool_cv, done_cv;
  int64_t generation = 0;
  int32_t finished_workers = 0;
  bool stop = false;

  Impl(const graphs::Graph& g, ExecutorOptions o) : graph(g), options(o) {}

  at::Device DeviceOf(int32_t d) const {
    return cuda ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d)) : at::Device(at::kCPU);
  }
  double Now() const { return std::chrono::duration<double>(Clock::now() - origin).count(); }

  void Prepare(graphs::NodeId n, int32_t d) {
    const int32_t key = cuda ? d : 0;
    Recipe& r = recipes[static_cast<size_t>(n)];
    if (r.kind != RecipeKind::kNone && prepared_on[static_cast<size_t>(n)] != key) {
      PrepareConstants(&r, DeviceOf(d));
      prepared_on[static_cast<size_t>(n)] = key;
    }
    if (r.kind == RecipeKind::kNone && source_on[static_cast<size_t>(n)] != key) {
      std::vector<at::Tensor>& outs = source_outputs[static_cast<size_t>(n)];
      outs.clear();
      for (const graphs::TensorInfo& t : graph.node(n).outputs) {
        const at::ScalarType type = TorchDType(t.dtype);
        const auto opts = at::TensorOptions().device(DeviceOf(d)).dtype(type);
        // Integer sources (token ids, labels) hold small valid indices.
        outs.push_back(type == at::kLong ? at::zeros(RunShape(t), opts) : at::rand(RunShape(t), opts));
      }
      source_on[static_cast<size_t>(n)] = key;
    }
  }

  void Push(graphs::NodeId n, double ready) {
    const int32_t d = decision->placement[static_cast<size_t>(n)];
    const double priority = decision->has_priority() ? decision->priority[static_cast<size_t>(n)] : 0.0;
    DeviceQueue& q = *queues[static_cast<size_t>(d)];
    {
      std::lock_guard<std::mutex> lock(q.mutex);
      q.heap.push({priority, ready, n});
    }
    q.cv.notify_one();
  }

  // Stores a tensor for the consumers on device d; `count` adds it to the
  // device's live bytes until its last consumer has run.
  void Hold(size_t slot, int32_t d, at::Tensor tensor, bool count) {
    counted[slot] = count ? 1 : 0;
    if (count) {
      const auto bytes = static_cast<int64_t>(tensor.nbytes());
      UpdatePeak(peak[static_cast<size_t>(d)], live[static_cast<size_t>(d)].fetch_add(bytes) + bytes);
    }
    tensors[slot] = std::move(tensor);
  }

  void Release(graphs::TensorId t, int32_t d) {
    const size_t slot = static_cast<size_t>(t) * static_cast<size_t>(nd) + static_cast<size_t>(d);
    if (uses[slot].fetch_sub(1) == 1) {
      if (counted[slot] != 0)
        live[static_cast<size_t>(d)].fetch_sub(static_cast<int64_t>(tensors[slot].nbytes()));
      tensors[slot] = at::Tensor();
    }
  }

  void Execute(graphs::NodeId n, int32_t d, int32_t worker) {
    const graphs::Node& node = graph.node(n);
    const Recipe& r = recipes[static_cast<size_t>(n)];
    std::vector<at::Tensor> inputs;
    std::vector<graphs::TensorId> read;
    for (graphs::EdgeId e : graph.in_edges(n)) {
      const graphs::Edge& edge = graph.edge(e);
      if (edge.is_control()) continue;
      const graphs::TensorId t = graph.tensor(edge.src, edge.output_index);
      inputs.push_back(tensors[static_cast<size_t>(t) * static_cast<size_t>(nd) + static_cast<size_t>(d)]);
      read.push_back(t);
    }
    const double start = recording ? Now() : 0.0;
    std::vector<at::Tensor> results =
        r.kind == RecipeKind::kNone ? source_outputs[static_cast<size_t>(n)] : RunRecipe(r, inputs);
    if (recording) {
      if (cuda) torch::cuda::synchronize(d);
      spans[static_cast<size_t>(worker)].push_back({false, n, d, d, start, Now(), 0});
    }
    inputs.clear();
    // Publish the outputs, copy them to the other devices that read them.
    for (int32_t k = 0; k < static_cast<int32_t>(node.outputs.size()); ++k) {
      const graphs::TensorId t = graph.tensor(n, k);
      const size_t base = static_cast<size_t>(t) * static_cast<size_t>(nd);
      const graphs::TensorInfo& info = node.outputs[static_cast<size_t>(k)];
      at::Tensor out;
      if (k < static_cast<int32_t>(results.size()) && results[static_cast<size_t>(k)].defined() &&
          results[static_cast<size_t>(k)].numel() == ElementCount(info)) {
        out = results[static_cast<size_t>(k)].reshape(RunShape(info));
      } else {
        out =
            at::empty(RunShape(info), at::TensorOptions().device(DeviceOf(d)).dtype(TorchDType(info.dtype)));
      }
      for (int32_t dst = 0; dst < nd; ++dst) {
        if (dst == d || uses[base + static_cast<size_t>(dst)].load() == 0) continue;
        const double copy_start = recording ? Now() : 0.0;
        at::Tensor copy = cuda ? out.to(DeviceOf(dst)) : out.clone();
        if (recording) {
          if (cuda) torch::cuda::synchronize(dst);
          spans[static_cast<size_t>(worker)].push_back(
              {true, n, d, dst, copy_start, Now(), static_cast<int64_t>(copy.nbytes())});
        }
        Hold(base + static_cast<size_t>(dst), dst, std::move(copy), true);
        copies.fetch_add(1);
        copied_bytes.fetch_add(static_cast<int64_t>(info.bytes > 0 ? info.bytes : 0));
      }
      if (uses[base + static_cast<size_t>(d)].load() > 0) {
        // A weight's bytes are in the persistent total already.
        const bool persistent_source = r.kind == RecipeKind::kNone && node.persistent_bytes > 0;
        Hold(base + static_cast<size_t>(d), d, std::move(out), !persistent_source);
      }
    }
    results.clear();
    for (graphs::TensorId t : read) Release(t, d);
    const double now = Now();
    for (graphs::EdgeId e : graph.out_edges(n)) {
      const graphs::NodeId dst = graph.edge(e).dst;
      if (remaining[static_cast<size_t>(dst)].fetch_sub(1) == 1) Push(dst, now);
    }
    if (completed.fetch_add(1) + 1 == graph.num_nodes()) {
      for (auto& q : queues) {
        std::lock_guard<std::mutex> lock(q->mutex);
        q->done = true;
        q->cv.notify_all();
      }
    }
  }

  void Serve(int32_t d) {
    DeviceQueue& q = *queues[static_cast<size_t>(d)];
    while (true) {
      ReadyEntry entry{};
      {
        std::unique_lock<std::mutex> lock(q.mutex);
        q.cv.wait(lock, [&] { return !q.heap.empty() || q.done; });
        if (q.heap.empty()) return;
        entry = q.heap.top();
        q.heap.pop();
      }
      Execute(entry.node, d, d);
    }
  }

  void WorkerMain(int32_t d) {
    at::set_num_threads(threads);  // this thread's intra-op budget (OpenMP's is per thread)
    std::optional<c10::DeviceGuard> guard;
    if (cuda) guard.emplace(DeviceOf(d));
    int64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(pool_mutex);
        pool_cv.wait(lock, [&] { return stop || generation > seen; });
        if (stop) return;
        seen = generation;
      }
      std::exception_ptr error;
      try {
        Serve(d);
      } catch (...) {
        error = std::current_exception();
        // Unblock the others: the step is abandoned.
        for (auto& q : queues) {
          std::lock_guard<std::mutex> lock(q->mutex);
          q->done = true;
          q->cv.notify_all();
        }
      }
      {
        std::lock_guard<std::mutex> lock(pool_mutex);
        if (error && !step_error) step_error = error;
        ++finished_workers;
      }
      done_cv.notify_all();
    }
  }
  std::exception_ptr step_error;

  void StartPool() {
    if (!workers.empty()) return;
    for (int32_t d = 0; d < nd; ++d) workers.emplace_back([this, d] { WorkerMain(d); });
  }
  void StopPool() {
    {
      std::lock_guard<std::mutex> lock(pool_mutex);
      stop = true;
    }
    pool_cv.notify_all();
    for (std::thread& t : workers) t.join();
    workers.clear();
  }

  void Setup(const sim::Decision& dec) {
    const int32_t n = graph.num_nodes();
    if (static_cast<int32_t>(dec.placement.size()) != n) {
      throw DecisionError("the decision places " + std::to_string(dec.placement.size()) +
                              " nodes but graph '" + graph.name() + "' has " + std::to_string(n),
                          {}, "use a decision made for this graph");
    }
    if (dec.has_priority() && static_cast<int32_t>(dec.priority.size()) != n) {
      throw DecisionError("the decision has " + std::to_string(dec.priority.size()) + " priorities for " +
                              std::to_string(n) + " nodes",
                          {}, "use a decision made for this graph");
    }
    for (int32_t v = 0; v < n; ++v) {
      const int32_t d = dec.placement[static_cast<size_t>(v)];
      if (d < 0 || d >= nd) {
        throw DecisionError("node '" + graph.node(v).name + "' is placed on device " + std::to_string(d) +
                                ", but the executor has " + std::to_string(nd) + " devices",
                            {}, "use a decision made for this cluster");
      }
    }
    decision = &dec;
    for (int32_t v = 0; v < n; ++v) Prepare(v, dec.placement[static_cast<size_t>(v)]);
    const size_t slots = static_cast<size_t>(graph.num_tensors()) * static_cast<size_t>(nd);
    uses_initial.assign(slots, 0);
    for (const graphs::Edge& e : graph.edges()) {
      if (e.is_control()) continue;
      const size_t t = static_cast<size_t>(graph.tensor(e.src, e.output_index));
      uses_initial[t * static_cast<size_t>(nd) +
                   static_cast<size_t>(dec.placement[static_cast<size_t>(e.dst)])]++;
    }
    persistent.assign(static_cast<size_t>(nd), 0);
    for (int32_t v = 0; v < n; ++v) {
      persistent[static_cast<size_t>(dec.placement[static_cast<size_t>(v)])] +=
          graph.node(v).persistent_bytes;
    }
    tensors.assign(slots, at::Tensor());
    counted.assign(slots, 0);
    uses = std::vector<std::atomic<int32_t>>(slots);
    remaining = std::vector<std::atomic<int32_t>>(static_cast<size_t>(n));
    live = std::vector<std::atomic<int64_t>>(static_cast<size_t>(nd));
    peak = std::vector<std::atomic<int64_t>>(static_cast<size_t>(nd));
  }

  // One step; returns its wall time in seconds.
  double Step(std::vector<int64_t>* peaks) {
    const int32_t n = graph.num_nodes();
    for (size_t i = 0; i < uses.size(); ++i) uses[i].store(uses_initial[i]);
    for (int32_t v = 0; v < n; ++v) remaining[static_cast<size_t>(v)].store(graph.in_degree(v));
    for (int32_t d = 0; d < nd; ++d) {
      live[static_cast<size_t>(d)].store(0);
      peak[static_cast<size_t>(d)].store(0);
      queues[static_cast<size_t>(d)]->done = false;
    }
    completed.store(0);
    copies.store(0);
    copied_bytes.store(0);
    for (int32_t v = 0; v < n; ++v) {
      if (graph.in_degree(v) == 0) Push(v, 0.0);
    }
    const Clock::time_point start = Clock::now();
    {
      std::lock_guard<std::mutex> lock(pool_mutex);
      finished_workers = 0;
      step_error = nullptr;
      ++generation;
    }
    pool_cv.notify_all();
    {
      std::unique_lock<std::mutex> lock(pool_mutex);
      done_cv.wait(lock, [&] { return finished_workers == nd; });
    }
    if (cuda) {
      for (int32_t d = 0; d < nd; ++d) torch::cuda::synchronize(d);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (step_error) {
      for (auto& q : queues) q->heap = {};
      std::rethrow_exception(step_error);
    }
    if (completed.load() != n) {
      throw StateError(
          "the step ran " + std::to_string(completed.load()) + " of " + std::to_string(n) + " nodes", {},
          "the graph has a cycle or an edge the executor cannot follow");
    }
    peaks->resize(static_cast<size_t>(nd));
    for (int32_t d = 0; d < nd; ++d) {
      (*peaks)[static_cast<size_t>(d)] =
          persistent[static_cast<size_t>(d)] + peak[static_cast<size_t>(d)].load();
    }
    for (at::Tensor& t : tensors) t = at::Tensor();
    return seconds;
  }

  Measurement Measure(const sim::Decision& dec, int32_t warmup, int32_t repeats,
                      std::vector<double>* starts) {
    if (warmup < 0 || repeats < 1) {
      throw ConfigError("warm-up " + std::to_string(warmup) + " and repeats " + std::to_string(repeats), {},
                        "give --warmup >= 0 and --repeats >= 1");
    }
    Setup(dec);
    StartPool();
    Measurement m;
    m.backend = backend;
    m.intra_op_threads = threads;
    std::vector<std::vector<int64_t>> peaks;
    origin = Clock::now();
    for (int32_t s = 0; s < warmup + repeats; ++s) {
      const bool measured = s >= warmup;
      recording = measured && starts != nullptr;
      const double begin = Now();
      std::vector<int64_t> step_peaks;
      const double seconds = Step(&step_peaks);
      if (!measured) continue;
      if (starts != nullptr) starts->push_back(begin), starts->push_back(Now());
      m.step_times.push_back(seconds);
      peaks.push_back(step_peaks);
    }
    recording = false;
    m.median_step_time = Median(m.step_times);
    m.copies = copies.load();
    m.copied_bytes = copied_bytes.load();
    m.peak_memory.assign(static_cast<size_t>(nd), 0);
    for (int32_t d = 0; d < nd; ++d) {
      std::vector<double> values;
      for (const auto& p : peaks) values.push_back(static_cast<double>(p[static_cast<size_t>(d)]));
      m.peak_memory[static_cast<size_t>(d)] = static_cast<int64_t>(Median(values));
      m.peak_memory_max = std::max(m.peak_memory_max, m.peak_memory[static_cast<size_t>(d)]);
    }
    return m;
  }
};

namespace {

// CPU tensors come from glibc's malloc. By default it serves blocks over its
// (dynamic) mmap threshold with fresh pages and gives freed heap tops back to
// the kernel, so a step's large tensors are page-faulted in again on some
// steps and not on others; under a virtual machine the faults cost as much
// as the kernels (measured: the same single-device step took 7 ms or 35 ms,
// 45% of the time in page faults under sgemm's zeroing of its output;
// docs/CALIBRATION.md). Keeping freed memory in the heap, as CUDA's caching
// allocator does on the GPU, makes every step see warm memory. Process-wide,
// set once; blocks up to 32 MiB (mallopt's largest mmap threshold) come from
// the heap.
void KeepHostMemory() {
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 * 1024 * 1024);
    return true;
  }();
  (void)once;
}

}  // namespace

Executor::Executor(const graphs::Graph& graph, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(graph, options)) {
  KeepHostMemory();
  Impl& s = *impl_;
  if (options.num_devices < 1) {
    throw ConfigError("the executor needs at least one device", {}, "give a cluster with devices");
  }
  s.nd = options.num_devices;
  s.cuda = options.allow_cuda && torch::cuda::is_available();
  if (s.cuda) {
    const auto available = static_cast<int32_t>(torch::cuda::device_count());
    if (s.nd > available) {
      throw ConfigError("the cluster has " + std::to_string(s.nd) + " devices but this machine has " +
                            std::to_string(available) + " CUDA devices",
                        {}, "replay on a cluster with at most as many devices as the machine has");
    }
  }
  s.backend = s.cuda ? "cuda" : "cpu";
  const int32_t cores = std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  s.threads = options.intra_op_threads > 0 ? options.intra_op_threads : std::max<int32_t>(1, cores / s.nd);
  torch::manual_seed(options.seed);
  const int32_t n = graph.num_nodes();
  s.recipes.reserve(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    s.recipes.push_back(PlanNode(graph, v));
    const Recipe& r = s.recipes.back();
    if (r.kind == RecipeKind::kNone) {
      ++s.summary.no_work;
    } else {
      ++s.summary.aten_ops[r.aten];
      if (r.fallback) ++s.summary.fallbacks;
    }
  }
  s.prepared_on.assign(static_cast<size_t>(n), -1);
  s.source_on.assign(static_cast<size_t>(n), -1);
  s.source_outputs.resize(static_cast<size_t>(n));
  for (int32_t d = 0; d < s.nd; ++d) s.queues.push_back(std::make_unique<DeviceQueue>());
  s.spans.resize(static_cast<size_t>(s.nd));
}

Executor::~Executor() {
  impl_->StopPool();
}

const PlanSummary& Executor::plan() const {
  return impl_->summary;
}
const std::string& Executor::backend() const {
  return impl_->backend;
}

Measurement Executor::Run(const sim::Decision& decision, int32_t warmup, int32_t repeats) {
  return impl_->Measure(decision, warmup, repeats, nullptr);
}

Measurement Executor::Profile(const sim::Decision& decision, int32_t warmup, int32_t steps,
                              const std::string& path) {
  Impl& s = *impl_;
  for (auto& v : s.spans) v.clear();
  std::vector<double> windows;
  Measurement m = s.Measure(decision, warmup, steps, &windows);

  using Json = nlohmann::json;
  Json events = Json::array();
  const double base_us = 1.0e6;  // keep timestamps positive and away from 0
  auto us = [&](double seconds) { return base_us + seconds * 1.0e6; };
  events.push_back(
      {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "main"}}}});
  for (size_t k = 0; k + 1 < windows.size(); k += 2) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(k / 2)},
                      {"pid", 1},
                      {"tid", 0},
                      {"ts", us(windows[k])},
                      {"dur", (windows[k + 1] - windows[k]) * 1.0e6}});
  }
  int64_t id = 1;
  constexpr int64_t kCorrelationOffset = 1000000000;  // correlation ids differ from External ids
  for (size_t w = 0; w < s.spans.size(); ++w) {
    for (const Span& span : s.spans[w]) {
      const double dur = std::max(0.0, (span.end - span.start) * 1.0e6);
      if (span.copy) {
        events.push_back({{"ph", "X"},
                          {"cat", "gpu_memcpy"},
                          {"name", "Memcpy PtoP (Device -> Device)"},
                          {"pid", span.device},
                          {"tid", "stream 8"},
                          {"ts", us(span.start)},
                          {"dur", dur},
                          {"args",
                           {{"device", span.device},
                            {"stream", 8},
                            {"bytes", span.bytes},
                            {"correlation", kCorrelationOffset + id},
                            {"External id", id}}}});
        ++id;
        continue;
      }
      const Recipe& r = s.recipes[static_cast<size_t>(span.node)];
      if (r.kind == RecipeKind::kNone) continue;
      const graphs::Node& node = s.graph.node(span.node);
      Json dims = Json::array();
      Json types = Json::array();
      for (const RecordedArg& a : r.recorded) {
        if (!a.list.empty()) {
          dims.push_back(a.list);
        } else {
          dims.push_back(a.shape);
        }
        types.push_back(a.type);
      }
      events.push_back({{"ph", "X"},
                        {"cat", "cpu_op"},
                        {"name", r.aten},
                        {"pid", 1},
                        {"tid", static_cast<int64_t>(w) + 1},
                        {"ts", us(span.start)},
                        {"dur", dur},
                        {"args",
                         {{"External id", id},
                          {"Input Dims", dims},
                          {"Input type", types},
                          {"gosim node", node.name},
                          {"gosim op type", s.graph.op_type_name(node.op)},
                          {"gosim flops", std::llround(node.flops)},
                          {"gosim bytes", node.bytes_read + node.bytes_written}}}});
      events.push_back({{"ph", "X"},
                        {"cat", "kernel"},
                        {"name", s.backend + "_kernel<" + r.aten + ">"},
                        {"pid", span.device},
                        {"tid", "stream 7"},
                        {"ts", us(span.start)},
                        {"dur", dur},
                        {"args",
                         {{"device", span.device},
                          {"stream", 7},
                          {"correlation", kCorrelationOffset + id},
                          {"External id", id}}}});
      ++id;
    }
  }
  Json devices = Json::array();
  for (int32_t d = 0; d < s.nd; ++d) {
    devices.push_back({{"id", d}, {"name", s.cuda ? "cuda" : "cpu"}, {"totalGlobalMem", 0}});
  }
  Json root = {{"schemaVersion", 1},
               {"deviceProperties", devices},
               {"gosim",
                {{"graph", s.graph.name()},
                 {"backend", s.backend},
                 {"intra_op_threads", s.threads},
                 {"steps", steps},
                 {"warmup", warmup}}},
               {"traceEvents", events}};
  WriteFileAtomic(path, DumpJson(root));
  return m;
}

}  // namespace gosim::calibration::hardware
