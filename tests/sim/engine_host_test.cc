// The host in the engine (docs/SIMULATOR.md, "The host"): golden scenarios
// computed by hand, and the engine's properties with a host. Devices run 1
// FLOP/s, so a node's flops are its kernel seconds; every host dispatch
// costs `host` seconds (HostLinearCostModel below); every number is exact
// in binary.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/error.h"
#include "sim/cost_model.h"
#include "sim/evaluator.h"
#include "sim/options.h"
#include "tests/sim/engine_test_util.h"

namespace gosim::sim {
namespace {

using testing::Link;
using testing::MakeGraph;
using testing::MeshCluster;
using testing::N;

// LinearCostModel with a host: `host` seconds per op (nodes whose op type is
// "sync" make the host wait), `copy` seconds per cross-device copy call.
class HostLinearCostModel : public testing::LinearCostModel {
 public:
  HostLinearCostModel(double host, double copy, double launch_call = 0.5)
      : host_(host), copy_(copy), launch_call_(launch_call) {}
  std::string name() const override { return "host_linear_test"; }
  bool HostModelled(const DeviceSpec&) const override { return true; }
  HostWork HostOf(const graphs::Graph& graph, graphs::NodeId node, const DeviceSpec&) const override {
    return HostWork{host_, graph.op_type_name_of(node) == "sync"};
  }
  HostCosts HostCostsOf(const DeviceSpec&) const override {
    HostCosts c;
    c.copy = copy_;
    c.launch_call = launch_call_;
    c.graph_op = host_;
    c.graph_view = host_;
    return c;
  }

