#include "agents/learned/mcm/mcm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "agents/colocation.h"
#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/features.h"
#include "agents/learned/common/torch_lock.h"
#include "agents/learned/common/train.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "core/error.h"
#include "core/io.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "graphs/suite.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"

namespace gosim::agents::learned::mcm {

std::string McmPolicyOptions::Signature() const {
  return "mcm;" + gnn.Signature() + ";bins=" + std::to_string(bins);
}

McmPolicyOptions McmPolicyOptions::FromSignature(const std::string& signature, const std::string& source) {
  const auto fail = [&](const std::string& what) {
    return StateError("not an mcm checkpoint (" + what + "): its model is '" + signature + "'",
                      Location{source}, "give a checkpoint written by `gosim train` with `agent: mcm`");
  };
  if (signature.rfind("mcm;", 0) != 0) throw fail("no 'mcm' tag");
  std::map<std::string, std::string> fields;
  std::string bad;
  if (!ParseSignatureFields(signature.substr(4), &fields, &bad)) throw fail("bad field '" + bad + "'");
  McmPolicyOptions o;
  try {
    o.gnn.hidden = std::stoll(fields.at("hidden"));
    o.gnn.layers = std::stoll(fields.at("layers"));
    o.gnn.op_embedding = std::stoll(fields.at("op_embedding"));
    o.gnn.normalize = fields.at("normalize") == "1";
    o.bins = static_cast<int32_t>(std::stol(fields.at("bins")));
  } catch (const std::exception&) {
    throw fail("missing or malformed fields");
  }
  if (o.Signature() != signature) throw fail("written by another version");
  return o;
}

McmPolicyImpl::McmPolicyImpl(const McmPolicyOptions& options) : options_(options) {
  gnn_ = register_module("gnn", GraphSage(options.gnn));
  head_ = register_module("head", torch::nn::Linear(options.gnn.hidden, options.bins));
}

torch::Tensor McmPolicyImpl::forward(const GraphTensors& graph) {
  return head_(gnn_(graph));
}

std::vector<int32_t> StageOrder(const sim::Cluster& cluster) {
  std::vector<int32_t> accelerators;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.device(d).role == sim::DeviceRole::kAccelerator) accelerators.push_back(d);
  }
  if (accelerators.empty()) {
    throw ConfigError("mcm: cluster '" + cluster.name() + "' has no accelerators to place stages on", {},
                      "use a cluster with accelerators, e.g. mcm_4x4");
  }
  const auto latency = [&](int32_t a, int32_t b) {
    double sum = 0.0;
    for (const int32_t l : cluster.Route(a, b)) sum += cluster.link(l).latency;
    return sum;
  };
  std::vector<int32_t> order = {accelerators.front()};
  std::vector<bool> used(static_cast<size_t>(cluster.num_devices()), false);
  used[static_cast<size_t>(accelerators.front())] = true;
  while (order.size() < accelerators.size()) {
    int32_t next = -1;
    double best = std::numeric_limits<double>::infinity();
    for (const int32_t d : accelerators) {
      if (used[static_cast<size_t>(d)]) continue;
      const double l = latency(order.back(), d);
      if (l < best) {
        best = l;
        next = d;
      }
    }
    used[static_cast<size_t>(next)] = true;
    order.push_back(next);
  }
  return order;
}

McmOptions McmOptions::Parse(YamlMap& options) {
  McmOptions o;
  o.checkpoint = options.Get<std::string>("checkpoint", "");
  o.evaluations = GetInt(options, "evaluations", o.evaluations, 1, int64_t{1} << 40);
  o.samples_per_step = static_cast<int32_t>(GetInt(options, "samples_per_step", o.samples_per_step, 1, 4096));
  o.learning_rate = GetDouble(options, "learning_rate", o.learning_rate, 0.0, 10.0);
  o.entropy_weight = GetDouble(options, "entropy_weight", o.entropy_weight, 0.0, 100.0);
  o.infeasible_penalty = GetDouble(options, "infeasible_penalty", o.infeasible_penalty, 1.0, 1e9);
  o.solver = GetChoice(options, "solver", o.solver, {"cbc", "none"});
  o.policy = GetChoice(options, "policy", o.policy, {"gnn", "uniform"});
  o.reinforce = GetChoice(options, "reinforce", o.reinforce, {"repaired", "proposal"});
  o.acyclic = options.Get<bool>("acyclic", o.acyclic);
  o.memory_fraction = GetDouble(options, "memory_fraction", o.memory_fraction, 0.01, 1.0);
  o.solver_time_limit = GetDouble(options, "solver_time_limit", o.solver_time_limit, 0.0, 1e6);
  o.torch_threads = GetInt(options, "torch_threads", o.torch_threads, 0, 1024);
  o.net.gnn.hidden = GetInt(options, "hidden", o.net.gnn.hidden, 1, 4096);
  o.net.gnn.layers = GetInt(options, "layers", o.net.gnn.layers, 0, 64);
  o.net.bins = static_cast<int32_t>(GetInt(options, "bins", o.net.bins, 1, 4096));
  options.Finish();
  return o;
}

