// Baechi's favorite-child LP (m-SCT), solved with COIN-OR CLP.
#include <coin/ClpSimplex.hpp>
#include <coin/CoinMessageHandler.hpp>
#include <coin/CoinPackedMatrix.hpp>

#include <algorithm>
#include <map>
#include <utility>

#include "agents/baechi.h"

namespace gosim::agents {

namespace {
// LP times in microseconds: CLP's default tolerances (1e-7) are absolute.
constexpr double kTimeScale = 1e6;
}  // namespace

FavoriteChildren SolveFavoriteChildren(const graphs::Graph& graph, const StaticCosts& costs, double threshold,
                                       double time_limit) {
  const int32_t n = graph.num_nodes();
  FavoriteChildren out;
  out.favorite.assign(static_cast<size_t>(n), -1);

  // Distinct (src, dst) pairs; data pairs carry the summed bytes.
  std::map<std::pair<int32_t, int32_t>, std::pair<bool, double>> pairs;  // -> (has data, bytes)
  for (const graphs::Edge& edge : graph.edges()) {
    auto& entry = pairs[{edge.src, edge.dst}];
    if (!edge.is_control()) {
      entry.first = true;
      entry.second += static_cast<double>(edge.bytes);
    }
  }
  std::vector<std::pair<int32_t, int32_t>> data_pairs;
  for (const auto& [key, value] : pairs) {
    if (value.first) data_pairs.push_back(key);
  }
  const int32_t num_x = static_cast<int32_t>(data_pairs.size());
  const int32_t start_col = num_x;         // s_i
  const int32_t makespan_col = num_x + n;  // w
  const int32_t num_cols = makespan_col + 1;

  std::vector<int> rows;
  std::vector<int> cols;
  std::vector<double> values;
  std::vector<double> row_upper;
  auto add = [&](int row, int col, double value) {
    rows.push_back(row);
    cols.push_back(col);
    values.push_back(value);
  };
  std::map<std::pair<int32_t, int32_t>, int32_t> x_index;
  for (int32_t k = 0; k < num_x; ++k) x_index[data_pairs[static_cast<size_t>(k)]] = k;

  // Precedence: s_i - s_j + c_ij x_ij <= -p_i.
  for (const auto& [key, value] : pairs) {
    const int row = static_cast<int>(row_upper.size());
    add(row, start_col + key.first, 1.0);
    add(row, start_col + key.second, -1.0);
    if (value.first) add(row, x_index[key], costs.MeanCommTime(value.second) * kTimeScale);
    row_upper.push_back(-costs.MeanNodeTime(key.first) * kTimeScale);
  }
  // At most one favorite child / parent: -sum x <= 1 - degree.
  std::vector<std::vector<int32_t>> out_x(static_cast<size_t>(n));
  std::vector<std::vector<int32_t>> in_x(static_cast<size_t>(n));
  for (int32_t k = 0; k < num_x; ++k) {
    out_x[static_cast<size_t>(data_pairs[static_cast<size_t>(k)].first)].push_back(k);
    in_x[static_cast<size_t>(data_pairs[static_cast<size_t>(k)].second)].push_back(k);
  }
  for (const auto* lists : {&out_x, &in_x}) {
    for (const std::vector<int32_t>& xs : *lists) {
      if (xs.size() < 2) continue;
      const int row = static_cast<int>(row_upper.size());
      for (int32_t k : xs) add(row, k, -1.0);
      row_upper.push_back(1.0 - static_cast<double>(xs.size()));
    }
  }
  // Makespan: s_i - w <= -p_i for sinks (others follow by precedence).
  for (graphs::NodeId v = 0; v < n; ++v) {
    if (graph.out_degree(v) > 0) continue;
    const int row = static_cast<int>(row_upper.size());
    add(row, start_col + v, 1.0);
    add(row, makespan_col, -1.0);
    row_upper.push_back(-costs.MeanNodeTime(v) * kTimeScale);
  }

  std::vector<double> col_lower(static_cast<size_t>(num_cols), 0.0);
  std::vector<double> col_upper(static_cast<size_t>(num_cols), COIN_DBL_MAX);
  for (int32_t k = 0; k < num_x; ++k) col_upper[static_cast<size_t>(k)] = 1.0;
  std::vector<double> objective(static_cast<size_t>(num_cols), 0.0);
  objective[static_cast<size_t>(makespan_col)] = 1.0;
  std::vector<double> row_lower(row_upper.size(), -COIN_DBL_MAX);

  const CoinPackedMatrix matrix(false, rows.data(), cols.data(), values.data(),
                                static_cast<CoinBigIndex>(values.size()));
  ClpSimplex model;
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.loadProblem(matrix, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(),
                    row_upper.data());
  if (time_limit > 0) model.setMaximumSeconds(time_limit);
  model.dual();
  out.solved = model.isProvenOptimal();
  static const char* const kStatus[] = {"optimal", "infeasible", "unbounded", "stopped", "errors"};
  const int status = model.status();
  out.status = status >= 0 && status <= 4 ? kStatus[status] : "unknown";
  if (!out.solved) return out;
  out.lp_makespan = model.objectiveValue() / kTimeScale;

  // Round and resolve conflicts in edge order, as Baechi's
  // _assign_favorite_child: a later favorite edge replaces an earlier one.
  const double* x = model.primalColumnSolution();
  std::vector<graphs::NodeId> parent(static_cast<size_t>(n), -1);
  for (int32_t k = 0; k < num_x; ++k) {
    if (x[k] >= threshold) continue;
    const auto [i, j] = data_pairs[static_cast<size_t>(k)];
    out.favorite[static_cast<size_t>(i)] = j;
    const graphs::NodeId old_parent = parent[static_cast<size_t>(j)];
    if (old_parent >= 0 && old_parent != i) out.favorite[static_cast<size_t>(old_parent)] = -1;
    parent[static_cast<size_t>(j)] = i;
  }
  // A parent whose favorite was reassigned keeps no stale entry.
  for (graphs::NodeId i = 0; i < n; ++i) {
    const graphs::NodeId c = out.favorite[static_cast<size_t>(i)];
    if (c >= 0 && parent[static_cast<size_t>(c)] != i) out.favorite[static_cast<size_t>(i)] = -1;
  }
  return out;
}

}  // namespace gosim::agents
