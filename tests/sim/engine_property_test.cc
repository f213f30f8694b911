// Seeded property tests over random DAGs, clusters and decisions: bounds on
// the step time, no overlap on devices and links, dependencies respected,
// memory lower bounds, determinism, and 1 vs 4 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <tbb/task_arena.h>

#include "sim/evaluator.h"
#include "sim/timeline.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

using testing::Device;
using testing::Linear;
using testing::Link;
using testing::RandomDag;

constexpr double kEps = 1e-9;

// 1-4 devices with different speeds; direct links between some pairs (with a
// shared switch on some), the others through the host.
Cluster RandomCluster(Rng& rng) {
  const int n = static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{4}));
  ClusterBuilder b("random");
  for (int d = 0; d < n; ++d) {
    DeviceSpec spec = Device("gpu" + std::to_string(d), int64_t{1} << 40, rng.Bernoulli(0.5) ? 0.5 : 0.0);
    spec.peak_flops_fp32 = rng.Bernoulli(0.5) ? 1.0 : 2.0;
    spec.kind = spec.peak_flops_fp32 == 1.0 ? "slow" : "fast";
    b.AddDevice(spec);
  }
  const int32_t sw = b.AddResource(SharedResource{"switch", 150.0});
  for (int d = 0; d < n; ++d) {
    b.AddLink(Link(d, Cluster::kHost, 100.0, 0.5,
                   rng.Bernoulli(0.5) ? std::vector<int32_t>{sw} : std::vector<int32_t>{}));
    b.AddLink(Link(Cluster::kHost, d, 100.0, 0.5));
  }
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s != d && rng.Bernoulli(0.5)) b.AddLink(Link(s, d, 400.0, 0.25));
    }
  }
  return b.Build();
}

// Random placement; priorities, transfer priorities and convex fusion pairs
// (u -> v where every out-edge of u goes to v) each with probability 1/2.
Decision RandomDecision(Rng& rng, const graphs::Graph& g, const Cluster& c, bool allow_fusion) {
  Decision d;
  const int n = g.num_nodes();
  for (int v = 0; v < n; ++v)
    d.placement.push_back(static_cast<int32_t>(rng.UniformInt(uint64_t(c.num_devices()))));
  if (rng.Bernoulli(0.5)) {
    for (int v = 0; v < n; ++v) d.priority.push_back(std::floor(rng.Uniform(0.0, 4.0)));
  }
  if (rng.Bernoulli(0.5)) {
    for (int i = 0; i < g.num_tensors() * c.num_devices(); ++i) d.transfer_priority.push_back(rng.Uniform());
  }
  if (allow_fusion && rng.Bernoulli(0.5)) {
    d.fusion_group.assign(static_cast<size_t>(n), -1);
    for (int u = 0; u < n; ++u) {
      const auto out = g.out_edges(u);
      if (out.empty() || d.fusion_group[u] >= 0 || !rng.Bernoulli(0.4)) continue;
      const int v = g.edge(out[0]).dst;
      bool single = true;
      for (auto e : out) single = single && g.edge(e).dst == v;
      if (!single || d.fusion_group[v] >= 0) continue;
      d.fusion_group[u] = d.fusion_group[v] = u;
      d.placement[v] = d.placement[u];
    }
  }
  return d;
}

double OpTime(const graphs::Graph& g, const Cluster& c, const Decision& d, graphs::NodeId v) {
  return testing::LinearCostModel().NodeTime(g, v, c.device(d.placement[v]));
}