namespace {

// One graph on one cluster as the partitioner sees it.
struct Instance {
  const graphs::Graph* graph = nullptr;
  std::unique_ptr<ColocationUnits> units;
  StageProblem problem;
  std::vector<int32_t> stage_device;  // [stage] device
  GraphTensors tensors;
  torch::Tensor unit_of_node;  // int64 [n]
  torch::Tensor inv_members;   // float [U x 1]
  double reference = 0.0;      // the first feasible objective seen (0: none yet)
};

// Kahn's order of units 0..n-1 under `edges` (units on a cycle last, in
// index order; with `acyclic` PartitionUnits leaves none).
std::vector<int32_t> TopologicalOrder(int32_t n, const std::vector<std::pair<int32_t, int32_t>>& edges) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
  std::vector<int32_t> indegree(static_cast<size_t>(n), 0);
  for (const auto& [a, b] : edges) {
    out[static_cast<size_t>(a)].push_back(b);
    ++indegree[static_cast<size_t>(b)];
  }
  std::vector<int32_t> order, ready;
  for (int32_t u = n - 1; u >= 0; --u)
    if (indegree[static_cast<size_t>(u)] == 0) ready.push_back(u);
  std::vector<bool> placed(static_cast<size_t>(n), false);
  while (!ready.empty()) {
    const int32_t u = ready.back();
    ready.pop_back();
    order.push_back(u);
    placed[static_cast<size_t>(u)] = true;
    for (const int32_t v : out[static_cast<size_t>(u)])
      if (--indegree[static_cast<size_t>(v)] == 0) ready.push_back(v);
  }
  for (int32_t u = 0; u < n; ++u)
    if (!placed[static_cast<size_t>(u)]) order.push_back(u);
  return order;
}

