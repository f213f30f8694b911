#include "agents/learned/go/go_agent.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "agents/learned/common/checkpoint.h"
#include "agents/learned/common/curves.h"
#include "agents/learned/common/torch_lock.h"
#include "agents/learned/common/train.h"
#include "agents/learned/common/training_options.h"
#include "agents/options_util.h"
#include "agents/search_tracker.h"
#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/log.h"
#include "core/rng.h"
#include "graphs/suite.h"
#include "sim/cost_model.h"

namespace gosim::agents::learned::go {

namespace {

constexpr uint64_t kGoStream = 0x60600001ULL;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Cost of one evaluation relative to `*reference` (set to the first feasible
// score seen); infeasible decisions cost `penalty`.
double CostOf(double score, bool feasible, double penalty, double* reference) {
  if (!feasible) return penalty;
  if (*reference <= 0.0) *reference = std::max(score, 1e-30);
  return score / *reference;
}

}  // namespace

GoModelOptions DefaultAgentModel() {
  GoModelOptions o;
  o.segment = 256;
  o.action_groups = ActionGroups::kScope;
  o.priority = false;
  o.fusion = false;
  return o;
}

GoModelOptions ParseModelOptions(YamlMap& m, const GoModelOptions& defaults) {
  GoModelOptions o = defaults;
  o.gnn.hidden = GetInt(m, "gnn_hidden", o.gnn.hidden, 1, 4096);
  o.gnn.layers = GetInt(m, "gnn_layers", o.gnn.layers, 0, 64);
  o.gnn.op_embedding = GetInt(m, "op_embedding", o.gnn.op_embedding, 1, 4096);
  o.model = GetInt(m, "model", o.model, 1, 4096);
  o.heads = GetInt(m, "attention_heads", o.heads, 1, 64);
  o.layers = GetInt(m, "layers", o.layers, 0, 64);
  o.segment = GetInt(m, "segment", o.segment, 1, int64_t{1} << 30);
  o.max_relative = GetInt(m, "max_relative", o.max_relative, 1, int64_t{1} << 20);
  o.max_devices = GetInt(m, "max_devices", o.max_devices, 1, 1024);
  o.priority_levels = GetInt(m, "priority_levels", o.priority_levels, 2, 1024);
  o.film = m.Get<bool>("film", o.film);
  o.position_frequencies = GetInt(m, "position_frequencies", o.position_frequencies, 0, 16);
  o.exploration_noise = GetDouble(m, "exploration_noise", o.exploration_noise, 0.0, 100.0);
  o.colocate = m.Get<bool>("colocate", o.colocate);
  // GetChoice gives the key's position and a did-you-mean on a bad value.
  o.action_groups = ParseActionGroups(
      GetChoice(m, "action_groups", ActionGroupsName(o.action_groups), {"none", "scope", "chunks"}));
  o.node_moves = GetDouble(m, "node_moves", o.node_moves, 0.0, 1e9);
  if (o.node_moves > 0.0 && o.action_groups == ActionGroups::kNone) {
    throw ConfigError("`node_moves` needs group-level placement: nodes move off their action group's device",
                      m.Where("node_moves"), "set `action_groups: scope` (or chunks), or drop `node_moves`");
  }
  o.temperature = GetDouble(m, "temperature", o.temperature, 0.01, 100.0);
  o.role_moves = GetDouble(m, "role_moves", o.role_moves, 0.0, 1e9);
  if (o.role_moves > 0.0 && o.action_groups != ActionGroups::kScope) {
    throw ConfigError("`role_moves` needs scope groups: a role group moves off its scope groups' devices",
                      m.Where("role_moves"), "set `action_groups: scope`, or drop `role_moves`");
  }
  o.role_calibration = m.Get<bool>("role_calibration", o.role_calibration);
  if (o.role_calibration && o.role_moves <= 0.0) {
    throw ConfigError("`role_calibration` sets the stickiness of role moves, which are off",
                      m.Where("role_calibration"), "set `role_moves: k` (k > 0), or drop `role_calibration`");
  }
  if (o.model % o.heads != 0) {
    throw ConfigError("model width " + std::to_string(o.model) + " is not a multiple of attention_heads " +
                          std::to_string(o.heads),
                      {}, "choose `model` divisible by `attention_heads`");
  }
  m.Finish();
  return o;
}

void ParseHeads(YamlMap& options, GoModelOptions* model) {
  const YAML::Node heads = options.Node("heads");
  if (!heads) return;
  if (!heads.IsSequence()) {
    throw ConfigError("`heads` must be a list", {}, "e.g. heads: [placement, priority, fusion]");
  }
  model->priority = false;
  model->fusion = false;
  bool placement = false;
  for (const YAML::Node& h : heads) {
    const std::string name = h.as<std::string>();
    if (name == "placement") {
      placement = true;
    } else if (name == "priority") {
      model->priority = true;
    } else if (name == "fusion") {
      model->fusion = true;
    } else {
      throw ConfigError("unknown GO head '" + name + "'", {}, "the heads are placement, priority and fusion");
    }
  }
  if (!placement) {
    throw ConfigError("the GO heads must include placement", {},
                      "use heads: [placement] (GDP-style) or [placement, priority, fusion]");
  }
}

PpoOptions ParsePpoOptions(YamlMap& m) {
  PpoOptions o;
  o.samples = GetInt(m, "samples", o.samples, 1, 4096);
  o.epochs = GetInt(m, "epochs", o.epochs, 1, 1000);
  o.clip = GetDouble(m, "clip", o.clip, 0.0, 10.0);
  o.learning_rate = GetDouble(m, "learning_rate", o.learning_rate, 1e-9, 10.0);
  o.entropy_weight = GetDouble(m, "entropy_weight", o.entropy_weight, 0.0, 100.0);
  o.value_weight = GetDouble(m, "value_weight", o.value_weight, 0.0, 100.0);
  o.grad_clip = GetDouble(m, "grad_clip", o.grad_clip, 0.0, 1e9);
  o.infeasible_penalty = GetDouble(m, "infeasible_penalty", o.infeasible_penalty, 1.0, 1e9);
  m.Finish();
  return o;
}

GoAgentOptions GoAgentOptions::Paper() {
  GoAgentOptions o;
  o.checkpoint.clear();
  o.model = GoModelOptions{};
  return o;
}

GoAgentOptions GoAgentOptions::Parse(YamlMap& options) {
  const std::string preset = GetChoice(options, "preset", "committed", {"committed", "paper"});
  GoAgentOptions o = preset == "paper" ? Paper() : GoAgentOptions{};
  o.checkpoint = options.Get<std::string>("checkpoint", o.checkpoint);
  // A relative path is looked up like the project's other files (working
  // directory, $GOSIM_HOME, source tree), e.g. configs/checkpoints/go.pt.
  if (!o.checkpoint.empty()) o.checkpoint = ResolveDataPath(o.checkpoint);
  o.evaluations = GetInt(options, "evaluations", o.evaluations, 0, int64_t{1} << 40);
  {
    YamlMap model = options.Child("model");
    const std::string base_shape = o.model.Signature();
    o.model = ParseModelOptions(model, o.model);
    o.shape_given = o.model.Signature() != base_shape;
  }
  ParseHeads(options, &o.model);
  {
    YamlMap ppo = options.Child("ppo");
    o.ppo = ParsePpoOptions(ppo);
  }
  o.torch_threads = GetInt(options, "torch_threads", o.torch_threads, 0, 1024);
  o.role_sweep = GetInt(options, "role_sweep", o.role_sweep, 0, int64_t{1} << 40);
  const std::string by = options.Get<std::string>("role_sweep_by", "scope");
  if (by == "name") {
    o.role_sweep_by = RoleKey::kName;
  } else if (by != "scope") {
    options.Fail("role_sweep_by", "unknown role key '" + by + "'",
                 "use scope (an op's scope without digits, the roles of role_moves) or name (its whole name "
                 "without digits: one op of each layer)");
  }
  o.warm_start = ParseWarmStart(options, "go", {});
  o.imitation_steps = GetInt(options, "imitation_steps", o.imitation_steps, 0, int64_t{1} << 20);
  if (o.warm_start.empty() != (o.imitation_steps == 0)) {
    options.Fail(o.warm_start.empty() ? "imitation_steps" : "warm_start",
                 "warm_start and imitation_steps go together",
                 "give both (e.g. warm_start: [single_device, m_etf, human_expert], imitation_steps: 20) or "
                 "neither");
  }
  o.imitation_entropy_floor =
      GetDouble(options, "imitation_entropy_floor", o.imitation_entropy_floor, 0.0, 0.999999);
  if (o.imitation_entropy_floor > 0.0 && o.imitation_steps == 0) {
    options.Fail("imitation_entropy_floor", "imitation_entropy_floor needs a warm start",
                 "give warm_start and imitation_steps too, or leave it out");
  }
  options.Finish();
  return o;
}

GoModelOptions ModelOptionsFromSignature(const std::string& signature, const std::string& source,
                                         const GoModelOptions& runtime) {
  const std::string prefix = "go/v2:";
  if (signature.rfind("go/v1:", 0) == 0) {
    throw StateError("checkpoint was written by an older version of the GO network (go/v1)", Location{source},
                     "pre-train again with `gosim train` (the network now has position inputs)");
  }
  if (signature.rfind(prefix, 0) != 0) {
    throw StateError("checkpoint is not a GO network (signature '" + signature + "')", Location{source},
                     "give a checkpoint written by `gosim train` with `agent: go`");
  }
  std::map<std::string, int64_t> values;
  std::stringstream in(signature.substr(prefix.size()));
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    values[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  auto get = [&](const char* key) {
    const auto it = values.find(key);
    if (it == values.end()) {
      throw StateError("GO checkpoint signature lacks '" + std::string(key) + "'", Location{source},
                       "re-create the checkpoint with this version of gosim");
    }
    return it->second;
  };
  GoModelOptions o = runtime;
  o.gnn.hidden = get("gnn_hidden");
  o.gnn.layers = get("gnn_layers");
  o.gnn.op_embedding = get("op_embedding");
  o.gnn.normalize = get("normalize") != 0;
  o.model = get("model");
  o.heads = get("heads");
  o.layers = get("layers");
  o.max_relative = get("max_relative");
  o.max_devices = get("max_devices");
  o.priority_levels = get("priority_levels");
  o.film = get("film") != 0;
  o.position_frequencies = get("position_frequencies");
  // The scale itself is a learned parameter of the checkpoint; any value > 0
  // marks the network as noisy.
  o.exploration_noise = get("noisy") != 0 ? 1.0 : 0.0;
  return o;
}

GoActions MoveRole(const GoGraph& graph, const GoActions& actions, int64_t role, int64_t device,
                   const RoleGrouping* roles) {
  const RoleGrouping& grouping = roles != nullptr ? *roles : graph.roles;
  GoActions out;
  out.device = actions.device.slice(0, 0, 1).masked_fill(grouping.role.unsqueeze(0) == role, device);
  if (actions.priority.defined()) out.priority = actions.priority.slice(0, 0, 1).clone();
  if (actions.fuse.defined()) {
    const torch::Tensor producer = out.device.index_select(1, graph.fuse_src);
    out.fuse = actions.fuse.slice(0, 0, 1).masked_fill(out.device != producer, 0);
  }
  return out;
}

sim::Decision DecodeDecision(const GoGraph& graph, const GoActions& actions, int64_t index) {
  const int64_t n = graph.num_nodes;
  sim::Decision d;
  d.placement.resize(static_cast<size_t>(n));
  const int64_t* device = actions.device.select(0, index).contiguous().data_ptr<int64_t>();
  for (int64_t v = 0; v < n; ++v) d.placement[static_cast<size_t>(v)] = static_cast<int32_t>(device[v]);
  if (actions.priority.defined()) {
    const torch::Tensor row = actions.priority.select(0, index).contiguous();
    const int64_t* level = row.data_ptr<int64_t>();
    d.priority.resize(static_cast<size_t>(n));
    for (int64_t v = 0; v < n; ++v) d.priority[static_cast<size_t>(v)] = static_cast<double>(level[v]);
  }
  if (actions.fuse.defined()) {
    const torch::Tensor row = actions.fuse.select(0, index).contiguous();
    const int64_t* fuse = row.data_ptr<int64_t>();
    d.fusion_group.assign(static_cast<size_t>(n), -1);
    int32_t groups = 0;
    bool any = false;
    for (int64_t v = 0; v < n; ++v) {  // topological order: the producer's group exists first
      const int64_t p = graph.fuse_producer[static_cast<size_t>(v)];
      if (fuse[v] == 0 || p < 0) continue;
      int32_t& pg = d.fusion_group[static_cast<size_t>(p)];
      if (pg < 0) pg = groups++;
      d.fusion_group[static_cast<size_t>(v)] = pg;
      any = true;
    }
    if (!any) d.fusion_group.clear();
  }
  return d;
}

PpoStats PpoUpdate(GoPolicy& policy, torch::optim::Optimizer& optimizer, const GoGraph& graph,
                   int64_t devices, const GoActions& actions, const torch::Tensor& old_log_prob,
                   const torch::Tensor& old_value, const torch::Tensor& rewards, const PpoOptions& options) {
  const int64_t k = rewards.size(0);
  torch::Tensor advantage = rewards - old_value;
  if (k > 1) advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8);
  advantage = advantage.unsqueeze(1);  // [K x 1], shared by the sample's nodes
  // The mean over a sample's actions: its nodes, or its action groups when
  // placement is grouped and the only head.
  const double per_action = 1.0 / static_cast<double>(k * policy->ActionsPerSample(graph));
  PpoStats stats;
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    // The loss is a mean over the (sample, action) pairs, so it splits
    // into per-segment sums; BackwardBySegment keeps one segment's
    // activations at a time (docs/BENCHMARKS.md, GO on the 80k-node graph).
    double entropy_sum = 0.0, clipped_count = 0.0;
    optimizer.zero_grad();
    const double loss = policy->BackwardBySegment(
        graph, devices, actions,
        [&](int64_t start, int64_t end, const torch::Tensor& log_prob, const torch::Tensor& entropy) {
          const torch::Tensor ratio = torch::exp(log_prob - old_log_prob.slice(1, start, end));
          const torch::Tensor clipped = ratio.clamp(1.0 - options.clip, 1.0 + options.clip);
          const torch::Tensor surrogate =
              torch::min(ratio * advantage, clipped * advantage).sum() * per_action;
          const torch::Tensor entropy_mean = entropy.sum() * per_action;
          entropy_sum += entropy_mean.item<double>();
          clipped_count += ((ratio - 1.0).abs() > options.clip).sum().item<double>();
          return -surrogate - options.entropy_weight * entropy_mean;
        },
        [&](const torch::Tensor& value) { return options.value_weight * (value - rewards).pow(2).mean(); });
    if (options.grad_clip > 0.0) torch::nn::utils::clip_grad_norm_(policy->parameters(), options.grad_clip);
    optimizer.step();
    stats.loss = loss;
    stats.entropy = entropy_sum;
    if (epoch == 0) stats.sampling_entropy = entropy_sum;
    stats.clipped_fraction = clipped_count * per_action;
  }
  return stats;
}

namespace {

// The network of `options`: the checkpoint's shape (and weights) when one is
// given, else a fresh network seeded by `seed`.
GoPolicy BuildPolicy(const GoAgentOptions& options, uint64_t seed) {
  GoModelOptions model = options.model;
  if (!options.checkpoint.empty()) {
    const std::string signature = ReadCheckpointSignature(options.checkpoint, kGoCheckpoint);
    // The shape is the checkpoint's; the runtime settings stay the agent's.
    model = ModelOptionsFromSignature(signature, options.checkpoint, model);
    if (options.shape_given && model.Signature() != options.model.Signature()) {
      throw ConfigError(
          "the GO options set a network shape (model: {...}) other than the checkpoint's (" + signature + ")",
          Location{options.checkpoint},
          "a checkpoint brings its own shape: drop the shape keys, or set checkpoint: \"\" "
          "for a fresh network of that shape");
    }
  }
  torch::manual_seed(seed);
  GoPolicy policy(model);
  if (!options.checkpoint.empty())
    LoadCheckpoint(options.checkpoint, kGoCheckpoint, model.Signature(), *policy, nullptr);
  return policy;
}

// The actions that place each action group on the device most of its ops
// have in `decision` (ties: the lower device; per node without groups),
// every role staying, the other heads as in `greedy` (a [1 x n] greedy
// output of the same network), zero exploration noise: what imitation
// maximizes the likelihood of.
GoActions ImitationTarget(const GoPolicyImpl& policy, const GoGraph& graph, const ActionGrouping* grouping,
                          const GoActions& greedy, const sim::Decision& decision, int64_t devices) {
  const int64_t n = graph.num_nodes;
  GoActions t = greedy;
  std::vector<int64_t> device(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    const int32_t d = decision.placement[static_cast<size_t>(v)];
    device[static_cast<size_t>(v)] = std::clamp<int64_t>(d, 0, devices - 1);
  }
  if (grouping != nullptr) {
    const torch::Tensor group_of = grouping->group.contiguous();
    const int64_t* group = group_of.data_ptr<int64_t>();
    std::vector<int64_t> count(static_cast<size_t>(grouping->count * devices), 0);
    for (int64_t v = 0; v < n; ++v)
      ++count[static_cast<size_t>(group[v] * devices + device[static_cast<size_t>(v)])];
    std::vector<int64_t> group_device(static_cast<size_t>(grouping->count), 0);
    for (int64_t g = 0; g < grouping->count; ++g) {
      const auto begin = count.begin() + g * devices;
      group_device[static_cast<size_t>(g)] = std::max_element(begin, begin + devices) - begin;
    }
    for (int64_t v = 0; v < n; ++v)
      device[static_cast<size_t>(v)] = group_device[static_cast<size_t>(group[v])];
    t.group = torch::tensor(group_device, torch::kInt64).unsqueeze(0);
  }
  t.device = torch::tensor(device, torch::kInt64).unsqueeze(0);
  if (t.role.defined()) t.role = torch::full_like(t.role, policy.options().max_devices);
  if (policy.options().exploration_noise > 0.0)
    t.place_noise = torch::zeros({1, policy.options().max_devices, policy.NoiseWidth(graph)});
  return t;
}

class GoAgent : public Agent {
 public:
  explicit GoAgent(YamlMap& options) : options_(GoAgentOptions::Parse(options)) {}
  std::string name() const override { return "go"; }
  AgentResult Optimize(const Problem& problem, const ProgressFn& progress) override {
    const auto lock = LockTorch();  // one LibTorch agent at a time (torch_lock.h)
    return RunGo(problem, options_, progress);
  }

