#include "agents/stage_repair.h"

#include <coin/CbcModel.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace gosim::agents {
namespace {

void Check(const StageProblem& p, std::span<const int32_t> stage, const char* what) {
  const auto U = static_cast<size_t>(p.num_units);
  if (p.num_stages < 1 || p.unit_bytes.size() != U || p.unit_weight.size() != U ||
      p.stage_capacity.size() != static_cast<size_t>(p.num_stages) || stage.size() != U) {
    throw DecisionError(std::string("stage repair: sizes disagree (") + what + ": " +
                        std::to_string(stage.size()) + " stages for " + std::to_string(U) + " units, " +
                        std::to_string(p.num_stages) + " stages)");
  }
  for (const int32_t s : stage) {
    if (s < 0 || s >= p.num_stages) {
      throw DecisionError(std::string("stage repair: ") + what + " has stage " + std::to_string(s) +
                          " outside [0, " + std::to_string(p.num_stages) + ")");
    }
  }
}

// A feasible assignment to start the search from, when the greedy finds
// one: units in `order` (a topological order of the unit graph when it has
// no cycle), each on the earliest stage at or after its predecessors' (with
// `acyclic`) where it fits; empty when that fails or breaks a constraint.
std::vector<int32_t> GreedyStages(const StageProblem& p, std::span<const int32_t> order) {
  std::vector<std::vector<int32_t>> preds(static_cast<size_t>(p.num_units));
  for (const auto& [u, v] : p.edges) preds[static_cast<size_t>(v)].push_back(u);
  std::vector<double> used(static_cast<size_t>(p.num_stages), 0.0);
  std::vector<int32_t> stage(static_cast<size_t>(p.num_units), 0);
  int32_t fill = 0;
  for (const int32_t u : order) {
    int32_t s = p.acyclic ? fill : 0;
    if (p.acyclic) {
      for (const int32_t q : preds[static_cast<size_t>(u)]) s = std::max(s, stage[static_cast<size_t>(q)]);
    }
    while (s < p.num_stages &&
           used[static_cast<size_t>(s)] + p.unit_bytes[u] > p.stage_capacity[static_cast<size_t>(s)]) {
      ++s;
    }
    if (s == p.num_stages) return {};
    stage[static_cast<size_t>(u)] = s;
    used[static_cast<size_t>(s)] += p.unit_bytes[u];
    if (p.acyclic) fill = s;
  }
  return StagesFeasible(p, stage) ? stage : std::vector<int32_t>{};
}

}  // namespace

bool StagesFeasible(const StageProblem& p, std::span<const int32_t> stage) {
  Check(p, stage, "assignment");
  std::vector<double> used(static_cast<size_t>(p.num_stages), 0.0);
  for (int32_t u = 0; u < p.num_units; ++u) used[static_cast<size_t>(stage[u])] += p.unit_bytes[u];
  for (int32_t c = 0; c < p.num_stages; ++c) {
    if (used[static_cast<size_t>(c)] > p.stage_capacity[static_cast<size_t>(c)]) return false;
  }
  if (p.acyclic) {
    for (const auto& [u, v] : p.edges) {
      if (stage[u] > stage[v]) return false;
    }
  }
  return true;
}

double StageDistance(const StageProblem& p, std::span<const int32_t> stage,
                     std::span<const int32_t> proposal) {
  Check(p, stage, "assignment");
  Check(p, proposal, "proposal");
  double d = 0.0;
  for (int32_t u = 0; u < p.num_units; ++u) {
    const int32_t gap = std::abs(stage[u] - proposal[u]);
    d += p.unit_weight[u] * (p.acyclic ? gap : (gap != 0 ? 1 : 0));
  }
  return d;
}