// The partitioner's units (node -> unit, numbered by smallest node):
// colocation groups; a node without inputs (a weight read, an input, a
// constant) joined to its earliest consumer, and a weight also to its
// consumers in its own scope (the weight stays on one chiplet with its
// layer's uses: an RNN layer's time steps); with `acyclic`, every cycle
// among the units (which an acyclic stage order puts on one stage anyway)
// merged into one.
std::vector<int32_t> PartitionUnits(const graphs::Graph& g, const ColocationUnits& colocation, bool acyclic) {
  const int32_t n0 = colocation.num_units();
  std::vector<int32_t> parent(static_cast<size_t>(n0));
  std::iota(parent.begin(), parent.end(), 0);
  const auto find = [&](int32_t u) {
    while (parent[static_cast<size_t>(u)] != u) {
      parent[static_cast<size_t>(u)] = parent[static_cast<size_t>(parent[static_cast<size_t>(u)])];
      u = parent[static_cast<size_t>(u)];
    }
    return u;
  };
  const auto join = [&](int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  };
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    if (!g.in_edges(v).empty() || g.out_edges(v).empty()) continue;
    graphs::NodeId first = g.num_nodes();
    for (const graphs::EdgeId e : g.out_edges(v)) first = std::min(first, g.edge(e).dst);
    join(colocation.unit(v), colocation.unit(first));
    if (g.node(v).persistent_bytes == 0) continue;
    // A weight's other consumers in its own scope (an RNN layer's time
    // steps) join too; a consumer elsewhere (a tied embedding's output
    // layer) reads a copy sent over the package.
    const std::string& name = g.node(v).name;
    const size_t slash = name.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string_view scope(name.data(), slash + 1);
    for (const graphs::EdgeId e : g.out_edges(v)) {
      const graphs::NodeId c = g.edge(e).dst;
      if (std::string_view(g.node(c).name).substr(0, scope.size()) == scope)
        join(colocation.unit(v), colocation.unit(c));
    }
  }
  if (acyclic) {
    // Strongly connected components of the unit graph (Kosaraju, iterative).
    std::vector<std::vector<int32_t>> out(static_cast<size_t>(n0)), in(static_cast<size_t>(n0));
    for (const graphs::Edge& e : g.edges()) {
      const int32_t a = find(colocation.unit(e.src)), b = find(colocation.unit(e.dst));
      if (a == b) continue;
      out[static_cast<size_t>(a)].push_back(b);
      in[static_cast<size_t>(b)].push_back(a);
    }
    std::vector<int32_t> finish;
    std::vector<uint8_t> seen(static_cast<size_t>(n0), 0);
    for (int32_t r = 0; r < n0; ++r) {
      if (find(r) != r || seen[static_cast<size_t>(r)]) continue;
      std::vector<std::pair<int32_t, size_t>> stack = {{r, 0}};
      seen[static_cast<size_t>(r)] = 1;
      while (!stack.empty()) {
        const int32_t u = stack.back().first;
        const size_t i = stack.back().second;
        if (i < out[static_cast<size_t>(u)].size()) {
          ++stack.back().second;
          const int32_t v = out[static_cast<size_t>(u)][i];
          if (!seen[static_cast<size_t>(v)]) {
            seen[static_cast<size_t>(v)] = 1;
            stack.emplace_back(v, 0);
          }
        } else {
          finish.push_back(u);
          stack.pop_back();
        }
      }
    }
    std::vector<uint8_t> assigned(static_cast<size_t>(n0), 0);
    for (auto it = finish.rbegin(); it != finish.rend(); ++it) {
      if (assigned[static_cast<size_t>(*it)]) continue;
      std::vector<int32_t> stack = {*it}, members;
      assigned[static_cast<size_t>(*it)] = 1;
      while (!stack.empty()) {
        const int32_t u = stack.back();
        stack.pop_back();
        members.push_back(u);
        for (const int32_t v : in[static_cast<size_t>(u)]) {
          if (!assigned[static_cast<size_t>(v)]) {
            assigned[static_cast<size_t>(v)] = 1;
            stack.push_back(v);
          }
        }
      }
      for (const int32_t u : members) join(members.front(), u);
    }
  }
  std::vector<int32_t> number(static_cast<size_t>(n0), -1), unit_of(static_cast<size_t>(g.num_nodes()));
  int32_t next = 0;
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const int32_t root = find(colocation.unit(v));
    if (number[static_cast<size_t>(root)] < 0) number[static_cast<size_t>(root)] = next++;
    unit_of[static_cast<size_t>(v)] = number[static_cast<size_t>(root)];
  }
  return unit_of;
}

std::unique_ptr<Instance> MakeInstance(const sim::Evaluator& evaluator, const McmOptions& options) {
  auto in = std::make_unique<Instance>();
  const graphs::Graph& g = evaluator.graph();
  const sim::Cluster& cluster = evaluator.cluster();
  in->graph = &g;
  {
    const ColocationUnits colocation(evaluator);
    const std::vector<int32_t> unit_of = PartitionUnits(g, colocation, options.acyclic);
    in->units = std::make_unique<ColocationUnits>(g, unit_of);
  }
  const ColocationUnits& units = *in->units;
  in->stage_device = StageOrder(cluster);
  StageProblem& p = in->problem;
  p.num_units = units.num_units();
  p.num_stages = static_cast<int32_t>(in->stage_device.size());
  p.acyclic = options.acyclic;
  p.unit_bytes.assign(static_cast<size_t>(p.num_units), 0.0);
  p.unit_weight.assign(static_cast<size_t>(p.num_units), 0.0);
  std::vector<int64_t> unit_of_node(static_cast<size_t>(g.num_nodes()));
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    const int32_t u = units.unit(v);
    unit_of_node[static_cast<size_t>(v)] = u;
    // Weights and outputs once (what Baechi counts per op, StaticCosts::Footprint,
    // without StaticCosts' per-device times, which the repair does not use).
    double outputs = 0.0;
    for (const graphs::TensorInfo& out : g.node(v).outputs) outputs += static_cast<double>(out.bytes);
    p.unit_bytes[static_cast<size_t>(u)] += static_cast<double>(g.node(v).persistent_bytes) + outputs;
    p.unit_weight[static_cast<size_t>(u)] += 1.0;
  }
  for (const int32_t d : in->stage_device) {
    p.stage_capacity.push_back(static_cast<double>(cluster.device(d).memory_capacity) *
                               options.memory_fraction);
  }
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (graphs::EdgeId e = 0; e < g.num_edges(); ++e) {
    const int32_t a = units.unit(g.edge(e).src), b = units.unit(g.edge(e).dst);
    if (a != b) edges.emplace_back(a, b);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  p.edges = std::move(edges);
  p.order = TopologicalOrder(p.num_units, p.edges);
  in->tensors = ToTensors(ComputeNodeFeatures(g));
  in->unit_of_node = torch::tensor(unit_of_node, torch::kInt64);
  std::vector<float> inv(static_cast<size_t>(p.num_units));
  for (int32_t u = 0; u < p.num_units; ++u)
    inv[static_cast<size_t>(u)] = 1.0F / static_cast<float>(p.unit_weight[u]);
  in->inv_members = torch::tensor(inv).reshape({p.num_units, 1});
  return in;
}

