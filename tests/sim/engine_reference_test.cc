// Regression against saved results: the engine must keep giving bit-identical
// results when its internals change (event queue, layouts, dispatch). For a
// fixed set of seeded random graphs, clusters, decisions and options, this
// test renders everything a run produces (the Evaluation, every per-device,
// per-link and per-resource figure, the out-of-memory report, the critical
// path and an FNV-1a hash over every field of the timeline) as one text line
// per case, with doubles in hexadecimal (%a, exact), and compares the lines
// with tests/sim/engine_reference.txt.
//
// The file was written by the binary-heap engine of 2026-11-22 (before the
// speed work of issue 3) with
//   GOSIM_WRITE_ENGINE_REFERENCE=1 build-engine/tests/sim/sim_tests -tc='reference:*'
// Rewrite it only for an intended change of the simulator's semantics, and
// say so in the commit. The DGX-1 and GNMT cases also depend on the preset
// (configs/clusters/dgx1_v100.yaml), the roofline model and the GNMT
// generator: after an intended change of one of those, rewrite the file with
// an engine that passed this test before the change.
#include <doctest/doctest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

constexpr const char* kReferencePath = "tests/sim/engine_reference.txt";

std::string Hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

class Fnv {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
  }
  template <typename T>
  void Add(T x) {
    Add(&x, sizeof x);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 14695981039346656037ull;
};

// Everything Evaluate and Simulate(timeline) report, as one line.
std::string Fingerprint(const Evaluator& ev, const Decision& d) {
  std::ostringstream s;
  const Evaluation e = ev.Evaluate(d);
  s << "eval " << e.feasible << ' ' << Hex(e.step_time) << ' ' << Hex(e.peak_memory) << ' ' << e.oom_device;
  const SimResult r = ev.Simulate(d, true);
  s << " | sim " << r.feasible << ' ' << r.completed << ' ' << Hex(r.step_time) << ' ' << r.kernels << ' '
    << r.transfers << ' ' << r.transferred_bytes << " | dev";
  for (const auto& dev : r.devices) {
    s << ' ' << dev.persistent_memory << ',' << dev.peak_memory << ',' << Hex(dev.busy_time) << ','
      << Hex(dev.utilization) << ',' << dev.kernels;
  }
  for (const auto* channels : {&r.links, &r.resources}) {
    s << (channels == &r.links ? " | link" : " | res");
    for (const auto& c : *channels) {
      if (c.transfers == 0 && c.bytes == 0 && c.busy_time == 0.0) {
        s << " -";
        continue;
      }
      s << ' ' << c.bytes << ',' << Hex(c.busy_time) << ',' << Hex(c.utilization) << ',' << c.transfers;
    }
  }
  if (r.oom) {
    const OomInfo& o = *r.oom;
    s << " | oom " << o.device << ' ' << Hex(o.time) << ' ' << o.capacity << ' ' << o.in_use << ' '
      << o.requested << ' ' << o.persistent << ' ' << o.node << ' ' << o.tensor;
    for (const auto& t : o.live) s << ' ' << t.tensor << ':' << t.bytes << ':' << t.received;
  }
  const CriticalPath& cp = r.critical_path;
  Fnv path;
  for (const auto& step : cp.steps) {
    path.Add(static_cast<uint8_t>(step.kind));
    path.Add(static_cast<uint8_t>(step.reason));
    path.Add(step.id);
    path.Add(step.where);
    path.Add(step.start);
    path.Add(step.end);
  }
  s << " | cp " << Hex(cp.length) << ' ' << Hex(cp.compute_time) << ' ' << Hex(cp.transfer_time) << ' '
    << cp.steps.size() << ' ' << std::hex << path.value() << std::dec;
  Fnv timeline;
  for (const auto& op : r.ops) {
    timeline.Add(op.node);
    timeline.Add(op.device);
    timeline.Add(op.fused_nodes);
    timeline.Add(op.ready);
    timeline.Add(op.start);
    timeline.Add(op.end);
  }
  for (const auto& h : r.transfer_hops) {
    timeline.Add(h.tensor);
    timeline.Add(h.src_device);
    timeline.Add(h.dst_device);
    timeline.Add(h.link);
    timeline.Add(h.hop);
    timeline.Add(h.bytes);
    timeline.Add(h.queued);
    timeline.Add(h.start);
    timeline.Add(h.end);
  }
  s << " | timeline " << r.ops.size() << ' ' << r.transfer_hops.size() << ' ' << std::hex << timeline.value();
  return s.str();
}

