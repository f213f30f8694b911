#include "agents/learned/regal/regal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/features.h"
#include "agents/learned/common/rollout.h"
#include "agents/learned/common/torch_lock.h"
#include "agents/learned/common/training_options.h"
#include "agents/options_util.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/yaml.h"
#include "graphs/suite.h"
#include "sim/cost_model.h"

namespace gosim::agents::learned {

// ---------------------------------------------------------------- policy

std::string RegalPolicyOptions::Signature() const {
  std::string s = "regal;" + gnn.Signature() + ";devices=" + std::to_string(num_devices) + ";levels=";
  char buffer[64];
  for (size_t i = 0; i < levels.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%s%.17g", i == 0 ? "" : "/", levels[i]);
    s += buffer;
  }
  if (!placement_genes) s += ";genes=priority";
  if (skip_features) s += ";skip=1";
  if (graph_agnostic) s += ";agnostic=1";
  return s;
}

int32_t RegalPolicyOptions::memory_feature_count() const {
  if (!memory_features) return 0;
  return memory_priority_feature ? kRegalMemoryFeatures : kRegalMemoryFeatures - 1;
}

RegalPolicyOptions RegalPolicyOptions::FromSignature(const std::string& signature,
                                                     const std::string& source) {
  auto fail = [&](const std::string& what) -> StateError {
    return StateError("not a REGAL checkpoint (" + what + "): its model is '" + signature + "'",
                      Location{source}, "give a checkpoint written by `gosim train` with `agent: regal`");
  };
  if (signature.rfind("regal;", 0) != 0) throw fail("no 'regal' tag");
  std::map<std::string, std::string> fields;
  std::string bad, token;
  if (!ParseSignatureFields(signature.substr(6), &fields, &bad)) throw fail("bad field '" + bad + "'");
  RegalPolicyOptions o;
  try {
    o.gnn.hidden = std::stoll(fields.at("hidden"));
    o.gnn.layers = std::stoll(fields.at("layers"));
    o.gnn.op_embedding = std::stoll(fields.at("op_embedding"));
    o.gnn.normalize = fields.at("normalize") == "1";
    if (fields.count("extra")) o.gnn.extra_features = std::stoll(fields.at("extra"));
    o.memory_features =
        o.gnn.extra_features == kRegalMemoryFeatures || o.gnn.extra_features == kRegalMemoryFeatures - 1;
    o.memory_priority_feature = o.gnn.extra_features != kRegalMemoryFeatures - 1;
    if (fields.count("agnostic")) o.graph_agnostic = fields.at("agnostic") == "1";
    if (fields.count("genes")) o.placement_genes = fields.at("genes") != "priority";
    if (fields.count("skip")) o.skip_features = fields.at("skip") == "1";
    o.num_devices = static_cast<int32_t>(std::stol(fields.at("devices")));
    o.levels.clear();
    std::istringstream levels(fields.at("levels"));
    while (std::getline(levels, token, '/')) o.levels.push_back(std::stod(token));
  } catch (const std::exception&) {
    throw fail("missing or malformed fields");
  }
  if (o.Signature() != signature) throw fail("written by another version");
  return o;
}

std::vector<float> RegalMemoryFeatures(const graphs::Graph& graph) {
  const int32_t n = graph.num_nodes();
  // Consumer nodes of every (node, output) tensor, and the last of them.
  std::vector<std::vector<int32_t>> consumers(static_cast<size_t>(n));
  std::vector<std::vector<int32_t>> last(static_cast<size_t>(n));
  for (graphs::NodeId v = 0; v < n; ++v) {
    const size_t outputs = graph.node(v).outputs.size();
    consumers[v].assign(outputs, 0);
    last[v].assign(outputs, -1);
    std::vector<int32_t> seen_by(outputs, -1);
    for (graphs::EdgeId e : graph.out_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      if (edge.is_control()) continue;
      const size_t k = static_cast<size_t>(edge.output_index);
      if (seen_by[k] != edge.dst) ++consumers[v][k];  // several edges to one consumer count once
      seen_by[k] = edge.dst;
      last[v][k] = std::max(last[v][k], edge.dst);
    }
  }
  std::vector<float> out(static_cast<size_t>(n) * kRegalMemoryFeatures, 0.0f);
  for (graphs::NodeId v = 0; v < n; ++v) {
    double allocated = 0.0, freed = 0.0, in = 0.0, last_bytes = 0.0, uses = 0.0;
    for (const graphs::TensorInfo& t : graph.node(v).outputs)
      allocated += static_cast<double>(t.resident_bytes());
    for (const int32_t c : consumers[v]) uses += c;
    for (graphs::EdgeId e : graph.in_edges(v)) {
      const graphs::Edge& edge = graph.edge(e);
      if (edge.is_control()) continue;
      const size_t k = static_cast<size_t>(edge.output_index);
      const double bytes = static_cast<double>(edge.bytes);
      in += bytes;
      freed += bytes / std::max(1, consumers[edge.src][k]);
      if (last[edge.src][k] == v) last_bytes += bytes;
    }
    float* row = out.data() + static_cast<size_t>(v) * kRegalMemoryFeatures;
    row[0] = static_cast<float>(std::log((freed + 1.0) / (allocated + 1.0)));
    row[1] = static_cast<float>(std::log((in + 1.0) / (allocated + 1.0)));
    row[2] = static_cast<float>(std::log((last_bytes + 1.0) / (allocated + 1.0)));
    row[3] = static_cast<float>(std::log1p(uses));
  }
  return out;
}

GraphTensors RegalTensors(const graphs::Graph& graph, const RegalPolicyOptions& options) {
  GraphTensors tensors = ToTensors(ComputeNodeFeatures(graph));
  if (options.memory_features) {
    std::vector<float> extra = RegalMemoryFeatures(graph);
    torch::Tensor memory =
        torch::from_blob(extra.data(), {tensors.num_nodes, kRegalMemoryFeatures}, torch::kFloat32).clone();
    // Without the priority feature: columns 1.. only.
    if (!options.memory_priority_feature) memory = memory.slice(1, 1).contiguous();
    tensors.features = torch::cat({tensors.features, memory}, 1);
  }
  return tensors;
}

RegalPolicyImpl::RegalPolicyImpl(const RegalPolicyOptions& options) : options_(options) {
  const int64_t k = static_cast<int64_t>(options.levels.size());
  // GAS: the head reads one constant input; REGAL: the GNN's embedding and,
  // with skip_features, the input features.
  int64_t input = 1;
  if (!options.graph_agnostic) {
    gnn_ = register_module("gnn", GraphSage(options.gnn));
    input = options.gnn.hidden + (options.skip_features ? kNumNodeFeatures + options.gnn.extra_features : 0);
  }
  head_ = register_module("head", torch::nn::Linear(input, options.genes_per_node() * 2 * k));
  // Start close to BRKGA's uniform keys: most mass on the level nearest 1
  // (Beta(1, 1) is uniform), small weights, so the first rewards are near 0.
  torch::NoGradGuard no_grad;
  head_->weight.mul_(0.1);
  head_->bias.zero_();
  int64_t one = 0;
  for (int64_t i = 0; i < k; ++i) {
    if (std::abs(std::log(options.levels[i])) < std::abs(std::log(options.levels[one]))) one = i;
  }
  head_->bias.view({-1, k}).select(1, one).fill_(2.0);
}

torch::Tensor RegalPolicyImpl::forward(const GraphTensors& graph) {
  const int64_t k = static_cast<int64_t>(options_.levels.size());
  if (options_.graph_agnostic) {
    // The graph enters only through its node count.
    const torch::Tensor logits = head_(torch::ones({graph.num_nodes, 1}, torch::kFloat32))
                                     .view({graph.num_nodes, options_.genes_per_node(), 2, k});
    return torch::log_softmax(logits, 3);
  }
  torch::Tensor h = gnn_(graph);
  if (options_.skip_features) h = torch::cat({h, graph.features}, 1);
  const torch::Tensor logits = head_(h).view({graph.num_nodes, options_.genes_per_node(), 2, k});
  return torch::log_softmax(logits, 3);
}

brkga::BetaSampler MakeSampler(const std::vector<double>& parameters, const RegalPolicyOptions& options,
                               const brkga::ChromosomeLayout& layout) {
  const int32_t g = options.genes_per_node();
  if (layout.num_devices() != options.num_devices ||
      parameters.size() != static_cast<size_t>(layout.num_nodes()) * g * 2) {
    throw DecisionError("REGAL policy output does not fit the chromosome (" +
                            std::to_string(layout.num_devices()) + " devices, policy trained for " +
                            std::to_string(options.num_devices) + ")",
                        Location{}, "use a checkpoint trained for this number of devices");
  }
  std::vector<double> alpha(layout.size(), 1.0), beta(layout.size(), 1.0);
  auto value = [&](int32_t v, int32_t gene, int which) {
    return parameters[(static_cast<size_t>(v) * g + gene) * 2 + which];
  };
  for (int32_t v = 0; v < layout.num_nodes(); ++v) {
    for (int32_t d = 0; options.placement_genes && d < options.num_devices; ++d) {
      alpha[layout.placement_gene(v, d)] = value(v, d, 0);
      beta[layout.placement_gene(v, d)] = value(v, d, 1);
    }
    if (layout.priority_genes()) {
      alpha[layout.priority_gene(v)] = value(v, options.priority_index(), 0);
      beta[layout.priority_gene(v)] = value(v, options.priority_index(), 1);
    }
  }
  return brkga::BetaSampler(std::move(alpha), std::move(beta));
}

std::vector<double> ActionParameters(const RegalAction& action, const RegalPolicyOptions& options) {
  std::vector<double> out(action.size());
  for (size_t i = 0; i < action.size(); ++i) out[i] = options.levels[static_cast<size_t>(action[i])];
  return out;
}

RegalAction GreedyAction(const torch::Tensor& log_probs) {
  const int64_t k = log_probs.size(-1);
  const torch::Tensor best = log_probs.reshape({-1, k}).argmax(1).contiguous();
  return RegalAction(best.data_ptr<int64_t>(), best.data_ptr<int64_t>() + best.numel());
}

std::vector<double> PolicyParameters(const torch::Tensor& log_probs, const RegalPolicyOptions& options,
                                     const std::string& decode) {
  if (decode == "greedy") return ActionParameters(GreedyAction(log_probs), options);
  const int64_t k = log_probs.size(-1);
  const torch::Tensor levels = torch::tensor(options.levels, torch::kFloat64);
  const torch::Tensor mean =
      (log_probs.detach().reshape({-1, k}).exp().to(torch::kFloat64) * levels).sum(1).contiguous();
  return std::vector<double>(mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel());
}

namespace {

// Draws one level per parameter from the (detached) probabilities.
RegalAction SampleAction(const torch::Tensor& log_probs, Rng& rng) {
  const int64_t k = log_probs.size(-1);
  const torch::Tensor probs = log_probs.detach().exp().reshape({-1, k}).to(torch::kFloat64).contiguous();
  const double* p = probs.data_ptr<double>();
  RegalAction action(static_cast<size_t>(probs.size(0)));
  for (size_t i = 0; i < action.size(); ++i) {
    double u = rng.Uniform();
    int64_t chosen = k - 1;
    for (int64_t j = 0; j < k; ++j) {
      u -= p[i * static_cast<size_t>(k) + static_cast<size_t>(j)];
      if (u < 0.0) {
        chosen = j;
        break;
      }
    }
    action[i] = chosen;
  }
  return action;
}

torch::Tensor ActionLogProb(const torch::Tensor& log_probs, const RegalAction& action) {
  const int64_t k = log_probs.size(-1);
  const torch::Tensor index = torch::from_blob(const_cast<int64_t*>(action.data()),
                                               {static_cast<int64_t>(action.size()), 1}, torch::kInt64);
  return log_probs.reshape({-1, k}).gather(1, index).sum();
}

double RelativeImprovement(double reference, double value) {
  return reference > 0.0 ? (reference - value) / reference : 0.0;
}

// ---------------------------------------------------------------- agent

class RegalAgent : public Agent {
 public:
  explicit RegalAgent(YamlMap& options) {
    // Default: the committed zero-shot policy (configs/checkpoints/README.md);
    // a relative path is looked up like the project's other files.
    checkpoint_ = ResolveDataPath(options.Get<std::string>("checkpoint", "configs/checkpoints/regal.pt"));
    decode_ = GetChoice(options, "decode", "mean", {"mean", "greedy"});
    brkga::BrkgaOptions defaults;
    brkga_ = brkga::BrkgaOptions::Parse(options, defaults);
    const auto lock = LockTorch();  // one LibTorch agent at a time (torch_lock.h)
    try {
      policy_options_ = RegalPolicyOptions::FromSignature(
          ReadCheckpointSignature(checkpoint_, kRegalCheckpoint), checkpoint_);
      policy_ = RegalPolicy(policy_options_);
      LoadCheckpoint(checkpoint_, kRegalCheckpoint, policy_options_.Signature(), *policy_, nullptr);
    } catch (const Error& e) {
      throw ConfigError(
          "agent regal: " + e.message(), options.Where("checkpoint"),
          e.hint().empty() ? "train one with `gosim train configs/experiments/regal_train.yaml`" : e.hint());
    }
    policy_->eval();
  }
  std::string name() const override { return "regal"; }

  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    if (problem.cluster.num_devices() != policy_options_.num_devices) {
      throw ConfigError("agent regal: checkpoint " + checkpoint_ + " was trained for " +
                            std::to_string(policy_options_.num_devices) + " devices, cluster " +
                            problem.cluster.name() + " has " + std::to_string(problem.cluster.num_devices()),
                        Location{checkpoint_}, "train a policy for this number of devices");
    }
    const GraphTensors tensors = RegalTensors(problem.graph, policy_options_);
    std::vector<double> parameters;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto torch_lock = LockTorch();  // one LibTorch user at a time (torch_lock.h); BRKGA runs outside
      torch::NoGradGuard no_grad;
      parameters = PolicyParameters(policy_->forward(tensors), policy_options_, decode_);
    }
    const brkga::BetaSampler sampler =
        MakeSampler(parameters, policy_options_, brkga::LayoutFor(problem, brkga_));
    // Without a feasible decision, the last evaluations go to the rescue
    // (agents/warm_start.h, RescueInfeasible; docs/AGENTS.md, "REGAL").
    brkga::BrkgaOptions run = brkga_;
    run.rescue_owner = "regal";
    return brkga::RunBrkga(problem, run, sampler, progress);
  }

