// pipeline_dp: the optimal contiguous split for max-load (msr-fiddle's
// throughput objective; Tarnawski et al., "Efficient Algorithms for Device
// Placement of DNN Graph Operators", NeurIPS 2020, Section 4: a dynamic
// program over the ideals of the forward graph, each device taking the
// difference of two nested ideals with the backward nodes of that set).
// Written from the paper's description; docs/AGENTS.md, "pipeline_dp".
//
// An ideal is a set of forward nodes closed under predecessors; a
// contiguous set is I \ J for ideals J within I. With the ideals ordered by
// size,
//   best[I][a][c] = min over J within I of
//                     max(best[J][a-1][c], accelerator load of I \ J),
//                     max(best[J][a][c-1], CPU load of I \ J)
// over a accelerators and c CPU cores; best[{}][.][.] = 0. A set's
// accelerator load is its nodes' time plus the time to move each output
// that crosses its border (up from the producer's side, down to the
// consumer's), sim/msr.h's MaxLoadModel; it is infinite when the set's
// persistent bytes exceed an accelerator's memory or it splits a colocation
// group. The sub-ideals of each ideal are enumerated depth first with the
// set's load kept incrementally, so each pair costs the degree of one node.
//
// Requirements (one-line ConfigErrors otherwise): the accelerators are
// alike, as are the CPUs; every accelerator has links to and from the host;
// each backward node shares a colocation group with a forward node (msr's
// colorClass); at most `max_ideals` ideals (layer graphs have a few
// thousand; an operator graph of 10k nodes has far too many).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "agents/agent.h"
#include "agents/builtin.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "agents/static_costs.h"
#include "core/error.h"

