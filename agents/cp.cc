#include "agents/cp.h"

#include <coin/CbcModel.hpp>
#include <coin/CglClique.hpp>
#include <coin/CglFlowCover.hpp>
#include <coin/CglGomory.hpp>
#include <coin/CglKnapsackCover.hpp>
#include <coin/CglMixedIntegerRounding2.hpp>
#include <coin/CglProbing.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "core/error.h"

namespace gosim::agents {

namespace {

// Sparse rows for CoinPackedMatrix.
class RowBuilder {
 public:
  int Add(double lower, double upper) {
    lower_.push_back(lower);
    upper_.push_back(upper);
    return static_cast<int>(lower_.size()) - 1;
  }
  void Set(int row, int col, double value) {
    if (value == 0.0) return;
    rows_.push_back(row);
    cols_.push_back(col);
    values_.push_back(value);
  }
  int num_rows() const { return static_cast<int>(lower_.size()); }
  CoinPackedMatrix Matrix() const {
    return CoinPackedMatrix(false, rows_.data(), cols_.data(), values_.data(),
                            static_cast<CoinBigIndex>(values_.size()));
  }
  const std::vector<double>& lower() const { return lower_; }
  const std::vector<double>& upper() const { return upper_; }

 private:
  std::vector<int> rows_;
  std::vector<int> cols_;
  std::vector<double> values_;
  std::vector<double> lower_;
  std::vector<double> upper_;
};

}  // namespace

CpSolution SolvePeakMemoryModel(const graphs::Graph& graph, const sim::Cluster& cluster,
                                const CpOptions& options) {
  const int32_t n = graph.num_nodes();
  const int32_t num_devices = cluster.num_devices();
  if (n > options.max_nodes) {
    throw ConfigError(
        "cp: graph '" + graph.name() + "' has " + std::to_string(n) +
            " ops, more than max_nodes = " + std::to_string(options.max_nodes),
        {}, "the exact model is for small graphs; raise the agent option 'max_nodes' at your own risk");
  }
  CpSolution solution;
  if (n == 0) {
    solution.found = solution.optimal = true;
    return solution;
  }
  const int32_t steps = options.steps > 0 ? options.steps : n;

  // ASAP / ALAP windows (edges cost one step).
  std::vector<int32_t> lo(static_cast<size_t>(n), 0);
  std::vector<int32_t> tail(static_cast<size_t>(n), 0);
  for (graphs::NodeId v = 0; v < n; ++v) {
    for (graphs::EdgeId e : graph.in_edges(v)) {
      lo[static_cast<size_t>(v)] =
          std::max(lo[static_cast<size_t>(v)], lo[static_cast<size_t>(graph.edge(e).src)] + 1);
    }
  }
  for (graphs::NodeId v = n - 1; v >= 0; --v) {
    for (graphs::EdgeId e : graph.out_edges(v)) {
      tail[static_cast<size_t>(v)] =
          std::max(tail[static_cast<size_t>(v)], tail[static_cast<size_t>(graph.edge(e).dst)] + 1);
    }
  }
  std::vector<int32_t> hi(static_cast<size_t>(n));
  for (graphs::NodeId v = 0; v < n; ++v) {
    hi[static_cast<size_t>(v)] = steps - 1 - tail[static_cast<size_t>(v)];
    if (hi[static_cast<size_t>(v)] < lo[static_cast<size_t>(v)]) {
      throw ConfigError("cp: " + std::to_string(steps) + " steps are fewer than the graph's depth", {},
                        "set 'steps' to 0 (one per op) or at least the longest path length");
    }
  }

  // Byte scale so that the largest coefficient is about 1000.
  double max_bytes = 1.0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    max_bytes = std::max(max_bytes, static_cast<double>(graph.node(v).persistent_bytes));
    for (const graphs::TensorInfo& t : graph.node(v).outputs)
      max_bytes = std::max(max_bytes, static_cast<double>(t.bytes));
  }
  const double scale = std::max(1.0, max_bytes / 1000.0);