 private:
  std::string checkpoint_;
  std::string decode_;
  brkga::BrkgaOptions brkga_;
  RegalPolicyOptions policy_options_;
  RegalPolicy policy_{nullptr};
  std::mutex mutex_;
};

// ---------------------------------------------------------------- training

struct EvalAgentSpec {
  std::string name;
  std::string label;
  YAML::Node options;
  Budget budget;
  std::string where;
};

struct RegalTrainConfig {
  std::string suite;
  std::string cluster = "k80x2";
  std::string cost_model = "roofline";
  Objective objective;
  int64_t train_graphs = 0;  // 0 = the whole split
  int64_t valid_graphs = 50;
  uint64_t seed = 0;
  int64_t steps = 200;
  int32_t samples = 4;
  double learning_rate = 1e-3;
  double grad_clip = 1.0;
  double entropy_weight = 0.0;
  // Divide each step's advantages by the standard deviation of its rewards
  // (graphs differ in how much BRKGA's result varies).
  bool normalize_advantage = false;
  // What a sample's advantage is measured against: "seed" = its own paired
  // uniform run (the reward itself); "mean" = the mean of the step's uniform
  // runs, which keeps the uniform runs' noise out of the differences between
  // samples (the reward logged stays the paired one).
  std::string advantage_reference = "seed";
  int64_t checkpoint_every = 20;
  int64_t valid_every = 50;
  int32_t valid_seeds = 1;
  int32_t torch_threads = 1;
  std::string decode = "mean";  // how validation turns the policy into Beta parameters
  RegalPolicyOptions policy;
  brkga::BrkgaOptions brkga;
  // Table 1 evaluation (evaluate: ...).
  bool evaluate = false;
  int64_t test_graphs = 50;
  int32_t test_seeds = 1;
  int64_t test_budget = 5000;
  std::string test_checkpoint = "best";
  std::vector<EvalAgentSpec> baselines;
};