TEST_CASE("property: bounds, overlaps, dependencies and memory on random graphs") {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    Rng rng(seed * 7919);
    const graphs::Graph g = RandomDag(seed, static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{60})));
    const Cluster cluster = RandomCluster(rng);
    SimOptions options;
    options.reuse_transfers = rng.Bernoulli(0.8);
    Evaluator ev(g, cluster, Linear(), options);
    const Decision d = RandomDecision(rng, g, cluster, /*allow_fusion=*/seed % 3 == 0);
    const SimResult r = ev.Simulate(d, true);
    REQUIRE(r.completed);
    REQUIRE(r.feasible);

    // Evaluate agrees with Simulate.
    const Evaluation e = ev.Evaluate(d);
    CHECK(e.step_time == r.step_time);
    CHECK(e.peak_memory == static_cast<double>(r.peak_memory()));

    // The critical path spans the step, without gaps.
    CHECK(r.critical_path.length == doctest::Approx(r.step_time).epsilon(kEps));
    for (size_t i = 1; i < r.critical_path.steps.size(); ++i) {
      CHECK(r.critical_path.steps[i].start == r.critical_path.steps[i - 1].end);
    }

    std::map<graphs::NodeId, OpRecord> op_of;  // every node -> its kernel
    for (const auto& op : r.ops) {
      if (d.has_fusion() && d.fusion_group[op.node] >= 0) {
        for (int v = 0; v < g.num_nodes(); ++v) {
          if (d.fusion_group[v] == d.fusion_group[op.node]) op_of[v] = op;
        }
      } else {
        op_of[op.node] = op;
      }
    }
    REQUIRE(static_cast<int>(op_of.size()) == g.num_nodes());

    // Lower bounds (without fusion kernel times are node times).
    if (!d.has_fusion()) {
      std::vector<double> longest(static_cast<size_t>(g.num_nodes()), 0.0);
      double total = 0.0, cp = 0.0;
      for (int v = 0; v < g.num_nodes(); ++v) {
        double ready = 0.0;
        for (auto eid : g.in_edges(v)) ready = std::max(ready, longest[g.edge(eid).src]);
        longest[v] = ready + OpTime(g, cluster, d, v);
        cp = std::max(cp, longest[v]);
        total += OpTime(g, cluster, d, v);
        CHECK(op_of[v].end - op_of[v].start == doctest::Approx(OpTime(g, cluster, d, v)).epsilon(kEps));
      }
      CHECK(r.step_time >= cp * (1 - kEps));
      // Sum over devices of busy time is the total work; the step is at
      // least the busiest device and the average.
      CHECK(r.step_time >= total / cluster.num_devices() * (1 - kEps));
      for (const auto& dev : r.devices) CHECK(r.step_time >= dev.busy_time * (1 - kEps));
    }

    // No two kernels overlap on a device; no two hops overlap on a link.
    std::map<int32_t, std::vector<std::pair<double, double>>> per_device, per_link;
    for (const auto& op : r.ops) per_device[op.device].push_back({op.start, op.end});
    for (const auto& h : r.transfer_hops) per_link[h.link].push_back({h.start, h.end});
    for (auto* m : {&per_device, &per_link}) {
      for (auto& [key, spans] : *m) {
        std::sort(spans.begin(), spans.end());
        for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first >= spans[i - 1].second);
      }
    }

    // Every kernel starts after its inputs are on its device.
    // (tensor, device) -> end of the first copy's last hop (there is one copy
    // per device unless transfers are made once per consumer).
    std::map<std::pair<graphs::TensorId, int32_t>, double> arrival;
    for (const auto& h : r.transfer_hops) {
      if (h.link == cluster.Route(h.src_device, h.dst_device).back()) {
        auto [it, inserted] = arrival.insert({{h.tensor, h.dst_device}, h.end});
        if (!inserted) it->second = std::min(it->second, h.end);
      }
      CHECK(h.start >= h.queued);
      CHECK(h.start >= op_of[g.tensor_producer(h.tensor)].end);
    }
    for (int v = 0; v < g.num_nodes(); ++v) {
      const OpRecord& op = op_of[v];
      CHECK(op.start >= op.ready);
      for (auto eid : g.in_edges(v)) {
        const graphs::Edge& edge = g.edge(eid);
        const OpRecord& src = op_of[edge.src];
        if (src.node == op.node) continue;  // inside one fused kernel
        if (edge.is_control() || src.device == op.device) {
          CHECK(op.ready >= src.end);
        } else {
          const auto it = arrival.find({g.tensor(edge.src, edge.output_index), op.device});
          REQUIRE(it != arrival.end());
          CHECK(op.ready >= it->second);
        }
      }
    }

    // Peak memory >= persistent + the inputs and outputs of any one node.
    std::vector<int64_t> persistent(static_cast<size_t>(cluster.num_devices()), 0);
    for (int v = 0; v < g.num_nodes(); ++v) persistent[d.placement[v]] += g.node(v).persistent_bytes;
    for (int32_t dev = 0; dev < cluster.num_devices(); ++dev) {
      CHECK(r.devices[dev].persistent_memory == persistent[dev]);
    }
    if (!d.has_fusion()) {
      for (int v = 0; v < g.num_nodes(); ++v) {
        int64_t live = persistent[d.placement[v]];
        for (const auto& out : g.node(v).outputs) live += out.bytes;
        graphs::TensorId last = -1;
        for (auto eid : g.in_edges(v)) {
          const graphs::Edge& edge = g.edge(eid);
          if (edge.is_control()) continue;
          const graphs::TensorId t = g.tensor(edge.src, edge.output_index);
          if (t != last) live += g.node(edge.src).outputs[edge.output_index].bytes;
          last = t;
        }
        CHECK(r.devices[d.placement[v]].peak_memory >= live);
      }
    }
  }
}

