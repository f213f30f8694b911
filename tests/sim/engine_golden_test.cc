// Golden scenarios: tiny graphs whose step time, peak memory and schedule are
// computed by hand (the arithmetic is in the comments). Devices run 1 FLOP/s,
// so a node's flops are its seconds; every number is exact in binary.
#include <doctest/doctest.h>

#include "core/error.h"
#include "graphs/graph_builder.h"
#include "sim/cost_model.h"
#include "sim/cost_models.h"
#include "sim/device_profile.h"
#include "sim/evaluator.h"
#include "sim/timeline.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

using testing::Device;
using testing::Linear;
using testing::Link;
using testing::MakeGraph;
using testing::MeshCluster;
using testing::N;

Decision Place(std::vector<int32_t> placement) {
  Decision d;
  d.placement = std::move(placement);
  return d;
}

const OpRecord& OpOf(const SimResult& r, graphs::NodeId node) {
  for (const auto& op : r.ops) {
    if (op.node == node) return op;
  }
  FAIL("node " << node << " did not run");
  return r.ops.front();
}

TEST_CASE("golden: a chain on one device") {
  // a -> b -> c on gpu0, launch overhead 0.25 s.
  //   a: 1 + 0.25 = 1.25 s, b: 2 + 0.25 = 2.25 s, c: 3 + 0.25 = 3.25 s -> step 6.75 s.
  // Memory: persistent 10 + 5 = 15.
  //   [0, 1.25)    a runs, a:0 (100) allocated        -> 115
  //   [1.25, 3.5)  b runs, b:0 (200) allocated        -> 315 (peak)
  //   3.5          b ends, a:0 freed (last consumer)  -> 215
  //   [3.5, 6.75)  c runs, c:0 (50) allocated         -> 265
  //   6.75         b:0 and c:0 (no consumer) freed    -> 15
  const auto g = MakeGraph({{"a", 1, {100}, {}, 10}, {"b", 2, {200}, {"a"}}, {"c", 3, {50}, {"b"}, 5}});
  const Cluster cluster = MeshCluster(1, 1.0, 0.0, 1000, 0.25);
  Evaluator ev(g, cluster, Linear());
  const Decision d = Place({0, 0, 0});

  const Evaluation e = ev.Evaluate(d);
  CHECK(e.feasible);
  CHECK(e.step_time == 6.75);
  CHECK(e.peak_memory == 315.0);

  const SimResult r = ev.Simulate(d, true);
  CHECK(r.step_time == 6.75);
  CHECK(r.devices[0].peak_memory == 315);
  CHECK(r.devices[0].persistent_memory == 15);
  CHECK(r.devices[0].busy_time == 6.75);
  CHECK(r.devices[0].utilization == 1.0);
  REQUIRE(r.ops.size() == 3);
  CHECK(OpOf(r, 1).start == 1.25);
  CHECK(OpOf(r, 2).start == 3.5);
  CHECK(r.transfers == 0);
  // Critical path: the whole chain, each step caused by its input.
  REQUIRE(r.critical_path.steps.size() == 3);
  CHECK(r.critical_path.length == 6.75);
  CHECK(r.critical_path.compute_time == 6.75);
  CHECK(r.critical_path.steps[1].reason == CriticalStep::Reason::kData);
  CHECK(ev.evaluations() == 2);
}

