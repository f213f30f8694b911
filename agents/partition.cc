#include "agents/partition.h"

#include <metis.h>
#include <scotch/scotch.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <tuple>

#include "core/error.h"

static_assert(sizeof(idx_t) == sizeof(int32_t), "METIS must be built with 32-bit indices");
static_assert(sizeof(SCOTCH_Num) == sizeof(int32_t), "Scotch must be built with 32-bit SCOTCH_Num");

namespace {
// Scotch reports errors through these two functions, which the application
// provides (instead of linking libscotcherr, which prints to stderr). We keep
// the last message of the calling thread and throw it as a gosim::Error.
thread_local std::string scotch_last_error;

void ScotchRecord(const char* prefix, const char* format, va_list args) {
  char buffer[512];
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  scotch_last_error = std::string(prefix) + buffer;
}
}  // namespace

extern "C" void SCOTCH_errorPrint(const char* const format, ...) {
  va_list args;
  va_start(args, format);
  ScotchRecord("", format, args);
  va_end(args);
}

extern "C" void SCOTCH_errorPrintW(const char* const format, ...) {
  // Warnings are not errors; keep them only when no error is pending.
  if (!scotch_last_error.empty()) return;
  va_list args;
  va_start(args, format);
  ScotchRecord("warning: ", format, args);
  va_end(args);
}

namespace gosim::agents {

namespace {

// Largest sum of integer weights we hand to the libraries (they add loads in
// 32-bit integers, sometimes multiplied by small factors).
constexpr double kMaxWeightSum = 1 << 28;

std::vector<int32_t> ScaleWeights(const std::vector<double>& weights) {
  double total = 0.0;
  for (double w : weights) total += std::max(0.0, w);
  const double n = static_cast<double>(weights.size());
  const double scale = total > 0 ? std::max(0.0, kMaxWeightSum - n) / total : 0.0;
  std::vector<int32_t> out(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    out[i] = 1 + static_cast<int32_t>(std::floor(std::max(0.0, weights[i]) * scale));
  }
  return out;
}

[[noreturn]] void ScotchFail(const std::string& what) {
  std::string message = "Scotch " + what + " failed";
  if (!scotch_last_error.empty()) message += ": " + scotch_last_error;
  scotch_last_error.clear();
  throw Error(message, {}, "this is a bug in how gosim calls Scotch; please report the graph");
}

// Owns the Scotch objects of one call.
class ScotchSession {
 public:
  ScotchSession(const PartitionGraph& graph, uint64_t seed) {
    scotch_last_error.clear();
    if (SCOTCH_contextInit(&context_) != 0) ScotchFail("contextInit");
    context_ok_ = true;
    SCOTCH_contextRandomSeed(&context_, static_cast<SCOTCH_Num>(seed & 0x7fffffff));
    SCOTCH_contextOptionSetNum(&context_, SCOTCH_OPTIONNUMDETERMINISTIC, 1);
    if (SCOTCH_graphInit(&graph_) != 0) ScotchFail("graphInit");
    graph_ok_ = true;
    vwgt_.resize(static_cast<size_t>(graph.num_vertices));
    for (int32_t v = 0; v < graph.num_vertices; ++v) {
      vwgt_[static_cast<size_t>(v)] = graph.vwgt[static_cast<size_t>(v) * graph.num_constraints];
    }
    if (SCOTCH_graphBuild(&graph_, 0, graph.num_vertices, graph.xadj.data(), nullptr, vwgt_.data(), nullptr,
                          static_cast<SCOTCH_Num>(graph.adjncy.size()), graph.adjncy.data(),
                          graph.adjwgt.data()) != 0) {
      ScotchFail("graphBuild");
    }
    if (SCOTCH_graphInit(&bound_) != 0) ScotchFail("graphInit");
    bound_ok_ = true;
    if (SCOTCH_contextBindGraph(&context_, &graph_, &bound_) != 0) ScotchFail("contextBindGraph");
    if (SCOTCH_stratInit(&strat_) != 0) ScotchFail("stratInit");
    strat_ok_ = true;
  }
  ~ScotchSession() {
    if (strat_ok_) SCOTCH_stratExit(&strat_);
    if (bound_ok_) SCOTCH_graphExit(&bound_);
    if (graph_ok_) SCOTCH_graphExit(&graph_);
    if (context_ok_) SCOTCH_contextExit(&context_);
  }
  ScotchSession(const ScotchSession&) = delete;
  ScotchSession& operator=(const ScotchSession&) = delete;