  // Columns: x[i][d][t - lo_i], then L per (tensor, d, t - lo_i), then M.
  std::vector<int32_t> x_base(static_cast<size_t>(n));
  int32_t cols = 0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    x_base[static_cast<size_t>(v)] = cols;
    cols += num_devices * (hi[static_cast<size_t>(v)] - lo[static_cast<size_t>(v)] + 1);
  }
  const int32_t num_x = cols;
  auto x_col = [&](graphs::NodeId v, int32_t d, int32_t t) {
    const int32_t width = hi[static_cast<size_t>(v)] - lo[static_cast<size_t>(v)] + 1;
    return x_base[static_cast<size_t>(v)] + d * width + (t - lo[static_cast<size_t>(v)]);
  };
  auto in_window = [&](graphs::NodeId v, int32_t t) {
    return t >= lo[static_cast<size_t>(v)] && t <= hi[static_cast<size_t>(v)];
  };

  struct TensorVars {
    graphs::NodeId producer;
    double bytes;
    std::vector<graphs::NodeId> consumers;
    int32_t last;  // last step it can be live
    int32_t base;  // first L column
  };
  std::vector<TensorVars> tensors;
  for (graphs::NodeId v = 0; v < n; ++v) {
    const int32_t outputs = static_cast<int32_t>(graph.node(v).outputs.size());
    for (int32_t k = 0; k < outputs; ++k) {
      TensorVars tv{
          v,
          static_cast<double>(graph.node(v).outputs[static_cast<size_t>(k)].resident_bytes()) / scale,
          {},
          hi[static_cast<size_t>(v)],
          0};
      for (graphs::EdgeId e : graph.out_edges(v)) {
        const graphs::Edge& edge = graph.edge(e);
        if (edge.output_index != k) continue;
        if (std::find(tv.consumers.begin(), tv.consumers.end(), edge.dst) == tv.consumers.end()) {
          tv.consumers.push_back(edge.dst);
          tv.last = std::max(tv.last, hi[static_cast<size_t>(edge.dst)]);
        }
      }
      if (tv.bytes <= 0) continue;
      tv.base = cols;
      cols += num_devices * (tv.last - lo[static_cast<size_t>(v)] + 1);
      tensors.push_back(std::move(tv));
    }
  }
  auto l_col = [&](const TensorVars& tv, int32_t d, int32_t t) {
    const int32_t width = tv.last - lo[static_cast<size_t>(tv.producer)] + 1;
    return tv.base + d * width + (t - lo[static_cast<size_t>(tv.producer)]);
  };
  const int32_t m_col = cols++;

  RowBuilder rows;
  // Each op exactly once.
  for (graphs::NodeId v = 0; v < n; ++v) {
    const int row = rows.Add(1.0, 1.0);
    for (int32_t d = 0; d < num_devices; ++d) {
      for (int32_t t = lo[static_cast<size_t>(v)]; t <= hi[static_cast<size_t>(v)]; ++t)
        rows.Set(row, x_col(v, d, t), 1.0);
    }
  }
  // One op per device and step.
  for (int32_t d = 0; d < num_devices; ++d) {
    for (int32_t t = 0; t < steps; ++t) {
      const int row = rows.Add(-COIN_DBL_MAX, 1.0);
      for (graphs::NodeId v = 0; v < n; ++v) {
        if (in_window(v, t)) rows.Set(row, x_col(v, d, t), 1.0);
      }
    }
  }
  // No empty step before a busy one: empty steps can be removed without
  // changing any device's order or raising the peak, so this only cuts
  // time-shifted copies of solutions. At most `num_devices` ops per step.
  for (int32_t t = 1; t < steps; ++t) {
    const int row = rows.Add(0.0, COIN_DBL_MAX);
    for (graphs::NodeId v = 0; v < n; ++v) {
      for (int32_t d = 0; d < num_devices; ++d) {
        if (in_window(v, t - 1)) rows.Set(row, x_col(v, d, t - 1), num_devices);
        if (in_window(v, t)) rows.Set(row, x_col(v, d, t), -1.0);
      }
    }
  }
  // Precedence: step(j) - step(i) >= 1 (one row per distinct pair).
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (const graphs::Edge& edge : graph.edges()) pairs.emplace_back(edge.src, edge.dst);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (const auto& [i, j] : pairs) {
    const int row = rows.Add(1.0, COIN_DBL_MAX);
    for (int32_t d = 0; d < num_devices; ++d) {
      for (int32_t t = lo[static_cast<size_t>(j)]; t <= hi[static_cast<size_t>(j)]; ++t)
        rows.Set(row, x_col(j, d, t), t);
      for (int32_t t = lo[static_cast<size_t>(i)]; t <= hi[static_cast<size_t>(i)]; ++t)
        rows.Set(row, x_col(i, d, t), -t);
    }
  }
  // Liveness.
  for (const TensorVars& tv : tensors) {
    const graphs::NodeId i = tv.producer;
    const int32_t first = lo[static_cast<size_t>(i)];
    for (int32_t d = 0; d < num_devices; ++d) {
      for (int32_t t = first; t <= hi[static_cast<size_t>(i)]; ++t) {
        const int row = rows.Add(0.0, COIN_DBL_MAX);
        rows.Set(row, l_col(tv, d, t), 1.0);
        rows.Set(row, x_col(i, d, t), -1.0);
      }
      for (graphs::NodeId j : tv.consumers) {
        for (int32_t t = first + 1; t <= hi[static_cast<size_t>(j)]; ++t) {
          const int row = rows.Add(-1.0, COIN_DBL_MAX);
          rows.Set(row, l_col(tv, d, t), 1.0);
          for (int32_t e = 0; e < num_devices; ++e) {
            for (int32_t s = first; s <= std::min(t - 1, hi[static_cast<size_t>(i)]); ++s)
              rows.Set(row, x_col(i, e, s), -1.0);
          }
          for (int32_t s = std::max(t, lo[static_cast<size_t>(j)]); s <= hi[static_cast<size_t>(j)]; ++s) {
            rows.Set(row, x_col(j, d, s), -1.0);
          }
        }
      }
    }
  }
  // Memory per device and step: M >= usage, usage <= capacity.
  for (int32_t d = 0; d < num_devices; ++d) {
    const double capacity = static_cast<double>(cluster.device(d).memory_capacity) / scale;
    for (int32_t t = 0; t < steps; ++t) {
      const int peak_row = rows.Add(0.0, COIN_DBL_MAX);
      const int cap_row = capacity > 0 ? rows.Add(-COIN_DBL_MAX, capacity) : -1;
      rows.Set(peak_row, m_col, 1.0);
      for (graphs::NodeId v = 0; v < n; ++v) {
        const double persistent = static_cast<double>(graph.node(v).persistent_bytes) / scale;
        if (persistent <= 0) continue;
        for (int32_t s = lo[static_cast<size_t>(v)]; s <= hi[static_cast<size_t>(v)]; ++s) {
          rows.Set(peak_row, x_col(v, d, s), -persistent);
          if (cap_row >= 0) rows.Set(cap_row, x_col(v, d, s), persistent);
        }
      }
      for (const TensorVars& tv : tensors) {
        if (t < lo[static_cast<size_t>(tv.producer)] || t > tv.last) continue;
        rows.Set(peak_row, l_col(tv, d, t), -tv.bytes);
        if (cap_row >= 0) rows.Set(cap_row, l_col(tv, d, t), tv.bytes);
      }
    }
  }

  std::vector<double> col_lower(static_cast<size_t>(cols), 0.0);
  std::vector<double> col_upper(static_cast<size_t>(cols), 1.0);
  col_upper[static_cast<size_t>(m_col)] = COIN_DBL_MAX;
  // Valid lower bounds on the peak that the LP relaxation misses: while an
  // op runs, its weights, inputs and outputs are resident on its device; and
  // all weights live somewhere, so some device holds at least their mean.
  double peak_floor = 0.0;
  double total_persistent = 0.0;
  for (graphs::NodeId v = 0; v < n; ++v) {
    double resident = static_cast<double>(graph.node(v).persistent_bytes);
    for (const graphs::TensorInfo& t : graph.node(v).outputs)
      resident += static_cast<double>(t.resident_bytes());
    std::vector<std::pair<graphs::NodeId, int32_t>> inputs;
    for (graphs::EdgeId e : graph.in_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      if (!edge.is_control()) inputs.emplace_back(edge.src, edge.output_index);
    }
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (const auto& [src, k] : inputs) {
      resident += static_cast<double>(graph.node(src).outputs[static_cast<size_t>(k)].resident_bytes());
    }
    peak_floor = std::max(peak_floor, resident);
    total_persistent += static_cast<double>(graph.node(v).persistent_bytes);
  }
  peak_floor = std::max(peak_floor, total_persistent / num_devices);
  col_lower[static_cast<size_t>(m_col)] = peak_floor / scale;
  bool symmetric = options.symmetry_breaking && num_devices > 1;
  for (int32_t d = 1; d < num_devices && symmetric; ++d) {
    symmetric = cluster.device(d).memory_capacity == cluster.device(0).memory_capacity;
  }
  if (symmetric) {
    for (int32_t d = 1; d < num_devices; ++d) {
      for (int32_t t = lo[0]; t <= hi[0]; ++t) col_upper[static_cast<size_t>(x_col(0, d, t))] = 0.0;
    }
  }
  std::vector<double> objective(static_cast<size_t>(cols), 0.0);
  objective[static_cast<size_t>(m_col)] = 1.0;

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(rows.Matrix(), col_lower.data(), col_upper.data(), objective.data(), rows.lower().data(),
                     rows.upper().data());
  for (int32_t c = 0; c < num_x; ++c) solver.setInteger(c);
  solution.num_variables = cols;
  solution.num_constraints = rows.num_rows();

  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.solver()->messageHandler()->setLogLevel(0);
  CglProbing probing;
  probing.setUsingObjective(true);
  CglGomory gomory;
  CglKnapsackCover knapsack;
  CglClique clique;
  clique.setStarCliqueReport(false);  // CglClique prints to stdout otherwise
  clique.setRowCliqueReport(false);
  CglMixedIntegerRounding2 mir;
  CglFlowCover flow;
  model.addCutGenerator(&probing, -1, "Probing");
  model.addCutGenerator(&gomory, -1, "Gomory");
  model.addCutGenerator(&knapsack, -1, "Knapsack");
  model.addCutGenerator(&clique, -1, "Clique");
  model.addCutGenerator(&mir, -1, "MIR2");
  model.addCutGenerator(&flow, -1, "FlowCover");
  model.setUseElapsedTime(true);  // wall-clock limit, like the experiments' budgets
  if (options.time_limit > 0) model.setMaximumSeconds(options.time_limit);
  const auto start = std::chrono::steady_clock::now();
  model.branchAndBound();
  solution.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  solution.infeasible = model.isProvenInfeasible();
  const double* best = model.bestSolution();
  solution.found = best != nullptr;
  solution.optimal = solution.found && model.isProvenOptimal();
  solution.bound = std::max(0.0, model.getBestPossibleObjValue()) * scale;
  if (!solution.found) return solution;
  solution.objective = best[m_col] * scale;
  if (solution.optimal) {
    solution.bound = solution.objective;
    solution.gap = 0.0;
  } else {
    solution.bound = std::min(solution.bound, solution.objective);
    solution.gap = solution.objective > 0 ? (solution.objective - solution.bound) / solution.objective : 0.0;
  }
  solution.placement.assign(static_cast<size_t>(n), 0);
  solution.step.assign(static_cast<size_t>(n), 0);
  for (graphs::NodeId v = 0; v < n; ++v) {
    double best_value = -1.0;
    for (int32_t d = 0; d < num_devices; ++d) {
      for (int32_t t = lo[static_cast<size_t>(v)]; t <= hi[static_cast<size_t>(v)]; ++t) {
        const double value = best[x_col(v, d, t)];
        if (value > best_value) {
          best_value = value;
          solution.placement[static_cast<size_t>(v)] = d;
          solution.step[static_cast<size_t>(v)] = t;
        }
      }
    }
  }
  return solution;
}