Budget ParseBudget(YamlMap& map, const std::string& key, Budget fallback) {
  const YAML::Node node = map.Node(key);
  if (!node || node.IsNull()) return fallback;
  if (node.IsScalar()) {
    fallback.evaluations = YamlAs<int64_t>(node, map.file(), map.ChildPath(key));
    return fallback;
  }
  YamlMap b(node, map.file(), map.ChildPath(key));
  fallback.evaluations = b.Get<int64_t>("evaluations", fallback.evaluations);
  fallback.wall_seconds = b.Get<double>("wall_seconds", fallback.wall_seconds);
  b.Finish();
  return fallback;
}

RegalTrainConfig ParseConfig(const TrainRequest& request) {
  YamlMap m = YamlMap::Root(request.config, request.config_file);
  RegalTrainConfig c;
  m.Allow({"agent", "name", "description", "output"});
  c.suite = m.Require<std::string>("suite");
  c.cluster = m.Get<std::string>("cluster", c.cluster);
  c.cost_model = m.Get<std::string>("cost_model", c.cost_model);
  c.objective.kind = ParseObjectiveKind(m.Get<std::string>("objective", "peak_memory"), m.Where("objective"));
  c.train_graphs = GetInt(m, "train_graphs", c.train_graphs, 0, int64_t{1} << 30);
  c.valid_graphs = GetInt(m, "valid_graphs", c.valid_graphs, 0, int64_t{1} << 30);
  c.seed = static_cast<uint64_t>(GetInt(m, "seed", 0, 0, int64_t{1} << 62));
  c.steps = GetInt(m, "steps", c.steps, 0, int64_t{1} << 40);
  c.samples = static_cast<int32_t>(GetInt(m, "samples", c.samples, 2, 1024));
  c.learning_rate = GetDouble(m, "learning_rate", c.learning_rate, 1e-9, 10.0);
  c.grad_clip = GetDouble(m, "grad_clip", c.grad_clip, 0.0, 1e9);
  c.entropy_weight = GetDouble(m, "entropy_weight", c.entropy_weight, 0.0, 100.0);
  c.normalize_advantage = m.Get<bool>("normalize_advantage", c.normalize_advantage);
  c.advantage_reference = GetChoice(m, "advantage_reference", c.advantage_reference, {"seed", "mean"});
  c.checkpoint_every = GetInt(m, "checkpoint_every", c.checkpoint_every, 1, int64_t{1} << 40);
  c.valid_every = GetInt(m, "valid_every", c.valid_every, 1, int64_t{1} << 40);
  c.valid_seeds = static_cast<int32_t>(GetInt(m, "valid_seeds", c.valid_seeds, 1, 1024));
  c.torch_threads = static_cast<int32_t>(GetInt(m, "torch_threads", c.torch_threads, 1, 256));
  c.decode = GetChoice(m, "decode", c.decode, {"mean", "greedy"});
  {
    YamlMap p = m.Child("policy");
    c.policy.gnn.hidden = GetInt(p, "hidden", c.policy.gnn.hidden, 1, 4096);
    c.policy.gnn.layers = GetInt(p, "layers", c.policy.gnn.layers, 0, 64);
    c.policy.gnn.op_embedding = GetInt(p, "op_embedding", c.policy.gnn.op_embedding, 1, 1024);
    c.policy.gnn.normalize = p.Get<bool>("normalize", c.policy.gnn.normalize);
    c.policy.levels = p.Get<std::vector<double>>("levels", c.policy.levels);
    c.policy.placement_genes = GetChoice(p, "genes", "all", {"all", "priority"}) == "all";
    c.policy.memory_features = p.Get<bool>("memory_features", c.policy.memory_features);
    c.policy.skip_features = p.Get<bool>("skip_features", c.policy.skip_features);
    c.policy.memory_priority_feature =
        p.Get<bool>("memory_priority_feature", c.policy.memory_priority_feature);
    c.policy.graph_agnostic = p.Get<bool>("graph_agnostic", c.policy.graph_agnostic);
    if (!c.policy.memory_priority_feature && !c.policy.memory_features) {
      p.Fail("memory_priority_feature", "only the memory features have a priority feature to leave out",
             "set memory_features: true, or drop memory_priority_feature");
    }
    if (c.policy.graph_agnostic && (c.policy.memory_features || c.policy.skip_features)) {
      p.Fail("graph_agnostic", "a graph-agnostic policy (GAS) reads no features",
             "set memory_features: false and skip_features: false");
    }
    c.policy.gnn.extra_features = c.policy.memory_feature_count();
    if (c.policy.levels.size() < 2) p.Fail("levels", "give at least two Beta parameter levels");
    for (double x : c.policy.levels) {
      if (!(x > 0.0) || !std::isfinite(x)) p.Fail("levels", "Beta parameter levels must be finite and > 0");
    }
    p.Finish();
  }
  {
    YamlMap b = m.Child("brkga");
    brkga::BrkgaOptions defaults;
    defaults.evaluations = 1000;
    c.brkga = brkga::BrkgaOptions::Parse(b, defaults);
  }
  if (m.Has("evaluate")) {
    c.evaluate = true;
    YamlMap e = m.Child("evaluate");
    c.test_graphs = GetInt(e, "graphs", c.test_graphs, 1, int64_t{1} << 30);
    c.test_seeds = static_cast<int32_t>(GetInt(e, "seeds", c.test_seeds, 1, 1024));
    c.test_budget = GetInt(e, "budget", c.test_budget, 1, int64_t{1} << 40);
    c.test_checkpoint = e.Get<std::string>("checkpoint", c.test_checkpoint);
    for (YamlMap& a : e.ChildList("baselines")) {
      EvalAgentSpec spec;
      spec.name = a.Require<std::string>("name");
      spec.label = a.Get<std::string>("label", spec.name);
      // Copy-construct: assigning an absent (invalid) YAML node throws.
      const YAML::Node options = a.Node("options");
      if (options && options.IsMap()) spec.options = YAML::Clone(options);
      spec.where = a.ChildPath("options");
      spec.budget = ParseBudget(a, "budget", Budget{c.test_budget, 0.0});
      a.Finish();
      c.baselines.push_back(std::move(spec));
    }
    e.Finish();
  }
  m.Finish();
  return c;
}