int32_t BinToStage(int64_t bin, int32_t bins, int32_t stages) {
  return static_cast<int32_t>(std::min<int64_t>(stages - 1, bin * stages / bins));
}
int64_t StageToBin(int32_t stage, int32_t bins, int32_t stages) {
  return std::min<int64_t>(bins - 1, static_cast<int64_t>((stage + 0.5) * bins / stages));
}

struct Sample {
  std::vector<int64_t> proposal_bins;  // [unit]
  std::vector<int32_t> proposal;       // [unit] stage
  StageRepairResult repair;            // repaired stages in repair.stage
  sim::Decision decision;
};

sim::Decision ToDecision(const Instance& in, std::span<const int32_t> stage) {
  const graphs::Graph& g = *in.graph;
  sim::Decision d = sim::SingleDeviceDecision(g, in.stage_device.front());
  for (graphs::NodeId v = 0; v < g.num_nodes(); ++v) {
    d.placement[static_cast<size_t>(v)] =
        in.stage_device[static_cast<size_t>(stage[static_cast<size_t>(in.units->unit(v))])];
  }
  return d;
}

// The policy with its optimizer and the step that samples, repairs,
// evaluates and learns.
class Learner {
 public:
  Learner(const McmOptions& options, const McmPolicyOptions& net, uint64_t seed)
      : options_(options), policy_(net), rng_(seed) {
    if (options_.policy == "gnn") {
      optimizer_ = std::make_unique<torch::optim::Adam>(policy_->parameters(),
                                                        torch::optim::AdamOptions(options_.learning_rate));
    }
  }
  McmPolicy& policy() { return policy_; }
  torch::optim::Adam* optimizer() { return optimizer_.get(); }
  Rng& rng() { return rng_; }

  // Unit log-probabilities [U x bins] (with grad when training).
  torch::Tensor UnitLogProbs(const Instance& in) {
    const torch::Tensor logits = policy_->forward(in.tensors);
    torch::Tensor unit = torch::zeros({in.problem.num_units, logits.size(1)});
    unit = unit.index_add(0, in.unit_of_node, logits) * in.inv_members;
    return torch::log_softmax(unit, 1);
  }

  // Draws, repairs and decodes `count` samples.
  std::vector<Sample> Draw(const Instance& in, int32_t count, const torch::Tensor& log_probs, bool greedy) {
    const int32_t U = in.problem.num_units, K = in.problem.num_stages, bins = policy_->options().bins;
    std::vector<Sample> out(static_cast<size_t>(count));
    torch::Tensor probs;
    if (log_probs.defined()) probs = log_probs.detach().exp().contiguous();
    for (Sample& s : out) {
      s.proposal_bins.resize(static_cast<size_t>(U));
      s.proposal.resize(static_cast<size_t>(U));
      for (int32_t u = 0; u < U; ++u) {
        int64_t bin = 0;
        if (!probs.defined()) {
          bin = static_cast<int64_t>(rng_.UniformInt(static_cast<uint64_t>(bins)));
        } else {
          const float* row = probs.data_ptr<float>() + static_cast<int64_t>(u) * bins;
          if (greedy) {
            bin = std::max_element(row, row + bins) - row;
          } else {
            double r = rng_.Uniform(), acc = 0.0;
            bin = bins - 1;
            for (int64_t b = 0; b < bins; ++b) {
              acc += row[b];
              if (r < acc) {
                bin = b;
                break;
              }
            }
          }
        }
        s.proposal_bins[static_cast<size_t>(u)] = bin;
        s.proposal[static_cast<size_t>(u)] = BinToStage(bin, bins, K);
      }
      if (options_.solver == "cbc") {
        s.repair = RepairStages(in.problem, s.proposal, StageRepairOptions{options_.solver_time_limit});
      } else {
        s.repair.stage = s.proposal;
        s.repair.proposal_feasible = s.repair.found = StagesFeasible(in.problem, s.proposal);
      }
      s.decision = ToDecision(in, s.repair.stage);
    }
    return out;
  }