TEST_CASE("golden: fork-join across two devices with transfers") {
  // a (gpu0) feeds b (gpu0) and c (gpu1); d (gpu0) joins b and c.
  // Times a 1, b 3, c 1, d 1; links 100 B/s with 0.5 s latency.
  //   a      gpu0  [0, 1]
  //   b      gpu0  [1, 4]
  //   a:0 -> gpu1  [1, 2.5]   0.5 + 100 / 100
  //   c      gpu1  [2.5, 3.5]
  //   c:0 -> gpu0  [3.5, 4.5] 0.5 + 50 / 100
  //   d      gpu0  [4.5, 5.5] ready at max(4, 4.5)     -> step 5.5
  // gpu0 memory: a:0 100 at 0; b:0 200 at 1 (300); c:0's copy 50 at 3.5 (350,
  //   peak; a:0 is still read by b until 4); a:0 freed at 4 (250); d:0 10 at 4.5.
  // gpu1 memory: a:0's copy 100 at 1; c:0 50 at 2.5 (150, peak); the copy is
  //   freed at 3.5, c:0 when its transfer ends at 4.5.
  const auto g =
      MakeGraph({{"a", 1, {100}}, {"b", 3, {200}, {"a"}}, {"c", 1, {50}, {"a"}}, {"d", 1, {10}, {"b", "c"}}});
  const Cluster cluster = MeshCluster(2, 100.0, 0.5);
  Evaluator ev(g, cluster, Linear());
  const Decision d = Place({0, 0, 1, 0});
  const SimResult r = ev.Simulate(d, true);
  CHECK(r.feasible);
  CHECK(r.step_time == 5.5);
  CHECK(r.devices[0].peak_memory == 350);
  CHECK(r.devices[1].peak_memory == 150);
  CHECK(r.devices[0].busy_time == 5.0);
  CHECK(r.devices[1].busy_time == 1.0);
  CHECK(r.transfers == 2);
  CHECK(r.transferred_bytes == 150);
  const int32_t l01 = cluster.FindLink(0, 1), l10 = cluster.FindLink(1, 0);
  CHECK(r.links[l01].bytes == 100);
  CHECK(r.links[l01].busy_time == 1.5);
  CHECK(r.links[l10].busy_time == 1.0);
  REQUIRE(r.transfer_hops.size() == 2);
  CHECK(r.transfer_hops[0].start == 1.0);
  CHECK(r.transfer_hops[0].end == 2.5);
  CHECK(r.transfer_hops[1].start == 3.5);
  CHECK(OpOf(r, 3).ready == 4.5);
  CHECK(OpOf(r, 3).start == 4.5);
  // Critical path: a -> a:0 -> c -> c:0 -> d (b is off the path).
  const auto& steps = r.critical_path.steps;
  REQUIRE(steps.size() == 5);
  CHECK(steps[0].kind == CriticalStep::Kind::kOp);
  CHECK(steps[0].reason == CriticalStep::Reason::kStart);
  CHECK(steps[1].kind == CriticalStep::Kind::kTransfer);
  CHECK(steps[2].id == 2);
  CHECK(steps[3].where == l10);
  CHECK(steps[4].id == 3);
  CHECK(r.critical_path.length == 5.5);
  CHECK(r.critical_path.compute_time == 3.0);
  CHECK(r.critical_path.transfer_time == 2.5);
  CHECK(ev.Evaluate(d).step_time == 5.5);
}

TEST_CASE("golden: two transfers contend for one link; transfer priority reorders them") {
  // a (gpu0, 1 s) makes a:0 (200 B) for b and a:1 (100 B) for c, both on
  // gpu1; b takes 1 s, c 3 s; link 100 B/s, no latency.
  // FIFO (a:0 queued first, same time, lower transfer id):
  //   a:0 [1, 3], a:1 [3, 4]; b [3, 4]; c [4, 7]              -> step 7
  // a:1 first (transfer priority):
  //   a:1 [1, 2], a:0 [2, 4]; c [2, 5]; b ready 4, runs [5, 6] -> step 6
  const auto g = MakeGraph({{"a", 1, {200, 100}}, {"b", 1, {}, {"a:0"}}, {"c", 3, {}, {"a:1"}}});
  const Cluster cluster = MeshCluster(2, 100.0);
  Evaluator ev(g, cluster, Linear());
  Decision d = Place({0, 1, 1});
  const SimResult fifo = ev.Simulate(d, true);
  CHECK(fifo.step_time == 7.0);
  REQUIRE(fifo.transfer_hops.size() == 2);
  CHECK(fifo.transfer_hops[1].queued == 1.0);
  CHECK(fifo.transfer_hops[1].start == 3.0);
  const int32_t link = cluster.FindLink(0, 1);
  CHECK(fifo.links[link].busy_time == 3.0);
  CHECK(fifo.links[link].bytes == 300);
  CHECK(fifo.links[link].transfers == 2);
  // The second transfer waited for the link: a, a:0, a:1 (resource), c.
  const auto& steps = fifo.critical_path.steps;
  REQUIRE(steps.size() == 4);
  CHECK(steps[2].kind == CriticalStep::Kind::kTransfer);
  CHECK(steps[2].reason == CriticalStep::Reason::kResource);
  CHECK(steps[3].id == 2);
  CHECK(fifo.critical_path.transfer_time == 3.0);

  d.transfer_priority.assign(static_cast<size_t>(g.num_tensors() * 2), 0.0);
  d.transfer_priority[static_cast<size_t>(g.tensor(0, 1) * 2 + 1)] = 1.0;
  const SimResult prio = ev.Simulate(d, true);
  CHECK(prio.step_time == 6.0);
  CHECK(OpOf(prio, 2).start == 2.0);
  CHECK(OpOf(prio, 1).ready == 4.0);
  CHECK(OpOf(prio, 1).start == 5.0);
  CHECK(ev.Evaluate(d).step_time == 6.0);
}