 private:
  double host_, copy_, launch_call_;
};

std::shared_ptr<const CostModel> HostModel(double host, double copy = 0.0) {
  return std::make_shared<HostLinearCostModel>(host, copy);
}

SimOptions Options(Execution execution, Processes processes = Processes::kOne, int queue = 1024) {
  SimOptions o;
  o.execution = execution;
  o.processes = processes;
  o.launch_queue = queue;
  return o;
}

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

// The graph with one node's op type changed to "sync".
graphs::Graph WithSync(const std::vector<N>& nodes, const std::string& sync_node) {
  graphs::GraphBuilder b("sync_test");
  for (const N& n : nodes) {
    graphs::NodeSpec s;
    s.name = n.name;
    s.op = n.name == sync_node ? "sync" : "op";
    s.flops = n.flops;
    for (int64_t bytes : n.outputs)
      s.outputs.push_back(graphs::TensorInfo{bytes, {}, graphs::DType::kFloat32});
    b.AddNode(std::move(s));
  }
  for (const N& n : nodes) {
    for (const std::string& in : n.inputs) b.AddEdge(in, n.name, 0);
  }
  return b.Build();
}

TEST_CASE("host: the default follows the cost model, and none is today's engine") {
  const auto g = MakeGraph({{"a", 1, {8}}, {"b", 1, {8}, {"a"}}});
  const Cluster cluster = MeshCluster(1, 1.0);
  // No host prices: auto is none.
  const Evaluator plain(g, cluster, testing::Linear());
  CHECK(plain.execution() == Execution::kNone);
  CHECK(plain.Evaluate(Place({0, 0})).step_time == 2.0);
  // A cost model that prices the host: auto is eager, one process.
  const Evaluator eager(g, cluster, HostModel(2.0));
  CHECK(eager.execution() == Execution::kEager);
  CHECK(eager.processes() == Processes::kOne);
  // execution none ignores the host.
  const Evaluator none(g, cluster, HostModel(2.0), Options(Execution::kNone));
  CHECK(none.Evaluate(Place({0, 0})).step_time == 2.0);
  // Asking for a host the cost model cannot price is an error naming the kind.
  CHECK_THROWS_WITH_AS(Evaluator(g, cluster, testing::Linear(), Options(Execution::kEager)),
                       doctest::Contains("no host table for device kind 'test'"), ConfigError);
}

TEST_CASE("host: a host-bound chain") {
  // a -> b -> c, kernels 1 s, dispatch 2 s each, one device:
  //   a: host [0, 2], kernel [2, 3]; b: host [2, 4], kernel [4, 5];
  //   c: host [4, 6], kernel [6, 7]. Step 7, the host busy 6.
  const auto g = MakeGraph({{"a", 1, {8}}, {"b", 1, {8}, {"a"}}, {"c", 1, {8}, {"b"}}});
  const Evaluator ev(g, MeshCluster(1, 1.0), HostModel(2.0));
  const Evaluation e = ev.Evaluate(Place({0, 0, 0}));
  CHECK(e.step_time == 7.0);
  CHECK(e.host_busy == 6.0);
  const SimResult r = ev.Simulate(Place({0, 0, 0}), true);
  CHECK(r.step_time == 7.0);
  CHECK(r.host_busy == 6.0);
  CHECK(r.execution == Execution::kEager);
  REQUIRE(r.host_threads.size() == 1);
  CHECK(r.host_threads[0].busy_time == 6.0);
  CHECK(OpOf(r, 1).start == 4.0);
  CHECK(OpOf(r, 2).start == 6.0);
  REQUIRE(r.host_ops.size() == 3);
  CHECK(r.host_ops[2].start == 4.0);
  CHECK(r.host_ops[2].end == 6.0);
  // The critical path runs through the host: three dispatches, then c.
  CHECK(r.critical_path.length == 7.0);
  CHECK(r.critical_path.host_time == 6.0);
  CHECK(r.critical_path.compute_time == 1.0);
  REQUIRE(r.critical_path.steps.size() == 4);
  CHECK(r.critical_path.steps[0].kind == CriticalStep::Kind::kHost);
  CHECK(r.critical_path.steps[3].kind == CriticalStep::Kind::kOp);
}

TEST_CASE("host: a GPU-bound chain keeps its stream order") {
  // Kernels 3 s, dispatch 1 s: a: host [0, 1], kernel [1, 4]; b launched at
  // 2 runs after a [4, 7]; c launched at 3 runs [7, 10]. Step 10.
  const auto g = MakeGraph({{"a", 3, {8}}, {"b", 3, {8}, {"a"}}, {"c", 3, {8}, {"b"}}});
  const Evaluator ev(g, MeshCluster(1, 1.0), HostModel(1.0));
  const SimResult r = ev.Simulate(Place({0, 0, 0}), true);
  CHECK(r.step_time == 10.0);
  CHECK(r.host_busy == 3.0);
  CHECK(OpOf(r, 1).start == 4.0);
  CHECK(OpOf(r, 2).start == 7.0);
}

TEST_CASE("host: independent kernels run in launch order, not as they become ready") {
  // x (5 s) and y (1 s) on gpu0 without dependencies; y's input comes from
  // gpu1 late. Eager streams run in launch order: a stream never lets a
  // later launch pass an earlier one. Under none, the device takes whatever
  // is ready.
  //   nodes: p (gpu1, 4 s) -> y (gpu0, 1 s); x (gpu0, 1 s) launched after y.
  //   dispatch 0.5 s each, program order p, y, x; link 1 B/s, 1 B: 1 s.
  //   p: host [0, 0.5], kernel [0.5, 4.5]; y: host [0.5, 1], its input
  //   arrives at 5.5, kernel [5.5, 6.5]; x: host [1, 1.5], behind y in the
  //   stream: [6.5, 7.5]. Step 7.5.
  const auto g = MakeGraph({{"p", 4, {1}}, {"y", 1, {1}, {"p"}}, {"x", 1, {1}}});
  const Decision d = Place({1, 0, 0});
  const Evaluator eager(g, MeshCluster(2, 1.0), HostModel(0.5));
  const SimResult r = eager.Simulate(d, true);
  CHECK(OpOf(r, 1).start == 5.5);
  CHECK(OpOf(r, 2).start == 6.5);
  CHECK(r.step_time == 7.5);
  // Graph execution (TensorFlow's executor) runs x as soon as it is
  // dispatched, and dispatches y only once its input has arrived (its
  // Recv). Two threads: p and x [0, 0.5]; x runs [0.5, 1.5]; the copy
  // arrives at 5.5; y is dispatched [5.5, 6] and runs [6, 7]. Step 7.
  SimOptions graph = Options(Execution::kGraph);
  graph.host_threads = 2;
  const Evaluator tf(g, MeshCluster(2, 1.0), HostModel(0.5), graph);
  const SimResult t = tf.Simulate(d, true);
  CHECK(OpOf(t, 2).start == 0.5);
  CHECK(OpOf(t, 1).start == 6.0);
  CHECK(t.step_time == 7.0);
  CHECK(t.host_threads.size() == 2);
}

TEST_CASE("host: a full launch queue blocks the host") {
  // Three independent 3 s kernels, dispatch 1 s, a queue of one kernel:
  //   a: host [0, 1], kernel [1, 4]; b: host [1, 2], blocked until a ends
  //   at 4, kernel [4, 7]; c: host [4, 5], blocked until 7, kernel [7, 10].
  const auto g = MakeGraph({{"a", 3, {8}}, {"b", 3, {8}}, {"c", 3, {8}}});
  const Evaluator ev(g, MeshCluster(1, 1.0), HostModel(1.0), Options(Execution::kEager, Processes::kOne, 1));
  const SimResult r = ev.Simulate(Place({0, 0, 0}), true);
  CHECK(r.step_time == 10.0);
  CHECK(r.host_busy == 3.0);
  CHECK(r.host_ops[2].start == 4.0);
  // With the default queue the host runs ahead: dispatches end at 1, 2, 3;
  // kernels [1, 4], [4, 7], [7, 10]: the same step, the host idle from 3.
  const Evaluator deep(g, MeshCluster(1, 1.0), HostModel(1.0));
  const SimResult d = deep.Simulate(Place({0, 0, 0}), true);
  CHECK(d.step_time == 10.0);
  CHECK(d.host_ops[2].start == 2.0);
}

TEST_CASE("host: a synchronizing op makes the host wait") {
  // a -> s -> b, kernels 2 s, dispatch 1 s; s synchronizes:
  //   a: host [0, 1], kernel [1, 3]; s: host [1, 2], kernel [3, 5]; the host
  //   waits until 5; b: host [5, 6], kernel [6, 8]. Step 8.
  const std::vector<N> nodes{{"a", 2, {8}}, {"s", 2, {8}, {"a"}}, {"b", 2, {8}, {"s"}}};
  const Evaluator ev(WithSync(nodes, "s"), MeshCluster(1, 1.0), HostModel(1.0));
  const SimResult r = ev.Simulate(Place({0, 0, 0}), true);
  CHECK(r.step_time == 8.0);
  CHECK(r.host_ops[2].start == 5.0);
  CHECK(r.host_busy == 3.0);
  // CUDA graphs cannot capture it.
  CHECK_THROWS_WITH_AS(
      Evaluator(WithSync(nodes, "s"), MeshCluster(1, 1.0), HostModel(1.0), Options(Execution::kCaptured)),
      doctest::Contains("cannot capture 's'"), ConfigError);
}

TEST_CASE("host: copies between devices cost a call; processes dispatch in parallel") {
  // a (gpu0) -> b (gpu1): kernels 1 s, dispatch 1 s, a copy call 0.25 s,
  // link 100 B/s, a:0 100 B (1 s).
  const auto g = MakeGraph({{"a", 1, {100}}, {"b", 1, {8}, {"a"}}});
  const Decision d = Place({0, 1});
  // One process: a host [0, 1], kernel [1, 2]; b host [1, 2.25] (its copy
  // call first); the copy [2, 3]; b [3, 4].
  const Evaluator one(g, MeshCluster(2, 100.0), HostModel(1.0, 0.25));
  CHECK(one.Evaluate(d).step_time == 4.0);
  CHECK(one.Evaluate(d).host_busy == 2.25);
  // A process per device: a's send call too: host0 [0, 1.25], kernel
  // [1.25, 2.25]; host1 dispatches b (recv) [0, 1.25]; the copy [2.25,
  // 3.25]; b [3.25, 4.25].
  const Evaluator per(g, MeshCluster(2, 100.0), HostModel(1.0, 0.25),
                      Options(Execution::kEager, Processes::kPerDevice));
  const SimResult r = per.Simulate(d, true);
  CHECK(r.step_time == 4.25);
  CHECK(r.host_busy == 1.25);
  REQUIRE(r.host_threads.size() == 2);
  CHECK(r.host_threads[1].process == 1);
  CHECK(r.processes == Processes::kPerDevice);
}

TEST_CASE("host: one process serializes the dispatch of every device") {
  // Two independent chains of four 1 s kernels, dispatch 1 s, one chain per
  // device. One process dispatches 8 ops: the step ends after the host's
  // 8 s plus the last kernel: 9 s, no faster than on one device (8 x 1 s
  // dispatch, the kernels hidden behind it, + 1). A process per device
  // dispatches both chains at once: 4 + 1 = 5 s.
  std::vector<N> nodes;
  for (const char* chain : {"x", "y"}) {
    for (int i = 0; i < 4; ++i) {
      N n{std::string(chain) + std::to_string(i), 1, {8}};
      if (i > 0) n.inputs = {std::string(chain) + std::to_string(i - 1)};
      nodes.push_back(n);
    }
  }
  const auto g = MakeGraph(nodes);
  const Decision split = Place({0, 0, 0, 0, 1, 1, 1, 1});
  const Decision single = Place({0, 0, 0, 0, 0, 0, 0, 0});
  const Evaluator one(g, MeshCluster(2, 1.0), HostModel(1.0));
  CHECK(one.Evaluate(split).step_time == 9.0);
  CHECK(one.Evaluate(single).step_time == 9.0);
  const Evaluator per(g, MeshCluster(2, 1.0), HostModel(1.0),
                      Options(Execution::kEager, Processes::kPerDevice));
  CHECK(per.Evaluate(split).step_time == 5.0);
  // Without a host, splitting halves the step: the GPU-side-only estimate
  // the host model corrects.
  const Evaluator none(g, MeshCluster(2, 1.0), HostModel(1.0), Options(Execution::kNone));
  CHECK(none.Evaluate(split).step_time == 4.0);
  CHECK(none.Evaluate(single).step_time == 8.0);
}

TEST_CASE("host: priorities reorder the program") {
  // a, b, c independent on one device, kernels 1 s, dispatch 1 s. Program
  // order is node order (a, b, c) without priorities; with priorities c > a
  // > b it is c, a, b: c runs [1, 2], a [2, 3], b [3, 4].
  const auto g = MakeGraph({{"a", 1, {8}}, {"b", 1, {8}}, {"c", 1, {8}}});
  Decision d = Place({0, 0, 0});
  d.priority = {2.0, 1.0, 3.0};
  const Evaluator ev(g, MeshCluster(1, 1.0), HostModel(1.0));
  const SimResult r = ev.Simulate(d, true);
  CHECK(OpOf(r, 2).start == 1.0);
  CHECK(OpOf(r, 0).start == 2.0);
  CHECK(OpOf(r, 1).start == 3.0);
  CHECK(r.step_time == 4.0);
}

TEST_CASE("host: a fused group is one dispatch") {
  // a -> b -> c fused {a, b}: one dispatch (1 s) and one 2 s kernel, then c.
  //   group: host [0, 1], kernel [1, 3]; c: host [1, 2], kernel [3, 4].
  const auto g = MakeGraph({{"a", 1, {8}}, {"b", 1, {8}, {"a"}}, {"c", 1, {8}, {"b"}}});
  Decision d = Place({0, 0, 0});
  d.fusion_group = {0, 0, -1};
  const Evaluator ev(g, MeshCluster(1, 1.0), HostModel(1.0));
  const SimResult r = ev.Simulate(d, true);
  CHECK(r.step_time == 4.0);
  CHECK(r.host_busy == 2.0);
  CHECK(r.host_ops.size() == 2);
}

TEST_CASE("host: captured graphs launch once per device") {
  // a -> b -> c, kernels 1 s: one graph launch (0.5 s), then the kernels
  // back to back: step 3.5, the host busy 0.5.
  const auto g = MakeGraph({{"a", 1, {8}}, {"b", 1, {8}, {"a"}}, {"c", 1, {8}, {"b"}}});
  const Evaluator ev(g, MeshCluster(1, 1.0), HostModel(2.0), Options(Execution::kCaptured));
  const SimResult r = ev.Simulate(Place({0, 0, 0}), true);
  CHECK(r.step_time == 3.5);
  CHECK(r.host_busy == 0.5);
  CHECK(OpOf(r, 0).start == 0.5);
}

TEST_CASE("host: properties on random DAGs") {
  // Dependencies respected, one kernel at a time per device, the step at
  // least the busiest host thread and the critical path's length, the same
  // result twice, Evaluate and Simulate agree.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const auto g = testing::RandomDag(seed, 60);
    const Cluster cluster = MeshCluster(3, 500.0, 0.01);
    for (const Execution exec : {Execution::kEager, Execution::kGraph, Execution::kCaptured}) {
      for (const Processes proc : {Processes::kOne, Processes::kPerDevice}) {
        SimOptions o = Options(exec, proc, 1 + static_cast<int>(seed % 4));
        o.host_threads = 1 + static_cast<int>(seed % 3);
        const Evaluator ev(g, cluster, HostModel(0.75, 0.125), o);
        Rng rng(seed);
        Decision d = Place(std::vector<int32_t>(g.num_nodes()));
        for (auto& p : d.placement) p = static_cast<int32_t>(rng.UniformInt(0, 2));
        if (seed % 2 == 0) {
          d.priority.resize(g.num_nodes());
          for (auto& p : d.priority) p = rng.Uniform();
        }
        INFO("seed " << seed << " execution " << ExecutionName(exec) << " processes " << ProcessesName(proc));
        const SimResult r = ev.Simulate(d, true);
        const Evaluation e = ev.Evaluate(d);
        CHECK(e.step_time == r.step_time);
        CHECK(e.host_busy == r.host_busy);
        CHECK(r.step_time >= r.host_busy);
        CHECK(r.step_time == doctest::Approx(r.critical_path.length));
        CHECK(ev.Evaluate(d).step_time == e.step_time);
        std::vector<double> end(g.num_nodes(), -1.0);
        for (const OpRecord& op : r.ops) end[op.node] = op.end;
        for (const OpRecord& op : r.ops) {
          for (const graphs::EdgeId eid : g.in_edges(op.node)) {
            CHECK(op.start >= end[g.edge(eid).src] - 1e-12);
          }
        }
        std::vector<OpRecord> ops = r.ops;
        std::sort(ops.begin(), ops.end(), [](const OpRecord& a, const OpRecord& b) {
          return a.device != b.device ? a.device < b.device : a.start < b.start;
        });
        for (size_t i = 1; i < ops.size(); ++i) {
          if (ops[i].device == ops[i - 1].device) CHECK(ops[i].start >= ops[i - 1].end - 1e-12);
        }
      }
    }
  }
}

}  // namespace
}  // namespace gosim::sim
