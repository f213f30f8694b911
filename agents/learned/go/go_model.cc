#include "agents/learned/go/go_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agents/learned/common/features.h"
#include "agents/learned/common/parallel_linear.h"
#include "agents/learned/go/fused_attention.h"
#include "core/error.h"
#include "graphs/op_class.h"

namespace gosim::agents::learned::go {

namespace F = torch::nn::functional;

std::string GoModelOptions::Signature() const {
  auto kv = [](const char* key, int64_t value) { return std::string(key) + "=" + std::to_string(value); };
  return "go/v2:" + kv("gnn_hidden", gnn.hidden) + "," + kv("gnn_layers", gnn.layers) + "," +
         kv("op_embedding", gnn.op_embedding) + "," + kv("normalize", gnn.normalize ? 1 : 0) + "," +
         kv("features", kNumNodeFeatures) + "," + kv("op_classes", graphs::kNumOpClasses) + "," +
         kv("model", model) + "," + kv("heads", heads) + "," + kv("layers", layers) + "," +
         kv("max_relative", max_relative) + "," + kv("max_devices", max_devices) + "," +
         kv("priority_levels", priority_levels) + "," + kv("film", film ? 1 : 0) + "," +
         kv("position_frequencies", position_frequencies) + "," +
         kv("noisy", exploration_noise > 0.0 ? 1 : 0);
}

RecurrentAttentionImpl::RecurrentAttentionImpl(int64_t model, int64_t heads, int64_t max_relative)
    : model_(model), heads_(heads), max_relative_(max_relative) {
  if (heads <= 0 || model % heads != 0) {
    throw ConfigError("GO attention width " + std::to_string(model) + " is not a multiple of heads " +
                          std::to_string(heads),
                      {}, "choose `model` divisible by `heads`");
  }
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({model})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({model})));
  qkv_ = register_module("qkv", torch::nn::Linear(model, 3 * model));
  out_ = register_module("out", torch::nn::Linear(model, model));
  ff1_ = register_module("ff1", torch::nn::Linear(model, 2 * model));
  ff2_ = register_module("ff2", torch::nn::Linear(2 * model, model));
  relative_bias_ = register_parameter("relative_bias", torch::zeros({heads, max_relative}));
}

// Scores [B x H x L x (M + L)] of queries q [B x H x L x dh] against keys
// k [B x H x (M + L) x dh]: scaled dot products plus the relative-position
// bias of distance (M + i) - j, with keys after the query masked out.
torch::Tensor RecurrentAttentionImpl::Scores(const torch::Tensor& q, const torch::Tensor& k, int64_t m,
                                             int64_t l) {
  const int64_t dh = model_ / heads_;
  // The bias [H x L x (M + L)] of query i and key j depends on the distance
  // d = M + i - j alone: bias[i][j] = f(d), f(d) = relative_bias[min(d,
  // max_relative - 1)], and -inf for d < 0 (a key after the query). It is
  // built from f over d = -(L - 1) .. M + L - 1 as a sliding window (row i
  // is f from d = i - L + 1 up, reversed), so that its backward accumulates
  // windows instead of scattering H x L x (M + L) single numbers into the
  // parameter. The mask goes into the bias, not into the scores [B x H x L x
  // (M + L)]: one broadcast add over the batch instead of an add, a scale
  // and a masked copy, and the scale goes on q, B x H x L x dh numbers. The
  // same function as before: a masked key gets -inf, and no gradient.
  const torch::Tensor distances = torch::arange(m + l, torch::kInt64).clamp_max(max_relative_ - 1);
  const torch::Tensor f = torch::cat({torch::full({heads_, l - 1}, -std::numeric_limits<float>::infinity()),
                                      relative_bias_.index_select(1, distances)},
                                     1);                        // [H x (M + 2L - 1)]
  const torch::Tensor bias = f.unfold(1, m + l, 1).flip({-1});  // [H x L x (M + L)]
  return torch::matmul(q * (1.0 / std::sqrt(static_cast<double>(dh))), k.transpose(-1, -2)) +
         bias.unsqueeze(0);
}

// The projection below is written out again in forward(): a shared helper
// returning the queries, keys, values and weights, the same operations,
// measured 110 ms against 79 in BM_GoAttention/16 (2026-11-26), so the two
// copies stay.
torch::Tensor RecurrentAttentionImpl::AttentionWeights(const torch::Tensor& x, const torch::Tensor& memory) {
  const int64_t b = x.size(0), l = x.size(1);
  const int64_t m = memory.defined() ? memory.size(1) : 0;
  const torch::Tensor ctx = m > 0 ? torch::cat({memory, x}, 1) : x;
  const torch::Tensor qkv = qkv_(norm1_(ctx));
  const int64_t dh = model_ / heads_;
  auto split = [&](int64_t part, int64_t from, int64_t len) {
    return qkv.slice(2, part * model_, (part + 1) * model_)
        .slice(1, from, from + len)
        .view({b, len, heads_, dh})
        .transpose(1, 2);
  };
  return torch::softmax(Scores(split(0, m, l), split(1, 0, m + l), m, l), -1);
}