TEST_CASE("golden: a fused pair runs as one kernel without its internal tensor") {
  // x -> y -> z on one device, launch 0.5 s, memory bandwidth 100 B/s;
  // time = 0.5 + flops + (bytes read + written) / 100.
  //   x: 1 flop, writes 100          -> 0.5 + 1 + 1   = 2.5
  //   y: 2 flops, reads 100, writes 50 -> 0.5 + 2 + 1.5 = 4
  //   z: 1 flop, reads 50             -> 0.5 + 1 + 0.5 = 2      unfused: 8.5
  // Fused {x, y}: 3 flops, reads 100 - 100 (x:0 is internal) = 0, writes
  //   150 - 100 = 50 -> 0.5 + 3 + 0.5 = 4; then z 2               fused: 6
  // Peak memory: unfused x:0 + y:0 = 150 while y runs; fused only y:0 = 50.
  const auto g = MakeGraph(
      {{"x", 1, {100}, {}, 0, 0, 100}, {"y", 2, {50}, {"x"}, 0, 100, 50}, {"z", 1, {}, {"y"}, 0, 50, 0}});
  ClusterBuilder b("one");
  b.AddDevice(Device("gpu0", 1000, 0.5, 100.0));
  const Cluster cluster = b.Build();
  Evaluator ev(g, cluster, Linear());
  Decision d = Place({0, 0, 0});
  const Evaluation unfused = ev.Evaluate(d);
  CHECK(unfused.step_time == 8.5);
  CHECK(unfused.peak_memory == 150.0);

  d.fusion_group = {0, 0, -1};
  const Evaluation fused = ev.Evaluate(d);
  CHECK(fused.step_time == 6.0);
  CHECK(fused.peak_memory == 50.0);
  const SimResult r = ev.Simulate(d, true);
  CHECK(r.kernels == 2);
  REQUIRE(r.ops.size() == 2);
  CHECK(r.ops[0].node == 0);
  CHECK(r.ops[0].fused_nodes == 2);
  CHECK(r.ops[0].end == 4.0);
  CHECK(r.ops[1].fused_nodes == 1);
  CHECK(r.devices[0].peak_memory == 50);

  // Group ids are labels in [0, nodes); a group of one is an ordinary node.
  d.fusion_group = {-1, 2, 2};
  CHECK(ev.Evaluate(d).step_time == 2.5 + (0.5 + 3 + 1.0));  // y+z: reads 100, writes 0
  d.fusion_group = {2, -1, -1};
  CHECK(ev.Evaluate(d).step_time == 8.5);
}