StageRepairResult RepairStages(const StageProblem& p, std::span<const int32_t> proposal,
                               const StageRepairOptions& options) {
  Check(p, proposal, "proposal");
  StageRepairResult out;
  out.stage.assign(proposal.begin(), proposal.end());
  if (StagesFeasible(p, proposal)) {
    out.found = out.optimal = out.proposal_feasible = true;
    return out;
  }
  if (p.num_stages == 1) return out;  // one stage that does not fit: nothing to move to
  const auto U = static_cast<size_t>(p.num_units);
  const auto K = static_cast<size_t>(p.num_stages);
  std::vector<int> row_index, col_index;
  std::vector<double> values, row_lower, row_upper;
  const auto add_row = [&](double lo, double hi) {
    row_lower.push_back(lo);
    row_upper.push_back(hi);
    return static_cast<int>(row_lower.size()) - 1;
  };
  const auto set = [&](int row, int col, double value) {
    if (value == 0.0) return;
    row_index.push_back(row);
    col_index.push_back(col);
    values.push_back(value);
  };
  std::vector<double> objective;
  constexpr double kMiB = 1.0 / 1048576.0;  // byte rows in MiB keep coefficients near the others
  int cols = 0;
  if (p.acyclic) {
    // y[u][c], c = 1 .. K-1, column u * (K-1) + c - 1.
    const size_t C = K - 1;
    const auto y = [&](size_t u, size_t c) { return static_cast<int>(u * C + c - 1); };
    cols = static_cast<int>(U * C);
    objective.assign(static_cast<size_t>(cols), 0.0);
    for (size_t u = 0; u < U; ++u) {
      const auto target = static_cast<size_t>(proposal[u]);
      for (size_t c = 1; c < K; ++c) {
        // |y - [target >= c]|: 1 - y below the target, y above it.
        if (c <= target) {
          objective[static_cast<size_t>(y(u, c))] = -p.unit_weight[u];
        } else {
          objective[static_cast<size_t>(y(u, c))] = p.unit_weight[u];
        }
        if (c + 1 < K) {  // y[u][c] >= y[u][c+1]
          const int row = add_row(0.0, COIN_DBL_MAX);
          set(row, y(u, c), 1.0);
          set(row, y(u, c + 1), -1.0);
        }
      }
    }
    for (const auto& [a, b] : p.edges) {  // y[a][c] <= y[b][c]
      for (size_t c = 1; c < K; ++c) {
        const int row = add_row(0.0, COIN_DBL_MAX);
        set(row, y(static_cast<size_t>(b), c), 1.0);
        set(row, y(static_cast<size_t>(a), c), -1.0);
      }
    }
    // Memory of stage c: sum_u bytes(u) (y[u][c] - y[u][c+1]), y[u][0] = 1, y[u][K] = 0.
    for (size_t c = 0; c < K; ++c) {
      double fixed = 0.0;
      const int row = add_row(-COIN_DBL_MAX, 0.0);
      for (size_t u = 0; u < U; ++u) {
        const double bytes = p.unit_bytes[u] * kMiB;
        if (c == 0) {
          fixed += bytes;
        } else {
          set(row, y(u, c), bytes);
        }
        if (c + 1 < K) set(row, y(u, c + 1), -bytes);
      }
      row_upper.back() = p.stage_capacity[c] * kMiB - fixed;
    }
  } else {
    const auto x = [&](size_t u, size_t c) { return static_cast<int>(u * K + c); };
    cols = static_cast<int>(U * K);
    objective.assign(static_cast<size_t>(cols), 0.0);
    for (size_t u = 0; u < U; ++u) {
      const int row = add_row(1.0, 1.0);
      for (size_t c = 0; c < K; ++c) set(row, x(u, c), 1.0);
      objective[static_cast<size_t>(x(u, static_cast<size_t>(proposal[u])))] = -p.unit_weight[u];
    }
    for (size_t c = 0; c < K; ++c) {
      const int row = add_row(-COIN_DBL_MAX, p.stage_capacity[c] * kMiB);
      for (size_t u = 0; u < U; ++u) set(row, x(u, c), p.unit_bytes[u] * kMiB);
    }
  }
  std::vector<double> col_lower(static_cast<size_t>(cols), 0.0), col_upper(static_cast<size_t>(cols), 1.0);
  const CoinPackedMatrix matrix(false, row_index.data(), col_index.data(), values.data(),
                                static_cast<CoinBigIndex>(values.size()));
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(),
                     row_upper.data());
  for (int j = 0; j < cols; ++j) solver.setInteger(j);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.solver()->messageHandler()->setLogLevel(0);
  std::vector<int32_t> order = p.order;
  if (order.size() != U) {
    order.resize(U);
    std::iota(order.begin(), order.end(), 0);
  }
  const std::vector<int32_t> greedy = GreedyStages(p, order);
  if (!greedy.empty()) {  // a first incumbent: CBC returns at least this one
    std::vector<double> start(static_cast<size_t>(cols), 0.0);
    for (size_t u = 0; u < U; ++u) {
      const auto g = static_cast<size_t>(greedy[u]);
      if (p.acyclic) {
        for (size_t c = 1; c <= g; ++c) start[u * (K - 1) + c - 1] = 1.0;
      } else {
        start[u * K + g] = 1.0;
      }
    }
    double value = 0.0;
    for (int j = 0; j < cols; ++j) value += objective[static_cast<size_t>(j)] * start[static_cast<size_t>(j)];
    model.setBestSolution(start.data(), cols, value, true);
  }
  model.setUseElapsedTime(true);
  if (options.time_limit > 0) model.setMaximumSeconds(options.time_limit);
  const auto start = std::chrono::steady_clock::now();
  model.branchAndBound();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.solver_called = true;
  const double* best = model.bestSolution();
  if (best == nullptr) {
    out.distance = StageDistance(p, out.stage, proposal);
    return out;
  }
  for (size_t u = 0; u < U; ++u) {
    int32_t s = 0;
    if (p.acyclic) {
      for (size_t c = 1; c < K; ++c) s += best[u * (K - 1) + c - 1] > 0.5 ? 1 : 0;
    } else {
      for (size_t c = 1; c < K; ++c)
        if (best[u * K + c] > best[u * K + static_cast<size_t>(s)]) s = static_cast<int32_t>(c);
    }
    out.stage[u] = s;
  }
  // Rounding is exact for a 0/1 solution; check the constraints anyway.
  out.found = StagesFeasible(p, out.stage);
  out.optimal = out.found && model.isProvenOptimal();
  out.distance = StageDistance(p, out.stage, proposal);
  return out;
}

}  // namespace gosim::agents