TEST_CASE("property: one device runs the sum of the node times, launches included") {
  for (uint64_t seed = 100; seed < 130; ++seed) {
    CAPTURE(seed);
    const graphs::Graph g = RandomDag(seed, 80);
    ClusterBuilder b("one");
    b.AddDevice(Device("gpu0", int64_t{1} << 40, 0.25));
    const Cluster cluster = b.Build();
    Evaluator ev(g, cluster, Linear());
    Rng rng(seed);
    Decision d;
    d.placement.assign(static_cast<size_t>(g.num_nodes()), 0);
    if (seed % 2 == 0) {
      for (int v = 0; v < g.num_nodes(); ++v) d.priority.push_back(rng.Uniform());
    }
    double sum = 0.0;
    for (int v = 0; v < g.num_nodes(); ++v) sum += g.node(v).flops + 0.25;
    const SimResult r = ev.Simulate(d);
    CHECK(r.step_time == doctest::Approx(sum).epsilon(kEps));
    CHECK(r.devices[0].utilization == doctest::Approx(1.0).epsilon(kEps));
    CHECK(r.transfers == 0);
  }
}

TEST_CASE("property: the same input gives the same result and timeline byte for byte") {
  for (uint64_t seed = 200; seed < 215; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    const graphs::Graph g = RandomDag(seed, 120);
    const Cluster cluster = RandomCluster(rng);
    const Decision d = RandomDecision(rng, g, cluster, true);
    Evaluator a(g, cluster, Linear());
    Evaluator b(g, cluster, Linear());
    const SimResult ra = a.Simulate(d, true);
    (void)b.Evaluate(RandomDecision(rng, g, cluster, true));  // a different history in b's workspace
    const SimResult rb = b.Simulate(d, true);
    CHECK(ChromeTraceJson(ra, g, cluster) == ChromeTraceJson(rb, g, cluster));
    CHECK(SimResultToJson(ra, g, cluster) == SimResultToJson(rb, g, cluster));
    CHECK(SimResultToJson(ra, g, cluster) == SimResultToJson(a.Simulate(d, true), g, cluster));
  }
}

TEST_CASE("property: EvaluateBatch gives identical results on 1 and 4 threads") {
  Rng rng(4242);
  const graphs::Graph g = RandomDag(4242, 300);
  const Cluster cluster = RandomCluster(rng);
  SimOptions options;
  options.stop_at_oom = false;
  Evaluator ev(g, cluster, Linear(), options);
  std::vector<Decision> decisions;
  for (int i = 0; i < 64; ++i) decisions.push_back(RandomDecision(rng, g, cluster, true));
  const auto run = [&](int threads) {
    std::vector<Evaluation> out(decisions.size());
    tbb::task_arena arena(threads);
    arena.execute([&] { ev.EvaluateBatch(decisions, out); });
    return out;
  };
  const std::vector<Evaluation> one = run(1), four = run(4), again = run(4);
  for (size_t i = 0; i < decisions.size(); ++i) {
    CAPTURE(i);
    CHECK(std::memcmp(&one[i].step_time, &four[i].step_time, sizeof(double)) == 0);
    CHECK(one[i].peak_memory == four[i].peak_memory);
    CHECK(one[i].feasible == four[i].feasible);
    CHECK(four[i].step_time == again[i].step_time);
    CHECK(one[i].step_time == ev.Evaluate(decisions[i]).step_time);
  }
  CHECK(ev.evaluations() == 64 * 3 + 64);
  std::vector<Evaluation> wrong(3);
  CHECK_THROWS_AS(ev.EvaluateBatch(decisions, wrong), DecisionError);
}

TEST_CASE("property: per-device peaks of Evaluate and EvaluateBatch are Simulate's") {
  Rng rng(777);
  const graphs::Graph g = RandomDag(777, 200);
  const Cluster cluster = RandomCluster(rng);
  const Evaluator ev(g, cluster, Linear());
  const size_t devices = static_cast<size_t>(cluster.num_devices());
  std::vector<Decision> decisions;
  for (int i = 0; i < 24; ++i) decisions.push_back(RandomDecision(rng, g, cluster, true));
  std::vector<Evaluation> out(decisions.size());
  std::vector<int64_t> peaks(decisions.size() * devices);
  ev.EvaluateBatch(decisions, out, peaks);
  for (size_t i = 0; i < decisions.size(); ++i) {
    CAPTURE(i);
    std::vector<int64_t> single(devices);
    const Evaluation e = ev.Evaluate(decisions[i], single);
    const SimResult full = ev.Simulate(decisions[i]);
    CHECK(e.step_time == out[i].step_time);
    CHECK(e.peak_memory == out[i].peak_memory);
    int64_t max_peak = 0;
    for (size_t d = 0; d < devices; ++d) {
      CHECK(single[d] == peaks[i * devices + d]);
      if (full.completed) CHECK(single[d] == full.devices[d].peak_memory);
      max_peak = std::max(max_peak, single[d]);
    }
    CHECK(static_cast<double>(max_peak) == e.peak_memory);
  }
  std::vector<int64_t> short_peaks(devices - 1);
  CHECK_THROWS_AS(ev.Evaluate(decisions[0], short_peaks), DecisionError);
  std::vector<int64_t> short_batch(peaks.size() - 1);
  CHECK_THROWS_AS(ev.EvaluateBatch(decisions, out, short_batch), DecisionError);
}

}  // namespace
}  // namespace gosim::sim