TEST_CASE("golden: an alias takes no memory and keeps what it views allocated") {
  // w holds 1000 persistent bytes and outputs them as an alias (a weight's
  // read); a writes 100; v is a view of a (alias, 100); b reads v and w and
  // writes 10. Times a 1, v 1, b 3 on one device: a [0, 1], v [1, 2], b [2, 5].
  //   w's output adds nothing to its 1000 persistent bytes;
  //   a:0 100 at 0; v:0 nothing at 1; v ends at 2, but a:0 stays while v:0
  //   lives (b reads it until 5): 1000 + 100 + 10 = 1110 while b runs.
  // Were the outputs plain tensors: 1000 + 1000 + 100 + 100 = 2200 at 1.
  // Were a:0 freed when v ended: 1000 + 10 = 1010 while b runs, peak 1100.
  const std::vector<testing::N> nodes = {{"w", 0, {1000}, {}, 1000, 0, 0, {0}},
                                         {"a", 1, {100}},
                                         {"v", 1, {100}, {"a"}, 0, 0, 0, {0}},
                                         {"b", 3, {10}, {"v", "w"}}};
  ClusterBuilder one("one");
  one.AddDevice(Device("gpu0", 100000, 0.0, 1e12));
  const Cluster cluster1 = one.Build();
  const auto g = MakeGraph(nodes);
  Evaluator ev(g, cluster1, Linear());
  const SimResult r = ev.Simulate(Place({0, 0, 0, 0}), true);
  CHECK(r.step_time == 5.0);
  CHECK(r.devices[0].peak_memory == 1110);
  std::vector<testing::N> plain = nodes;
  plain[0].aliases.clear();
  plain[2].aliases.clear();
  const auto g_plain = MakeGraph(plain);
  CHECK(Evaluator(g_plain, cluster1, Linear()).Simulate(Place({0, 0, 0, 0}), true).devices[0].peak_memory ==
        2200);

  // A view sent to another device arrives as a real copy; its base stays on
  // the source until the copy has left. w, a, v on gpu0, b on gpu1; links
  // 100 B/s, latency 0.5: w:0 crosses [0, 10.5], v:0 after it [10.5, 12]
  // (FIFO on the link), b [12, 15].
  //   gpu0: 1000 + a:0 100 until v:0 has left at 12 -> peak 1100.
  //   gpu1: w:0's copy 1000 at 10.5, v:0's copy 100 at 12, b:0 10 -> 1110.
  const Cluster cluster2 = MeshCluster(2, 100.0, 0.5);
  Evaluator ev2(g, cluster2, Linear());
  const SimResult r2 = ev2.Simulate(Place({0, 0, 0, 1}), true);
  CHECK(r2.step_time == 15.0);
  CHECK(r2.devices[0].peak_memory == 1100);
  CHECK(r2.devices[1].peak_memory == 1110);
  CHECK(r2.transferred_bytes == 1100);
  CHECK(ev2.Evaluate(Place({0, 0, 0, 1})).peak_memory == 1110);

  // Fused with its view, a's output is internal and the group's kernel
  // writes v:0, a plain tensor then: 1000 + 100 + 10 while b runs.
  Decision fused = Place({0, 0, 0, 0});
  fused.fusion_group = {-1, 1, 1, -1};
  CHECK(ev.Simulate(fused, true).devices[0].peak_memory == 1110);
}

TEST_CASE("golden: fusion errors are DecisionErrors, never hangs") {
  // {a, c} is not convex: a -> b -> c leaves the group and comes back.
  const auto g = MakeGraph({{"a", 1, {8}}, {"b", 1, {8}, {"a"}}, {"c", 1, {}, {"a", "b"}}});
  const Cluster cluster = MeshCluster(2, 1.0);
  Evaluator ev(g, cluster, Linear());
  Decision d = Place({0, 0, 0});
  d.fusion_group = {0, -1, 0};
  CHECK_THROWS_AS(ev.Evaluate(d), DecisionError);
  d.placement = {0, 1, 1};
  d.fusion_group = {-1, 2, 2};
  CHECK_NOTHROW(ev.Evaluate(d));
  d.fusion_group = {-1, 3, 3};
  CHECK_THROWS_AS(ev.Evaluate(d), DecisionError);  // group id out of range
  d.placement = {0, 0, 1};
  CHECK_THROWS_AS(ev.Evaluate(d), DecisionError);  // group across devices
  d.fusion_group = {-1, 2};
  CHECK_THROWS_AS(ev.Evaluate(d), DecisionError);  // wrong size
  d.fusion_group.clear();
  d.placement = {0, 2, 0};
  CHECK_THROWS_AS(ev.Evaluate(d), DecisionError);  // no such device
  d.placement = {0, 0, 0};
  d.priority = {1.0, std::nan(""), 0.0};
  CHECK_THROWS_AS(ev.Evaluate(d), DecisionError);
  d.priority.clear();
  CHECK(ev.Evaluate(d).step_time == 3.0);  // the workspace is still usable
}