torch::Tensor RecurrentAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                              const torch::Tensor& gamma, const torch::Tensor& beta,
                                              bool fused) {
  const int64_t b = x.size(0), l = x.size(1);
  const int64_t m = memory.defined() ? memory.size(1) : 0;
  const int64_t dh = model_ / heads_;
  // The fused path's linear layers split their rows over torch's threads.
  auto linear = [fused](torch::nn::Linear& layer, const torch::Tensor& in) {
    return RunLinear(layer, in, fused);
  };
  const torch::Tensor ctx = m > 0 ? torch::cat({memory, x}, 1) : x;
  const torch::Tensor qkv = linear(qkv_, norm1_(ctx));  // [B x (M + L) x 3d]
  auto split = [&](int64_t part, int64_t from, int64_t len) {
    return qkv.slice(2, part * model_, (part + 1) * model_)
        .slice(1, from, from + len)
        .view({b, len, heads_, dh})
        .transpose(1, 2);
  };
  torch::Tensor attended;
  if (fused) {
    attended = FusedRelativeAttention(qkv, heads_, m, relative_bias_);  // [B x L x d]
  } else {
    const torch::Tensor weights = torch::softmax(Scores(split(0, m, l), split(1, 0, m + l), m, l), -1);
    attended = torch::matmul(weights, split(2, 0, m + l)).transpose(1, 2).reshape({b, l, model_});
  }
  attended = linear(out_, attended);
  const bool film = gamma.defined();
  if (film) attended = attended * gamma.select(1, 0).unsqueeze(1) + beta.select(1, 0).unsqueeze(1);
  torch::Tensor h = x + attended;
  torch::Tensor ff = linear(ff2_, torch::relu(linear(ff1_, norm2_(h))));
  if (film) ff = ff * gamma.select(1, 1).unsqueeze(1) + beta.select(1, 1).unsqueeze(1);
  return h + ff;
}

torch::Tensor RunSegmented(RecurrentAttention& layer, const torch::Tensor& x, int64_t segment,
                           const torch::Tensor& gamma, const torch::Tensor& beta) {
  const int64_t n = x.size(1);
  if (segment <= 0 || segment >= n) return layer->forward(x, torch::Tensor(), gamma, beta);
  std::vector<torch::Tensor> outputs;
  torch::Tensor memory;
  for (int64_t start = 0; start < n; start += segment) {
    const torch::Tensor part = x.slice(1, start, std::min(n, start + segment));
    outputs.push_back(layer->forward(part, memory, gamma, beta));
    memory = part.detach();  // Transformer-XL: the cached memory is not back-propagated into
  }
  return torch::cat(outputs, 1);
}

namespace {
constexpr int64_t kTaskLayers = 3;  // placement, priority, fusion
// Full segments the placement trunk runs as one batch when it computes
// gradients on a long graph (PlacementTrunk, GoPolicyImpl::LongGraph).
constexpr int64_t kTrunkBatch = 16;
constexpr int64_t kLongGraphSegments = 64;

// Width of the position features: each raw position plus a sine and a
// cosine per frequency.
int64_t PositionWidth(const GoModelOptions& options) {
  return kGoPositions * (1 + 2 * options.position_frequencies);
}
}  // namespace

GoPolicyImpl::GoPolicyImpl(const GoModelOptions& options) : options_(options) {
  gnn_ = register_module("gnn", GraphSage(options.gnn));
  input_ =
      register_module("input", torch::nn::Linear(options.gnn.hidden + PositionWidth(options), options.model));
  for (int64_t l = 0; l < options.layers; ++l) {
    trunk_.push_back(register_module("trunk" + std::to_string(l),
                                     RecurrentAttention(options.model, options.heads, options.max_relative)));
  }
  place_layer_ =
      register_module("place_layer", RecurrentAttention(options.model, options.heads, options.max_relative));
  priority_layer_ = register_module("priority_layer",
                                    RecurrentAttention(options.model, options.heads, options.max_relative));
  fusion_layer_ =
      register_module("fusion_layer", RecurrentAttention(options.model, options.heads, options.max_relative));
  place_head_ = register_module("place_head", torch::nn::Linear(options.model, options.max_devices));
  priority_head_ =
      register_module("priority_head", torch::nn::Linear(options.model, options.priority_levels));
  fusion_head_ = register_module("fusion_head", torch::nn::Linear(options.model, 2));
  device_embedding_ =
      register_module("device_embedding", torch::nn::Embedding(options.max_devices, options.model));
  priority_embedding_ =
      register_module("priority_embedding", torch::nn::Embedding(options.priority_levels, options.model));
  // (gamma, beta) x (attention, feed-forward) x width for every attention layer.
  film_ = register_module(
      "film", torch::nn::Linear(options.gnn.hidden, (options.layers + kTaskLayers) * 4 * options.model));
  value_ = register_module("value", torch::nn::Linear(options.gnn.hidden, options.model));
  value_out_ = register_module("value_out", torch::nn::Linear(options.model, 1));
  noise_log_scale_ = register_parameter(
      "noise_log_scale", torch::full({1}, std::log(std::max(options.exploration_noise, 1e-3))));
  // Start with near-identity modulation and near-uniform heads.
  torch::NoGradGuard no_grad;
  film_->weight.mul_(0.1);
  film_->bias.zero_();
  for (torch::nn::Linear* head : {&place_head_, &priority_head_, &fusion_head_}) {
    (*head)->weight.mul_(0.1);
    (*head)->bias.zero_();
  }
}

double GoPolicyImpl::exploration_noise() const {
  return options_.exploration_noise > 0.0 ? std::exp(noise_log_scale_.item<double>()) : 0.0;
}

torch::Tensor GoPolicyImpl::NodeInputs(const GoGraph& graph, const torch::Tensor& nodes) const {
  std::vector<torch::Tensor> parts = {nodes, graph.positions};
  for (int64_t j = 0; j < options_.position_frequencies; ++j) {
    const torch::Tensor angle = graph.positions * (M_PI * std::pow(2.0, static_cast<double>(j)));
    parts.push_back(torch::sin(angle));
    parts.push_back(torch::cos(angle));
  }
  return torch::cat(parts, 1);
}

int64_t GoPolicyImpl::NoiseWidth(const GoGraph& graph) const {
  return options_.model + PositionWidth(options_) + 1 + graph.num_scope_groups1 + graph.num_scope_groups2;
}