  // Rewards of scored samples (scores: the objective, lower is better).
  std::vector<double> Rewards(Instance& in, const std::vector<double>& scores,
                              const std::vector<bool>& feasible) {
    if (in.reference <= 0.0) {
      for (size_t i = 0; i < scores.size(); ++i) {
        if (feasible[i]) {
          in.reference = scores[i];
          break;
        }
      }
    }
    std::vector<double> r(scores.size(), -std::log(options_.infeasible_penalty));
    if (in.reference > 0.0) {
      for (size_t i = 0; i < scores.size(); ++i) {
        if (feasible[i]) r[i] = -std::log(std::max(scores[i], 1e-30) / in.reference);
      }
    }
    return r;
  }

  // One REINFORCE update; returns the policy's mean entropy.
  double Update(const Instance& in, const torch::Tensor& log_probs, const std::vector<Sample>& samples,
                const std::vector<double>& rewards) {
    if (!optimizer_ || samples.empty()) return 0.0;
    const int32_t K = in.problem.num_stages, bins = policy_->options().bins;
    const double mean =
        std::accumulate(rewards.begin(), rewards.end(), 0.0) / static_cast<double>(rewards.size());
    double var = 0.0;
    for (const double r : rewards) var += (r - mean) * (r - mean);
    const double sd = std::sqrt(var / static_cast<double>(rewards.size()));
    const torch::Tensor entropy = -(log_probs.exp() * log_probs).sum(1).mean();
    torch::Tensor loss = -options_.entropy_weight * entropy;
    if (sd > 1e-12) {
      for (size_t i = 0; i < samples.size(); ++i) {
        const double advantage = (rewards[i] - mean) / sd;
        std::vector<int64_t> bins_taken;
        if (options_.reinforce == "repaired") {
          bins_taken.reserve(samples[i].repair.stage.size());
          for (const int32_t s : samples[i].repair.stage) bins_taken.push_back(StageToBin(s, bins, K));
        } else {
          bins_taken = samples[i].proposal_bins;
        }
        const torch::Tensor index = torch::tensor(bins_taken, torch::kInt64).unsqueeze(1);
        const torch::Tensor logp = log_probs.gather(1, index).sum();
        loss = loss - advantage * logp / static_cast<double>(samples.size() * bins_taken.size());
      }
    }
    optimizer_->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(policy_->parameters(), 1.0);
    optimizer_->step();
    return entropy.item<double>();
  }

 private:
  McmOptions options_;
  McmPolicy policy_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  Rng rng_;
};

McmPolicyOptions PolicyOptionsFor(const McmOptions& options) {
  if (options.checkpoint.empty()) return options.net;
  return McmPolicyOptions::FromSignature(ReadCheckpointSignature(options.checkpoint, kMcmCheckpoint),
                                         options.checkpoint);
}