TEST_CASE("golden: out of memory") {
  // a (1 s, a:0 100 B) -> b (1 s, b:0 200 B) on a 250 B device.
  // At t = 1 b starts: 100 (a:0, read by b) + 200 = 300 > 250.
  const auto g = MakeGraph({{"a", 1, {100}}, {"b", 1, {200}, {"a"}}});
  const Cluster cluster = MeshCluster(1, 1.0, 0.0, 250);
  SimOptions options;
  Evaluator ev(g, cluster, Linear(), options);
  const Decision d = Place({0, 0});
  const Evaluation e = ev.Evaluate(d);
  CHECK_FALSE(e.feasible);
  CHECK(e.oom_device == 0);
  CHECK(e.step_time == 100.0);  // SimOptions::infeasible_step_time
  CHECK(e.peak_memory == 300.0);

  const SimResult r = ev.Simulate(d, true);
  CHECK_FALSE(r.feasible);
  CHECK_FALSE(r.completed);  // stopped at the first out-of-memory event
  REQUIRE(r.oom.has_value());
  CHECK(r.oom->device == 0);
  CHECK(r.oom->time == 1.0);
  CHECK(r.oom->capacity == 250);
  CHECK(r.oom->requested == 200);
  CHECK(r.oom->in_use == 100);
  CHECK(r.oom->node == 1);
  REQUIRE(r.oom->live.size() == 1);
  CHECK(r.oom->live[0].tensor == g.tensor(0, 0));
  CHECK(r.oom->live[0].bytes == 100);
  CHECK_FALSE(r.oom->live[0].received);

  // Keep simulating: the full step, still infeasible.
  options.stop_at_oom = false;
  Evaluator full(g, cluster, Linear(), options);
  const SimResult rf = full.Simulate(d);
  CHECK(rf.completed);
  CHECK_FALSE(rf.feasible);
  CHECK(rf.step_time == 2.0);
  CHECK(rf.devices[0].peak_memory == 300);
  CHECK(full.Evaluate(d).step_time == 100.0);
  // infeasible_step_time <= 0 reports the simulated time.
  options.infeasible_step_time = 0.0;
  Evaluator sim_time(g, cluster, Linear(), options);
  CHECK(sim_time.Evaluate(d).step_time == 2.0);
  CHECK_FALSE(sim_time.Evaluate(d).feasible);

  // Persistent bytes alone can exceed the capacity, at time 0.
  const auto heavy = MakeGraph({{"w", 1, {}, {}, 300}});
  Evaluator hv(heavy, cluster, Linear());
  const SimResult rh = hv.Simulate(Place({0}));
  REQUIRE(rh.oom.has_value());
  CHECK(rh.oom->time == 0.0);
  CHECK(rh.oom->persistent == 300);
  CHECK(rh.oom->node == -1);
  CHECK(rh.kernels == 0);
}

TEST_CASE("golden: priorities change the order and the step time") {
  // r (gpu0, 1 s) feeds c and b (gpu0, 1 s each); b feeds d (gpu1, 3 s) with
  // an empty tensor over a zero-latency link.
  // FIFO: c and b are ready at 1; c has the smaller id:
  //   r [0,1], c [1,2], b [2,3], d [3,6]             -> step 6
  // priority b > c: r [0,1], b [1,2], c [2,3], d [2,5] -> step 5
  const auto g = MakeGraph({{"r", 1, {8}}, {"c", 1, {}, {"r"}}, {"b", 1, {0}, {"r"}}, {"d", 3, {}, {"b"}}});
  const Cluster cluster = MeshCluster(2, 1.0);
  Evaluator ev(g, cluster, Linear());
  Decision d = Place({0, 0, 0, 1});
  CHECK(ev.Evaluate(d).step_time == 6.0);
  d.priority = {0.0, 0.0, 1.0, 0.0};
  CHECK(ev.Evaluate(d).step_time == 5.0);
  const SimResult r = ev.Simulate(d, true);
  CHECK(OpOf(r, 1).start == 2.0);
  CHECK(OpOf(r, 1).ready == 1.0);
  // Equal priorities fall back to FIFO, then node id.
  d.priority = {5.0, 5.0, 5.0, 5.0};
  CHECK(ev.Evaluate(d).step_time == 6.0);
}

