// ilp: msr-fiddle's max-load as an integer program (Tarnawski et al.,
// NeurIPS 2020, Sec. 5 "IP", written from the paper's description) on the
// project's COIN-OR CBC, with a time limit and the gap reported. Unlike
// pipeline_dp the split need not be contiguous.
//
// Variables: x[u][d] = 1 when unit u (a colocation group, or a node alone)
// is on device d; for each tensor t and device d, s[t][d] >= x[prod][d] -
// x[cons][d] (t is sent up from d) and r[t][d] >= x[cons][d] - x[prod][d]
// (d brings t down), over t's consumers; L >= the load of every device,
//   sum_v time(v, d) x[unit(v)][d] + (d not a CPU) sum_t (up(t, d) s[t][d] + down(t, d) r[t][d]);
// every accelerator holds at most its memory of persistent bytes; minimize
// L. At the optimum L is sim/msr.h's max-load of the placement (s and r sit
// at their indicators on the device that sets L). Identical accelerators
// are interchangeable: the slowest unit is fixed to the first one.
// One evaluation: the simulator judges the placement found.
#include <coin/CbcModel.hpp>
#include <coin/CglGomory.hpp>
#include <coin/CglMixedIntegerRounding2.hpp>
#include <coin/CglProbing.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/static_costs.h"
#include "core/error.h"