torch::Tensor GoPolicyImpl::PlacementNoise(const GoGraph& graph, int64_t start, int64_t end,
                                           const torch::Tensor& h, const torch::Tensor& positions,
                                           const torch::Tensor& noise) {
  const int64_t d = options_.model;
  const int64_t p = PositionWidth(options_);
  // Three terms of standard deviation about 1 each: the node's normalized
  // state (zero mean, unit variance, whatever the magnitude of the residual
  // stream), its position features (a random smooth function of the scope
  // positions: whole layers move together, forward and backward alike) and
  // a per-sample device bias, and one device preference per scope group of
  // depth 1 and 2 (whole layers move together).
  const torch::Tensor state =
      F::layer_norm(h, F::LayerNormFuncOptions({d})) / std::sqrt(static_cast<double>(d));
  const torch::Tensor place = positions / std::sqrt(static_cast<double>(p));  // [L x p]
  const torch::Tensor z = torch::matmul(state, noise.slice(2, 0, d).transpose(1, 2)) +
                          torch::matmul(place.unsqueeze(0), noise.slice(2, d, d + p).transpose(1, 2)) +
                          noise.select(2, d + p).unsqueeze(1);
  const int64_t offset1 = d + p + 1, offset2 = offset1 + graph.num_scope_groups1;
  const torch::Tensor groups1 = graph.scope_group1.slice(0, start, end) + offset1;
  const torch::Tensor groups2 = graph.scope_group2.slice(0, start, end) + offset2;
  const torch::Tensor by_group =
      noise.index_select(2, groups1) + noise.index_select(2, groups2);  // [B x D x L]
  return noise_log_scale_.exp() * (z + by_group.transpose(1, 2));
}

torch::Tensor GoPolicyImpl::FilmOf(size_t layer, const torch::Tensor& graph_embedding, bool shift,
                                   int64_t batch) {
  if (!options_.film) return torch::Tensor();
  const int64_t d = options_.model;
  const torch::Tensor all = film_(graph_embedding).view({-1, 2, 2, d});  // [layers x (gamma, beta) x 2 x d]
  torch::Tensor part = all.select(0, static_cast<int64_t>(layer)).select(0, shift ? 1 : 0);  // [2 x d]
  if (!shift) part = part + 1.0;
  return part.unsqueeze(0).expand({batch, 2, d});
}

torch::Tensor GoPolicyImpl::Decide(const torch::Tensor& logits, Mode mode, Rng* rng,
                                   const torch::Tensor& given, torch::Tensor* log_prob,
                                   torch::Tensor* entropy, const torch::Tensor& weight) {
  // The policy is the softmax of logits / temperature (greedy decisions do not depend on it).
  const torch::Tensor log_p =
      torch::log_softmax(options_.temperature == 1.0 ? logits : logits / options_.temperature, -1);
  const torch::Tensor p = log_p.exp();
  // Masked actions have p = 0 and log p = -inf; zero their log p first, as
  // the gradient of p * log p there would be NaN even behind a where().
  const torch::Tensor finite_log_p = log_p.masked_fill(torch::isinf(log_p), 0.0);
  const torch::Tensor node_entropy = -(p * finite_log_p).sum(-1);
  *entropy = *entropy + (weight.defined() ? node_entropy * weight : node_entropy);
  torch::Tensor actions;
  if (mode == Mode::kGiven) {
    actions = given;
  } else if (mode == Mode::kGreedy) {
    actions = logits.argmax(-1);
  } else {
    if (rng == nullptr) throw StateError("GO: sampling needs a random generator", {}, "pass an Rng");
    const torch::Tensor probs = p.detach().contiguous();
    const int64_t k = probs.size(-1);
    const int64_t rows = probs.numel() / k;
    actions = torch::empty({probs.size(0), probs.size(1)}, torch::kInt64);
    const float* q = probs.data_ptr<float>();
    int64_t* a = actions.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const double u = rng->Uniform();
      double acc = 0.0;
      int64_t chosen = -1;
      for (int64_t j = 0; j < k; ++j) {
        const double pj = q[r * k + j];
        if (!(pj > 0.0)) continue;  // masked (or NaN)
        chosen = j;                 // last allowed action catches rounding at the top
        acc += pj;
        if (u < acc) break;
      }
      if (chosen < 0) {
        throw StateError("GO: the policy gave no valid action (non-finite probabilities)", {},
                         "lower the learning rate or check the checkpoint");
      }
      a[r] = chosen;
    }
  }
  const torch::Tensor chosen = log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1);
  *log_prob = *log_prob + (weight.defined() ? chosen * weight : chosen);
  return actions;
}

torch::Tensor GoPolicyImpl::Value(const torch::Tensor& graph_embedding, int64_t samples) {
  return value_out_(torch::tanh(value_(graph_embedding))).view({1}).expand({samples});
}

const ActionGrouping* GoPolicyImpl::Grouping(const GoGraph& graph) const {
  switch (options_.action_groups) {
    case ActionGroups::kScope:
      return &graph.scope_actions;
    case ActionGroups::kChunks:
      return &graph.chunk_actions;
    case ActionGroups::kNone:
      break;
  }
  return nullptr;
}

const RoleGrouping* GoPolicyImpl::Roles(const GoGraph& graph) const {
  if (options_.role_moves <= 0.0 || options_.action_groups != ActionGroups::kScope || graph.roles.count == 0)
    return nullptr;
  return &graph.roles;
}

int64_t GoPolicyImpl::ActionsPerSample(const GoGraph& graph) const {
  const ActionGrouping* grouping = Grouping(graph);
  if (grouping != nullptr && !options_.priority && !options_.fusion && options_.node_moves <= 0.0) {
    const RoleGrouping* roles = Roles(graph);
    return std::max<int64_t>(grouping->count + (roles != nullptr ? roles->count : 0), 1);
  }
  return std::max<int64_t>(graph.num_nodes, 1);
}

int64_t GoPolicyImpl::SegmentLength(int64_t n) const {
  return options_.segment <= 0 || options_.segment >= n ? std::max<int64_t>(n, 1) : options_.segment;
}

bool GoPolicyImpl::LongGraph(int64_t n) const {
  return n >= kLongGraphSegments * SegmentLength(n);
}