  SCOTCH_Graph* graph() { return &bound_; }
  SCOTCH_Strat* strat() { return &strat_; }

 private:
  SCOTCH_Context context_;
  SCOTCH_Graph graph_;
  SCOTCH_Graph bound_;
  SCOTCH_Strat strat_;
  std::vector<SCOTCH_Num> vwgt_;
  bool context_ok_ = false;
  bool graph_ok_ = false;
  bool bound_ok_ = false;
  bool strat_ok_ = false;
};

// Partitions that need no library: one part, or no more vertices than parts.
bool TrivialPartition(const PartitionGraph& graph, int32_t parts, std::vector<int32_t>* out) {
  if (parts <= 1) {
    out->assign(static_cast<size_t>(graph.num_vertices), 0);
    return true;
  }
  if (graph.num_vertices <= parts) {
    out->resize(static_cast<size_t>(graph.num_vertices));
    for (int32_t v = 0; v < graph.num_vertices; ++v) (*out)[static_cast<size_t>(v)] = v;
    return true;
  }
  return false;
}

}  // namespace

PartitionGraph BuildPartitionGraph(const graphs::Graph& graph,
                                   const std::vector<std::vector<double>>& vertex_weights,
                                   const ColocationUnits* units) {
  PartitionGraph out;
  const int32_t n = units != nullptr ? units->num_units() : graph.num_nodes();
  const auto vertex = [&](graphs::NodeId v) { return units != nullptr ? units->unit(v) : v; };
  out.num_vertices = n;
  out.num_constraints = static_cast<int32_t>(std::max<size_t>(1, vertex_weights.size()));
  // (u, v, bytes) in both directions, merged per pair of vertices; edges
  // inside a unit cut nothing.
  std::vector<std::tuple<int32_t, int32_t, double>> arcs;
  arcs.reserve(static_cast<size_t>(graph.num_edges()) * 2);
  for (const graphs::Edge& edge : graph.edges()) {
    const int32_t a = vertex(edge.src), b = vertex(edge.dst);
    if (a == b) continue;
    const double bytes = static_cast<double>(edge.bytes);
    arcs.emplace_back(a, b, bytes);
    arcs.emplace_back(b, a, bytes);
  }
  std::sort(arcs.begin(), arcs.end());
  std::vector<double> arc_bytes;
  out.xadj.assign(static_cast<size_t>(n) + 1, 0);
  for (size_t i = 0; i < arcs.size();) {
    const auto [u, v, b] = arcs[i];
    double sum = 0.0;
    size_t j = i;
    for (; j < arcs.size() && std::get<0>(arcs[j]) == u && std::get<1>(arcs[j]) == v; ++j)
      sum += std::get<2>(arcs[j]);
    out.adjncy.push_back(v);
    arc_bytes.push_back(sum);
    ++out.xadj[static_cast<size_t>(u) + 1];
    i = j;
  }
  for (int32_t v = 0; v < n; ++v) out.xadj[static_cast<size_t>(v) + 1] += out.xadj[static_cast<size_t>(v)];
  out.adjwgt = ScaleWeights(arc_bytes);

  out.vwgt.assign(static_cast<size_t>(n) * out.num_constraints, 1);
  for (int32_t c = 0; c < static_cast<int32_t>(vertex_weights.size()); ++c) {
    const std::vector<double>& node_weight = vertex_weights[static_cast<size_t>(c)];
    std::vector<double> summed(static_cast<size_t>(n), 0.0);
    for (graphs::NodeId v = 0; v < graph.num_nodes(); ++v)
      summed[static_cast<size_t>(vertex(v))] += node_weight[static_cast<size_t>(v)];
    const std::vector<int32_t> scaled = ScaleWeights(summed);
    for (int32_t v = 0; v < n; ++v) {
      out.vwgt[static_cast<size_t>(v) * out.num_constraints + c] = scaled[static_cast<size_t>(v)];
    }
  }
  return out;
}

std::vector<int32_t> ScotchMap(const PartitionGraph& graph, const std::vector<double>& device_speed,
                               double balance, uint64_t seed) {
  const int32_t parts = static_cast<int32_t>(device_speed.size());
  std::vector<int32_t> out;
  if (parts <= 1 || graph.num_vertices == 0) {
    out.assign(static_cast<size_t>(graph.num_vertices), 0);
    return out;
  }
  ScotchSession session(graph, seed);
  SCOTCH_Arch arch;
  if (SCOTCH_archInit(&arch) != 0) ScotchFail("archInit");
  const double fastest = *std::max_element(device_speed.begin(), device_speed.end());
  std::vector<SCOTCH_Num> weights(static_cast<size_t>(parts));
  for (int32_t d = 0; d < parts; ++d) {
    const double relative = fastest > 0 ? device_speed[static_cast<size_t>(d)] / fastest : 1.0;
    weights[static_cast<size_t>(d)] =
        std::max<SCOTCH_Num>(1, static_cast<SCOTCH_Num>(std::lround(1000 * relative)));
  }
  int status = SCOTCH_archCmpltw(&arch, parts, weights.data());
  if (status == 0) status = SCOTCH_stratGraphMapBuild(session.strat(), SCOTCH_STRATQUALITY, parts, balance);
  out.assign(static_cast<size_t>(graph.num_vertices), 0);
  if (status == 0) status = SCOTCH_graphMap(session.graph(), &arch, session.strat(), out.data());
  SCOTCH_archExit(&arch);
  if (status != 0) ScotchFail("graphMap");
  return out;
}

std::vector<int32_t> ScotchPartition(const PartitionGraph& graph, int32_t parts, double balance,
                                     uint64_t seed) {
  std::vector<int32_t> out;
  if (TrivialPartition(graph, parts, &out)) return out;
  ScotchSession session(graph, seed);
  if (SCOTCH_stratGraphMapBuild(session.strat(), SCOTCH_STRATQUALITY, parts, balance) != 0) {
    ScotchFail("stratGraphMapBuild");
  }
  out.assign(static_cast<size_t>(graph.num_vertices), 0);
  if (SCOTCH_graphPart(session.graph(), parts, session.strat(), out.data()) != 0) ScotchFail("graphPart");
  return out;
}

std::vector<int32_t> MetisKway(const PartitionGraph& graph, int32_t parts,
                               const std::vector<float>& target_fractions, int32_t ufactor, uint64_t seed) {
  std::vector<int32_t> out;
  if (TrivialPartition(graph, parts, &out)) return out;
  idx_t nvtxs = graph.num_vertices;
  idx_t ncon = graph.num_constraints;
  idx_t nparts = parts;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_UFACTOR] = ufactor;
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> xadj(graph.xadj.begin(), graph.xadj.end());
  std::vector<idx_t> adjncy(graph.adjncy.begin(), graph.adjncy.end());
  std::vector<idx_t> adjwgt(graph.adjwgt.begin(), graph.adjwgt.end());
  std::vector<idx_t> vwgt(graph.vwgt.begin(), graph.vwgt.end());
  std::vector<real_t> tpwgts(target_fractions.begin(), target_fractions.end());
  if (tpwgts.size() != static_cast<size_t>(parts) * ncon) {
    throw Error("MetisKway: " + std::to_string(tpwgts.size()) + " target fractions for " +
                std::to_string(parts) + " parts and " + std::to_string(ncon) + " constraints");
  }
  idx_t objval = 0;
  std::vector<idx_t> part(static_cast<size_t>(nvtxs), 0);
  // METIS rejects an adjacency array of size 0 passed as a null pointer on
  // some builds; keep a valid pointer.
  if (adjncy.empty()) {
    adjncy.push_back(0);
    adjwgt.push_back(1);
  }
  const int status =
      METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, adjwgt.data(),
                          &nparts, tpwgts.data(), nullptr, options, &objval, part.data());
  if (status != METIS_OK) {
    throw Error("METIS_PartGraphKway failed with status " + std::to_string(status), {},
                status == METIS_ERROR_MEMORY ? "METIS ran out of memory" : "check the graph's weights");
  }
  out.assign(part.begin(), part.end());
  return out;
}

}  // namespace gosim::agents