namespace gosim::agents {
namespace {

using graphs::NodeId;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Bits {
  std::vector<uint64_t> words;
  bool operator==(const Bits&) const = default;
  bool Has(int32_t i) const { return (words[static_cast<size_t>(i) >> 6] >> (i & 63)) & 1U; }
  void Set(int32_t i) { words[static_cast<size_t>(i) >> 6] |= uint64_t{1} << (i & 63); }
  void Clear(int32_t i) { words[static_cast<size_t>(i) >> 6] &= ~(uint64_t{1} << (i & 63)); }
};

class PipelineDp {
 public:
  PipelineDp(const Problem& problem, int64_t max_ideals) : p_(problem), costs_(problem.evaluator) {
    const graphs::Graph& g = problem.graph;
    const sim::Cluster& c = problem.cluster;
    for (int32_t d = 0; d < c.num_devices(); ++d)
      (c.device(d).role == sim::DeviceRole::kCpu ? cpus_ : accs_).push_back(d);
    if (accs_.empty()) throw ConfigError("pipeline_dp: cluster '" + c.name() + "' has no accelerator");
    CheckAlike(accs_, "accelerators");
    CheckAlike(cpus_, "CPU devices");
    const int32_t a0 = accs_[0];
    const int32_t up = c.FindLink(a0, sim::Cluster::kHost), down = c.FindLink(sim::Cluster::kHost, a0);
    if (up < 0 || down < 0) {
      throw ConfigError("pipeline_dp: accelerator " + c.device(a0).name + " has no link to and from the host",
                        {}, "the max-load model moves data through the host (msr-fiddle's CPU DRAM)");
    }
    const sim::LinkCost up_cost = problem.evaluator.cost_model().LinkCostOf(c, c.link(up));
    const sim::LinkCost down_cost = problem.evaluator.cost_model().LinkCostOf(c, c.link(down));

    const int32_t n = g.num_nodes();
    // Per node: times, transfer costs, distinct producers and consumers.
    acc_time_.resize(static_cast<size_t>(n));
    cpu_time_.resize(static_cast<size_t>(n));
    up_.resize(static_cast<size_t>(n));
    down_.resize(static_cast<size_t>(n));
    size_.resize(static_cast<size_t>(n));
    producers_.resize(static_cast<size_t>(n));
    consumers_.resize(static_cast<size_t>(n));
    for (NodeId v = 0; v < n; ++v) {
      acc_time_[static_cast<size_t>(v)] = costs_.NodeTime(v, a0);
      cpu_time_[static_cast<size_t>(v)] = cpus_.empty() ? kInf : costs_.NodeTime(v, cpus_[0]);
      const double bytes = costs_.OutputBytes(v);
      up_[static_cast<size_t>(v)] = up_cost.latency + bytes / up_cost.bandwidth;
      down_[static_cast<size_t>(v)] = down_cost.latency + bytes / down_cost.bandwidth;
      size_[static_cast<size_t>(v)] = static_cast<double>(g.node(v).persistent_bytes);
      for (graphs::EdgeId e : g.in_edges(v)) producers_[static_cast<size_t>(v)].push_back(g.edge(e).src);
      for (graphs::EdgeId e : g.out_edges(v)) consumers_[static_cast<size_t>(v)].push_back(g.edge(e).dst);
      for (auto* list : {&producers_[static_cast<size_t>(v)], &consumers_[static_cast<size_t>(v)]}) {
        std::sort(list->begin(), list->end());
        list->erase(std::unique(list->begin(), list->end()), list->end());
      }
    }
    auto forward = [&g](NodeId v) { return g.node(v).phase == graphs::Phase::kForward; };
    for (NodeId v = 0; v < n; ++v) {
      for (NodeId u : producers_[static_cast<size_t>(v)]) {
        if (forward(v) && !forward(u)) {
          throw ConfigError("pipeline_dp: backward node '" + g.node(u).name + "' feeds forward node '" +
                                g.node(v).name + "'",
                            {}, "the DP needs the forward part to come first");
        }
      }
    }
    // Backward (and update) nodes ride with a forward node of their group.
    std::unordered_map<int32_t, std::vector<NodeId>> group_forward, group_other;
    for (NodeId v = 0; v < n; ++v) {
      const int32_t group = g.node(v).colocation;
      if (group >= 0) (forward(v) ? group_forward : group_other)[group].push_back(v);
    }
    for (NodeId v = 0; v < n; ++v) {
      const int32_t group = g.node(v).colocation;
      if (!forward(v) && (group < 0 || !group_forward.count(group))) {
        throw ConfigError("pipeline_dp: " + std::string(graphs::PhaseName(g.node(v).phase)) + " node '" +
                              g.node(v).name + "' shares no colocation group with a forward node",
                          {},
                          "the DP places each backward node with its forward node (msr-fiddle's colorClass)");
      }
    }
    // Zero-time leaves go with their one neighbour (msr-fiddle's own
    // preprocessing): a forward node whose group has no other forward node
    // and takes no time anywhere, with a single forward neighbour, gains
    // nothing elsewhere but transfers. This is what keeps GNMT's ideals
    // countable (about 18 thousand instead of millions).
    std::vector<NodeId> attach(static_cast<size_t>(n), -1);
    auto root = [&attach](NodeId v) {
      while (attach[static_cast<size_t>(v)] >= 0) v = attach[static_cast<size_t>(v)];
      return v;
    };
    auto idle = [&](NodeId v) {
      return acc_time_[static_cast<size_t>(v)] == 0.0 && cpu_time_[static_cast<size_t>(v)] == 0.0;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (NodeId v = 0; v < n; ++v) {
        if (!forward(v) || attach[static_cast<size_t>(v)] >= 0 || !idle(v)) continue;
        const int32_t group = g.node(v).colocation;
        if (group >= 0) {
          if (group_forward[group].size() != 1) continue;
          bool all_idle = true;
          for (NodeId m : group_other[group]) all_idle = all_idle && idle(m);
          if (!all_idle) continue;
        }
        NodeId only = -1;
        bool single = true;
        for (const auto* list : {&producers_[static_cast<size_t>(v)], &consumers_[static_cast<size_t>(v)]}) {
          for (NodeId u : *list) {
            const NodeId r = root(u);
            if (r == v) continue;
            if (only >= 0 && only != r) single = false;
            only = r;
          }
        }
        if (!single || only < 0 || !forward(only)) continue;
        attach[static_cast<size_t>(v)] = only;
        changed = true;
      }
    }
    forward_index_.assign(static_cast<size_t>(n), -1);
    for (NodeId v = 0; v < n; ++v) {
      if (forward(v) && attach[static_cast<size_t>(v)] < 0) {
        forward_index_[static_cast<size_t>(v)] = static_cast<int32_t>(forward_.size());
        forward_.push_back(v);
      }
    }
    mates_.resize(forward_.size());
    for (NodeId v = 0; v < n; ++v) {
      if (forward_index_[static_cast<size_t>(v)] >= 0) continue;
      const NodeId owner = forward(v) ? root(v) : root(group_forward[g.node(v).colocation][0]);
      mates_[static_cast<size_t>(forward_index_[static_cast<size_t>(owner)])].push_back(v);
    }
    attached_ = 0;
    root_of_.resize(static_cast<size_t>(n));
    for (NodeId v = 0; v < n; ++v) {
      attached_ += attach[static_cast<size_t>(v)] >= 0 ? 1 : 0;
      root_of_[static_cast<size_t>(v)] = forward(v) ? root(v) : v;
    }
    group_size_.assign(g.colocation_groups().size(), 0);
    for (NodeId v = 0; v < n; ++v)
      if (g.node(v).colocation >= 0) ++group_size_[static_cast<size_t>(g.node(v).colocation)];
    capacity_ = static_cast<double>(c.device(a0).memory_capacity);
    EnumerateIdeals(max_ideals);
  }