void GoPolicyImpl::PlacementTrunk(const GoGraph& graph, const torch::Tensor& nodes,
                                  const torch::Tensor& graph_embedding, const torch::Tensor& noise,
                                  const TrunkSegmentFn& on_segment) {
  const int64_t n = graph.num_nodes;
  const int64_t segment = SegmentLength(n);
  const int64_t d = options_.model;
  const size_t layers = trunk_.size();
  // Layers 0 .. layers-1: the shared trunk; layer `layers`: the placement layer.
  std::vector<torch::Tensor> gamma(layers + 1), beta(layers + 1);
  for (size_t l = 0; l <= layers; ++l) {
    gamma[l] = FilmOf(l, graph_embedding, false, 1);
    beta[l] = FilmOf(l, graph_embedding, true, 1);
  }
  // Each layer's input on the last segment run: the next segment's memory.
  std::vector<torch::Tensor> last(layers + 1);
  // Batches of segments with gradients only: they cut the backward calls
  // (PPO's update), while without gradients one segment's scores staying in
  // cache is what counts (docs/BENCHMARKS.md, "GO at 92.8k nodes").
  const int64_t batch = torch::GradMode::is_enabled() && LongGraph(n) ? kTrunkBatch : 1;
  // Long graphs only: the fused attention and the row-parallel linear
  // layers equal the unfused ones up to rounding, and every table's graph
  // keeps the unfused path bit for bit.
  const bool fused = LongGraph(n);
  // The batches: [start, end) of `count` segments (the first and a short
  // last one alone). The nodes' inputs are cut by one split, not a slice per
  // batch: each slice's backward writes a zero tensor of the whole input.
  std::vector<int64_t> starts, sizes, counts;
  for (int64_t start = 0; start < n;) {
    const int64_t count =
        start == 0 || n - start < segment ? 1 : std::min<int64_t>(batch, (n - start) / segment);
    const int64_t end = std::min(n, start + count * segment);
    starts.push_back(start);
    sizes.push_back(end - start);
    counts.push_back(count);
    start = end;
  }
  const std::vector<torch::Tensor> parts = nodes.split_with_sizes(sizes, 0);
  for (size_t part = 0; part < parts.size(); ++part) {
    const int64_t start = starts[part], end = start + sizes[part];
    const int64_t count = counts[part];
    const int64_t len = count == 1 ? end - start : segment;
    torch::Tensor x = RunLinear(input_, parts[part], fused).view({count, len, d});
    for (size_t l = 0; l <= layers; ++l) {
      RecurrentAttention& layer = l < layers ? trunk_[l] : place_layer_;
      // Segment i's memory: the input of segment i - 1, detached
      // (Transformer-XL: the cached memory is not back-propagated into).
      torch::Tensor memory;
      if (last[l].defined())
        memory = count == 1 ? last[l] : torch::cat({last[l], x.slice(0, 0, count - 1).detach()}, 0);
      torch::Tensor y = layer->forward(x, memory, gamma[l], beta[l], fused);
      last[l] = x.slice(0, count - 1, count).detach();
      x = y;
    }
    x = x.reshape({1, end - start, d});
    torch::Tensor z = RunLinear(place_head_, x, fused);  // [1 x (end - start) x max_devices]
    if (noise.defined()) {
      const torch::Tensor positions = parts[part].slice(1, options_.gnn.hidden);
      z = z + PlacementNoise(graph, start, end, x, positions, noise);  // [B x (end - start) x max_devices]
    }
    on_segment(start, end, x, z);
  }
}

GoPolicyImpl::PlacementPass GoPolicyImpl::RunPlacementPass(const GoGraph& graph,
                                                           const ActionGrouping& grouping,
                                                           const torch::Tensor& nodes,
                                                           const torch::Tensor& graph_embedding,
                                                           const torch::Tensor& noise) {
  PlacementPass pass;
  std::vector<torch::Tensor> logits;
  const int64_t segment = SegmentLength(graph.num_nodes);
  PlacementTrunk(graph, nodes, graph_embedding, noise,
                 [&](int64_t start, int64_t end, const torch::Tensor& state, const torch::Tensor& z) {
                   // One state per segment (a batch of segments is cut up).
                   if (end - start <= segment) {
                     pass.states.push_back(state);
                   } else {
                     for (int64_t from = 0; from < end - start; from += segment)
                       pass.states.push_back(state.slice(1, from, std::min(end - start, from + segment)));
                   }
                   logits.push_back(z);
                 });
  const torch::Tensor all = torch::cat(logits, 1);  // [B' x n x max_devices]
  pass.pooled =
      torch::zeros({all.size(0), grouping.count, options_.max_devices}).index_add(1, grouping.group, all) /
      grouping.size.view({1, -1, 1});
  if (Roles(graph) != nullptr) pass.node_logits = all;
  return pass;
}

torch::Tensor GoPolicyImpl::DeviceMask(int64_t devices) const {
  return devices < options_.max_devices
             ? (torch::arange(options_.max_devices, torch::kInt64) >= devices).view({1, 1, -1})
             : torch::Tensor();
}

void GoPolicyImpl::RoleLogits(const RoleGrouping& roles, const torch::Tensor& z, const torch::Tensor& home,
                              const torch::Tensor& device_mask, bool mask_noops, torch::Tensor* moves,
                              torch::Tensor* stay) const {
  const int64_t r = roles.count;
  auto pool = [&](const torch::Tensor& x) {  // [B x n (x k)] -> [B x R (x k)], the mean per role
    std::vector<int64_t> shape = x.sizes().vec();
    shape[1] = r + 1;
    std::vector<int64_t> view(shape.size(), 1);
    view[1] = r + 1;
    return (torch::zeros(shape).index_add(1, roles.role, x) / roles.size.view(view)).slice(1, 0, r);
  };
  *moves = pool(z);
  if (device_mask.defined())
    *moves = moves->masked_fill(device_mask, -std::numeric_limits<float>::infinity());
  if (mask_noops) {
    // A "move" to the device every member is on already changes nothing:
    // masked, so that the calibrated k / R counts real moves only.
    const torch::Tensor on = pool(torch::one_hot(home, options_.max_devices).to(torch::kFloat));
    *moves = moves->masked_fill(on > 0.9999F, -std::numeric_limits<float>::infinity());
  }
  *stay = pool(z.gather(2, home.unsqueeze(-1).clone()).squeeze(-1));
}