// One graph of a split with everything the trainer reuses across steps.
struct GraphCase {
  std::string name;
  std::unique_ptr<graphs::Graph> graph;
  std::unique_ptr<sim::Evaluator> evaluator;
  GraphTensors tensors;
  std::map<uint64_t, double> uniform;  // BRKGA seed -> best objective with uniform keys
};

class RegalTrainer {
 public:
  RegalTrainer(const TrainRequest& request, RegalTrainConfig config)
      : request_(request), config_(std::move(config)), cluster_(sim::LoadCluster(config_.cluster)) {
    cost_model_ = sim::MakeCostModel(config_.cost_model, {}, request_.config_file);
    suite_ = graphs::LoadSuite(config_.suite);
    if (cluster_.num_devices() != config_.policy.num_devices)
      config_.policy.num_devices = cluster_.num_devices();
  }

  void Run() {
    torch::set_num_threads(config_.torch_threads);
    if (!request_.evaluate_only) Train();
    if (config_.evaluate) EvaluateTable();
  }

 private:
  std::string RunPath(const std::string& file) const { return request_.run_dir + "/" + file; }

  std::vector<std::unique_ptr<GraphCase>> LoadSplit(const std::string& split, int64_t limit) {
    std::vector<const graphs::SuiteEntry*> entries = suite_.EntriesOf(split);
    if (entries.empty()) {
      throw ConfigError(
          "suite " + suite_.path + " has no graph in split '" + split + "'", Location{request_.config_file},
          "give a suite with train / valid / test splits, e.g. configs/suites/regal_synthetic.yaml");
    }
    if (limit > 0 && static_cast<int64_t>(entries.size()) > limit) entries.resize(static_cast<size_t>(limit));
    std::vector<std::unique_ptr<GraphCase>> out;
    for (const graphs::SuiteEntry* entry : entries) {
      auto c = std::make_unique<GraphCase>();
      c->name = entry->name;
      c->graph = std::make_unique<graphs::Graph>(graphs::MaterializeGraph(*entry));
      c->evaluator = std::make_unique<sim::Evaluator>(*c->graph, cluster_, cost_model_,
                                                      learned::TrainingSimOptions(config_.objective.kind));
      c->tensors = RegalTensors(*c->graph, config_.policy);
      out.push_back(std::move(c));
    }
    return out;
  }

