#include "graphs/generators/model_builder.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "core/error.h"

namespace gosim::graphs::gen {
namespace {

int64_t Product(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool IsFloating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}

// Optimizer FLOPs per weight element of one update.
double UpdateFlopsPerElement(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return 2.0;
    case Optimizer::kMomentum:
      return 4.0;
    case Optimizer::kAdam:
      return 12.0;
  }
  return 2.0;
}

const char* UpdateOpName(Optimizer o, bool sparse) {
  switch (o) {
    case Optimizer::kSgd:
      return sparse ? "ScatterSub" : "ApplyGradientDescent";
    case Optimizer::kMomentum:
      return sparse ? "SparseApplyMomentum" : "ApplyMomentum";
    case Optimizer::kAdam:
      return sparse ? "SparseApplyAdam" : "ApplyAdam";
  }
  return "ApplyGradientDescent";
}

}  // namespace

int OptimizerSlots(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kMomentum:
      return 1;
    case Optimizer::kAdam:
      return 2;
  }
  return 0;
}

ModelBuilder::ModelBuilder(std::string graph_name, ModelOptions options)
    : name_(graph_name), options_(options), builder_(std::move(graph_name)) {
  if (options_.dtype == DType::kUnknown) options_.dtype = DType::kFloat32;
}

void ModelBuilder::Fail(const std::string& what) const {
  throw GraphError("generator for '" + name_ + "': " + what, {},
                   "this parameter combination is not supported by the generator");
}

// ---------------------------------------------------------------- scopes

void ModelBuilder::PushScope(std::string_view name) {
  scope_lengths_.push_back(scope_.size());
  if (!scope_.empty()) scope_ += '/';
  scope_ += name;
}

void ModelBuilder::PopScope() {
  scope_.resize(scope_lengths_.back());
  scope_lengths_.pop_back();
}

ModelBuilder::ScopeGuard ModelBuilder::Scope(std::string_view name) {
  PushScope(name);
  return ScopeGuard(this);
}

ModelBuilder::ScopeGuard ModelBuilder::UniqueScope(std::string_view name) {
  const std::string full = ReserveName(name);
  const size_t slash = full.rfind('/');
  PushScope(slash == std::string::npos ? std::string_view(full) : std::string_view(full).substr(slash + 1));
  return ScopeGuard(this);
}

int32_t& ModelBuilder::NameTable::Find(uint64_t hash, bool* inserted) {
  if (hash == 0) hash = 1;  // 0 marks an empty slot
  if (2 * (used + 1) > slots.size()) {
    std::vector<std::pair<uint64_t, int32_t>> old(std::max<size_t>(1024, 2 * slots.size()));
    old.swap(slots);
    for (const auto& slot : old) {
      if (slot.first == 0) continue;
      size_t i = slot.first & (slots.size() - 1);
      while (slots[i].first != 0) i = (i + 1) & (slots.size() - 1);
      slots[i] = slot;
    }
  }
  size_t i = hash & (slots.size() - 1);
  while (slots[i].first != 0 && slots[i].first != hash) i = (i + 1) & (slots.size() - 1);
  *inserted = slots[i].first == 0;
  if (*inserted) {
    slots[i] = {hash, 0};
    ++used;
  }
  return slots[i].second;
}

std::string ModelBuilder::UniqueName(const std::string& full) {
  const std::hash<std::string_view> hash;
  bool inserted = false;
  int32_t* count = &names_.Find(hash(full), &inserted);
  if (inserted) return full;
  for (;;) {
    std::string candidate = full + "_" + std::to_string(++*count);
    names_.Find(hash(candidate), &inserted);
    if (inserted) return candidate;
    count = &names_.Find(hash(full), &inserted);  // the table may have grown
  }
}

std::string ModelBuilder::ReserveName(std::string_view base) {
  std::string full;
  full.reserve(scope_.size() + base.size() + 1);
  full = scope_;
  if (!full.empty()) full += '/';
  full += base;
  return UniqueName(full);
}

// ---------------------------------------------------------------- tensors and nodes

int64_t ModelBuilder::dim(Tensor t, int i) const {
  const Shape& s = shape(t);
  const int n = static_cast<int>(s.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) Fail("dimension " + std::to_string(i) + " of a rank-" + std::to_string(n) + " tensor");
  return s[static_cast<size_t>(i)];
}