void GoPolicyImpl::RoleLogitsAt(const GoGraph& graph, const RoleGrouping& roles, const torch::Tensor& home,
                                int64_t devices, torch::Tensor* moves, torch::Tensor* stay) {
  const torch::Tensor embeddings = gnn_->forward(graph.tensors, LongGraph(graph.num_nodes));
  std::vector<torch::Tensor> logits;
  PlacementTrunk(
      graph, NodeInputs(graph, embeddings), embeddings.mean(0), torch::Tensor(),
      [&](int64_t, int64_t, const torch::Tensor&, const torch::Tensor& z) { logits.push_back(z); });
  RoleLogits(roles, torch::cat(logits, 1), home, DeviceMask(devices), /*mask_noops=*/true, moves, stay);
}

void GoPolicyImpl::CalibrateRoles(GoGraph* graph, const GoActions& home, int64_t devices) {
  const RoleGrouping* roles = Roles(*graph);
  const ActionGrouping* grouping = Grouping(*graph);
  if (roles == nullptr || grouping == nullptr || devices < 2) return;
  if (!home.group.defined() || home.group.size(1) != grouping->count) {
    throw StateError("GO: calibrating role moves needs a grouped decision of this graph", {},
                     "pass the GoActions of a forward pass on the same graph");
  }
  torch::NoGradGuard no_grad;
  torch::Tensor moves, stay;
  RoleLogitsAt(*graph, graph->roles, home.group.slice(0, 0, 1).index_select(1, grouping->group), devices,
               &moves, &stay);
  // With temperature T, P(move) = sum_d e^(moves_d / T) /
  // (sum_d e^(moves_d / T) + e^((stay + s) / T)) = p = min(k / R, 1/2).
  const double p = std::min(options_.role_moves / static_cast<double>(roles->count), 0.5);
  const double odds = (1.0 - p) / p;
  const double t = options_.temperature;
  graph->roles.stickiness = ((moves / t).logsumexp(-1) * t - stay).squeeze(0) + t * std::log(odds);
}

std::vector<GoPolicyImpl::RoleMove> GoPolicyImpl::RankRoleMoves(const GoGraph& graph,
                                                                const torch::Tensor& home, int64_t devices,
                                                                const RoleGrouping* grouping) {
  const RoleGrouping& roles = grouping != nullptr ? *grouping : graph.roles;
  if (roles.count == 0 || devices < 2) return {};
  if (home.dim() != 2 || home.size(0) != 1 || home.size(1) != graph.num_nodes) {
    throw StateError("GO: ranking role moves needs one placement of this graph [1 x n]", {},
                     "pass the device actions of a greedy pass on the same graph");
  }
  torch::NoGradGuard no_grad;
  torch::Tensor moves, stay;
  RoleLogitsAt(graph, roles, home, devices, &moves, &stay);
  const auto [best, device] = moves.squeeze(0).max(-1);  // [R]
  const torch::Tensor score = (best - stay.squeeze(0)).contiguous();
  const torch::Tensor target = device.contiguous();
  std::vector<RoleMove> out;
  for (int64_t r = 0; r < roles.count; ++r) {
    const double value = score[r].item<double>();
    if (std::isfinite(value)) out.push_back({r, target[r].item<int64_t>(), value});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RoleMove& a, const RoleMove& b) { return a.score > b.score; });
  return out;
}

void GoPolicyImpl::MoveRoles(const RoleGrouping& roles, const torch::Tensor& node_logits, int64_t devices,
                             const torch::Tensor& device_mask, Mode mode, Rng* rng, const GoActions* given,
                             GoActions* actions, torch::Tensor* log_prob, torch::Tensor* entropy) {
  const int64_t b = actions->device.size(0);
  const int64_t n = actions->device.size(1);
  const int64_t r = roles.count;
  // Per role, the members' logits pooled per device, and "stay" (column
  // max_devices): the pooled logit of each member's own (group's) device,
  // plus the stickiness s.
  torch::Tensor moves, stay;
  RoleLogits(roles, node_logits.expand({b, n, options_.max_devices}), actions->device, device_mask,
             options_.role_calibration, &moves, &stay);
  if (roles.stickiness.defined()) {
    stay = stay + roles.stickiness;
  } else {
    stay = stay + std::log(static_cast<double>(devices) *
                           std::max(static_cast<double>(r) - options_.role_moves, 1.0) / options_.role_moves);
  }
  const torch::Tensor logits = torch::cat({moves, stay.unsqueeze(-1)}, -1);  // [B x R x (max_devices + 1)]
  torch::Tensor given_roles;
  if (mode == Mode::kGiven) {
    given_roles = given->role;
    if (!given_roles.defined() || given_roles.size(0) != b || given_roles.size(1) != r) {
      throw StateError("GO: re-scoring role moves of another shape", {},
                       "pass the GoActions returned by the sampling pass");
    }
  }
  torch::Tensor role_lp = torch::zeros({b, r});
  torch::Tensor role_ent = torch::zeros({b, r});
  actions->role = Decide(logits, mode, rng, given_roles, &role_lp, &role_ent);
  // Each node's role choice ("stay" for the role-less), then its device.
  const torch::Tensor choice =
      torch::cat({actions->role, torch::full({b, 1}, options_.max_devices, torch::kInt64)}, 1)
          .index_select(1, roles.role);
  actions->device.copy_(torch::where(choice == options_.max_devices, actions->device, choice));
  log_prob->index_add_(1, roles.first, role_lp);
  entropy->index_add_(1, roles.first, role_ent);
}