  int64_t num_ideals() const { return static_cast<int64_t>(ideals_.size()); }
  int64_t num_attached() const { return attached_; }

  // The placement of the best split; its max-load as the DP computed it.
  std::vector<int32_t> Solve(double* max_load) {
    const int32_t A = static_cast<int32_t>(accs_.size()), C = static_cast<int32_t>(cpus_.size());
    const size_t stride = static_cast<size_t>((A + 1) * (C + 1));
    best_.assign(ideals_.size() * stride, kInf);
    choice_.assign(ideals_.size() * stride, Choice{});
    for (size_t k = 0; k < stride; ++k) best_[k] = 0.0;  // the empty ideal (id 0)
    in_set_.assign(static_cast<size_t>(p_.graph.num_nodes()), 0);
    count_.assign(static_cast<size_t>(p_.graph.num_nodes()), 0);
    group_in_.assign(group_size_.size(), 0);
    bound_ = ChainBound(A, C);
    acc_ = cpu_ = bytes_ = comm_ = 0.0;  // ChainBound leaves the set empty; drop rounding residue
    succ_in_.assign(forward_.size(), 0);
    levels_.assign(forward_.size() + 1, {});
    for (size_t id = 1; id < ideals_.size(); ++id) SolveIdeal(static_cast<int32_t>(id), A, C, stride);
    const size_t full = ideals_.size() - 1;  // the last ideal found is the whole forward set
    *max_load = best_[full * stride + stride - 1];
    std::vector<int32_t> placement(static_cast<size_t>(p_.graph.num_nodes()), accs_[0]);
    if (!(*max_load < kInf)) return placement;
    int32_t id = static_cast<int32_t>(full), a = A, c = C;
    while (id != 0) {
      const Choice& ch = choice_[static_cast<size_t>(id) * stride + static_cast<size_t>(a * (C + 1) + c)];
      int32_t device;
      if (ch.on_cpu) {
        device = cpus_[static_cast<size_t>(--c)];
      } else {
        device = accs_[static_cast<size_t>(--a)];
      }
      for (size_t i = 0; i < forward_.size(); ++i) {
        if (ideals_[static_cast<size_t>(id)].Has(static_cast<int32_t>(i)) &&
            !ideals_[static_cast<size_t>(ch.sub)].Has(static_cast<int32_t>(i))) {
          placement[static_cast<size_t>(forward_[i])] = device;
          for (NodeId m : mates_[i]) placement[static_cast<size_t>(m)] = device;
        }
      }
      id = ch.sub;
    }
    return placement;
  }

 private:
  struct Choice {
    int32_t sub = 0;
    bool on_cpu = false;
  };

  void CheckAlike(const std::vector<int32_t>& devices, const char* what) const {
    for (int32_t d : devices) {
      const sim::DeviceSpec& x = p_.cluster.device(d);
      const sim::DeviceSpec& y = p_.cluster.device(devices[0]);
      if (x.kind != y.kind || x.memory_capacity != y.memory_capacity) {
        throw ConfigError(std::string("pipeline_dp: the ") + what + " of cluster '" + p_.cluster.name() +
                              "' differ (" + x.name + " and " + y.name + ")",
                          {}, "the DP assumes identical devices of each role");
      }
    }
  }