  // The BRKGA seed of sample `index` on graph `graph_index` of `split`:
  // REGAL and its uniform reference run with the same seed (paired).
  uint64_t BrkgaSeed(uint64_t split, size_t graph_index, int32_t index) const {
    return Rng::Derive(config_.seed, {0x5eed, split, graph_index, static_cast<uint64_t>(index)}).Next();
  }

  Problem MakeProblem(const GraphCase& c, uint64_t seed, int64_t evaluations) const {
    return Problem{*c.graph, cluster_, *c.evaluator, config_.objective, Budget{evaluations, 0.0}, seed};
  }

  // Uniform-BRKGA references for `seeds` on `c`, computed once (in parallel).
  void EnsureUniform(GraphCase& c, const std::vector<uint64_t>& seeds, int64_t evaluations) {
    std::vector<uint64_t> missing;
    for (uint64_t s : seeds) {
      if (!c.uniform.count(s)) missing.push_back(s);
    }
    if (missing.empty()) return;
    const std::vector<AgentResult> results =
        RunParallel(static_cast<int32_t>(missing.size()), [&](int32_t i) {
          return brkga::RunBrkga(MakeProblem(c, missing[static_cast<size_t>(i)], evaluations), config_.brkga,
                                 brkga::UniformSampler());
        });
    for (size_t i = 0; i < missing.size(); ++i) {
      c.uniform[missing[i]] = results[i].best_objective;
      evaluations_ += results[i].evaluations;
    }
  }