void GoPolicyImpl::Stream(const GoGraph& graph, const torch::Tensor& nodes,
                          const torch::Tensor& graph_embedding, int64_t devices, int64_t samples, Mode mode,
                          Rng* rng, const GoActions* given, GoActions* actions, const SegmentFn& on_segment,
                          const PlacementPass* pass, bool whole) {
  if (devices < 1 || devices > options_.max_devices) {
    throw ConfigError("GO: the cluster has " + std::to_string(devices) +
                          " devices, the network places on at most " + std::to_string(options_.max_devices),
                      {}, "build the GO network with a larger `max_devices`");
  }
  if (mode == Mode::kGiven && given == nullptr)
    throw StateError("GO: kGiven without actions", {}, "pass actions");
  const int64_t n = graph.num_nodes;
  const int64_t b = samples;
  const int64_t d = options_.model;
  // segment <= 0 or >= n: one segment, plain causal attention over the graph.
  const int64_t segment = SegmentLength(n);
  const size_t layers = trunk_.size();
  const size_t place = layers, priority = layers + 1, fusion = layers + 2;
  // FiLM (gamma, beta) per attention layer: batch 1 in the trunk, B in the task layers.
  std::vector<torch::Tensor> gamma(layers + kTaskLayers), beta(layers + kTaskLayers);
  for (size_t l = 0; l < gamma.size(); ++l) {
    const int64_t batch = l < layers ? 1 : b;
    gamma[l] = FilmOf(l, graph_embedding, false, batch);
    beta[l] = FilmOf(l, graph_embedding, true, batch);
  }
  const torch::Tensor device_mask = DeviceMask(devices);
  actions->device = torch::empty({b, n}, torch::kInt64);
  actions->priority = options_.priority ? torch::empty({b, n}, torch::kInt64) : torch::Tensor();
  actions->fuse = options_.fusion ? torch::empty({b, n}, torch::kInt64) : torch::Tensor();
  // Exploration noise: drawn per sample here, re-used when re-scoring.
  const bool noisy = options_.exploration_noise > 0.0 && mode != Mode::kGreedy;
  if (noisy && mode == Mode::kSample && rng == nullptr)
    throw StateError("GO: sampling needs a random generator", {}, "pass an Rng");
  if (noisy) {
    if (mode == Mode::kGiven) {
      if (!given->place_noise.defined() || given->place_noise.size(0) != b ||
          given->place_noise.size(2) != NoiseWidth(graph)) {
        throw StateError("GO: re-scoring noisy decisions without their noise", {},
                         "pass the GoActions returned by the sampling pass");
      }
      actions->place_noise = given->place_noise;
    } else {
      actions->place_noise = torch::empty({b, options_.max_devices, NoiseWidth(graph)});
      float* e = actions->place_noise.data_ptr<float>();
      for (int64_t i = 0; i < actions->place_noise.numel(); ++i) e[i] = static_cast<float>(rng->Normal());
    }
  }
  const bool colocate = options_.colocate && graph.has_followers;
  auto given_part = [&](const torch::Tensor& all, int64_t from, int64_t to) {
    return mode == Mode::kGiven ? all.slice(1, from, to) : torch::Tensor();
  };
  // Per-node placement of nodes [start, end) from the placement head's
  // logits (B' = 1 or B) and states h: the sample's noise and `bonus`
  // (undefined or [B x L x max_devices]) added, devices >= `devices`
  // masked; followers then take their leader's device (the leader comes
  // first in topological order, so it is decided by now).
  auto place_nodes = [&](torch::Tensor logits, const torch::Tensor& h, int64_t start, int64_t end,
                         const torch::Tensor& bonus, torch::Tensor* log_prob, torch::Tensor* entropy) {
    if (noisy) {
      const torch::Tensor positions = nodes.slice(0, start, end).slice(1, options_.gnn.hidden);
      logits = logits + PlacementNoise(graph, start, end, h, positions, actions->place_noise);
    }
    if (bonus.defined()) logits = logits + bonus;
    if (device_mask.defined())
      logits = logits.masked_fill(device_mask, -std::numeric_limits<float>::infinity());
    torch::Tensor device =
        Decide(logits, mode, rng, given ? given_part(given->device, start, end) : torch::Tensor(), log_prob,
               entropy, colocate ? graph.place_free.slice(0, start, end) : torch::Tensor());
    actions->device.slice(1, start, end).copy_(device);
    if (colocate) {
      device = actions->device.index_select(1, graph.place_leader.slice(0, start, end));
      actions->device.slice(1, start, end).copy_(device);
    }
    return device;
  };
  // Each layer's input on the previous segment: its gradient-stopped memory.
  std::vector<torch::Tensor> memory(layers + kTaskLayers);
  auto run = [&](RecurrentAttention& layer, size_t l, const torch::Tensor& input) {
    torch::Tensor output = layer->forward(input, memory[l], gamma[l], beta[l]);
    memory[l] = input.detach();  // Transformer-XL: the cached memory is not back-propagated into
    return output;
  };
  // Group mode: every group's device is drawn before the segments, from
  // the placement logits pooled over the whole graph; the group's
  // log-probability and entropy sit at its first node.
  const ActionGrouping* grouping = Grouping(graph);
  // Node moves: the stickiness of the group's device (-1: nodes stay).
  double stickiness = -1.0;
  if (grouping != nullptr && options_.node_moves > 0.0 && devices > 1) {
    const double deciding =
        colocate ? graph.place_free.sum().item<double>() : static_cast<double>(std::max<int64_t>(n, 1));
    stickiness = std::max(0.0, std::log(static_cast<double>(devices - 1) * deciding / options_.node_moves));
  }
  PlacementPass own_pass;
  torch::Tensor group_log_prob, group_entropy;  // [B x n]
  if (grouping != nullptr) {
    if (pass == nullptr) {
      own_pass = RunPlacementPass(graph, *grouping, nodes, graph_embedding,
                                  noisy ? actions->place_noise : torch::Tensor());
      pass = &own_pass;
    }
    torch::Tensor pooled = pass->pooled.expand({b, grouping->count, options_.max_devices});
    if (device_mask.defined())
      pooled = pooled.masked_fill(device_mask, -std::numeric_limits<float>::infinity());
    torch::Tensor lp = torch::zeros({b, grouping->count});
    torch::Tensor ent = torch::zeros({b, grouping->count});
    torch::Tensor given_groups;
    if (mode == Mode::kGiven) {
      given_groups = given->group.defined() ? given->group : given->device.index_select(1, grouping->first);
      if (given_groups.size(0) != b || given_groups.size(1) != grouping->count) {
        throw StateError("GO: re-scoring group decisions of another shape", {},
                         "pass the GoActions returned by the sampling pass");
      }
    }
    actions->group = Decide(pooled, mode, rng, given_groups, &lp, &ent);
    actions->device.copy_(actions->group.index_select(1, grouping->group));
    group_log_prob = torch::zeros({b, n}).index_add(1, grouping->first, lp);
    group_entropy = torch::zeros({b, n}).index_add(1, grouping->first, ent);
    if (const RoleGrouping* roles = Roles(graph); roles != nullptr && devices > 1)
      MoveRoles(*roles, pass->node_logits, devices, device_mask, mode, rng, given, actions, &group_log_prob,
                &group_entropy);
  }
  if (whole && grouping != nullptr && stickiness < 0.0 && !options_.priority && !options_.fusion) {
    on_segment(0, n, group_log_prob, group_entropy);
    return;
  }
  // The groups' log-probabilities and entropies per segment: one split, not
  // a slice per segment, whose backward would write a zero tensor of the
  // whole [B x n] for each segment (at 92.8k nodes, more work than the
  // network's). The same gradients.
  std::vector<torch::Tensor> group_log_prob_parts, group_entropy_parts;
  if (grouping != nullptr) {
    group_log_prob_parts = group_log_prob.split(segment, 1);
    group_entropy_parts = group_entropy.split(segment, 1);
  }
  for (int64_t start = 0; start < n; start += segment) {
    const int64_t end = std::min(n, start + segment);
    const int64_t len = end - start;
    torch::Tensor log_prob, entropy, h, device;
    if (grouping != nullptr) {
      const torch::Tensor& state = pass->states[static_cast<size_t>(start / segment)];  // [1 x L x d]
      h = state.expand({b, len, d});
      log_prob = group_log_prob_parts[static_cast<size_t>(start / segment)];
      entropy = group_entropy_parts[static_cast<size_t>(start / segment)];
      if (stickiness >= 0.0) {
        // Node moves: each node's own logits plus the stickiness bonus on
        // its group's device.
        const torch::Tensor home = actions->device.slice(1, start, end).clone();  // after role moves
        device = place_nodes(place_head_(state), state, start, end,
                             torch::one_hot(home, options_.max_devices).to(torch::kFloat) * stickiness,
                             &log_prob, &entropy);
      } else {
        device = actions->device.slice(1, start, end);
      }
    } else {
      torch::Tensor x = input_(nodes.slice(0, start, end)).unsqueeze(0);  // [1 x L x d]; nodes = NodeInputs
      for (size_t l = 0; l < layers; ++l) x = run(trunk_[l], l, x);
      log_prob = torch::zeros({b, len});
      entropy = torch::zeros({b, len});
      // Placement (always on): devices >= `devices` are masked.
      h = run(place_layer_, place, x.expand({b, len, d}));
      device = place_nodes(place_head_(h), h, start, end, torch::Tensor(), &log_prob, &entropy);
    }
    // The input of the priority and fusion layers (unused without them).
    torch::Tensor state = options_.priority || options_.fusion ? h + device_embedding_(device) : h;
    if (options_.priority) {
      h = run(priority_layer_, priority, state);
      const torch::Tensor level =
          Decide(priority_head_(h), mode, rng,
                 given ? given_part(given->priority, start, end) : torch::Tensor(), &log_prob, &entropy);
      actions->priority.slice(1, start, end).copy_(level);
      state = h + priority_embedding_(level);
    }
    if (options_.fusion) {
      h = run(fusion_layer_, fusion, state);
      // "Fuse" only where the producer is eligible and on the same device
      // (the producer precedes the node, so its device is decided).
      const torch::Tensor producer_device =
          actions->device.index_select(1, graph.fuse_src.slice(0, start, end));
      const torch::Tensor allowed =
          (device == producer_device) & graph.fuse_eligible.slice(0, start, end).unsqueeze(0);
      const torch::Tensor forbid =
          torch::stack({torch::zeros_like(allowed), allowed.logical_not()}, -1);  // [B x L x 2]
      const torch::Tensor fuse_logits =
          fusion_head_(h).masked_fill(forbid, -std::numeric_limits<float>::infinity());
      const torch::Tensor fuse =
          Decide(fuse_logits, mode, rng, given ? given_part(given->fuse, start, end) : torch::Tensor(),
                 &log_prob, &entropy);
      actions->fuse.slice(1, start, end).copy_(fuse);
    }
    on_segment(start, end, log_prob, entropy);
  }
}

