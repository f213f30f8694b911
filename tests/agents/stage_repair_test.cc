#include "agents/stage_repair.h"

#include <doctest/doctest.h>

#include <vector>

#include "core/error.h"
#include "core/rng.h"

namespace gosim::agents {
namespace {

// A chain of `n` units of `bytes` each over `stages` stages of `capacity`.
StageProblem Chain(int32_t n, int32_t stages, double bytes, double capacity) {
  StageProblem p;
  p.num_units = n;
  p.num_stages = stages;
  p.unit_bytes.assign(static_cast<size_t>(n), bytes);
  p.unit_weight.assign(static_cast<size_t>(n), 1.0);
  p.stage_capacity.assign(static_cast<size_t>(stages), capacity);
  for (int32_t u = 0; u + 1 < n; ++u) p.edges.emplace_back(u, u + 1);
  return p;
}

TEST_CASE("stage repair: a feasible proposal is kept without calling the solver") {
  const StageProblem p = Chain(4, 2, 1.0, 2.0);
  const std::vector<int32_t> proposal = {0, 0, 1, 1};
  const StageRepairResult r = RepairStages(p, proposal);
  CHECK(r.found);
  CHECK(r.proposal_feasible);
  CHECK_FALSE(r.solver_called);
  CHECK(r.stage == proposal);
  CHECK(r.distance == 0.0);
}

TEST_CASE("stage repair: a backward edge is undone at the least stage distance") {
  // 0 -> 1 -> 2 -> 3 proposed on stages 2, 0, 1, 1 of 3 (room for all):
  // the nearest monotone assignment moves unit 0 down to 0 (distance 2) or
  // units 1.. up (more); the solver finds distance 2.
  const StageProblem p = Chain(4, 3, 1.0, 10.0);
  const std::vector<int32_t> proposal = {2, 0, 1, 1};
  const StageRepairResult r = RepairStages(p, proposal);
  REQUIRE(r.found);
  CHECK(r.optimal);
  CHECK(r.solver_called);
  CHECK(StagesFeasible(p, r.stage));
  CHECK(r.distance == doctest::Approx(2.0));
  CHECK(r.stage == std::vector<int32_t>{0, 0, 1, 1});
}

TEST_CASE("stage repair: memory spreads units over stages, and the optimum is the nearest") {
  // Six units of 1 byte, stages of 2 bytes: every proposal on stage 0 must
  // become 0, 0, 1, 1, 2, 2 (distance 0 + 0 + 1 + 1 + 2 + 2 = 6).
  const StageProblem p = Chain(6, 3, 1.0, 2.0);
  const StageRepairResult r = RepairStages(p, std::vector<int32_t>(6, 0));
  REQUIRE(r.found);
  CHECK(r.optimal);
  CHECK(r.stage == std::vector<int32_t>{0, 0, 1, 1, 2, 2});
  CHECK(r.distance == doctest::Approx(6.0));
}

TEST_CASE(
    "stage repair: random proposals on a random DAG always come back feasible and no farther than the "
    "greedy") {
  Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    StageProblem p;
    p.num_units = 12;
    p.num_stages = 4;
    for (int32_t u = 0; u < p.num_units; ++u) {
      p.unit_bytes.push_back(rng.Uniform(1.0, 3.0));
      p.unit_weight.push_back(1.0);
      for (int32_t v = u + 1; v < p.num_units; ++v) {
        if (rng.Bernoulli(0.2)) p.edges.emplace_back(u, v);
      }
    }
    p.stage_capacity.assign(4, 10.0);
    std::vector<int32_t> proposal;
    for (int32_t u = 0; u < p.num_units; ++u) proposal.push_back(static_cast<int32_t>(rng.UniformInt(4)));
    const StageRepairResult r = RepairStages(p, proposal);
    REQUIRE(r.found);
    CHECK(StagesFeasible(p, r.stage));
    CHECK(r.distance == doctest::Approx(StageDistance(p, r.stage, proposal)));
  }
}

TEST_CASE("stage repair: without the order constraint the distance counts moved units") {
  StageProblem p = Chain(4, 2, 1.0, 2.0);
  p.acyclic = false;
  const StageRepairResult r = RepairStages(p, std::vector<int32_t>{1, 1, 1, 0});
  REQUIRE(r.found);
  CHECK(r.distance == doctest::Approx(1.0));  // one unit of stage 1 moves to stage 0
}

TEST_CASE("stage repair: an impossible problem returns the proposal, not found; bad sizes are refused") {
  const StageProblem p = Chain(3, 2, 2.0, 1.0);  // no unit fits anywhere
  const StageRepairResult r = RepairStages(p, std::vector<int32_t>{0, 0, 1});
  CHECK_FALSE(r.found);
  CHECK(r.stage == std::vector<int32_t>{0, 0, 1});
  CHECK_THROWS_AS(RepairStages(p, std::vector<int32_t>{0, 0}), DecisionError);
  CHECK_THROWS_AS(RepairStages(p, std::vector<int32_t>{0, 0, 2}), DecisionError);
}

}  // namespace
}  // namespace gosim::agents
