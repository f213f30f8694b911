// Evaluate() allocates nothing once its thread's workspace is warm. This file
// replaces the global operator new of the sim test program with a counting
// one (counting only on threads that ask for it).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "sim/evaluator.h"
#include "tests/sim/engine_test_util.h"

namespace {
thread_local bool t_counting = false;
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (t_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return ::operator new(size);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace gosim::sim {
namespace {

TEST_CASE("Evaluate allocates nothing after warm-up") {
  Rng rng(77);
  const graphs::Graph g = testing::RandomDag(77, 400);
  ClusterBuilder b("four");
  for (int d = 0; d < 4; ++d) b.AddDevice(testing::Device("gpu" + std::to_string(d), 21000));
  const int32_t sw = b.AddResource(SharedResource{"switch", 150.0});
  for (int d = 0; d < 4; ++d) {
    b.AddLink(testing::Link(d, Cluster::kHost, 100.0, 0.5, {sw}));
    b.AddLink(testing::Link(Cluster::kHost, d, 100.0, 0.5));
  }
  b.AddLink(testing::Link(0, 1, 400.0, 0.25));
  b.AddLink(testing::Link(1, 0, 400.0, 0.25));
  const Cluster cluster = b.Build();
  SimOptions options;
  options.stop_at_oom = false;
  Evaluator ev(g, cluster, testing::Linear(), options);

  std::vector<Decision> decisions;
  for (int i = 0; i < 24; ++i) {
    Decision d;
    for (int v = 0; v < g.num_nodes(); ++v)
      d.placement.push_back(static_cast<int32_t>(rng.UniformInt(uint64_t{4})));
    if (i % 2 == 1) {
      for (int v = 0; v < g.num_nodes(); ++v) d.priority.push_back(rng.Uniform());
    }
    if (i % 3 == 1) {
      d.fusion_group.assign(static_cast<size_t>(g.num_nodes()), -1);
      for (int v = 0; v + 1 < g.num_nodes(); v += 7) {
        const auto out = g.out_edges(v);
        if (out.size() != 1) continue;
        const int32_t w = g.edge(out[0]).dst;
        if (d.fusion_group[w] >= 0) continue;
        d.fusion_group[v] = d.fusion_group[w] = v;
        d.placement[w] = d.placement[v];
      }
    }
    if (i % 4 == 3) {
      for (int t = 0; t < g.num_tensors() * 4; ++t) d.transfer_priority.push_back(rng.Uniform());
    }
    decisions.push_back(std::move(d));
  }
  std::vector<Evaluation> warm;
  for (const auto& d : decisions) warm.push_back(ev.Evaluate(d));  // warm-up
  std::vector<Evaluation> again(decisions.size() * 3);
  t_counting = true;
  const int64_t before = g_allocations.load();
  for (size_t k = 0; k < again.size(); ++k) again[k] = ev.Evaluate(decisions[k % decisions.size()]);
  const int64_t allocations = g_allocations.load() - before;
  t_counting = false;
  int infeasible = 0;
  for (size_t k = 0; k < again.size(); ++k) {
    infeasible += again[k].feasible ? 0 : 1;
    CHECK(again[k].step_time == warm[k % decisions.size()].step_time);
  }
  CHECK(allocations == 0);
  CHECK(infeasible > 0);  // the 21000-byte devices run out on some placements
  CHECK(infeasible < 72);
}

}  // namespace
}  // namespace gosim::sim