// 1-5 devices of two speeds (some with launch overheads and small
// capacities); links to and from the host (some through a shared switch),
// direct links between some pairs, latencies and bandwidths that make many
// events coincide.
Cluster RandomCluster(Rng& rng, bool small_memory) {
  const int n = static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{5}));
  ClusterBuilder b("random");
  for (int d = 0; d < n; ++d) {
    const int64_t capacity = small_memory ? rng.UniformInt(int64_t{2000}, int64_t{12000}) : int64_t{1} << 40;
    DeviceSpec spec = testing::Device("gpu" + std::to_string(d), capacity, rng.Bernoulli(0.5) ? 0.5 : 0.0);
    spec.peak_flops_fp32 = rng.Bernoulli(0.5) ? 1.0 : 2.0;
    spec.kind = spec.peak_flops_fp32 == 1.0 ? "slow" : "fast";
    b.AddDevice(spec);
  }
  const int32_t sw = b.AddResource(SharedResource{"switch", 150.0});
  const int32_t nic = b.AddResource(SharedResource{"nic", 250.0});
  for (int d = 0; d < n; ++d) {
    std::vector<int32_t> res;
    if (rng.Bernoulli(0.5)) res.push_back(sw);
    if (rng.Bernoulli(0.3)) res.push_back(nic);
    b.AddLink(testing::Link(d, Cluster::kHost, 100.0, 0.5, res));
    b.AddLink(testing::Link(Cluster::kHost, d, 100.0, 0.5,
                            rng.Bernoulli(0.3) ? std::vector<int32_t>{nic} : std::vector<int32_t>{}));
  }
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s != d && rng.Bernoulli(0.5))
        b.AddLink(testing::Link(s, d, rng.Bernoulli(0.5) ? 400.0 : 200.0, 0.25));
    }
  }
  return b.Build();
}

// Random placement; with probability 1/2 each: priorities (few distinct
// values, so that ties are common), transfer priorities, convex fusion pairs.
Decision RandomDecision(Rng& rng, const graphs::Graph& g, int num_devices, bool allow_fusion) {
  Decision d;
  const int n = g.num_nodes();
  for (int v = 0; v < n; ++v)
    d.placement.push_back(static_cast<int32_t>(rng.UniformInt(uint64_t(num_devices))));
  if (rng.Bernoulli(0.5)) {
    for (int v = 0; v < n; ++v) d.priority.push_back(std::floor(rng.Uniform(0.0, 4.0)));
  }
  if (rng.Bernoulli(0.5)) {
    for (int i = 0; i < g.num_tensors() * num_devices; ++i) d.transfer_priority.push_back(rng.Uniform());
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

// Contiguous blocks of the node order (a pipeline), the shape the
// benchmark's decisions have.
Decision BlockDecision(Rng& rng, int n, int num_devices) {
  Decision d;
  std::vector<int> cuts;
  for (int k = 1; k < num_devices; ++k)
    cuts.push_back(static_cast<int>((k + rng.Uniform(-0.4, 0.4)) * n / num_devices));
  for (int v = 0, k = 0; v < n; ++v) {
    while (k < num_devices - 1 && v >= cuts[static_cast<size_t>(k)]) ++k;
    d.placement.push_back(k);
  }
  return d;
}

using testing::LayeredGraph;

// All cases, in a fixed order, as "name: fingerprint" lines.
std::vector<std::string> ComputeReference() {
  std::vector<std::string> lines;
  // Small random DAGs with exact (integer) times: many simultaneous events,
  // every option combination, out-of-memory cases.
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    Rng rng(seed * 104729);
    const graphs::Graph g =
        testing::RandomDag(seed, static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{150})));
    const bool small_memory = seed % 4 == 0;
    const Cluster cluster = RandomCluster(rng, small_memory);
    SimOptions options;
    options.reuse_transfers = rng.Bernoulli(0.75);
    options.track_memory = rng.Bernoulli(0.9);
    options.stop_at_oom = rng.Bernoulli(0.5);
    options.infeasible_step_time = rng.Bernoulli(0.7) ? 100.0 : 0.0;
    Evaluator ev(g, cluster, testing::Linear(), options);
    for (int k = 0; k < 2; ++k) {
      const Decision d = RandomDecision(rng, g, cluster.num_devices(), seed % 3 != 0);
      lines.push_back("random" + std::to_string(seed) + "." + std::to_string(k) + ": " + Fingerprint(ev, d));
    }
  }
  // The DGX-1 preset (NVLink mesh, PCIe switches, routes through the host)
  // with roofline times: pipeline and random placements of a layered graph.
  {
    const Cluster dgx = LoadCluster("dgx1_v100");
    const graphs::Graph g = LayeredGraph(3000, 11);
    SimOptions options;
    options.stop_at_oom = false;
    Evaluator ev(g, dgx, MakeCostModel("roofline"), options);
    Rng rng(2026);
    for (int k = 0; k < 6; ++k) {
      Decision d = k < 3 ? BlockDecision(rng, g.num_nodes(), dgx.num_devices())
                         : RandomDecision(rng, g, dgx.num_devices(), true);
      if (k == 1) {
        for (int v = 0; v < g.num_nodes(); ++v) d.priority.push_back(rng.Uniform());
      }
      lines.push_back("dgx_layered." + std::to_string(k) + ": " + Fingerprint(ev, d));
    }
  }
  // A small GNMT training graph (control edges, many consumers per tensor).
  {
    const Cluster dgx = LoadCluster("dgx1_v100");
    const graphs::Graph g = graphs::Generate(
        "gnmt", LoadYamlString("{layers: 2, hidden: 256, seq_len: 8, batch: 16, training: true}"),
        "reference");
    // The engine's own results: random placements split colocation groups,
    // which the evaluator would mark infeasible (sim/options.h).
    SimOptions engine_only;
    engine_only.enforce_colocation = false;
    Evaluator ev(g, dgx, MakeCostModel("roofline"), engine_only);
    Rng rng(92828);
    for (int k = 0; k < 4; ++k) {
      const Decision d = k == 0 ? BlockDecision(rng, g.num_nodes(), dgx.num_devices())
                                : RandomDecision(rng, g, dgx.num_devices(), false);
      lines.push_back("gnmt." + std::to_string(k) + ": " + Fingerprint(ev, d));
    }
  }
  return lines;
}