int64_t ModelBuilder::numel(Tensor t) const {
  return Product(shape(t));
}

Tensor ModelBuilder::NewTensor(int32_t node, int32_t output, Shape shape, DType dtype, bool requires_grad) {
  TensorRec rec;
  rec.node = node;
  rec.output = output;
  rec.bytes = Product(shape) * DTypeSize(dtype);
  rec.shape = std::move(shape);
  rec.dtype = dtype;
  rec.requires_grad = requires_grad;
  tensors_.push_back(std::move(rec));
  return Tensor{static_cast<int32_t>(tensors_.size() - 1)};
}

int32_t ModelBuilder::NewNode(std::string_view op, std::string name, double flops,
                              const std::vector<Tensor>& inputs,
                              const std::vector<std::pair<Shape, DType>>& outputs, Phase phase,
                              const std::string& scope) {
  if (builder_.num_nodes() >= options_.max_nodes) {
    throw ConfigError("the generated graph '" + name_ + "' would have more than " +
                          std::to_string(options_.max_nodes) + " nodes",
                      {}, "use smaller model parameters (layers, sequence length, ...)");
  }
  NodeSpec spec;
  spec.name = std::move(name);
  spec.op = std::string(op);
  spec.flops = flops;
  spec.scope = scope;
  spec.phase = phase;
  spec.outputs.reserve(outputs.size());
  for (const auto& [shape, dtype] : outputs) {
    const int64_t bytes = Product(shape) * DTypeSize(dtype);
    spec.bytes_written += bytes;
    spec.outputs.push_back(TensorInfo{bytes, shape, dtype});
  }
  // Distinct input tensors (a node reading a tensor twice reads it once).
  auto duplicate = [&](size_t i) {
    const TensorRec& r = tensors_[inputs[i].id];
    for (size_t j = 0; j < i; ++j) {
      const TensorRec& q = tensors_[inputs[j].id];
      if (q.node == r.node && q.output == r.output) return true;
    }
    return false;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!duplicate(i)) spec.bytes_read += tensors_[inputs[i].id].bytes;
  }
  const int32_t index = builder_.AddNode(std::move(spec));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!duplicate(i)) builder_.AddEdge(tensors_[inputs[i].id].node, index, tensors_[inputs[i].id].output);
  }
  return index;
}

Tensor ModelBuilder::Input(std::string_view name, Shape shape, DType dtype) {
  if (dtype == DType::kUnknown) dtype = options_.dtype;
  const int32_t node =
      NewNode("Input", ReserveName(name), 0.0, {}, {{shape, dtype}}, Phase::kForward, scope_);
  return NewTensor(node, 0, std::move(shape), dtype, false);
}

Tensor ModelBuilder::Constant(std::string_view name, Shape shape, DType dtype) {
  if (dtype == DType::kUnknown) dtype = options_.dtype;
  const int32_t node =
      NewNode("Const", ReserveName(name), 0.0, {}, {{shape, dtype}}, Phase::kForward, scope_);
  return NewTensor(node, 0, std::move(shape), dtype, false);
}

Tensor ModelBuilder::Weight(std::string_view name, Shape shape) {
  const DType dtype = options_.dtype;
  std::string full = ReserveName(name);
  const int32_t node = NewNode("Variable", full, 0.0, {}, {{shape, dtype}}, Phase::kForward, scope_);
  NodeSpec& spec = builder_.mutable_node(node);
  spec.persistent_bytes = spec.outputs[0].bytes;
  spec.bytes_written = 0;  // the output aliases the persistent weight
  spec.colocation = std::move(full);
  Tensor t = NewTensor(node, 0, std::move(shape), dtype, options_.training);
  tensors_[t.id].weight = static_cast<int32_t>(weights_.size());
  weights_.push_back(WeightRec{t, node, true});
  return t;
}