class McmAgent : public Agent {
 public:
  explicit McmAgent(YamlMap& options) : options_(McmOptions::Parse(options)) {}
  std::string name() const override { return "mcm"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    const auto lock = LockTorch();  // one LibTorch agent at a time (torch_lock.h)
    if (options_.torch_threads > 0) torch::set_num_threads(static_cast<int>(options_.torch_threads));
    torch::manual_seed(static_cast<uint64_t>(problem.seed));
    SearchTracker tracker(problem, progress, options_.evaluations);
    const auto instance = MakeInstance(problem.evaluator, options_);
    Instance& in = *instance;
    Learner learner(options_, PolicyOptionsFor(options_), Rng::Derive(problem.seed, {0x6d636dULL}).Next());
    if (!options_.checkpoint.empty()) {
      LoadCheckpoint(options_.checkpoint, kMcmCheckpoint, learner.policy()->options().Signature(),
                     *learner.policy(), nullptr);
    }
    const bool learn = options_.policy == "gnn" && options_.learning_rate > 0.0;
    int64_t steps = 0, samples_total = 0, proposal_feasible = 0, repaired = 0, solver_calls = 0,
            solver_optimal = 0;
    double solver_seconds = 0.0, distance = 0.0, entropy = 0.0;
    std::vector<sim::Evaluation> evaluations;
    while (!tracker.Done()) {
      const auto k = static_cast<int32_t>(std::min<int64_t>(options_.samples_per_step, tracker.Remaining()));
      if (k <= 0) break;
      torch::Tensor log_probs;
      if (options_.policy == "gnn")
        log_probs = learn ? learner.UnitLogProbs(in) : learner.UnitLogProbs(in).detach();
      std::vector<Sample> samples = learner.Draw(in, k, log_probs, false);
      std::vector<sim::Decision> decisions;
      decisions.reserve(samples.size());
      for (Sample& s : samples) {
        decisions.push_back(s.decision);
        ++samples_total;
        proposal_feasible += s.repair.proposal_feasible ? 1 : 0;
        repaired += s.repair.found && !s.repair.proposal_feasible ? 1 : 0;
        solver_calls += s.repair.solver_called ? 1 : 0;
        solver_optimal += s.repair.solver_called && s.repair.optimal ? 1 : 0;
        solver_seconds += s.repair.seconds;
        distance += s.repair.distance;
      }
      evaluations.resize(decisions.size());
      tracker.EvaluateBatch(decisions, evaluations);
      std::vector<double> scores(decisions.size());
      std::vector<bool> feasible(decisions.size());
      for (size_t i = 0; i < decisions.size(); ++i) {
        scores[i] = tracker.Score(evaluations[i]);
        feasible[i] = evaluations[i].feasible;
      }
      const std::vector<double> rewards = learner.Rewards(in, scores, feasible);
      if (learn) entropy = learner.Update(in, log_probs, samples, rewards);
      ++steps;
    }
    const double n = std::max<double>(1.0, static_cast<double>(samples_total));
    return tracker.Finish({{"policy_steps", static_cast<double>(steps)},
                           {"pretrained", options_.checkpoint.empty() ? 0.0 : 1.0},
                           {"stages", static_cast<double>(in.problem.num_stages)},
                           {"units", static_cast<double>(in.problem.num_units)},
                           {"proposal_feasible_share", static_cast<double>(proposal_feasible) / n},
                           {"repaired_share", static_cast<double>(repaired) / n},
                           {"solver_calls", static_cast<double>(solver_calls)},
                           {"solver_optimal_share",
                            solver_calls > 0 ? static_cast<double>(solver_optimal) / solver_calls : 0.0},
                           {"solver_seconds", solver_seconds},
                           {"mean_repair_distance", distance / n},
                           {"final_entropy", entropy}});
  }

 private:
  McmOptions options_;
};

// ---- training (`gosim train`, agent: mcm) ----

struct TrainConfig {
  std::string suite;
  std::string cluster = "mcm_4x4";
  std::string cost_model = "roofline";
  ObjectiveKind objective = ObjectiveKind::kThroughput;
  int32_t micro_batches = 8;
  sim::Schedule schedule = sim::Schedule::kStreaming;
  uint64_t seed = 0;
  int64_t steps = 200;
  int64_t valid_every = 20;
  int64_t checkpoint_every = 10;
  McmOptions options;
};

TrainConfig ParseTrainConfig(const TrainRequest& request) {
  YamlMap m = YamlMap::Root(request.config, request.config_file);
  TrainConfig c;
  m.Require<std::string>("agent");
  m.Allow({"name", "description", "output"});
  c.suite = m.Require<std::string>("suite");
  c.cluster = m.Get<std::string>("cluster", c.cluster);
  c.cost_model = m.Get<std::string>("cost_model", c.cost_model);
  c.objective = ParseObjectiveKind(m.Get<std::string>("objective", "throughput"));
  c.micro_batches = static_cast<int32_t>(GetInt(m, "micro_batches", c.micro_batches, 1, 4096));
  const std::string schedule = m.Get<std::string>("schedule", "streaming");
  const std::optional<sim::Schedule> s = sim::ParseSchedule(schedule);
  if (!s) m.Fail("schedule", "unknown schedule '" + schedule + "'", "give streaming, gpipe or 1f1b");
  c.schedule = *s;
  c.seed = static_cast<uint64_t>(GetInt(m, "seed", 0, 0, int64_t{1} << 62));
  c.steps = GetInt(m, "steps", c.steps, 0, int64_t{1} << 40);
  c.valid_every = GetInt(m, "valid_every", c.valid_every, 1, int64_t{1} << 40);
  c.checkpoint_every = GetInt(m, "checkpoint_every", c.checkpoint_every, 1, int64_t{1} << 40);
  {
    YamlMap options = m.Child("options");
    c.options = McmOptions::Parse(options);
  }
  m.Finish();
  if (!c.options.checkpoint.empty()) {
    throw ConfigError("mcm training starts from scratch; options.checkpoint is for the agent",
                      Location{request.config_file}, "remove options.checkpoint");
  }
  if (c.options.policy != "gnn") {
    throw ConfigError("mcm training needs policy: gnn", Location{request.config_file},
                      "remove options.policy");
  }
  return c;
}