TEST_CASE("golden: shared resource contention") {
  // a (gpu0, 1 s) sends a:0 to b (gpu1) and a:1 to c (gpu2), 100 B each.
  // Links gpu0->gpu1 and gpu0->gpu2 run at 200 B/s but both cross a PCIe
  // switch of 100 B/s: effective 100 B/s, one transfer at a time.
  //   a:0 [1, 2], a:1 [2, 3]; b [2, 3], c [3, 4]   -> step 4
  // Without the switch both go in parallel at 200 B/s:
  //   a:0, a:1 [1, 1.5]; b, c [1.5, 2.5]          -> step 2.5
  const auto g = MakeGraph({{"a", 1, {100, 100}}, {"b", 1, {}, {"a:0"}}, {"c", 1, {}, {"a:1"}}});
  const auto build = [](bool with_switch) {
    ClusterBuilder b("pcie");
    for (int i = 0; i < 3; ++i) b.AddDevice(Device("gpu" + std::to_string(i)));
    std::vector<int32_t> res;
    if (with_switch) res.push_back(b.AddResource(SharedResource{"switch", 100.0}));
    b.AddLink(Link(0, 1, 200.0, 0.0, res));
    b.AddLink(Link(0, 2, 200.0, 0.0, res));
    b.AddLink(Link(1, 0, 200.0));
    b.AddLink(Link(2, 0, 200.0));
    b.AddLink(Link(1, 2, 200.0));
    b.AddLink(Link(2, 1, 200.0));
    return b.Build();
  };
  const Cluster shared = build(true), free = build(false);
  const Decision d = Place({0, 1, 2});
  Evaluator ev(g, shared, Linear());
  const SimResult r = ev.Simulate(d, true);
  CHECK(r.step_time == 4.0);
  REQUIRE(r.resources.size() == 1);
  CHECK(r.resources[0].busy_time == 2.0);
  CHECK(r.resources[0].bytes == 200);
  CHECK(r.resources[0].utilization == 0.5);
  REQUIRE(r.transfer_hops.size() == 2);
  CHECK(r.transfer_hops[1].start == 2.0);
  CHECK(r.critical_path.steps[2].reason == CriticalStep::Reason::kResource);
  Evaluator ev_free(g, free, Linear());
  CHECK(ev_free.Evaluate(d).step_time == 2.5);
}

TEST_CASE("golden: a YAML cluster, and the dgx1_v100 preset with the roofline model") {
  // The shared-switch scenario above, with the cluster written in YAML:
  // a:0 [1, 2], a:1 [2, 3]; b [2, 3], c [3, 4] -> step 4.
  const Cluster pcie = ParseCluster(
      "devices:\n"
      "  - {name: g, count: 3, kind: test, peak_flops_fp32: 1, memory_bandwidth: 1e30, memory_capacity: "
      "1e9}\n"
      "resources:\n"
      "  - {name: sw, bandwidth: 100}\n"
      "links:\n"
      "  - {src: g0, dst: [g1, g2], bandwidth: 200, resources: [sw]}\n"
      "  - {src: [g1, g2], dst: g0, bandwidth: 200}\n"
      "  - {src: g1, dst: g2, bandwidth: 200, bidirectional: true}\n",
      "pcie.yaml");
  const auto g = MakeGraph({{"a", 1, {100, 100}}, {"b", 1, {}, {"a:0"}}, {"c", 1, {}, {"a:1"}}});
  Evaluator ev(g, pcie, Linear());
  CHECK(ev.Evaluate(Place({0, 1, 2})).step_time == 4.0);

  // On a DGX-1 a chain on one GPU takes the sum of its roofline times, and
  // gpu0 -> gpu5 (no NVLink between them) crosses PCIe through the host.
  const Cluster dgx = LoadCluster("dgx1_v100");
  graphs::GraphBuilder builder("mlp");
  for (int i = 0; i < 3; ++i) {
    graphs::NodeSpec spec;
    spec.name = "mm" + std::to_string(i);
    spec.op = "MatMul";
    spec.flops = 2.0 * 1024 * 1024 * 1024;
    spec.bytes_read = 8 << 20;
    spec.bytes_written = 4 << 20;
    spec.outputs.push_back(graphs::TensorInfo{4 << 20, {1024, 1024}, graphs::DType::kFloat32});
    builder.AddNode(std::move(spec));
    if (i > 0) builder.AddEdge(i - 1, i, 0);
  }
  const graphs::Graph mlp = builder.Build();
  const auto roofline = MakeCostModel("roofline");
  Evaluator dev(mlp, dgx, roofline);
  double sum = 0.0;
  for (int v = 0; v < 3; ++v) sum += roofline->NodeTime(mlp, v, dgx.device(0));
  CHECK(sum > 0.0);
  CHECK(dev.Evaluate(Place({0, 0, 0})).step_time == sum);
  const SimResult r = dev.Simulate(Place({0, 5, 5}), true);
  REQUIRE(r.transfer_hops.size() == 2);
  CHECK(dgx.links()[r.transfer_hops[0].link].dst == Cluster::kHost);
  CHECK(r.step_time > sum);
  CHECK(r.feasible);
}