namespace gosim::agents {
namespace {

using graphs::NodeId;

class IlpAgent : public Agent {
 public:
  explicit IlpAgent(YamlMap& options) {
    time_limit_ = GetDouble(options, "time_limit", 60.0, 0.0, 1e7);
    max_units_ = GetInt(options, "max_units", 5000, 1, 1000000);
    options.Finish();
  }
  std::string name() const override { return "ilp"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    if (problem.objective.kind != ObjectiveKind::kMaxLoad) {
      throw ConfigError(
          "ilp: the integer program is of msr-fiddle's max-load, not of " + problem.objective.ToString(), {},
          "use --objective max_load, or another agent");
    }
    const graphs::Graph& g = problem.graph;
    const sim::Cluster& c = problem.cluster;
    const int32_t n = g.num_nodes(), D = c.num_devices();
    SearchTracker tracker(problem, progress);
    const StaticCosts costs(problem.evaluator);

    // Units: colocation groups, else single nodes.
    std::vector<int32_t> unit(static_cast<size_t>(n));
    std::unordered_map<int32_t, int32_t> group_unit;
    int32_t units = 0;
    for (NodeId v = 0; v < n; ++v) {
      const int32_t group = g.node(v).colocation;
      if (group < 0) {
        unit[static_cast<size_t>(v)] = units++;
        continue;
      }
      const auto [it, fresh] = group_unit.emplace(group, units);
      if (fresh) ++units;
      unit[static_cast<size_t>(v)] = it->second;
    }
    if (units > max_units_) {
      throw ConfigError("ilp: " + std::to_string(units) +
                            " units (colocation groups and free nodes) is over max_units " +
                            std::to_string(max_units_),
                        {}, "raise max_units, or use pipeline_dp or a search agent");
    }
    // Per device: its role and its host links' costs.
    std::vector<bool> cpu(static_cast<size_t>(D));
    std::vector<sim::LinkCost> up(static_cast<size_t>(D)), down(static_cast<size_t>(D));
    for (int32_t d = 0; d < D; ++d) {
      cpu[static_cast<size_t>(d)] = c.device(d).role == sim::DeviceRole::kCpu;
      const int32_t u = c.FindLink(d, sim::Cluster::kHost), w = c.FindLink(sim::Cluster::kHost, d);
      if (!cpu[static_cast<size_t>(d)] && (u < 0 || w < 0)) {
        throw ConfigError("ilp: device " + c.device(d).name + " has no link to and from the host", {},
                          "the max-load model moves data through the host (msr-fiddle's CPU DRAM)");
      }
      if (u >= 0) up[static_cast<size_t>(d)] = problem.evaluator.cost_model().LinkCostOf(c, c.link(u));
      if (w >= 0) down[static_cast<size_t>(d)] = problem.evaluator.cost_model().LinkCostOf(c, c.link(w));
    }
    // Tensors that cross units: (producer unit, consumer units, bytes).
    struct Flow {
      int32_t from;
      std::vector<int32_t> to;
      double bytes;
    };
    std::vector<Flow> flows;
    for (NodeId v = 0; v < n; ++v) {
      for (size_t k = 0; k < g.node(v).outputs.size(); ++k) {
        Flow f{unit[static_cast<size_t>(v)], {}, static_cast<double>(g.node(v).outputs[k].bytes)};
        for (graphs::EdgeId e : g.out_edges(v)) {
          const graphs::Edge& edge = g.edge(e);
          if (edge.output_index != static_cast<int32_t>(k)) continue;
          const int32_t to = unit[static_cast<size_t>(edge.dst)];
          if (to != f.from && std::find(f.to.begin(), f.to.end(), to) == f.to.end()) f.to.push_back(to);
        }
        if (!f.to.empty()) flows.push_back(std::move(f));
      }
    }
    const auto U = static_cast<size_t>(units), F = flows.size(), ND = static_cast<size_t>(D);
    auto x = [&](size_t u, size_t d) { return static_cast<int>(u * ND + d); };
    auto s = [&](size_t t, size_t d) { return static_cast<int>(U * ND + t * ND + d); };
    auto r = [&](size_t t, size_t d) { return static_cast<int>(U * ND + F * ND + t * ND + d); };
    const int L = static_cast<int>(U * ND + 2 * F * ND);
    const int cols = L + 1;
    // Times in milliseconds keep the coefficients near 1.
    constexpr double kScale = 1e3;
    std::vector<int> row_index, col_index;
    std::vector<double> values, row_lower, row_upper;
    auto add_row = [&](double lo, double hi) {
      row_lower.push_back(lo);
      row_upper.push_back(hi);
      return static_cast<int>(row_lower.size()) - 1;
    };
    auto set = [&](int row, int col, double value) {
      if (value == 0.0) return;
      row_index.push_back(row);
      col_index.push_back(col);
      values.push_back(value);
    };
    for (size_t u = 0; u < U; ++u) {
      const int row = add_row(1.0, 1.0);
      for (size_t d = 0; d < ND; ++d) set(row, x(u, d), 1.0);
    }
    for (size_t t = 0; t < F; ++t) {
      for (int32_t to : flows[t].to) {
        for (size_t d = 0; d < ND; ++d) {
          const int send = add_row(0.0, COIN_DBL_MAX);  // s - x[from] + x[to] >= 0
          set(send, s(t, d), 1.0);
          set(send, x(static_cast<size_t>(flows[t].from), d), -1.0);
          set(send, x(static_cast<size_t>(to), d), 1.0);
          const int receive = add_row(0.0, COIN_DBL_MAX);  // r - x[to] + x[from] >= 0
          set(receive, r(t, d), 1.0);
          set(receive, x(static_cast<size_t>(to), d), -1.0);
          set(receive, x(static_cast<size_t>(flows[t].from), d), 1.0);
        }
      }
    }
    std::vector<std::vector<double>> unit_time(U, std::vector<double>(ND, 0.0));
    std::vector<double> unit_bytes(U, 0.0);
    for (NodeId v = 0; v < n; ++v) {
      const auto u = static_cast<size_t>(unit[static_cast<size_t>(v)]);
      for (size_t d = 0; d < ND; ++d) unit_time[u][d] += costs.NodeTime(v, static_cast<int32_t>(d)) * kScale;
      unit_bytes[u] += static_cast<double>(g.node(v).persistent_bytes);
    }
    for (size_t d = 0; d < ND; ++d) {
      const int load = add_row(-COIN_DBL_MAX, 0.0);  // load - L <= 0
      for (size_t u = 0; u < U; ++u) set(load, x(u, d), unit_time[u][d]);
      if (!cpu[d]) {
        for (size_t t = 0; t < F; ++t) {
          set(load, s(t, d), (up[d].latency + flows[t].bytes / up[d].bandwidth) * kScale);
          set(load, r(t, d), (down[d].latency + flows[t].bytes / down[d].bandwidth) * kScale);
        }
        const int memory =
            add_row(-COIN_DBL_MAX, static_cast<double>(c.device(static_cast<int32_t>(d)).memory_capacity));
        for (size_t u = 0; u < U; ++u) set(memory, x(u, d), unit_bytes[u]);
      }
      set(load, L, -1.0);
    }
    std::vector<double> col_lower(static_cast<size_t>(cols), 0.0), col_upper(static_cast<size_t>(cols), 1.0);
    col_upper[static_cast<size_t>(L)] = COIN_DBL_MAX;
    // Interchangeable accelerators: the slowest unit on the first one.
    std::vector<int32_t> accs;
    for (int32_t d = 0; d < D; ++d)
      if (!cpu[static_cast<size_t>(d)]) accs.push_back(d);
    bool alike = accs.size() > 1;
    for (int32_t d : accs) {
      alike = alike && c.device(d).kind == c.device(accs[0]).kind &&
              c.device(d).memory_capacity == c.device(accs[0]).memory_capacity &&
              up[static_cast<size_t>(d)].bandwidth == up[static_cast<size_t>(accs[0])].bandwidth &&
              down[static_cast<size_t>(d)].bandwidth == down[static_cast<size_t>(accs[0])].bandwidth;
    }
    if (alike) {
      size_t slowest = 0;
      for (size_t u = 1; u < U; ++u)
        if (unit_time[u][static_cast<size_t>(accs[0])] > unit_time[slowest][static_cast<size_t>(accs[0])])
          slowest = u;
      for (size_t k = 1; k < accs.size(); ++k)
        col_upper[static_cast<size_t>(x(slowest, static_cast<size_t>(accs[k])))] = 0.0;
    }
    std::vector<double> objective(static_cast<size_t>(cols), 0.0);
    objective[static_cast<size_t>(L)] = 1.0;

    const CoinPackedMatrix matrix(false, row_index.data(), col_index.data(), values.data(),
                                  static_cast<CoinBigIndex>(values.size()));
    OsiClpSolverInterface solver;
    solver.messageHandler()->setLogLevel(0);
    solver.loadProblem(matrix, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(),
                       row_upper.data());
    for (size_t u = 0; u < U; ++u)
      for (size_t d = 0; d < ND; ++d) solver.setInteger(x(u, d));
    CbcModel model(solver);
    model.setLogLevel(0);
    model.messageHandler()->setLogLevel(0);
    model.solver()->messageHandler()->setLogLevel(0);
    CglProbing probing;
    probing.setUsingObjective(true);
    CglGomory gomory;
    CglMixedIntegerRounding2 mir;
    model.addCutGenerator(&probing, -1, "Probing");
    model.addCutGenerator(&gomory, -1, "Gomory");
    model.addCutGenerator(&mir, -1, "MIR2");
    model.setUseElapsedTime(true);
    double limit = time_limit_;
    if (problem.budget.wall_seconds > 0) limit = std::min(limit, problem.budget.wall_seconds);
    if (limit > 0) model.setMaximumSeconds(limit);
    const auto start = std::chrono::steady_clock::now();
    model.branchAndBound();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const double* best = model.bestSolution();
    std::map<std::string, double> extra = {
        {"found", best != nullptr ? 1.0 : 0.0},
        {"optimal", best != nullptr && model.isProvenOptimal() ? 1.0 : 0.0},
        {"solver_seconds", seconds},
        {"variables", static_cast<double>(cols)},
        {"constraints", static_cast<double>(row_lower.size())}};
    sim::Decision decision = sim::SingleDeviceDecision(g, 0);
    if (best != nullptr) {
      const double value = best[L] / kScale;
      const double bound = std::min(value, std::max(0.0, model.getBestPossibleObjValue() / kScale));
      extra["model_max_load_s"] = value;
      extra["bound_s"] = bound;
      extra["gap"] = value > 0 ? (value - bound) / value : 0.0;
      for (NodeId v = 0; v < n; ++v) {
        const auto u = static_cast<size_t>(unit[static_cast<size_t>(v)]);
        size_t pick = 0;
        for (size_t d = 1; d < ND; ++d)
          if (best[x(u, d)] > best[x(u, pick)]) pick = d;
        decision.placement[static_cast<size_t>(v)] = static_cast<int32_t>(pick);
      }
    } else {
      extra["gap"] = 1.0;  // no solution in time: the single-device decision stands in
    }
    tracker.Evaluate(decision);
    return tracker.Finish(std::move(extra));
  }

 private:
  double time_limit_ = 60.0;
  int64_t max_units_ = 5000;
};

}  // namespace

void RegisterIlpAgent(const RegisterFn& add) {
  add(
      "ilp", [](YamlMap& o) { return std::make_unique<IlpAgent>(o); },
      "msr-fiddle's max-load integer program on CBC, time limit and gap reported (Tarnawski et al., NeurIPS "
      "2020)");
}

}  // namespace gosim::agents