  // Mean relative improvement of the greedy policy over uniform BRKGA on
  // the validation graphs.
  double Validate() {
    torch::NoGradGuard no_grad;
    policy_->eval();
    double total = 0.0;
    int64_t count = 0;
    for (size_t g = 0; g < valid_.size(); ++g) {
      GraphCase& c = *valid_[g];
      std::vector<uint64_t> seeds;
      for (int32_t s = 0; s < config_.valid_seeds; ++s) seeds.push_back(BrkgaSeed(2, g, s));
      EnsureUniform(c, seeds, config_.brkga.evaluations);
      const std::vector<double> parameters =
          PolicyParameters(policy_->forward(c.tensors), config_.policy, config_.decode);
      const brkga::ChromosomeLayout layout = brkga::LayoutFor(MakeProblem(c, 0, 0), config_.brkga);
      const brkga::BetaSampler sampler = MakeSampler(parameters, config_.policy, layout);
      const std::vector<AgentResult> results =
          RunParallel(static_cast<int32_t>(seeds.size()), [&](int32_t i) {
            return brkga::RunBrkga(MakeProblem(c, seeds[static_cast<size_t>(i)], config_.brkga.evaluations),
                                   config_.brkga, sampler);
          });
      for (size_t i = 0; i < seeds.size(); ++i) {
        total += RelativeImprovement(c.uniform[seeds[i]], results[i].best_objective);
        evaluations_ += results[i].evaluations;
        ++count;
      }
    }
    policy_->train();
    return count > 0 ? total / static_cast<double>(count) : 0.0;
  }

  void SaveState(const std::string& file, int64_t step) {
    TrainingState state;
    state.step = step;
    state.rng = Rng::Derive(config_.seed, {static_cast<uint64_t>(step), 1}).state();
    state.scalars = {{"evaluations", static_cast<double>(evaluations_)},
                     {"wall_seconds", wall_seconds_},
                     {"best_valid", best_valid_},
                     {"last_valid", last_valid_},
                     {"best_objective", best_objective_}};
    SaveCheckpoint(RunPath(file), kRegalCheckpoint, config_.policy.Signature(), *policy_, optimizer_.get(),
                   state);
  }