TEST_CASE("golden: store-and-forward through the host") {
  // gpu0 -> host (100 B/s, 0.25 s) -> gpu1 (50 B/s, 0.25 s); a:0 is 100 B.
  //   a [0, 1]; hop 1 [1, 2.25]; hop 2 [2.25, 4.5]; b [4.5, 5.5] -> step 5.5
  // a:0 leaves gpu0 at 2.25; the copy on gpu1 is allocated at 2.25.
  const auto g = MakeGraph({{"a", 1, {100}}, {"b", 1, {}, {"a"}}});
  ClusterBuilder b("hosted");
  b.AddDevice(Device("gpu0"));
  b.AddDevice(Device("gpu1"));
  b.AddLink(Link(0, Cluster::kHost, 100.0, 0.25));
  b.AddLink(Link(Cluster::kHost, 1, 50.0, 0.25));
  b.AddLink(Link(1, Cluster::kHost, 100.0, 0.25));
  b.AddLink(Link(Cluster::kHost, 0, 50.0, 0.25));
  const Cluster cluster = b.Build();
  REQUIRE(cluster.Route(0, 1).size() == 2);
  Evaluator ev(g, cluster, Linear());
  const SimResult r = ev.Simulate(Place({0, 1}), true);
  CHECK(r.step_time == 5.5);
  REQUIRE(r.transfer_hops.size() == 2);
  CHECK(r.transfer_hops[0].end == 2.25);
  CHECK(r.transfer_hops[1].hop == 1);
  CHECK(r.transfer_hops[1].queued == 2.25);
  CHECK(r.transfer_hops[1].end == 4.5);
  CHECK(r.transfers == 1);
  CHECK(r.devices[0].peak_memory == 100);
  CHECK(r.devices[1].peak_memory == 100);
  CHECK(r.critical_path.steps.size() == 4);
  CHECK(r.critical_path.transfer_time == 3.5);
}

TEST_CASE("golden: a tensor crosses once per device, or once per consumer") {
  // a (gpu0, 1 s) -> b, c (gpu1, 1 s each); a:0 100 B over 100 B/s.
  // Reused: one transfer [1, 2]; b [2, 3], c [3, 4]; gpu1 holds one copy (100).
  // Per consumer: [1, 2] and [2, 3]; b [2, 3], c [3, 4]; two copies live
  // from 2 to 3 (200), 200 bytes on the link.
  const auto g = MakeGraph({{"a", 1, {100}}, {"b", 1, {}, {"a"}}, {"c", 1, {}, {"a"}}});
  const Cluster cluster = MeshCluster(2, 100.0);
  const Decision d = Place({0, 1, 1});
  SimOptions options;
  Evaluator reuse(g, cluster, Linear(), options);
  const SimResult r1 = reuse.Simulate(d);
  CHECK(r1.step_time == 4.0);
  CHECK(r1.transfers == 1);
  CHECK(r1.devices[1].peak_memory == 100);
  options.reuse_transfers = false;
  Evaluator per_edge(g, cluster, Linear(), options);
  const SimResult r2 = per_edge.Simulate(d);
  CHECK(r2.step_time == 4.0);
  CHECK(r2.transfers == 2);
  CHECK(r2.transferred_bytes == 200);
  CHECK(r2.devices[1].peak_memory == 200);
  CHECK(r2.devices[0].peak_memory == 100);
}

TEST_CASE("golden: control edges and memory tracking off") {
  // a (gpu0, 2 s) ->^ b (gpu1, 1 s): a control edge moves nothing; b starts
  // when a ends.
  const auto g = MakeGraph({{"a", 2, {1000}}, {"b", 1, {}, {"^a"}}});
  const Cluster cluster = MeshCluster(2, 1.0, 0.0, 100);
  SimOptions options;
  options.track_memory = false;
  Evaluator ev(g, cluster, Linear(), options);
  const SimResult r = ev.Simulate(Place({0, 1}), true);
  CHECK(r.feasible);  // 1000 B on a 100 B device, but memory is not tracked
  CHECK(r.step_time == 3.0);
  CHECK(r.transfers == 0);
  CHECK(OpOf(r, 1).start == 2.0);
  CHECK(r.devices[0].peak_memory == 0);
}