namespace {

class CpAgent : public Agent {
 public:
  explicit CpAgent(YamlMap& options) {
    options_.time_limit = GetDouble(options, "time_limit", 60.0, 0.0, 1e7);
    options_.max_nodes = static_cast<int32_t>(GetInt(options, "max_nodes", 40, 1, 100000));
    options_.steps = static_cast<int32_t>(GetInt(options, "steps", 0, 0, 100000));
    options_.symmetry_breaking = options.Get<bool>("symmetry_breaking", true);
    options.Finish();
  }
  std::string name() const override { return "cp"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    CpOptions options = options_;
    if (problem.budget.wall_seconds > 0)
      options.time_limit = std::min(options.time_limit, problem.budget.wall_seconds);
    SearchTracker tracker(problem, progress);
    const CpSolution s = SolvePeakMemoryModel(problem.graph, problem.cluster, options);
    std::map<std::string, double> extra = {{"optimal", s.optimal ? 1.0 : 0.0},
                                           {"found", s.found ? 1.0 : 0.0},
                                           {"infeasible", s.infeasible ? 1.0 : 0.0},
                                           {"bound", s.bound},
                                           {"gap", s.found ? s.gap : 1.0},
                                           {"model_objective", s.objective},
                                           {"solver_seconds", s.seconds},
                                           {"variables", static_cast<double>(s.num_variables)},
                                           {"constraints", static_cast<double>(s.num_constraints)}};
    sim::Decision decision;
    if (s.found) {
      decision.placement = s.placement;
      decision.priority.resize(s.step.size());
      for (size_t v = 0; v < s.step.size(); ++v)
        decision.priority[v] = static_cast<double>(problem.graph.num_nodes() - s.step[v]);
    } else {
      // No model solution in time (or none fits): report the single-device
      // decision so the cell still has a (probably infeasible) result.
      decision = sim::SingleDeviceDecision(problem.graph, 0);
    }
    tracker.Evaluate(decision);
    return tracker.Finish(std::move(extra));
  }

 private:
  CpOptions options_;
};

}  // namespace

void RegisterCpAgent(const RegisterFn& add) {
  add(
      "cp", [](YamlMap& o) { return std::make_unique<CpAgent>(o); },
      "exact time-indexed MIP (CBC) minimizing peak memory, small graphs (REGAL 'CP-SAT')");
}

}  // namespace gosim::agents