int32_t ModelBuilder::Op(OpArgs args) {
  std::string name =
      !args.full_name.empty() ? args.full_name : ReserveName(args.name.empty() ? args.op : args.name);
  std::vector<std::pair<Shape, DType>> outs;
  outs.reserve(args.outputs.size());
  for (size_t k = 0; k < args.outputs.size(); ++k) {
    for (int64_t d : args.outputs[k]) {
      if (d <= 0) Fail("op '" + name + "' would have an output with a non-positive dimension");
    }
    const DType dt = k < args.output_dtypes.size() ? args.output_dtypes[k] : options_.dtype;
    outs.emplace_back(std::move(args.outputs[k]), dt);
  }
  const int32_t node =
      NewNode(args.op, std::move(name), args.flops, args.inputs, outs, Phase::kForward, scope_);
  if (args.persistent_bytes > 0) builder_.mutable_node(node).persistent_bytes = args.persistent_bytes;
  bool differentiable = false;
  Record rec;
  rec.node = node;
  if (options_.training) {
    for (Tensor t : args.inputs) differentiable = differentiable || tensors_[t.id].requires_grad;
    rec.input_begin = static_cast<int32_t>(inputs_.size());
    rec.input_count = static_cast<int32_t>(args.inputs.size());
    inputs_.insert(inputs_.end(), args.inputs.begin(), args.inputs.end());
  }
  rec.first_output = static_cast<int32_t>(tensors_.size());
  rec.num_outputs = static_cast<int32_t>(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const bool grad = differentiable && IsFloating(outs[k].second);
    NewTensor(node, static_cast<int32_t>(k), std::move(outs[k].first), outs[k].second, grad);
  }
  records_.push_back(rec);
  return static_cast<int32_t>(records_.size() - 1);
}

void ModelBuilder::AddGrad(int32_t record, GradSpec grad) {
  if (!options_.training) return;
  Record& rec = records_[record];
  if (rec.num_grads == static_cast<int>(rec.grads.size())) Fail("an op with more than two gradient ops");
  rec.grads[static_cast<size_t>(rec.num_grads++)] = std::move(grad);
}

void ModelBuilder::AddPassThrough(int32_t record, int input) {
  if (!options_.training) return;
  Record& rec = records_[record];
  if (rec.pass_count == 0) rec.pass_first = input;
  if (input != rec.pass_first + rec.pass_count) Fail("pass-through inputs must be consecutive");
  ++rec.pass_count;
}

Tensor ModelBuilder::Reshape(Tensor x, Shape new_shape) {
  if (Product(new_shape) != numel(x)) Fail("reshape changes the number of elements");
  const TensorRec& r = tensors_[x.id];
  Tensor view = NewTensor(r.node, r.output, std::move(new_shape), r.dtype, r.requires_grad);
  tensors_[view.id].bytes = tensors_[x.id].bytes;
  if (tensors_[x.id].requires_grad) {
    Record rec;
    rec.input_begin = static_cast<int32_t>(inputs_.size());
    rec.input_count = 1;
    inputs_.push_back(x);
    rec.first_output = view.id;
    rec.num_outputs = 1;
    rec.pass_count = 1;
    records_.push_back(std::move(rec));
  }
  return view;
}

// ---------------------------------------------------------------- backward

void ModelBuilder::PushGrad(Tensor t, Tensor grad) {
  grad_links_.emplace_back(grad, grad_head_[static_cast<size_t>(t.id)]);
  grad_head_[static_cast<size_t>(t.id)] = static_cast<int32_t>(grad_links_.size() - 1);
}

Tensor ModelBuilder::AccumulateGrad(Tensor t, const std::string& scope, const std::string& name) {
  const int32_t head = grad_head_[static_cast<size_t>(t.id)];
  if (head < 0) return {};
  if (grad_links_[static_cast<size_t>(head)].second < 0) return grad_links_[static_cast<size_t>(head)].first;
  // Contributions in the order they were made.
  std::vector<Tensor> parts;
  for (int32_t i = head; i >= 0; i = grad_links_[static_cast<size_t>(i)].second) {
    parts.push_back(grad_links_[static_cast<size_t>(i)].first);
  }
  std::reverse(parts.begin(), parts.end());
  const int64_t n = numel(t);
  // Sparse (embedding) gradients are aggregated by concatenation unless a
  // dense contribution makes the sum dense.
  bool dense = false;
  for (Tensor p : parts) dense = dense || numel(p) == n;
  Shape shape = this->shape(t);
  const char* op = "AddN";
  double flops = static_cast<double>(parts.size() - 1) * static_cast<double>(n);
  if (!dense) {
    op = "ConcatV2";
    flops = 0.0;
    shape = this->shape(parts[0]);
    shape[0] = 0;
    for (Tensor p : parts) shape[0] += this->shape(p)[0];
  }
  const int32_t node = NewNode(op, UniqueName("gradients/" + name + "_grad/" + op), flops, parts,
                               {{shape, dtype(t)}}, Phase::kBackward, scope);
  const Tensor sum = NewTensor(node, 0, std::move(shape), dtype(t), false);
  grad_links_.emplace_back(sum, -1);
  grad_head_[static_cast<size_t>(t.id)] = static_cast<int32_t>(grad_links_.size() - 1);
  return sum;
}