TEST_CASE("reference: results are bit-identical to the saved reference engine's") {
  const std::vector<std::string> lines = ComputeReference();
  if (const char* w = std::getenv("GOSIM_WRITE_ENGINE_REFERENCE"); w != nullptr && std::strcmp(w, "1") == 0) {
    std::ofstream out(kReferencePath, std::ios::binary | std::ios::trunc);
    REQUIRE(out.good());
    for (const auto& line : lines) out << line << '\n';
    out.close();
    REQUIRE(out.good());
    MESSAGE("wrote " << lines.size() << " cases to " << kReferencePath);
    return;
  }
  std::ifstream in(kReferencePath, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << kReferencePath << " (tests run from the repository root)");
  std::vector<std::string> saved;
  for (std::string line; std::getline(in, line);) saved.push_back(line);
  REQUIRE(saved.size() == lines.size());
  int mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(i);
    if (lines[i] != saved[i] && ++mismatches <= 5) CHECK(lines[i] == saved[i]);
  }
  CHECK(mismatches == 0);
}

// The engine checks device indices in its setup pass (not in CheckDecision's
// first pass): a bad index must still be a DecisionError naming the node,
// before anything is simulated, and leave the workspace usable.
TEST_CASE("reference: a device index out of range is a DecisionError naming the node") {
  const graphs::Graph g = testing::RandomDag(5, 20);
  const Cluster cluster = testing::MeshCluster(2, 100.0);
  Evaluator ev(g, cluster, testing::Linear());
  Decision ok;
  ok.placement.assign(static_cast<size_t>(g.num_nodes()), 0);
  const Evaluation before = ev.Evaluate(ok);
  for (const int32_t device : {2, -1}) {
    Decision bad = ok;
    bad.placement[7] = device;
    CHECK_THROWS_WITH_AS(ev.Evaluate(bad), doctest::Contains("'n7' is placed on device"), DecisionError);
    CHECK_THROWS_AS(ev.Simulate(bad, true), DecisionError);
  }
  const Evaluation after = ev.Evaluate(ok);
  CHECK(after.step_time == before.step_time);
  CHECK(after.peak_memory == before.peak_memory);
}

}  // namespace
}  // namespace gosim::sim