TEST_CASE("golden: the Chrome trace names every kernel and hop") {
  const auto g = MakeGraph({{"a", 1, {100}}, {"b", 1, {}, {"a"}}});
  const Cluster cluster = MeshCluster(2, 100.0);
  Evaluator ev(g, cluster, Linear());
  const SimResult r = ev.Simulate(Place({0, 1}), true);
  const std::string trace = ChromeTraceJson(r, g, cluster);
  CHECK(trace.find("\"traceEvents\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"a\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"a:0\"") != std::string::npos);
  CHECK(trace.find("\"gpu0->gpu1\"") != std::string::npos);
  CHECK(trace.find("\"ts\":1000000.0") != std::string::npos);                // a:0 starts at 1 s
  CHECK(trace.find("\"cost_model\":\"linear_test\"") != std::string::npos);  // the Evaluator's
  CHECK(ChromeTraceJson(r, g, cluster, "linear").find("\"cost_model\":\"linear\"") != std::string::npos);
  CHECK_THROWS_AS(ChromeTraceJson(ev.Simulate(Place({0, 1}), false), g, cluster), Error);
  const std::string json = SimResultToJson(r, g, cluster);
  CHECK(json.find("\"step_time\": 3.0") != std::string::npos);  // a [0, 1], a:0 [1, 2], b [2, 3]
  const std::string text = FormatSimResult(r, g, cluster);
  CHECK(text.find("gpu0->gpu1") != std::string::npos);
}

TEST_CASE("golden: a calibrated copy fit replaces the link's latency and bandwidth") {
  // a (gpu0, 1 s) -> b (gpu1, 2 s), a:0 is 128 B; cluster links 100 B/s,
  // 0.5 s latency. The profile of the devices' kind prices kernels at
  // 1 s per FLOP (as the linear test model) and fits peer copies at 0.25 s
  // + bytes / 64 B/s:
  //   cluster link:    1 + (0.5 + 128 / 100) + 2 = 4.78 s
  //   calibrated link: 1 + (0.25 + 128 / 64) + 2 = 5.25 s
  const auto g = MakeGraph({{"a", 1, {128}}, {"b", 2, {8}, {"a"}}});
  const Cluster cluster = MeshCluster(2, 100.0, 0.5);
  const DeviceProfile profile = ParseDeviceProfile(
      "format: gosim.device_profile\nversion: 1\ndevice_kind: test\nlaunch_overhead: 0\n"
      "default: {intercept: 0, per_flop: 1.0, per_byte: 0}\n"
      "links: {memcpy_ptop: {latency: 0.25, bandwidth: 64, samples: 20}, memcpy_htod: {latency: 9, "
      "bandwidth: 1}}\n",
      "test.yaml");
  const Decision d = Place({0, 1});
  Evaluator calibrated(g, cluster,
                       std::make_shared<CalibratedCostModel>(std::vector<DeviceProfile>{profile}));
  CHECK(calibrated.Evaluate(d).step_time == 5.25);
  CalibratedOptions keep;
  keep.calibrate_links = false;
  Evaluator cluster_links(g, cluster,
                          std::make_shared<CalibratedCostModel>(std::vector<DeviceProfile>{profile}, keep));
  CHECK(cluster_links.Evaluate(d).step_time == doctest::Approx(4.78).epsilon(1e-15));
  CHECK(Evaluator(g, cluster, Linear()).Evaluate(d).step_time == doctest::Approx(4.78).epsilon(1e-15));
  // The link's own figures where the profile has no fit for its direction.
  const DeviceProfile no_links = ParseDeviceProfile(
      "format: gosim.device_profile\nversion: 1\ndevice_kind: test\n"
      "default: {intercept: 0, per_flop: 1.0, per_byte: 0}\n",
      "test.yaml");
  Evaluator unfitted(g, cluster, std::make_shared<CalibratedCostModel>(std::vector<DeviceProfile>{no_links}));
  CHECK(unfitted.Evaluate(d).step_time == doctest::Approx(4.78).epsilon(1e-15));
}

}  // namespace
}  // namespace gosim::sim