  void EnumerateIdeals(int64_t max_ideals) {
    const size_t f = forward_.size();
    const size_t words = (f + 63) / 64;
    // Zobrist keys: an ideal's key is the XOR of its nodes' keys, so that
    // removing a node updates it in O(1). Every ideal's key is checked
    // distinct below, which makes the lookups of the DP exact.
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    zobrist_.resize(f);
    for (uint64_t& z : zobrist_) {
      state += 0x9E3779B97F4A7C15ULL;
      uint64_t x = state;
      x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
      x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
      z = x ^ (x >> 31);
    }
    fpreds_.resize(f);
    fsuccs_.resize(f);
    for (size_t i = 0; i < f; ++i) {
      for (NodeId u : producers_[static_cast<size_t>(forward_[i])]) {
        const int32_t j = forward_index_[static_cast<size_t>(root_of_[static_cast<size_t>(u)])];
        if (j == static_cast<int32_t>(i) || j < 0) continue;  // an attached leaf of this node
        if (std::find(fpreds_[i].begin(), fpreds_[i].end(), j) != fpreds_[i].end()) continue;
        fpreds_[i].push_back(j);
        fsuccs_[static_cast<size_t>(j)].push_back(static_cast<int32_t>(i));
      }
    }
    ideals_.push_back(Bits{std::vector<uint64_t>(words, 0)});
    keys_.push_back(0);
    index_.emplace(0, 0);
    // Breadth first from the empty ideal, one node added per level: the
    // ideals come in order of size, the whole forward set last.
    for (size_t k = 0; k < ideals_.size(); ++k) {
      for (size_t i = 0; i < f; ++i) {
        if (ideals_[k].Has(static_cast<int32_t>(i))) continue;
        bool ready = true;
        for (int32_t j : fpreds_[i]) ready = ready && ideals_[k].Has(j);
        if (!ready) continue;
        const uint64_t key = keys_[k] ^ zobrist_[i];
        const auto it = index_.find(key);
        if (it != index_.end()) {
          Bits next = ideals_[k];
          next.Set(static_cast<int32_t>(i));
          if (!(ideals_[static_cast<size_t>(it->second)] == next)) {
            throw ConfigError("pipeline_dp: two ideals share a 64-bit key; please report this graph");
          }
          continue;
        }
        if (static_cast<int64_t>(ideals_.size()) >= max_ideals) {
          throw ConfigError("pipeline_dp: the forward graph has more than " + std::to_string(max_ideals) +
                                " ideals (contiguous prefixes); the DP is for layer graphs",
                            {}, "raise max_ideals, or use a search agent (brkga, local_search)");
        }
        Bits next = ideals_[k];
        next.Set(static_cast<int32_t>(i));
        index_.emplace(key, static_cast<int32_t>(ideals_.size()));
        ideals_.push_back(std::move(next));
        keys_.push_back(key);
      }
    }
  }

  // The set's terms: each node's contribution to the border's transfers.
  double Term(NodeId u) const {
    const auto k = static_cast<size_t>(u);
    if (in_set_[k]) return count_[k] < static_cast<int32_t>(consumers_[k].size()) ? up_[k] : 0.0;
    return count_[k] > 0 ? down_[k] : 0.0;
  }
  void Toggle(NodeId x, bool add) {
    const auto k = static_cast<size_t>(x);
    comm_ -= Term(x);
    for (NodeId u : producers_[k]) {
      comm_ -= Term(u);
      count_[static_cast<size_t>(u)] += add ? 1 : -1;
      comm_ += Term(u);
    }
    in_set_[k] = add;
    comm_ += Term(x);
    const double sign = add ? 1.0 : -1.0;
    acc_ += sign * acc_time_[k];
    cpu_ += sign * cpu_time_[k];
    bytes_ += sign * size_[k];
    const int32_t group = p_.graph.node(x).colocation;
    if (group >= 0) {
      int32_t& in = group_in_[static_cast<size_t>(group)];
      const bool was_split = in > 0 && in < group_size_[static_cast<size_t>(group)];
      in += add ? 1 : -1;
      const bool is_split = in > 0 && in < group_size_[static_cast<size_t>(group)];
      split_ += static_cast<int32_t>(is_split) - static_cast<int32_t>(was_split);
    }
  }
  void Move(int32_t forward_i, bool add) {
    Toggle(forward_[static_cast<size_t>(forward_i)], add);
    for (NodeId m : mates_[static_cast<size_t>(forward_i)]) Toggle(m, add);
  }
  double AcceleratorLoad() const { return split_ == 0 && bytes_ <= capacity_ ? acc_ + comm_ : kInf; }
  double CpuLoad() const { return split_ == 0 ? cpu_ : kInf; }
  // Whether no superset of the current set can have a load within the
  // bound: node times and bytes only grow with the set.
  bool Hopeless(int32_t C) const {
    return (acc_ > bound_ || bytes_ > capacity_) && (C == 0 || cpu_ > bound_);
  }