  void Train() {
    torch::manual_seed(config_.seed);
    policy_ = RegalPolicy(config_.policy);
    optimizer_ = std::make_unique<torch::optim::Adam>(policy_->parameters(),
                                                      torch::optim::AdamOptions(config_.learning_rate));
    const std::string checkpoint = RunPath("checkpoint.pt");
    int64_t step = 0;
    if (FileExists(checkpoint) && !request_.resume) {
      throw ConfigError("run folder " + request_.run_dir + " already holds a checkpoint",
                        Location{checkpoint},
                        "pass --resume to continue that run, or choose another --run-dir");
    }
    if (request_.resume && FileExists(checkpoint)) {
      const TrainingState state = LoadCheckpoint(checkpoint, kRegalCheckpoint, config_.policy.Signature(),
                                                 *policy_, optimizer_.get());
      step = state.step;
      evaluations_ = static_cast<int64_t>(state.scalars.at("evaluations"));
      wall_seconds_ = state.scalars.at("wall_seconds");
      best_valid_ = state.scalars.at("best_valid");
      last_valid_ = state.scalars.at("last_valid");
      best_objective_ = state.scalars.at("best_objective");
      LogLine(LogLevel::kInfo, "resuming " + checkpoint + " at step " + std::to_string(step));
    }
    WriteRunConfig(request_);
    TrainingCurves curves(RunPath("curves.csv"),
                          {"uniform_objective", "valid_improvement", "entropy", "graph"},
                          request_.resume ? step : -1);
    train_ = LoadSplit("train", config_.train_graphs);
    valid_ = LoadSplit("valid", config_.valid_graphs);
    LogLine(LogLevel::kInfo, "regal: " + std::to_string(train_.size()) + " training and " +
                                 std::to_string(valid_.size()) + " validation graphs, " +
                                 std::to_string(config_.steps) + " steps");

    const size_t n = train_.size();
    int64_t done_here = 0;
    auto last_time = std::chrono::steady_clock::now();
    while (step < config_.steps && (request_.max_steps < 0 || done_here < request_.max_steps)) {
      // The graph of this step: a permutation of the training graphs per epoch.
      const uint64_t epoch = static_cast<uint64_t>(step) / n;
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t{0});
      Rng shuffle = Rng::Derive(config_.seed, {0xE90C, epoch});
      for (size_t i = n; i > 1; --i)
        std::swap(order[i - 1], order[shuffle.UniformInt(static_cast<uint64_t>(i))]);
      const size_t g = order[static_cast<size_t>(step) % n];
      GraphCase& c = *train_[g];

      std::vector<uint64_t> seeds;
      for (int32_t s = 0; s < config_.samples; ++s) seeds.push_back(BrkgaSeed(1, g, s));
      EnsureUniform(c, seeds, config_.brkga.evaluations);

      // Policy inference once, on this thread; the BRKGA runs in parallel.
      const torch::Tensor log_probs = policy_->forward(c.tensors);
      Rng rng = Rng::Derive(config_.seed, {static_cast<uint64_t>(step), 1});
      std::vector<RegalAction> actions;
      for (int32_t s = 0; s < config_.samples; ++s) actions.push_back(SampleAction(log_probs, rng));
      const brkga::ChromosomeLayout layout = brkga::LayoutFor(MakeProblem(c, 0, 0), config_.brkga);
      const std::vector<AgentResult> results = RunParallel(config_.samples, [&](int32_t s) {
        const brkga::BetaSampler sampler = MakeSampler(
            ActionParameters(actions[static_cast<size_t>(s)], config_.policy), config_.policy, layout);
        return brkga::RunBrkga(MakeProblem(c, seeds[static_cast<size_t>(s)], config_.brkga.evaluations),
                               config_.brkga, sampler);
      });
      std::vector<double> rewards;
      double uniform_mean = 0.0, best = std::numeric_limits<double>::infinity();
      for (int32_t s = 0; s < config_.samples; ++s) {
        const double u = c.uniform[seeds[static_cast<size_t>(s)]];
        rewards.push_back(RelativeImprovement(u, results[static_cast<size_t>(s)].best_objective));
        uniform_mean += u / config_.samples;
        best = std::min(best, results[static_cast<size_t>(s)].best_objective);
        evaluations_ += results[static_cast<size_t>(s)].evaluations;
      }
      const double mean_reward = std::accumulate(rewards.begin(), rewards.end(), 0.0) / config_.samples;

      // REINFORCE with the mean over the step's samples as baseline.
      std::vector<double> scores = rewards;
      if (config_.advantage_reference == "mean") {
        for (int32_t s = 0; s < config_.samples; ++s)
          scores[static_cast<size_t>(s)] =
              RelativeImprovement(uniform_mean, results[static_cast<size_t>(s)].best_objective);
      }
      const double mean_score = std::accumulate(scores.begin(), scores.end(), 0.0) / config_.samples;
      double scale = 1.0;
      if (config_.normalize_advantage) {
        double var = 0.0;
        for (double r : scores) var += (r - mean_score) * (r - mean_score) / config_.samples;
        scale = 1.0 / (std::sqrt(var) + 1e-3);
      }
      torch::Tensor loss = torch::zeros({}, torch::kFloat32);
      for (int32_t s = 0; s < config_.samples; ++s) {
        const double advantage = (scores[static_cast<size_t>(s)] - mean_score) * scale;
        loss = loss - ActionLogProb(log_probs, actions[static_cast<size_t>(s)]) *
                          static_cast<float>(advantage / config_.samples);
      }
      const torch::Tensor entropy = -(log_probs.exp() * log_probs).sum(-1).mean();
      loss = loss - entropy * config_.entropy_weight;
      optimizer_->zero_grad();
      loss.backward();
      if (config_.grad_clip > 0.0)
        torch::nn::utils::clip_grad_norm_(policy_->parameters(), config_.grad_clip);
      optimizer_->step();
      ++step;
      ++done_here;

      const auto now = std::chrono::steady_clock::now();
      wall_seconds_ += std::chrono::duration<double>(now - last_time).count();
      last_time = now;
      if (step % config_.valid_every == 0 || step == config_.steps) {
        last_valid_ = Validate();
        if (last_valid_ > best_valid_) {
          best_valid_ = last_valid_;
          SaveState("best.pt", step);
        }
        const auto after = std::chrono::steady_clock::now();
        wall_seconds_ += std::chrono::duration<double>(after - last_time).count();
        last_time = after;
        if (request_.progress) {
          std::printf("regal step %lld: validation improvement %+.3f%% (best %+.3f%%)\n",
                      static_cast<long long>(step), 100.0 * last_valid_, 100.0 * best_valid_);
          std::fflush(stdout);
        }
      }
      best_objective_ = std::min(best_objective_, best);
      curves.Append({step,
                     mean_reward,
                     best,
                     wall_seconds_,
                     evaluations_,
                     {uniform_mean, last_valid_, entropy.item<double>(), static_cast<double>(g)}});
      if (request_.progress && (step % 10 == 0 || step == config_.steps)) {
        std::printf("regal step %lld/%lld: graph %s reward %+.3f%% (%lld evaluations, %.1f s)\n",
                    static_cast<long long>(step), static_cast<long long>(config_.steps), c.name.c_str(),
                    100.0 * mean_reward, static_cast<long long>(evaluations_), wall_seconds_);
        std::fflush(stdout);
      }
      if (step % config_.checkpoint_every == 0 || step == config_.steps) SaveState("checkpoint.pt", step);
    }
    if (!FileExists(RunPath("best.pt")) && step > 0) SaveState("best.pt", step);
  }

  // REGAL's Table 1 on the test split (zero-shot): every agent with the same
  // evaluation budget, % improvement over BRKGA (the first baseline) and %
  // gap from the best any agent found, averaged over the test graphs.
  void EvaluateTable();

  const TrainRequest& request_;
  RegalTrainConfig config_;
  sim::Cluster cluster_;
  std::shared_ptr<const sim::CostModel> cost_model_;
  graphs::Suite suite_;
  std::vector<std::unique_ptr<GraphCase>> train_;
  std::vector<std::unique_ptr<GraphCase>> valid_;
  RegalPolicy policy_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  int64_t evaluations_ = 0;
  double wall_seconds_ = 0.0;
  double best_valid_ = -std::numeric_limits<double>::infinity();
  double last_valid_ = 0.0;
  double best_objective_ = std::numeric_limits<double>::infinity();
};