void ModelBuilder::AddBackward() {
  grad_head_.assign(tensors_.size(), -1);
  std::vector<Tensor> dys, need, inputs;
  std::vector<std::pair<Shape, DType>> outs;
  for (size_t r = records_.size(); r-- > 0;) {
    const Record& rec = records_[r];
    const int32_t owner = rec.node >= 0 ? rec.node : tensors_[input(rec, 0).id].node;
    const std::string scope = builder_.node(owner).scope;
    const std::string fwd_name = builder_.node(owner).name;
    dys.clear();
    bool any = false;
    for (int k = 0; k < rec.num_outputs; ++k) {
      dys.push_back(AccumulateGrad(Tensor{rec.first_output + k}, scope, fwd_name));
      any = any || dys.back().valid();
    }
    if (!any && !rec.loss) continue;
    for (int i = rec.pass_first; i < rec.pass_first + rec.pass_count; ++i) {
      const Tensor in = input(rec, i);
      if (tensors_[in.id].requires_grad && dys[0].valid()) PushGrad(in, dys[0]);
    }
    for (int gi = 0; gi < rec.num_grads; ++gi) {
      const GradSpec& g = rec.grads[static_cast<size_t>(gi)];
      need.clear();  // the inputs that get a gradient
      for (int j = g.wrt; j < g.wrt + g.wrt_count; ++j) {
        if (tensors_[input(rec, j).id].requires_grad) need.push_back(input(rec, j));
      }
      if (need.empty()) continue;
      inputs.clear();
      if (g.reads_dy) {
        for (Tensor dy : dys) {
          if (dy.valid()) inputs.push_back(dy);
        }
      }
      for (Tensor t : g.saved) {
        if (t.valid()) inputs.push_back(t);
      }
      outs.clear();
      for (Tensor in : need) outs.emplace_back(g.grad_shape.empty() ? shape(in) : g.grad_shape, dtype(in));
      const int32_t node = NewNode(g.op, UniqueName("gradients/" + fwd_name + "_grad/" + std::string(g.op)),
                                   g.flops, inputs, outs, Phase::kBackward, scope);
      for (size_t k = 0; k < need.size(); ++k) {
        PushGrad(need[k],
                 NewTensor(node, static_cast<int32_t>(k), std::move(outs[k].first), outs[k].second, false));
      }
    }
  }

  const int slots = OptimizerSlots(options_.optimizer);
  for (const WeightRec& w : weights_) {
    if (!w.trainable) continue;
    const std::string scope = builder_.node(w.node).scope;
    const std::string name = builder_.node(w.node).name;
    const Tensor g = AccumulateGrad(w.tensor, scope, name);
    if (!g.valid()) continue;
    const bool sparse = numel(g) != numel(w.tensor);
    const char* op = UpdateOpName(options_.optimizer, sparse);
    const int64_t weight_bytes = bytes(w.tensor);
    const int32_t node = NewNode(op, UniqueName(name + "/" + op),
                                 UpdateFlopsPerElement(options_.optimizer) * static_cast<double>(numel(g)),
                                 {w.tensor, g}, {}, Phase::kUpdate, scope);
    NodeSpec& spec = builder_.mutable_node(node);
    spec.persistent_bytes = slots * weight_bytes;
    spec.bytes_read += slots * weight_bytes;
    spec.bytes_written = (1 + slots) * weight_bytes;
    spec.colocation = name;
  }
}

Graph ModelBuilder::Build() {
  if (options_.training) AddBackward();
  records_.clear();
  inputs_.clear();
  grad_head_.clear();
  grad_links_.clear();
  tensors_.clear();
  return builder_.Build();
}

}  // namespace gosim::graphs::gen