GoOutput GoPolicyImpl::forward(const GoGraph& graph, int64_t devices, int64_t samples, Mode mode, Rng* rng,
                               const GoActions* given) {
  const torch::Tensor embeddings = gnn_->forward(graph.tensors, LongGraph(graph.num_nodes));  // [n x g]
  const torch::Tensor graph_embedding = embeddings.mean(0);                                   // [g]
  const torch::Tensor nodes = NodeInputs(graph, embeddings);
  GoOutput out;
  std::vector<torch::Tensor> log_prob, entropy;
  Stream(graph, nodes, graph_embedding, devices, samples, mode, rng, given, &out.actions,
         [&](int64_t, int64_t, const torch::Tensor& lp, const torch::Tensor& h) {
           log_prob.push_back(lp);
           entropy.push_back(h);
         });
  out.log_prob = log_prob.empty() ? torch::zeros({samples, 0}) : torch::cat(log_prob, 1);
  out.entropy = entropy.empty() ? torch::zeros({samples, 0}) : torch::cat(entropy, 1);
  out.value = Value(graph_embedding, samples);
  return out;
}

double GoPolicyImpl::BackwardBySegment(const GoGraph& graph, int64_t devices, const GoActions& given,
                                       const SegmentLossFn& segment_loss, const ValueLossFn& value_loss) {
  // GraphSAGE once, with its graph kept; the segments see detached copies
  // of its outputs and accumulate their gradients there.
  const torch::Tensor nodes = NodeInputs(graph, gnn_->forward(graph.tensors, LongGraph(graph.num_nodes)));
  const torch::Tensor graph_embedding = nodes.slice(1, 0, options_.gnn.hidden).mean(0);
  const torch::Tensor nodes_leaf = nodes.detach().requires_grad_(true);
  const torch::Tensor embedding_leaf = graph_embedding.detach().requires_grad_(true);
  const int64_t samples = given.device.size(0);
  // Group mode: the placement pass over the whole graph without gradient;
  // its pooled logits and per-segment states are leaves in which the
  // segments' losses accumulate their gradients.
  const ActionGrouping* grouping = Grouping(graph);
  const bool noisy = options_.exploration_noise > 0.0 && given.place_noise.defined();
  const torch::Tensor noise = noisy ? given.place_noise : torch::Tensor();
  // Group mode with the placement head alone and no node moves, on a long
  // graph: the segments would only slice the groups' log-probabilities, so
  // the loss is taken once over the whole graph (Stream's `whole`) and
  // back-propagated once.
  const bool sliced_only = grouping != nullptr && !options_.priority && !options_.fusion &&
                           !(options_.node_moves > 0.0 && devices > 1) && LongGraph(graph.num_nodes);
  // Then the trunk, whose fused attention keeps no scores (LongGraph), runs
  // once with its graph kept (a few hundred MB at 92.8k nodes) and that one
  // backward goes through it; otherwise it runs without gradient first and
  // again below, segment by segment, so that one segment's graph at a time
  // is alive.
  PlacementPass pass;
  if (sliced_only) {
    pass = RunPlacementPass(graph, *grouping, nodes_leaf, embedding_leaf, noise);
  } else if (grouping != nullptr) {
    {
      torch::NoGradGuard no_grad;
      pass = RunPlacementPass(graph, *grouping, nodes_leaf, embedding_leaf, noise);
    }
    pass.pooled.requires_grad_(true);
    if (pass.node_logits.defined()) pass.node_logits.requires_grad_(true);
    // Without gradient the trunk ran one segment at a time: each state is its own tensor.
    for (torch::Tensor& state : pass.states) state.requires_grad_(true);
  }
  GoActions actions;
  double total = 0.0;
  torch::Tensor pending;
  Stream(
      graph, nodes_leaf, embedding_leaf, devices, samples, Mode::kGiven, nullptr, &given, &actions,
      [&](int64_t start, int64_t end, const torch::Tensor& lp, const torch::Tensor& h) {
        const torch::Tensor loss = segment_loss(start, end, lp, h);
        total += loss.item<double>();
        if (sliced_only) {
          pending = pending.defined() ? pending + loss : loss;
          return;
        }
        // The FiLM parameters, computed once from embedding_leaf, are
        // shared by every segment: keep their (small) graph.
        loss.backward({}, /*retain_graph=*/true);
      },
      grouping != nullptr ? &pass : nullptr, /*whole=*/sliced_only);
  if (pending.defined()) pending.backward({}, /*retain_graph=*/true);
  if (grouping != nullptr && !sliced_only) {
    // The trunk again, segment by segment with its graph: a node's logits
    // receive its group's pooled gradient divided by the group's size (the
    // pooling is a mean), its state the gradient of the task layers.
    const torch::Tensor pooled_grad = pass.pooled.grad();
    torch::Tensor node_grad =
        pooled_grad.defined()
            ? (pooled_grad / grouping->size.view({1, -1, 1})).index_select(1, grouping->group)
            : torch::Tensor();  // [B' x n x max_devices]
    // Role moves read the node logits directly.
    const torch::Tensor logits_grad = pass.node_logits.defined() ? pass.node_logits.grad() : torch::Tensor();
    if (logits_grad.defined()) node_grad = node_grad.defined() ? node_grad + logits_grad : logits_grad;
    const int64_t segment = SegmentLength(graph.num_nodes);
    PlacementTrunk(graph, nodes_leaf, embedding_leaf, noise,
                   [&](int64_t start, int64_t end, const torch::Tensor& state, const torch::Tensor& z) {
                     // The batch's segments' state gradients, side by side (undefined: none reached them).
                     std::vector<torch::Tensor> grads;
                     bool any = false;
                     for (int64_t from = start; from < end; from += segment) {
                       const torch::Tensor& leaf = pass.states[static_cast<size_t>(from / segment)];
                       grads.push_back(leaf.grad().defined() ? leaf.grad() : torch::zeros_like(leaf));
                       any = any || leaf.grad().defined();
                     }
                     const torch::Tensor state_grad = !any                ? torch::Tensor()
                                                      : grads.size() == 1 ? grads[0]
                                                                          : torch::cat(grads, 1);
                     torch::Tensor surrogate;
                     if (node_grad.defined()) surrogate = (z * node_grad.slice(1, start, end)).sum();
                     if (state_grad.defined()) {
                       const torch::Tensor part = (state * state_grad).sum();
                       surrogate = surrogate.defined() ? surrogate + part : part;
                     }
                     if (surrogate.defined()) surrogate.backward({}, /*retain_graph=*/true);
                   });
  }
  torch::Tensor tail = value_loss(Value(graph_embedding, samples));
  total += tail.item<double>();
  if (nodes_leaf.grad().defined()) tail = tail + (nodes * nodes_leaf.grad()).sum();
  if (embedding_leaf.grad().defined()) tail = tail + (graph_embedding * embedding_leaf.grad()).sum();
  tail.backward();
  return total;
}

}  // namespace gosim::agents::learned::go