void RegalTrainer::EvaluateTable() {
  std::string checkpoint = config_.test_checkpoint;
  if (checkpoint == "best") checkpoint = RunPath("best.pt");
  if (checkpoint == "last") checkpoint = RunPath("checkpoint.pt");
  // Agents: the baselines as configured, then regal with the checkpoint.
  struct Entry {
    std::string label;
    std::unique_ptr<Agent> agent;
    Budget budget;
  };
  std::vector<Entry> agents;
  for (const EvalAgentSpec& spec : config_.baselines) {
    YAML::Node node = spec.options.IsMap() ? YAML::Clone(spec.options) : YAML::Node(YAML::NodeType::Map);
    YamlMap options(node, request_.config_file, spec.where);
    agents.push_back({spec.label, MakeAgent(spec.name, options), spec.budget});
  }
  {
    YAML::Node node(YAML::NodeType::Map);
    node["checkpoint"] = checkpoint;
    node["decode"] = config_.decode;
    node["population"] = config_.brkga.population;
    node["elite_fraction"] = config_.brkga.elite_fraction;
    node["mutant_fraction"] = config_.brkga.mutant_fraction;
    node["elite_bias"] = config_.brkga.elite_bias;
    YamlMap options(node, request_.config_file, "evaluate.checkpoint");
    agents.push_back({"regal", MakeAgent("regal", options), Budget{config_.test_budget, 0.0}});
  }
  const std::vector<std::unique_ptr<GraphCase>> test = LoadSplit("test", config_.test_graphs);

  // Per-(graph, agent) results, resumable: one CSV line per finished graph.
  const std::string results_path = RunPath("table1_results.csv");
  std::map<std::string, std::vector<double>> done;  // graph -> objectives (mean over seeds), seconds after
  if (FileExists(results_path)) {
    std::istringstream in(ReadFile(results_path));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string name, field;
      std::getline(fields, name, ',');
      std::vector<double> values;
      while (std::getline(fields, field, ',')) values.push_back(std::strtod(field.c_str(), nullptr));
      if (values.size() == 2 * agents.size()) done[name] = values;
    }
  } else {
    std::string header = "graph";
    for (const Entry& e : agents) header += "," + e.label;
    for (const Entry& e : agents) header += "," + e.label + "_seconds";
    WriteFileAtomic(results_path, header + "\n");
  }
  for (size_t g = 0; g < test.size(); ++g) {
    const GraphCase& c = *test[g];
    if (done.count(c.name)) continue;
    std::vector<double> values(2 * agents.size(), 0.0);
    for (size_t a = 0; a < agents.size(); ++a) {
      for (int32_t s = 0; s < config_.test_seeds; ++s) {
        Problem problem = MakeProblem(c, BrkgaSeed(3, g, s), 0);
        problem.budget = agents[a].budget;
        const auto start = std::chrono::steady_clock::now();
        const AgentResult r = agents[a].agent->Optimize(problem);
        values[a] += r.best_objective / config_.test_seeds;
        values[agents.size() + a] +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
            config_.test_seeds;
      }
    }
    std::string line = c.name;
    char buffer[64];
    for (double v : values) {
      std::snprintf(buffer, sizeof(buffer), ",%.17g", v);
      line += buffer;
    }
    AppendLine(results_path, line);
    done[c.name] = values;
    if (request_.progress) {
      std::printf("table 1: graph %zu/%zu (%s) done\n", g + 1, test.size(), c.name.c_str());
      std::fflush(stdout);
    }
  }

  // Averages over the test graphs, the reference being the first baseline
  // (BRKGA 5K in the paper's layout).
  const size_t k = agents.size();
  std::vector<double> improvement(k, 0.0), gap(k, 0.0), seconds(k, 0.0);
  std::vector<int64_t> wins(k, 0);
  int64_t graphs_counted = 0;
  for (const std::unique_ptr<GraphCase>& c : test) {
    const std::vector<double>& v = done.at(c->name);
    const double best = *std::min_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
    for (size_t a = 0; a < k; ++a) {
      improvement[a] += 100.0 * RelativeImprovement(v[0], v[a]);
      gap[a] += best > 0.0 ? 100.0 * (v[a] - best) / best : 0.0;
      seconds[a] += v[k + a];
      if (v[a] <= best) ++wins[a];
    }
    ++graphs_counted;
  }
  std::string table = "| agent | % improvement over " + agents[0].label +
                      " | % gap from best | best on graphs | mean seconds |\n";
  table += "|---|---:|---:|---:|---:|\n";
  char buffer[256];
  for (size_t a = 0; a < k; ++a) {
    std::snprintf(buffer, sizeof(buffer), "| %s | %+.2f | %.2f | %lld/%lld | %.2f |\n",
                  agents[a].label.c_str(), improvement[a] / graphs_counted, gap[a] / graphs_counted,
                  static_cast<long long>(wins[a]), static_cast<long long>(graphs_counted),
                  seconds[a] / graphs_counted);
    table += buffer;
  }
  std::snprintf(buffer, sizeof(buffer),
                "\n%lld test graphs of %s (zero-shot), cluster %s, objective %s, %d seed(s), budget %lld "
                "evaluations; checkpoint %s\n",
                static_cast<long long>(graphs_counted), config_.suite.c_str(), config_.cluster.c_str(),
                config_.objective.ToString().c_str(), config_.test_seeds,
                static_cast<long long>(config_.test_budget), checkpoint.c_str());
  table += buffer;
  WriteFileAtomic(RunPath("table1.md"), table);
  std::printf("%s", table.c_str());
}

}  // namespace

void TrainRegal(const TrainRequest& request) {
  RegalTrainer trainer(request, ParseConfig(request));
  trainer.Run();
}

void RegisterRegal(const RegisterFn& add) {
  add(
      "regal", [](YamlMap& o) { return std::make_unique<RegalAgent>(o); },
      "REGAL: BRKGA whose keys come from per-node Beta distributions a trained GNN predicts (Paliwal et al. "
      "2020); "
      "needs option checkpoint=PATH from `gosim train`");
  RegisterTrainer("regal", TrainRegal);
}

}  // namespace gosim::agents::learned