 private:
  GoAgentOptions options_;
};

}  // namespace

AgentResult RunGo(const Problem& problem, const GoAgentOptions& options, const ProgressFn& progress) {
  SearchTracker tracker(problem, progress, std::max<int64_t>(1, options.evaluations));
  if (options.torch_threads > 0) torch::set_num_threads(static_cast<int>(options.torch_threads));
  Rng rng = Rng::Derive(problem.seed, {kGoStream});
  GoPolicy policy = BuildPolicy(options, rng.Next());
  const int64_t devices = problem.cluster.num_devices();
  GoGraph graph = MakeGoGraph(problem.graph);
  const ActionGrouping* grouping = policy->Grouping(graph);
  const RoleGrouping* roles = policy->Roles(graph);

  // Zero-shot: one forward pass, the most likely action of every head.
  const auto start = std::chrono::steady_clock::now();
  GoOutput greedy;
  {
    torch::NoGradGuard no_grad;
    greedy = policy->forward(graph, devices, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
  }
  const double forward_seconds = Seconds(start);
  if (options.model.role_calibration) policy->CalibrateRoles(&graph, greedy.actions, devices);
  const sim::Decision zero_shot = DecodeDecision(graph, greedy.actions, 0);
  const sim::Evaluation zero_eval = tracker.Evaluate(zero_shot);
  const double zero_objective = tracker.Score(zero_eval);
  double reference = 0.0;
  CostOf(zero_objective, zero_eval.feasible, options.ppo.infeasible_penalty, &reference);

  // Warm start by imitation: the seeds' decisions are evaluated, then each
  // as GO can express it (every action group on the device most of its ops
  // have; all charged). When the best of those beats the zero-shot decision,
  // the network learns it and the sweep and PPO start from its greedy
  // decision.
  double imitation_target = zero_objective, imitation_greedy = zero_objective, imitation_agreement = 0.0;
  double entropy_before = 0.0;  // the network's mean entropy per action before imitation
  int64_t imitation_steps = 0;
  if (options.imitation_steps > 0 && !tracker.Done()) {
    const WarmStartResult seeds = RunWarmStart("go", options.warm_start, problem, tracker.Remaining());
    RecordWarmStart(seeds, tracker);
    GoActions target;
    double best = zero_eval.feasible ? zero_objective : std::numeric_limits<double>::infinity();
    for (const WarmStartSeed& seed : seeds.seeds) {
      if (tracker.Done()) break;
      GoActions projected =
          ImitationTarget(*policy, graph, grouping, greedy.actions, seed.result.best, devices);
      const sim::Evaluation e = tracker.Evaluate(DecodeDecision(graph, projected, 0));
      if (!e.feasible) continue;
      if (const double score = tracker.Score(e); score < best) {
        best = score;
        target = std::move(projected);
      }
    }
    if (target.device.defined() && !tracker.Done()) {
      imitation_target = best;
      torch::optim::Adam optimizer(policy->parameters(),
                                   torch::optim::AdamOptions(options.ppo.learning_rate));
      const double per_action = 1.0 / static_cast<double>(policy->ActionsPerSample(graph));
      // Each step's pass also gives the entropy of the policy before the
      // step: the floor stops imitation before a step would start below it.
      for (; imitation_steps < options.imitation_steps; ++imitation_steps) {
        optimizer.zero_grad();
        double entropy = 0.0;
        policy->BackwardBySegment(
            graph, devices, target,
            [&](int64_t, int64_t, const torch::Tensor& log_prob, const torch::Tensor& node_entropy) {
              entropy += node_entropy.sum().item<double>() * per_action;
              return -log_prob.sum() * per_action;
            },
            [](const torch::Tensor& value) { return value.sum() * 0.0; });
        if (imitation_steps == 0) entropy_before = entropy;
        if (entropy < options.imitation_entropy_floor * entropy_before) break;
        if (options.ppo.grad_clip > 0.0)
          torch::nn::utils::clip_grad_norm_(policy->parameters(), options.ppo.grad_clip);
        optimizer.step();
      }
      {
        torch::NoGradGuard no_grad;
        greedy = policy->forward(graph, devices, 1, GoPolicyImpl::Mode::kGreedy, nullptr);
      }
      imitation_greedy = tracker.Score(tracker.Evaluate(DecodeDecision(graph, greedy.actions, 0)));
      // The fraction of actions (groups, or nodes without groups) the greedy
      // decision now takes as the target does.
      const torch::Tensor& want = grouping != nullptr ? target.group : target.device;
      const torch::Tensor& got = grouping != nullptr ? greedy.actions.group : greedy.actions.device;
      imitation_agreement = got.eq(want).to(torch::kDouble).mean().item<double>();
    }
  }

  // The role sweep: single role moves from the zero-shot decision (after
  // imitation, from the imitating network's greedy one), the network's
  // likeliest first.
  int64_t swept = 0;
  double sweep_best = zero_objective;
  if (options.role_sweep > 0 && !tracker.Done()) {
    // Name-keyed roles are built here, only for a sweep that uses them.
    RoleGrouping name_roles;
    if (options.role_sweep_by == RoleKey::kName)
      name_roles = MakeRoleGrouping(problem.graph, graph.scope_actions, RoleKey::kName);
    const RoleGrouping& sweep_roles = options.role_sweep_by == RoleKey::kName ? name_roles : graph.roles;
    std::vector<GoPolicyImpl::RoleMove> moves =
        policy->RankRoleMoves(graph, greedy.actions.device, devices, &sweep_roles);
    moves.resize(std::min<size_t>(
        moves.size(), static_cast<size_t>(std::min<int64_t>(options.role_sweep, tracker.Remaining()))));
    std::vector<sim::Decision> decisions;
    for (const GoPolicyImpl::RoleMove& move : moves)
      decisions.push_back(
          DecodeDecision(graph, MoveRole(graph, greedy.actions, move.role, move.device, &sweep_roles), 0));
    std::vector<sim::Evaluation> evaluations(decisions.size());
    if (!decisions.empty()) tracker.EvaluateBatch(decisions, evaluations);
    for (const sim::Evaluation& e : evaluations) {
      if (e.feasible) sweep_best = std::min(sweep_best, tracker.Score(e));
    }
    swept = static_cast<int64_t>(decisions.size());
  }

  // Fine-tuning with PPO while the budget lasts.
  int64_t ppo_steps = 0;
  double first_cost = 0.0, last_cost = 0.0, first_entropy = 0.0, last_entropy = 0.0;
  if (!tracker.Done()) {
    torch::optim::Adam optimizer(policy->parameters(), torch::optim::AdamOptions(options.ppo.learning_rate));
    std::vector<sim::Decision> decisions;
    std::vector<sim::Evaluation> evaluations;
    // Without a feasible decision, the last evaluations go to the repair
    // (RescueInfeasible below; docs/AGENTS.md, "GO").
    const int64_t reserve = RescueReserve(tracker.budget_evaluations());
    while (!tracker.Done()) {
      const bool rescue = !tracker.best_evaluation().feasible && reserve > 0;
      const int64_t k = std::min<int64_t>(options.ppo.samples, tracker.Remaining() - (rescue ? reserve : 0));
      if (k <= 0) break;
      GoOutput sampled;
      {
        torch::NoGradGuard no_grad;
        sampled = policy->forward(graph, devices, k, GoPolicyImpl::Mode::kSample, &rng);
      }
      decisions.clear();
      for (int64_t i = 0; i < k; ++i) decisions.push_back(DecodeDecision(graph, sampled.actions, i));
      evaluations.assign(static_cast<size_t>(k), sim::Evaluation{});
      tracker.EvaluateBatch(decisions, evaluations);
      std::vector<float> rewards(static_cast<size_t>(k));
      double mean_cost = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const sim::Evaluation& e = evaluations[static_cast<size_t>(i)];
        const double cost = CostOf(tracker.Score(e), e.feasible, options.ppo.infeasible_penalty, &reference);
        rewards[static_cast<size_t>(i)] = static_cast<float>(-std::log(cost));
        mean_cost += cost / static_cast<double>(k);
      }
      if (ppo_steps == 0) first_cost = mean_cost;
      last_cost = mean_cost;
      if (k >= 2) {
        const PpoStats stats = PpoUpdate(policy, optimizer, graph, devices, sampled.actions, sampled.log_prob,
                                         sampled.value, torch::tensor(rewards), options.ppo);
        if (ppo_steps == 0) first_entropy = stats.sampling_entropy;
        last_entropy = stats.sampling_entropy;
      }
      ++ppo_steps;
    }
  }
  const int64_t before_rescue = tracker.evaluations();
  const bool rescued = !tracker.best_evaluation().feasible && RescueInfeasible("go", tracker);
  return tracker.Finish({{"zero_shot_objective", zero_objective},
                         {"rescued", rescued ? 1.0 : 0.0},
                         {"evaluations_before_rescue", static_cast<double>(before_rescue)},
                         {"zero_shot_feasible", zero_eval.feasible ? 1.0 : 0.0},
                         {"forward_seconds", forward_seconds},
                         {"ppo_steps", static_cast<double>(ppo_steps)},
                         {"first_mean_cost", first_cost},
                         {"last_mean_cost", last_cost},
                         {"first_entropy", first_entropy},
                         {"last_entropy", last_entropy},
                         {"action_groups", static_cast<double>(grouping != nullptr ? grouping->count : 0)},
                         {"role_groups", static_cast<double>(roles != nullptr ? roles->count : 0)},
                         {"role_sweep_evaluations", static_cast<double>(swept)},
                         {"role_sweep_best_objective", sweep_best},
                         {"imitation_target_objective", imitation_target},
                         {"imitation_greedy_objective", imitation_greedy},
                         {"imitation_agreement", imitation_agreement},
                         {"imitation_steps", static_cast<double>(imitation_steps)},
                         {"imitation_entropy_before", entropy_before}});
}

// ---------------------------------------------------------------------------
// Pre-training: `gosim train` with `agent: go`.

namespace {

struct GoTrainConfig {
  std::string name = "go_train";
  std::string suite;
  // Every training graph is trained on each; the evaluators refer to these.
  std::vector<sim::Cluster> clusters;
  std::string cost_model = "roofline";
  ObjectiveKind objective = ObjectiveKind::kStepTime;
  int64_t train_graphs = 0;  // 0: the whole train split
  uint64_t seed = 0;
  int64_t steps = 100;  // PPO steps, one training graph each (round robin)
  int64_t checkpoint_every = 10;
  int64_t torch_threads = 1;
  GoModelOptions model;
  PpoOptions ppo;
};

GoTrainConfig ParseTrainConfig(const TrainRequest& request) {
  YamlMap m = YamlMap::Root(request.config, request.config_file);
  GoTrainConfig c;
  m.Require<std::string>("agent");
  c.name = m.Get<std::string>("name", c.name);
  m.Get<std::string>("output", "");
  c.suite = m.Require<std::string>("suite");
  // `cluster`: one preset (or file) or a list of them; default p100x4_pcie.
  // Loaded here, so that a bad name is reported at its position.
  const YAML::Node node = m.Node("cluster");
  const std::string path = m.ChildPath("cluster");
  auto load = [&](const YAML::Node& item, const std::string& item_path) {
    const std::string name = YamlAs<std::string>(item, m.file(), item_path);
    try {
      c.clusters.push_back(sim::LoadCluster(name));
    } catch (const Error& e) {
      throw ConfigError(e.message(), YamlLocation(item, m.file(), item_path), e.hint());
    }
  };
  if (!node || node.IsNull()) {
    c.clusters.push_back(sim::LoadCluster("p100x4_pcie"));
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) load(node[i], path + "[" + std::to_string(i) + "]");
    if (c.clusters.empty()) {
      m.Fail("cluster", "the list of clusters is empty",
             "name a cluster preset or a list of them, e.g. [p100x4_pcie, dgx1_v100]");
    }
  } else {
    load(node, path);
  }
  c.cost_model = m.Get<std::string>("cost_model", c.cost_model);
  c.objective = ParseObjectiveKind(m.Get<std::string>("objective", "step_time"));
  c.train_graphs = GetInt(m, "train_graphs", c.train_graphs, 0, int64_t{1} << 30);
  c.seed = static_cast<uint64_t>(GetInt(m, "seed", 0, 0, int64_t{1} << 62));
  c.steps = GetInt(m, "steps", c.steps, 0, int64_t{1} << 40);
  c.checkpoint_every = GetInt(m, "checkpoint_every", c.checkpoint_every, 1, int64_t{1} << 40);
  c.torch_threads = GetInt(m, "torch_threads", c.torch_threads, 1, 1024);
  {
    YamlMap model = m.Child("model");
    c.model = ParseModelOptions(model);
    if (c.model.role_calibration) {
      throw ConfigError(
          "`role_calibration` calibrates a pre-trained network on one graph; pre-training has none",
          model.Where("role_calibration"),
          "drop it here and set it in the fine-tuning agent's `model` options");
    }
  }
  ParseHeads(m, &c.model);
  {
    YamlMap ppo = m.Child("ppo");
    c.ppo = ParsePpoOptions(ppo);
  }
  m.Finish();
  return c;
}

// One training item: a graph of the train split on one of the clusters.
struct TrainGraph {
  std::string name;
  std::shared_ptr<const graphs::Graph> graph;
  const sim::Cluster* cluster = nullptr;
  int64_t devices = 0;
  std::unique_ptr<sim::Evaluator> evaluator;
  GoGraph inputs;
  double reference = 0.0;
  double best_cost = 1e300;
};

void TrainGo(const TrainRequest& request) {
  const GoTrainConfig config = ParseTrainConfig(request);
  torch::set_num_threads(static_cast<int>(config.torch_threads));
  const std::vector<sim::Cluster>& clusters = config.clusters;
  const std::shared_ptr<const sim::CostModel> cost_model =
      sim::MakeCostModel(config.cost_model, {}, request.config_file);
  const graphs::Suite suite = graphs::LoadSuite(config.suite);
  std::vector<const graphs::SuiteEntry*> entries = suite.EntriesOf("train");
  if (entries.empty()) {
    throw ConfigError("suite " + suite.path + " has no graph in split 'train'", Location{request.config_file},
                      "give a suite with a train split, e.g. configs/suites/paper.yaml");
  }
  if (config.train_graphs > 0 && static_cast<int64_t>(entries.size()) > config.train_graphs) {
    entries.resize(static_cast<size_t>(config.train_graphs));
  }
  const auto run_path = [&](const std::string& file) { return request.run_dir + "/" + file; };
  const std::string checkpoint = run_path("checkpoint.pt");
  if (FileExists(checkpoint) && !request.resume) {
    throw ConfigError("run folder " + request.run_dir + " already holds a checkpoint", Location{checkpoint},
                      "pass --resume to continue that run, or choose another --run-dir");
  }
  std::vector<TrainGraph> train;  // round robin: each graph on each cluster in turn
  for (const graphs::SuiteEntry* entry : entries) {
    const auto graph = std::make_shared<const graphs::Graph>(graphs::MaterializeGraph(*entry));
    const GoGraph inputs = MakeGoGraph(*graph);
    for (const sim::Cluster& cluster : clusters) {
      TrainGraph g;
      g.name = clusters.size() > 1 ? entry->name + "@" + cluster.name() : entry->name;
      g.graph = graph;
      g.cluster = &cluster;
      g.devices = cluster.num_devices();
      g.evaluator = std::make_unique<sim::Evaluator>(*graph, cluster, cost_model,
                                                     learned::TrainingSimOptions(config.objective));
      g.inputs = inputs;
      train.push_back(std::move(g));
    }
  }
  Rng rng = Rng::Derive(config.seed, {kGoStream, 1});
  torch::manual_seed(rng.Next());
  GoPolicy policy(config.model);
  torch::optim::Adam optimizer(policy->parameters(), torch::optim::AdamOptions(config.ppo.learning_rate));
  TrainingState state;
  int64_t evaluations = 0;
  double wall_before = 0.0;
  if (request.resume && FileExists(checkpoint)) {
    state = LoadCheckpoint(checkpoint, kGoCheckpoint, config.model.Signature(), *policy, &optimizer);
    rng.set_state(state.rng);
    evaluations = static_cast<int64_t>(state.scalars.at("evaluations"));
    wall_before = state.scalars.at("wall_seconds");
    for (size_t i = 0; i < train.size(); ++i) {
      const auto ref = state.scalars.find("reference/" + std::to_string(i));
      if (ref != state.scalars.end()) train[i].reference = ref->second;
      const auto best = state.scalars.find("best/" + std::to_string(i));
      if (best != state.scalars.end()) train[i].best_cost = best->second;
    }
    LogLine(LogLevel::kInfo, "go: resuming " + checkpoint + " at step " + std::to_string(state.step));
  }
  learned::WriteRunConfig(request);
  TrainingCurves curves(run_path("curves.csv"), {"graph", "mean_cost", "feasible_fraction", "entropy"},
                        request.resume ? state.step : -1);
  const Objective objective{.kind = config.objective};
  const auto start = std::chrono::steady_clock::now();
  auto save = [&]() {
    state.rng = rng.state();
    state.scalars["evaluations"] = static_cast<double>(evaluations);
    state.scalars["wall_seconds"] = wall_before + Seconds(start);
    for (size_t i = 0; i < train.size(); ++i) {
      state.scalars["reference/" + std::to_string(i)] = train[i].reference;
      state.scalars["best/" + std::to_string(i)] = train[i].best_cost;
    }
    SaveCheckpoint(checkpoint, kGoCheckpoint, config.model.Signature(), *policy, &optimizer, state);
  };
  int64_t steps_here = 0;
  std::vector<sim::Decision> decisions;
  std::vector<sim::Evaluation> results;
  while (state.step < config.steps && (request.max_steps < 0 || steps_here < request.max_steps)) {
    TrainGraph& g = train[static_cast<size_t>(state.step) % train.size()];
    const int64_t k = config.ppo.samples;
    GoOutput sampled;
    {
      torch::NoGradGuard no_grad;
      sampled = policy->forward(g.inputs, g.devices, k, GoPolicyImpl::Mode::kSample, &rng);
    }
    decisions.clear();
    for (int64_t i = 0; i < k; ++i) decisions.push_back(DecodeDecision(g.inputs, sampled.actions, i));
    results.assign(static_cast<size_t>(k), sim::Evaluation{});
    g.evaluator->EvaluateBatch(decisions, results);
    evaluations += k;
    std::vector<float> rewards(static_cast<size_t>(k));
    double mean_cost = 0.0, feasible = 0.0;
    for (int64_t i = 0; i < k; ++i) {
      const sim::Evaluation& e = results[static_cast<size_t>(i)];
      const double cost =
          CostOf(objective.Score(e, *g.cluster), e.feasible, config.ppo.infeasible_penalty, &g.reference);
      g.best_cost = std::min(g.best_cost, cost);
      rewards[static_cast<size_t>(i)] = static_cast<float>(-std::log(cost));
      mean_cost += cost / static_cast<double>(k);
      feasible += e.feasible ? 1.0 / static_cast<double>(k) : 0.0;
    }
    const PpoStats stats = PpoUpdate(policy, optimizer, g.inputs, g.devices, sampled.actions,
                                     sampled.log_prob, sampled.value, torch::tensor(rewards), config.ppo);
    ++state.step;
    ++steps_here;
    TrainingPoint point;
    point.step = state.step;
    point.reward = -std::log(mean_cost);
    point.best_objective = g.best_cost;
    point.wall_seconds = wall_before + Seconds(start);
    point.evaluations = evaluations;
    point.extra = {static_cast<double>(static_cast<size_t>(state.step - 1) % train.size()), mean_cost,
                   feasible, stats.entropy};
    curves.Append(point);
    if (request.progress) {
      std::printf("go step %lld/%lld graph %s mean cost %.4f (x reference) feasible %.2f entropy %.3f\n",
                  static_cast<long long>(state.step), static_cast<long long>(config.steps), g.name.c_str(),
                  mean_cost, feasible, stats.entropy);
      std::fflush(stdout);
    }
    if (state.step % config.checkpoint_every == 0 || state.step == config.steps) save();
  }
  if (steps_here == 0 && !FileExists(checkpoint)) save();
}

}  // namespace

void RegisterGo(const RegisterFn& add) {
  add(
      "go", [](YamlMap& o) { return std::make_unique<GoAgent>(o); },
      "GO: GraphSAGE + segment-recurrent attention policy for placement, priority and fusion, PPO (Zhou et "
      "al. "
      "2020)");
  RegisterTrainer("go", TrainGo);
}

}  // namespace gosim::agents::learned::go