struct GraphCase {
  std::string name;
  graphs::Graph graph;
  std::unique_ptr<sim::Evaluator> evaluator;
  std::unique_ptr<Instance> instance;
};

void TrainMcmImpl(const TrainRequest& request) {
  const TrainConfig config = ParseTrainConfig(request);
  if (config.options.torch_threads > 0)
    torch::set_num_threads(static_cast<int>(config.options.torch_threads));
  torch::manual_seed(config.seed);
  const graphs::Suite suite = graphs::LoadSuite(config.suite);
  const sim::Cluster cluster = sim::LoadCluster(config.cluster);
  const auto cost_model = sim::MakeCostModel(config.cost_model, {}, request.config_file);
  sim::SimOptions sim_options;
  sim_options.max_load = config.objective == ObjectiveKind::kMaxLoad;
  sim_options.micro_batches = config.micro_batches;
  sim_options.schedule = config.schedule;
  const Objective objective{.kind = config.objective};
  const auto load = [&](const std::string& split) {
    std::vector<std::unique_ptr<GraphCase>> out;
    for (const graphs::SuiteEntry* entry : suite.EntriesOf(split)) {
      auto c = std::make_unique<GraphCase>();
      c->name = entry->name;
      c->graph = graphs::MaterializeGraph(*entry);
      c->evaluator = std::make_unique<sim::Evaluator>(c->graph, cluster, cost_model, sim_options);
      c->instance = MakeInstance(*c->evaluator, config.options);
      out.push_back(std::move(c));
    }
    return out;
  };
  const auto train = load("train");
  const auto valid = load("valid");
  if (train.empty()) {
    throw ConfigError("suite " + suite.path + " has no train split", Location{request.config_file},
                      "give a suite with train / valid / test splits, e.g. configs/suites/mcm.yaml");
  }
  Learner learner(config.options, config.options.net, config.seed);
  const auto run_path = [&](const std::string& file) { return request.run_dir + "/" + file; };
  const std::string checkpoint = run_path("checkpoint.pt");
  if (FileExists(checkpoint) && !request.resume) {
    throw ConfigError("run folder " + request.run_dir + " already holds a checkpoint", Location{checkpoint},
                      "pass --resume to continue that run, or choose another --run-dir");
  }
  std::vector<double> valid_reference(valid.size(), 0.0);  // the untrained policy's objectives
  TrainingState state;
  int64_t evaluations = 0;
  double wall_before = 0.0, best_valid = -std::numeric_limits<double>::infinity(), last_valid = 0.0;
  const std::string signature = config.options.net.Signature();
  if (request.resume && FileExists(checkpoint)) {
    state = LoadCheckpoint(checkpoint, kMcmCheckpoint, signature, *learner.policy(), learner.optimizer());
    learner.rng() = Rng(0);
    learner.rng().set_state(state.rng);
    evaluations = static_cast<int64_t>(state.scalars.at("evaluations"));
    wall_before = state.scalars.at("wall_seconds");
    best_valid = state.scalars.at("best_valid");
    last_valid = state.scalars.at("last_valid");
    for (size_t g = 0; g < train.size(); ++g) {
      train[g]->instance->reference = state.scalars.at("reference/" + std::to_string(g));
    }
    for (size_t g = 0; g < valid.size(); ++g) {
      valid_reference[g] = state.scalars.at("valid_reference/" + std::to_string(g));
    }
    LogLine(LogLevel::kInfo, "mcm: resuming " + checkpoint + " at step " + std::to_string(state.step));
  }
  WriteRunConfig(request);
  TrainingCurves curves(run_path("curves.csv"), {"valid_log_ratio", "entropy", "feasible", "graph"},
                        request.resume ? state.step : -1);
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return wall_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto save = [&](const std::string& file) {
    state.rng = learner.rng().state();
    state.scalars["evaluations"] = static_cast<double>(evaluations);
    state.scalars["wall_seconds"] = seconds();
    state.scalars["best_valid"] = best_valid;
    state.scalars["last_valid"] = last_valid;
    for (size_t g = 0; g < train.size(); ++g) {
      state.scalars["reference/" + std::to_string(g)] = train[g]->instance->reference;
    }
    for (size_t g = 0; g < valid.size(); ++g) {
      state.scalars["valid_reference/" + std::to_string(g)] = valid_reference[g];
    }
    SaveCheckpoint(run_path(file), kMcmCheckpoint, signature, *learner.policy(), learner.optimizer(), state);
  };
  // Validation: the greedy proposal, repaired, on every valid graph; the
  // score is the mean -log(objective / the first validation's objective).
  const auto validate = [&]() {
    torch::NoGradGuard no_grad;
    double sum = 0.0;
    for (size_t g = 0; g < valid.size(); ++g) {
      Instance& in = *valid[g]->instance;
      std::vector<Sample> s = learner.Draw(in, 1, learner.UnitLogProbs(in), true);
      const sim::Evaluation e = valid[g]->evaluator->Evaluate(s[0].decision);
      ++evaluations;
      const double score = e.feasible ? objective.Score(e, cluster) : 0.0;
      if (valid_reference[g] <= 0.0 && e.feasible) valid_reference[g] = score;
      sum += e.feasible && valid_reference[g] > 0.0 ? -std::log(score / valid_reference[g])
                                                    : -std::log(config.options.infeasible_penalty);
    }
    return valid.empty() ? 0.0 : sum / static_cast<double>(valid.size());
  };
  if (!valid.empty() && !(request.resume && state.step > 0)) validate();  // the references
  int64_t steps_here = 0;
  while (state.step < config.steps && (request.max_steps < 0 || steps_here < request.max_steps)) {
    const size_t g = static_cast<size_t>(state.step) % train.size();
    Instance& in = *train[g]->instance;
    const torch::Tensor log_probs = learner.UnitLogProbs(in);
    std::vector<Sample> samples = learner.Draw(in, config.options.samples_per_step, log_probs, false);
    std::vector<sim::Decision> decisions;
    for (const Sample& s : samples) decisions.push_back(s.decision);
    std::vector<sim::Evaluation> evals(decisions.size());
    train[g]->evaluator->EvaluateBatch(decisions, evals);
    evaluations += static_cast<int64_t>(decisions.size());
    std::vector<double> scores(evals.size());
    std::vector<bool> feasible(evals.size());
    double feasible_count = 0.0;
    for (size_t i = 0; i < evals.size(); ++i) {
      scores[i] = objective.Score(evals[i], cluster);
      feasible[i] = evals[i].feasible;
      feasible_count += feasible[i] ? 1.0 : 0.0;
    }
    const std::vector<double> rewards = learner.Rewards(in, scores, feasible);
    const double entropy = learner.Update(in, log_probs, samples, rewards);
    ++state.step;
    ++steps_here;
    if (!valid.empty() && (state.step % config.valid_every == 0 || state.step == config.steps)) {
      last_valid = validate();
      if (last_valid > best_valid) {
        best_valid = last_valid;
        save("best.pt");
      }
    }
    TrainingPoint point;
    point.step = state.step;
    point.reward = std::accumulate(rewards.begin(), rewards.end(), 0.0) / static_cast<double>(rewards.size());
    point.best_objective = best_valid;
    point.wall_seconds = seconds();
    point.evaluations = evaluations;
    point.extra = {last_valid, entropy, feasible_count / static_cast<double>(evals.size()),
                   static_cast<double>(g)};
    curves.Append(point);
    if (request.progress) {
      std::printf(
          "mcm step %lld/%lld (%s): mean reward %+.4f, feasible %.2f, entropy %.3f, valid %+.4f (best "
          "%+.4f)\n",
          static_cast<long long>(state.step), static_cast<long long>(config.steps), train[g]->name.c_str(),
          point.reward, feasible_count / static_cast<double>(evals.size()), entropy, last_valid, best_valid);
      std::fflush(stdout);
    }
    if (state.step % config.checkpoint_every == 0 || state.step == config.steps) save("checkpoint.pt");
  }
  if (steps_here == 0 && !FileExists(checkpoint)) save("checkpoint.pt");
  if (valid.empty() && !FileExists(run_path("best.pt"))) save("best.pt");
}

}  // namespace

void TrainMcm(const TrainRequest& request) {
  TrainMcmImpl(request);
}

void RegisterMcm(const RegisterFn& add) {
  add(
      "mcm", [](YamlMap& o) { return std::make_unique<McmAgent>(o); },
      "multi-chip partitioner: GNN policy proposes a pipeline stage per node, a CBC solver repairs it "
      "(memory, acyclic stages), REINFORCE on simulated throughput; pre-trained or from scratch, fine-tuned");
  RegisterTrainer("mcm", TrainMcm);
}

}  // namespace gosim::agents::learned::mcm