  // An upper bound of the optimum: the same DP over the prefixes of one
  // topological order (forward index order), whose splits are contiguous
  // too. Values above it never make the optimum, so the enumeration below
  // skips sets whose time already exceeds it.
  double ChainBound(int32_t A, int32_t C) {
    const size_t f = forward_.size();
    const size_t stride = static_cast<size_t>((A + 1) * (C + 1));
    std::vector<double> chain((f + 1) * stride, kInf);
    for (size_t k = 0; k < stride; ++k) chain[k] = 0.0;
    for (size_t l = 0; l < f; ++l) {
      for (size_t r = l; r < f; ++r) {  // the set [l, r]
        Move(static_cast<int32_t>(r), true);
        const double acc = AcceleratorLoad(), cpu = CpuLoad();
        for (int32_t a = 0; a <= A; ++a) {
          for (int32_t c = 0; c <= C; ++c) {
            double& out = chain[(r + 1) * stride + static_cast<size_t>(a * (C + 1) + c)];
            if (a > 0)
              out = std::min(out,
                             std::max(chain[l * stride + static_cast<size_t>((a - 1) * (C + 1) + c)], acc));
            if (c > 0)
              out =
                  std::min(out, std::max(chain[l * stride + static_cast<size_t>(a * (C + 1) + c - 1)], cpu));
          }
        }
      }
      for (size_t r = f; r-- > l;) Move(static_cast<int32_t>(r), false);
    }
    return chain[f * stride + stride - 1];
  }

  void SolveIdeal(int32_t id, int32_t A, int32_t C, size_t stride) {
    // The sub-ideals J of I, each once: S = I \ J is removed in decreasing
    // forward index (a topological order), so each step removes a node
    // with no successor left in J (its successors in I are in S, and come
    // later in the order), and the sequence is unique to S.
    const Bits& ideal = ideals_[static_cast<size_t>(id)];
    std::vector<int32_t>& top = levels_[0];
    top.clear();
    for (size_t i = 0; i < forward_.size(); ++i) {
      if (!ideal.Has(static_cast<int32_t>(i))) continue;
      int32_t inside = 0;
      for (int32_t s : fsuccs_[i]) inside += ideal.Has(s) ? 1 : 0;
      succ_in_[i] = inside;
      if (inside == 0) top.push_back(static_cast<int32_t>(i));
    }
    key_ = keys_[static_cast<size_t>(id)];
    Descend(0, static_cast<int32_t>(forward_.size()), A, C, stride, &best_[static_cast<size_t>(id) * stride],
            &choice_[static_cast<size_t>(id) * stride]);
  }

