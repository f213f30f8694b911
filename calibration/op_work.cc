#include "calibration/op_work.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

#include "core/strings.h"
#include "graphs/op_class.h"
#include "graphs/op_costs.h"

namespace gosim::calibration {
namespace {

enum class Kind {
  kMatmul,
  kConv,
  kConvBackward,
  kElementwise,
  kFill,
  kReduction,
  kPooling,
  kPoolingBackward,
  kGlobalPool,
  kNorm,
  kLayerNorm,
  kNormBackward,
  kLayerNormBackward,
  kSoftmax,
  kSoftmaxBackward,
  kCrossEntropy,
  kNllLoss,
  kEmbedding,
  kEmbeddingBackward,
  kDataMovement,
  kForeach,
  kFusedAdam,
  kFusedSgd,
  kComm,
  kOther,
};

const std::unordered_map<std::string, Kind>& KindTable() {
  static const std::unordered_map<std::string, Kind> table = [] {
    std::unordered_map<std::string, Kind> t;
    auto add = [&](Kind kind, std::initializer_list<const char*> names) {
      for (const char* n : names) t.emplace(n, kind);
    };
    add(Kind::kMatmul, {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mv", "addmv", "dot", "addbmm",
                        "_addmm_activation", "einsum"});
    add(Kind::kConv, {"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "cudnn_convolution",
                      "cudnn_convolution_relu", "cudnn_convolution_add_relu", "mkldnn_convolution",
                      "thnn_conv2d", "_convolution_mode", "conv_transpose1d", "conv_transpose2d",
                      "conv_transpose3d", "cudnn_convolution_transpose", "slow_conv2d_forward"});
    add(Kind::kConvBackward,
        {"convolution_backward", "cudnn_convolution_backward", "cudnn_convolution_backward_input",
         "cudnn_convolution_backward_weight", "mkldnn_convolution_backward",
         "cudnn_convolution_transpose_backward", "slow_conv2d_backward"});
    add(Kind::kElementwise, {"add",
                             "sub",
                             "mul",
                             "div",
                             "rsub",
                             "neg",
                             "abs",
                             "relu",
                             "relu6",
                             "clamp",
                             "clamp_min",
                             "clamp_max",
                             "threshold",
                             "threshold_backward",
                             "sigmoid",
                             "sigmoid_backward",
                             "tanh",
                             "tanh_backward",
                             "gelu",
                             "gelu_backward",
                             "silu",
                             "silu_backward",
                             "hardswish",
                             "hardswish_backward",
                             "hardtanh",
                             "hardtanh_backward",
                             "leaky_relu",
                             "leaky_relu_backward",
                             "elu",
                             "elu_backward",
                             "exp",
                             "log",
                             "log1p",
                             "sqrt",
                             "rsqrt",
                             "pow",
                             "reciprocal",
                             "where",
                             "masked_fill",
                             "dropout",
                             "native_dropout",
                             "native_dropout_backward",
                             "feature_dropout",
                             "bernoulli",
                             "eq",
                             "ne",
                             "lt",
                             "le",
                             "gt",
                             "ge",
                             "logical_and",
                             "logical_or",
                             "logical_not",
                             "sign",
                             "floor",
                             "ceil",
                             "round",
                             "nan_to_num",
                             "addcmul",
                             "addcdiv",
                             "lerp",
                             "maximum",
                             "minimum",
                             "erf",
                             "sin",
                             "cos",
                             "square",
                             "log_sigmoid_forward",
                             "softplus",
                             "mish",
                             "binary_cross_entropy_with_logits",
                             "mse_loss",
                             "binary_cross_entropy",
                             "sgn"});
    add(Kind::kFill, {"fill", "zero", "ones_like", "zeros_like", "full_like", "uniform", "normal", "rand",
                      "randn", "random", "exponential", "ones", "zeros", "full", "arange", "scalar_tensor"});
    add(Kind::kReduction, {"sum",       "mean",     "max",           "min",      "amax",
                           "amin",      "argmax",   "argmin",        "norm",     "linalg_vector_norm",
                           "var",       "std",      "var_mean",      "std_mean", "prod",
                           "logsumexp", "all",      "any",           "cumsum",   "cumprod",
                           "sort",      "topk",     "count_nonzero", "nonzero",  "unique",
                           "_unique2",  "bucketize"});
    add(Kind::kPooling,
        {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices",
         "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_max_pool2d"});
    add(Kind::kPoolingBackward, {"max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward",
                                 "avg_pool2d_backward", "avg_pool3d_backward", "adaptive_avg_pool2d_backward",
                                 "_adaptive_avg_pool2d_backward", "adaptive_max_pool2d_backward"});
    add(Kind::kGlobalPool,
        {"adaptive_avg_pool1d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d", "adaptive_avg_pool3d"});
    add(Kind::kNorm, {"batch_norm", "_batch_norm_impl_index", "native_batch_norm", "cudnn_batch_norm",
                      "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "instance_norm"});
    add(Kind::kLayerNorm, {"layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "rms_norm"});
    add(Kind::kNormBackward, {"native_batch_norm_backward", "cudnn_batch_norm_backward",
                              "batch_norm_backward", "_batch_norm_impl_index_backward"});
    add(Kind::kLayerNormBackward, {"native_layer_norm_backward", "native_group_norm_backward"});
    add(Kind::kSoftmax, {"softmax", "_softmax", "log_softmax", "_log_softmax"});
    add(Kind::kSoftmaxBackward, {"_softmax_backward_data", "_log_softmax_backward_data"});
    add(Kind::kCrossEntropy, {"cross_entropy_loss"});
    add(Kind::kNllLoss, {"nll_loss", "nll_loss_nd", "nll_loss_forward", "nll_loss2d_forward",
                         "nll_loss_backward", "nll_loss2d_backward"});
    add(Kind::kEmbedding, {"embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"});
    add(Kind::kEmbeddingBackward,
        {"embedding_backward", "embedding_dense_backward", "_embedding_bag_backward",
         "_embedding_bag_dense_backward", "embedding_renorm"});
    add(Kind::kDataMovement, {"cat",
                              "_cat",
                              "stack",
                              "index",
                              "index_select",
                              "gather",
                              "scatter",
                              "scatter_add",
                              "index_add",
                              "index_copy",
                              "index_put",
                              "_index_put_impl",
                              "copy",
                              "to",
                              "_to_copy",
                              "clone",
                              "contiguous",
                              "permute",
                              "transpose",
                              "flatten_dense_tensors",
                              "unflatten_dense_tensors",
                              "slice_backward",
                              "select_backward",
                              "gather_backward",
                              "constant_pad_nd",
                              "repeat",
                              "narrow_copy",
                              "split_with_sizes_copy",
                              "roll",
                              "flip",
                              "masked_select",
                              "take",
                              "embedding_lookup",
                              "pad",
                              "reflection_pad2d",
                              "replication_pad2d",
                              "tril",
                              "triu",
                              "expand_copy",
                              "view_copy",
                              "_unsafe_view",
                              "reshape",
                              "flatten",
                              "resize"});
    add(Kind::kFusedAdam, {"_fused_adam", "_fused_adamw"});
    add(Kind::kFusedSgd, {"_fused_sgd"});
    add(Kind::kComm,
        {"allreduce", "broadcast", "allgather", "_allgather_base", "reduce_scatter", "_reduce_scatter_base",
         "alltoall", "alltoall_base", "send", "recv", "barrier", "record_param_comms"});
    return t;
  }();
  return table;
}

Kind KindOf(std::string_view name) {
  const std::string base = BaseOpName(name);
  if (StartsWith(base, "_foreach_")) return Kind::kForeach;
  if (StartsWith(name, "nccl:") || StartsWith(name, "c10d::")) return Kind::kComm;
  const auto it = KindTable().find(base);
  if (it != KindTable().end()) return it->second;
  return Kind::kOther;
}

int ElementSize(graphs::DType dtype) {
  return dtype == graphs::DType::kUnknown ? 4 : graphs::DTypeSize(dtype);
}

double Numel(const std::vector<int64_t>& shape) {
  return graphs::NumElements(shape);
}

// The tensor arguments, in order (list elements flattened, with the list's dtype).
struct Tensors {
  std::vector<const std::vector<int64_t>*> shapes;
  std::vector<int> sizes;  // bytes per element
  double total_bytes = 0.0;
  double max_numel = 0.0;
  int max_size = 4;

  int count() const { return static_cast<int>(shapes.size()); }
  double numel(int i) const { return Numel(*shapes[static_cast<size_t>(i)]); }
  double bytes(int i) const { return numel(i) * sizes[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& shape(int i) const { return *shapes[static_cast<size_t>(i)]; }
};

Tensors CollectTensors(const std::vector<OpInput>& inputs) {
  Tensors t;
  auto add = [&](const std::vector<int64_t>& shape, int size) {
    t.shapes.push_back(&shape);
    t.sizes.push_back(size);
    const double n = Numel(shape);
    t.total_bytes += n * size;
    if (n > t.max_numel) {
      t.max_numel = n;
      t.max_size = size;
    }
  };
  for (const OpInput& in : inputs) {
    if (in.is_tensor) add(in.shape, ElementSize(in.dtype));
    for (const std::vector<int64_t>& element : in.list) add(element, ElementSize(in.dtype));
  }
  return t;
}

// The input at `index` when it is a tensor of rank >= `rank`, else nullptr.
const OpInput* TensorAt(const std::vector<OpInput>& inputs, size_t index, size_t rank) {
  if (index >= inputs.size() || !inputs[index].is_tensor || inputs[index].shape.size() < rank) return nullptr;
  return &inputs[index];
}

double Bytes(const OpInput* in) {
  return in == nullptr ? 0.0 : Numel(in->shape) * ElementSize(in->dtype);
}

double Product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  double p = 1.0;
  for (size_t i = from; i < to && i < shape.size(); ++i) p *= static_cast<double>(shape[i]);
  return p;
}

OpWork MatmulWork(const std::string& base, const std::vector<OpInput>& in) {
  OpWork w;
  const OpInput* bias = nullptr;
  const OpInput* a = nullptr;
  const OpInput* b = nullptr;
  if (base == "linear") {
    a = TensorAt(in, 0, 1);
    const OpInput* weight = TensorAt(in, 1, 2);
    bias = TensorAt(in, 2, 1);
    if (a == nullptr || weight == nullptr) return w;
    const double k = static_cast<double>(a->shape.back());
    const double rows = k > 0 ? Numel(a->shape) / k : 0.0;
    const double n = static_cast<double>(weight->shape[0]);
    w.flops = graphs::GemmFlops(rows, k, n, bias != nullptr);
    w.bytes = Bytes(a) + Bytes(weight) + Bytes(bias) + rows * n * ElementSize(a->dtype);
    w.known = true;
    return w;
  }
  const bool has_bias = base == "addmm" || base == "baddbmm" || base == "addmv" || base == "addbmm" ||
                        base == "_addmm_activation";
  const size_t first = has_bias ? 1 : 0;
  if (has_bias) bias = TensorAt(in, 0, 0);
  a = TensorAt(in, first, 1);
  b = TensorAt(in, first + 1, 1);
  if (a == nullptr || b == nullptr) return w;
  const std::vector<int64_t>& as = a->shape;
  const std::vector<int64_t>& bs = b->shape;
  const double m = as.size() >= 2 ? static_cast<double>(as[as.size() - 2]) : 1.0;
  const double k = static_cast<double>(as.back());
  const double n = bs.size() >= 2 ? static_cast<double>(bs.back()) : 1.0;
  const double batch = std::max(Product(as, 0, as.size() >= 2 ? as.size() - 2 : 0),
                                Product(bs, 0, bs.size() >= 2 ? bs.size() - 2 : 0));
  w.flops = graphs::MatMulFlops(batch, m, k, n) + (bias != nullptr ? batch * m * n : 0.0);
  w.bytes = Bytes(a) + Bytes(b) + Bytes(bias) + batch * m * n * ElementSize(a->dtype);
  w.known = true;
  return w;
}

OpWork ConvWork(const std::vector<OpInput>& in, const std::vector<int64_t>* output) {
  OpWork w;
  const OpInput* x = TensorAt(in, 0, 3);
  const OpInput* weight = TensorAt(in, 1, 3);
  if (x == nullptr || weight == nullptr) return w;
  const OpInput* bias = TensorAt(in, 2, 1);
  const double batch = static_cast<double>(x->shape[0]);
  const double out_channels = static_cast<double>(weight->shape[0]);
  double out_spatial = Product(x->shape, 2, x->shape.size());
  if (output != nullptr && output->size() == x->shape.size()) {
    out_spatial = Product(*output, 2, output->size());
  } else {
    w.approximate = true;  // stride 1, "same" padding assumed
  }
  const double kernel = Product(weight->shape, 2, weight->shape.size());
  w.flops = graphs::ConvFlops(batch, out_channels, out_spatial, static_cast<double>(weight->shape[1]), kernel,
                              bias != nullptr);
  w.bytes =
      Bytes(x) + Bytes(weight) + Bytes(bias) + batch * out_channels * out_spatial * ElementSize(x->dtype);
  w.known = true;
  return w;
}

OpWork ConvBackwardWork(const std::string& base, const std::vector<OpInput>& in) {
  OpWork w;
  // Argument layouts: convolution_backward(grad_output, input, weight, ...);
  // cudnn_convolution_backward(input, grad_output, weight, ...);
  // *_backward_input(input_size, grad_output, weight); *_backward_weight(weight_size, grad_output, input).
  const OpInput* grad = nullptr;
  const OpInput* x = nullptr;
  const OpInput* weight = nullptr;
  double passes = 2.0;
  if (base == "convolution_backward" || base == "cudnn_convolution_transpose_backward") {
    grad = TensorAt(in, 0, 3), x = TensorAt(in, 1, 3), weight = TensorAt(in, 2, 3);
  } else if (base == "cudnn_convolution_backward_input") {
    grad = TensorAt(in, 1, 3), weight = TensorAt(in, 2, 3), passes = 1.0;
  } else if (base == "cudnn_convolution_backward_weight") {
    grad = TensorAt(in, 1, 3), x = TensorAt(in, 2, 3), passes = 1.0;
  } else {
    x = TensorAt(in, 0, 3), grad = TensorAt(in, 1, 3), weight = TensorAt(in, 2, 3);
  }
  if (grad == nullptr || (x == nullptr && weight == nullptr)) return w;
  const double batch = static_cast<double>(grad->shape[0]);
  const double out_channels = static_cast<double>(grad->shape[1]);
  const double out_spatial = Product(grad->shape, 2, grad->shape.size());
  double cin_per_group = 0.0;
  double kernel = 1.0;
  if (weight != nullptr) {
    cin_per_group = static_cast<double>(weight->shape[1]);
    kernel = Product(weight->shape, 2, weight->shape.size());
  } else {
    cin_per_group = static_cast<double>(x->shape[1]);
    w.approximate = true;  // kernel size unknown: 1 assumed
  }
  w.flops = passes * graphs::ConvFlops(batch, out_channels, out_spatial, cin_per_group, kernel, false);
  const double x_bytes = x != nullptr ? Bytes(x) : 0.0;
  const double w_bytes = weight != nullptr ? Bytes(weight) : 0.0;
  w.bytes = Bytes(grad) + 2.0 * x_bytes + 2.0 * w_bytes;
  w.known = true;
  return w;
}

// "[3, 3]" -> {3, 3}; nullopt for anything else (an empty list is {}).
std::optional<std::vector<int64_t>> IntList(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<int64_t> out;
  std::string_view rest = text.substr(1, text.size() - 2);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || item.empty()) return std::nullopt;
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// A pooling window as the profiler's "Concrete Inputs" record it, at
// arguments `at` (kernel_size, stride, padding) after the tensors;
// max_pool's dilation follows its padding. Empty when not recorded.
struct PoolWindow {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil = false;
  bool known() const { return !kernel.empty(); }
  double Elements() const {
    double e = 1.0;
    for (const int64_t k : kernel) e *= static_cast<double>(k);
    return e;
  }
};

PoolWindow ReadPoolWindow(const std::vector<OpInput>& in, size_t at, bool max_pool) {
  PoolWindow w;
  auto list = [&](size_t i) { return i < in.size() ? IntList(in[i].value) : std::nullopt; };
  const auto kernel = list(at), stride = list(at + 1), padding = list(at + 2);
  if (!kernel || kernel->empty() || !padding) return w;
  // Sizes a trace can hold (a damaged one must not overflow the formula).
  constexpr int64_t kMax = int64_t{1} << 24;
  auto in_range = [&](const std::optional<std::vector<int64_t>>& v, int64_t lo) {
    return !v || std::all_of(v->begin(), v->end(), [&](int64_t x) { return x >= lo && x <= kMax; });
  };
  if (!in_range(kernel, 1) || !in_range(stride, 1) || !in_range(padding, 0)) return w;
  w.kernel = *kernel;
  w.stride = stride && !stride->empty() ? *stride : *kernel;  // PyTorch: stride defaults to the window
  w.padding = *padding;
  if (max_pool) {
    const auto dilation = list(at + 3);
    if (!in_range(dilation, 1)) return PoolWindow{};
    if (dilation) w.dilation = *dilation;
  }
  const size_t ceil_at = at + (max_pool ? 4 : 3);
  w.ceil = ceil_at < in.size() && in[ceil_at].value == "True";
  return w;
}

// The output shape of pooling `x` (N, C, spatial...) through window `w`
// (PyTorch's formula; a single value stands for every spatial dimension),
// or empty when the window does not fit the input's rank.
std::vector<int64_t> PoolOutput(const std::vector<int64_t>& x, const PoolWindow& w) {
  if (x.size() < 3) return {};
  const size_t spatial = std::min<size_t>(x.size() - 2, 3);
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[std::min(i, v.size() - 1)];
  };
  std::vector<int64_t> out(x.begin(), x.end() - static_cast<std::ptrdiff_t>(spatial));
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = x[x.size() - spatial + i];
    if (in > (int64_t{1} << 40)) return {};
    const int64_t k = at(w.kernel, i, 1), s = at(w.stride, i, 1), p = at(w.padding, i, 0),
                  d = at(w.dilation, i, 1);
    if (s <= 0) return {};
    const int64_t span = in + 2 * p - d * (k - 1) - 1;
    if (span < 0) return {};
    int64_t o = (w.ceil ? (span + s - 1) / s : span / s) + 1;
    if (w.ceil && (o - 1) * s >= in + p) --o;  // the last window must start inside the input
    out.push_back(o);
  }
  return out;
}

// Pooling, forward and backward, with the same FLOPs as the exporter and
// the ONNX importer give a graph's pooling nodes (docs/EXPORT.md):
// forward output elements x window elements; backward grad_output elements,
// x window elements for avg_pool*_backward. The window comes from the
// profiler's "Concrete Inputs"; without it a forward pool counts its input
// elements and an avg_pool backward its grad_output's, flagged approximate.
// `t` holds the tensors of `in` (at least one).
OpWork PoolWork(Kind kind, const std::string& base, const std::vector<OpInput>& in, const Tensors& t) {
  OpWork w;
  w.known = true;
  const bool max_pool = base.rfind("max_pool", 0) == 0;
  const bool adaptive = base.find("adaptive") != std::string::npos;
  const int element = t.sizes[0];
  if (kind == Kind::kPooling) {
    const PoolWindow window = adaptive ? PoolWindow{} : ReadPoolWindow(in, 1, max_pool);
    const std::vector<int64_t> out = window.known() ? PoolOutput(t.shape(0), window) : std::vector<int64_t>{};
    if (out.empty()) {
      w.flops = t.numel(0);
      w.bytes = t.bytes(0) * 1.25;
      w.approximate = true;
      return w;
    }
    const double out_elements = Numel(out);
    w.flops = graphs::PoolFlops(out_elements, window.Elements());
    w.bytes = t.bytes(0) + out_elements * element +
              (base.find("with_indices") != std::string::npos ? out_elements * 8.0 : 0.0);
    return w;
  }
  // Backward: (grad_output, input, window..., [indices]).
  const double grad = t.numel(0);
  double window_elements = 1.0;
  if (base.rfind("avg_pool", 0) == 0) {
    const PoolWindow window = ReadPoolWindow(in, 2, false);
    if (window.known()) {
      window_elements = window.Elements();
    } else {
      w.approximate = true;
    }
  }
  w.flops = grad * window_elements;
  w.bytes = t.total_bytes + t.max_numel * t.max_size;
  return w;
}

OpWork GenericWork(Kind kind, const std::string& base, const std::vector<OpInput>& in) {
  OpWork w;
  const Tensors t = CollectTensors(in);
  if (t.count() == 0) return w;
  w.known = true;
  const double first = t.numel(0);
  const double first_bytes = t.bytes(0);
  const double out_bytes = t.max_numel * t.max_size;
  switch (kind) {
    case Kind::kElementwise:
      w.flops = graphs::ElementwiseFlops(t.max_numel);
      w.bytes = t.total_bytes + out_bytes;
      break;
    case Kind::kFill:
      w.flops = graphs::ElementwiseFlops(t.max_numel);
      w.bytes = out_bytes;
      break;
    case Kind::kReduction:
      w.flops = graphs::ReduceFlops(first);
      w.bytes = t.total_bytes;
      break;
    case Kind::kPooling:
    case Kind::kPoolingBackward:
      return PoolWork(kind, base, in, t);
    case Kind::kGlobalPool:
      w.flops = graphs::GlobalPoolFlops(first);
      w.bytes = first_bytes;
      break;
    case Kind::kNorm:
      w.flops = graphs::BatchNormFlops(first);
      w.bytes = t.total_bytes + first_bytes;
      w.channel_extent = graphs::ChannelExtent(base, t.shape(0));  // 0 for instance_norm
      break;
    case Kind::kLayerNorm:
      w.flops = graphs::LayerNormFlops(first);
      w.bytes = t.total_bytes + first_bytes;
      break;
    case Kind::kNormBackward:
      w.flops = 2.0 * graphs::BatchNormFlops(first);
      w.bytes = t.total_bytes + t.max_numel * t.max_size;
      w.channel_extent = graphs::ChannelExtent(base, t.shape(0));
      break;
    case Kind::kLayerNormBackward:
      w.flops = 2.0 * graphs::LayerNormFlops(first);
      w.bytes = t.total_bytes + t.max_numel * t.max_size;
      break;
    case Kind::kSoftmax:
      w.flops = graphs::SoftmaxFlops(first);
      w.bytes = 2.0 * first_bytes;
      break;
    case Kind::kSoftmaxBackward:
      w.flops = 2.0 * graphs::SoftmaxFlops(first);
      w.bytes = t.total_bytes + out_bytes;
      break;
    case Kind::kCrossEntropy:
      w.flops = graphs::SoftmaxFlops(first) + (t.count() > 1 ? t.numel(1) : 0.0);
      w.bytes = t.total_bytes + first_bytes;
      break;
    case Kind::kNllLoss:
      w.flops = t.count() > 1 ? t.numel(1) : first;
      w.bytes = base == "nll_loss_backward" || base == "nll_loss2d_backward" ? t.total_bytes + out_bytes
                                                                             : t.total_bytes;
      break;
    case Kind::kEmbedding: {
      // embedding(weight [V, D], indices): gathers numel(indices) rows of D.
      const double dim = t.count() > 1 && !t.shape(0).empty() ? static_cast<double>(t.shape(0).back()) : 0.0;
      const double rows = t.count() > 1 ? t.numel(1) : 0.0;
      w.bytes = 2.0 * rows * dim * t.sizes[0] + (t.count() > 1 ? t.bytes(1) : 0.0);
      w.approximate = dim == 0.0;
      break;
    }
    case Kind::kEmbeddingBackward:
      w.flops = graphs::ElementwiseFlops(first);
      w.bytes = 2.0 * first_bytes + (t.count() > 1 ? t.bytes(1) : 0.0);
      break;
    case Kind::kForeach: {
      // _foreach_op(list, [list | scalar]): per parameter element, one FLOP per list operand.
      double lists = 0.0;
      double elements = 0.0;
      for (const OpInput& i : in) {
        if (i.list.empty()) continue;
        lists += 1.0;
        if (elements == 0.0) {
          for (const auto& s : i.list) elements += Numel(s);
        }
      }
      w.flops = elements * std::max(1.0, lists);
      w.bytes = t.total_bytes + elements * t.max_size;
      break;
    }
    case Kind::kFusedAdam:
    case Kind::kFusedSgd: {
      double params = 0.0;
      for (const OpInput& i : in) {
        if (i.list.empty()) continue;
        for (const auto& s : i.list) params += Numel(s);
        break;
      }
      w.flops = params * (kind == Kind::kFusedAdam ? 12.0 : 3.0);
      w.bytes = t.total_bytes + params * t.max_size * (kind == Kind::kFusedAdam ? 3.0 : 2.0);
      break;
    }
    case Kind::kDataMovement:
    case Kind::kComm:
    case Kind::kOther:
    default:
      w.bytes = t.total_bytes + out_bytes;
      break;
  }
  return w;
}

}  // namespace

std::string BaseOpName(std::string_view name) {
  std::string_view n = name;
  const size_t sep = n.rfind("::");
  if (sep != std::string_view::npos) n = n.substr(sep + 2);
  const size_t dot = n.find('.');
  if (dot != std::string_view::npos) n = n.substr(0, dot);
  std::string base(n);
  if (EndsWith(base, "_out") && base.size() > 4) base.resize(base.size() - 4);
  while (base.size() > 1 && base.back() == '_') base.pop_back();
  return base;
}

OpWork EstimateOpWork(std::string_view name, const std::vector<OpInput>& inputs,
                      const std::vector<int64_t>* conv_output) {
  const Kind kind = KindOf(name);
  const std::string base = BaseOpName(name);
  switch (kind) {
    case Kind::kMatmul:
      return MatmulWork(base, inputs);
    case Kind::kConv:
      return ConvWork(inputs, conv_output);
    case Kind::kConvBackward:
      return ConvBackwardWork(base, inputs);
    default:
      return GenericWork(kind, base, inputs);
  }
}

ConvHints PairConvolutionOutputs(const Trace& trace) {
  ConvHints hints;
  const size_t n = trace.ops.size();
  std::vector<std::vector<int32_t>> children(n);
  std::unordered_map<int64_t, std::vector<int32_t>> by_sequence;
  for (size_t i = 0; i < n; ++i) {
    const TraceOp& op = trace.ops[i];
    if (op.parent >= 0) children[static_cast<size_t>(op.parent)].push_back(static_cast<int32_t>(i));
    if (op.sequence_number >= 0) by_sequence[op.sequence_number].push_back(static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    const TraceOp& fwd = trace.ops[i];
    if (!fwd.has_inputs || fwd.sequence_number < 0 || KindOf(fwd.name) != Kind::kConv) continue;
    // The autograd node of the backward pass: same sequence number, not an
    // aten op, after the forward.
    int32_t node = -1;
    for (int32_t c : by_sequence[fwd.sequence_number]) {
      const TraceOp& cand = trace.ops[static_cast<size_t>(c)];
      if (IsOperatorName(cand.name) || cand.start < fwd.end()) continue;
      if (node < 0 || cand.start < trace.ops[static_cast<size_t>(node)].start) node = c;
    }
    if (node < 0) continue;
    std::vector<int32_t> stack = {node};
    const std::vector<int64_t>* grad_output = nullptr;
    while (!stack.empty() && grad_output == nullptr) {
      const int32_t o = stack.back();
      stack.pop_back();
      const TraceOp& op = trace.ops[static_cast<size_t>(o)];
      if (op.has_inputs && KindOf(op.name) == Kind::kConvBackward) {
        const size_t index = BaseOpName(op.name) == "convolution_backward" ? 0 : 1;
        const OpInput* g = TensorAt(op.inputs, index, 3);
        if (g != nullptr) grad_output = &g->shape;
      }
      for (auto it = children[static_cast<size_t>(o)].rbegin(); it != children[static_cast<size_t>(o)].rend();
           ++it) {
        stack.push_back(*it);
      }
    }
    if (grad_output != nullptr) hints.emplace(static_cast<int32_t>(i), *grad_output);
  }
  return hints;
}

std::string ConvVariant(std::string_view name, const std::vector<OpInput>& inputs) {
  const std::string base = BaseOpName(name);
  if (base.find("transpose") != std::string::npos) return "";
  const Kind kind = KindOf(name);
  const OpInput* x = nullptr;
  const OpInput* weight = nullptr;
  if (kind == Kind::kConv) {
    x = TensorAt(inputs, 0, 3), weight = TensorAt(inputs, 1, 3);
  } else if (kind == Kind::kConvBackward && base == "convolution_backward") {
    x = TensorAt(inputs, 1, 3), weight = TensorAt(inputs, 2, 3);
  } else if (kind == Kind::kConvBackward && base == "cudnn_convolution_backward") {
    x = TensorAt(inputs, 0, 3), weight = TensorAt(inputs, 2, 3);
  }
  if (x == nullptr || weight == nullptr) return "";
  return graphs::ConvKindSuffix(graphs::ConvKindOf(weight->shape[1], x->shape[1]));
}

bool PrecisionApplies(std::string_view name) {
  const Kind kind = KindOf(name);
  return kind == Kind::kMatmul || kind == Kind::kConv || kind == Kind::kConvBackward || kind == Kind::kNorm ||
         kind == Kind::kNormBackward || name.find("scaled_dot_product") != std::string_view::npos;
}

bool SpansManyTensors(std::string_view name) {
  if (StartsWith(name, "Optimizer.step#") || StartsWith(name, "Optimizer.zero_grad#")) return true;
  // FBGEMM's table-batched embeddings look up, and in the backward update
  // with a fused optimizer (rowwise Adagrad), every table at once.
  if (name.find("split_embedding") != std::string_view::npos ||
      name.find("SplitLookupFunction") != std::string_view::npos)
    return true;
  const Kind kind = KindOf(BaseSampleType(name));
  return kind == Kind::kForeach || kind == Kind::kFusedAdam || kind == Kind::kFusedSgd;
}

std::string PrecisionVariant(std::string_view name, const std::vector<OpInput>& inputs) {
  if (!PrecisionApplies(name)) return "";
  for (const OpInput& in : inputs) {
    if (!in.is_tensor) continue;
    if (in.dtype == graphs::DType::kBFloat16) return " [bf16]";
    if (in.dtype == graphs::DType::kFloat16) return " [fp16]";
    return "";
  }
  return "";
}

std::string SampleType(std::string_view name, const std::vector<OpInput>& inputs) {
  return std::string(name) + ConvVariant(name, inputs) + PrecisionVariant(name, inputs);
}

std::string_view BaseSampleType(std::string_view type) {
  const size_t cut = std::min(type.find(" ("), type.find(" ["));
  return cut == std::string_view::npos ? type : type.substr(0, cut);
}

}  // namespace gosim::calibration