  void Descend(size_t depth, int32_t last, int32_t A, int32_t C, size_t stride, double* out, Choice* why) {
    // levels_[depth]: the nodes of J with no successor in J.
    for (size_t k = 0; k < levels_[depth].size(); ++k) {
      const int32_t i = levels_[depth][k];
      if (i >= last) continue;
      Move(i, true);
      key_ ^= zobrist_[static_cast<size_t>(i)];
      if (!Hopeless(C)) {
        const int32_t j = index_.find(key_)->second;
        const double acc_load = AcceleratorLoad(), cpu_load = CpuLoad();
        const double* below = &best_[static_cast<size_t>(j) * stride];
        for (int32_t a = 0; a <= A; ++a) {
          for (int32_t c = 0; c <= C; ++c) {
            const size_t slot = static_cast<size_t>(a * (C + 1) + c);
            if (a > 0) {
              const double v = std::max(below[static_cast<size_t>((a - 1) * (C + 1) + c)], acc_load);
              if (v < out[slot]) {
                out[slot] = v;
                why[slot] = Choice{j, false};
              }
            }
            if (c > 0) {
              const double v = std::max(below[static_cast<size_t>(a * (C + 1) + c - 1)], cpu_load);
              if (v < out[slot]) {
                out[slot] = v;
                why[slot] = Choice{j, true};
              }
            }
          }
        }
        // The next level: the same nodes without i, and i's predecessors
        // that have no successor left in J.
        std::vector<int32_t>& next = levels_[depth + 1];
        next.clear();
        for (int32_t x : levels_[depth])
          if (x != i) next.push_back(x);
        for (int32_t pred : fpreds_[static_cast<size_t>(i)])
          if (--succ_in_[static_cast<size_t>(pred)] == 0) next.push_back(pred);
        Descend(depth + 1, i, A, C, stride, out, why);
        for (int32_t pred : fpreds_[static_cast<size_t>(i)]) ++succ_in_[static_cast<size_t>(pred)];
      }
      key_ ^= zobrist_[static_cast<size_t>(i)];
      Move(i, false);
    }
  }

  const Problem& p_;
  StaticCosts costs_;
  std::vector<int32_t> accs_, cpus_;
  std::vector<NodeId> forward_;
  std::vector<int32_t> forward_index_;
  std::vector<std::vector<NodeId>> mates_;
  std::vector<double> acc_time_, cpu_time_, up_, down_, size_;
  std::vector<std::vector<NodeId>> producers_, consumers_;
  std::vector<std::vector<int32_t>> fpreds_, fsuccs_;
  std::vector<int32_t> group_size_;
  double capacity_ = 0.0;
  int64_t attached_ = 0;         // zero-time leaves placed with their neighbour
  std::vector<NodeId> root_of_;  // [node] the forward node it is placed with (itself for the others)
  std::vector<Bits> ideals_;
  std::vector<uint64_t> zobrist_;  // [forward index]
  std::vector<uint64_t> keys_;     // [ideal]
  std::unordered_map<uint64_t, int32_t> index_;
  std::vector<double> best_;
  std::vector<Choice> choice_;
  double bound_ = kInf;
  std::vector<int32_t> succ_in_;              // [forward index] successors in J
  std::vector<std::vector<int32_t>> levels_;  // [depth] nodes of J without successors in J
  uint64_t key_ = 0;
  // The set being grown.
  std::vector<char> in_set_;
  std::vector<int32_t> count_;  // consumers in the set, per node
  std::vector<int32_t> group_in_;
  double acc_ = 0.0, cpu_ = 0.0, bytes_ = 0.0, comm_ = 0.0;
  int32_t split_ = 0;
};

class PipelineDpAgent : public Agent {
 public:
  explicit PipelineDpAgent(YamlMap& options) {
    max_ideals_ = GetInt(options, "max_ideals", 2000000, 1, 50000000);
    options.Finish();
  }
  std::string name() const override { return "pipeline_dp"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    SearchTracker tracker(problem, progress);
    PipelineDp dp(problem, max_ideals_);
    double planned = 0.0;
    sim::Decision decision = sim::SingleDeviceDecision(problem.graph, 0);
    decision.placement = dp.Solve(&planned);
    tracker.Evaluate(decision);  // the simulator judges the split (one evaluation)
    AgentResult result = tracker.Finish();
    result.extra["ideals"] = static_cast<double>(dp.num_ideals());
    result.extra["attached_leaves"] = static_cast<double>(dp.num_attached());
    result.extra["dp_max_load_s"] = planned;
    return result;
  }

 private:
  int64_t max_ideals_ = 2000000;
};

}  // namespace

void RegisterPipelineDpAgent(const RegisterFn& add) {
  add(
      "pipeline_dp", [](YamlMap& o) { return std::make_unique<PipelineDpAgent>(o); },
      "optimal contiguous split for max-load, a DP over ideals (Tarnawski et al., NeurIPS 2020)");
}

}  // namespace gosim::agents
