#include "calibration/hardware/op_recipes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <numeric>

#include "graphs/op_class.h"

namespace gosim::calibration::hardware {
namespace {

using graphs::Graph;
using graphs::NodeId;
using graphs::OpClass;

int64_t Product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}
// The product of the leading `count` dimensions.
int64_t LeadingProduct(const std::vector<int64_t>& v, size_t count) {
  return std::accumulate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(count, v.size())),
                         int64_t{1}, std::multiplies<>());
}

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

bool Contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

struct InputInfo {
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  int64_t numel = 0;
};

std::vector<InputInfo> DataInputs(const Graph& graph, NodeId id) {
  std::vector<InputInfo> out;
  for (graphs::EdgeId e : graph.in_edges(id)) {
    const graphs::Edge& edge = graph.edge(e);
    if (edge.is_control()) continue;
    const graphs::Node& src = graph.node(edge.src);
    InputInfo info;
    if (edge.output_index < static_cast<int32_t>(src.outputs.size())) {
      const graphs::TensorInfo& t = src.outputs[static_cast<size_t>(edge.output_index)];
      info.shape = RunShape(t);
      info.dtype = TorchDType(t.dtype);
    } else {
      info.shape = {std::max<int64_t>(1, edge.bytes / 4)};
    }
    info.numel = Product(info.shape);
    out.push_back(std::move(info));
  }
  return out;
}

RecordedArg TensorArg(const std::vector<int64_t>& shape, at::ScalarType dtype = at::kFloat) {
  return {shape, {}, dtype == at::kLong ? "long int" : "float"};
}
RecordedArg Scalar() {
  return {{}, {}, "Scalar"};
}

Operand Op(std::vector<int64_t> shape, at::ScalarType dtype = at::kFloat, int64_t index_range = 0) {
  Operand o;
  o.shape = std::move(shape);
  o.dtype = dtype;
  o.index_range = index_range;
  return o;
}

// The equivalent matmul of a node's FLOPs: [m, k] x [k, n] with m x n the
// first output's elements (rows x last dim) when it has one.
Recipe MatmulOf(double flops, int64_t out_rows, int64_t out_cols, int64_t batch = 1) {
  Recipe r;
  r.kind = RecipeKind::kMatmul;
  const int64_t m = std::max<int64_t>(1, out_rows);
  const int64_t n = std::max<int64_t>(1, out_cols);
  const int64_t b = std::max<int64_t>(1, batch);
  const int64_t k = std::max<int64_t>(1, std::llround(flops / (2.0 * static_cast<double>(b * m * n))));
  if (b == 1) {
    r.aten = "aten::mm";
    r.operands = {Op({m, k}), Op({k, n})};
  } else {
    r.aten = "aten::bmm";
    r.operands = {Op({b, m, k}), Op({b, k, n})};
  }
  for (const Operand& o : r.operands) r.recorded.push_back(TensorArg(o.shape));
  return r;
}

Recipe CopyOf(int64_t elements) {
  Recipe r;
  r.kind = RecipeKind::kCopy;
  r.aten = "aten::copy_";
  const int64_t n = std::max<int64_t>(1, elements);
  r.operands = {Op({n})};
  r.recorded = {TensorArg({n}), TensorArg({n}), Scalar()};
  return r;
}

Recipe Fallback(const graphs::Node& node, const std::vector<int64_t>& out) {
  Recipe r;
  if (node.flops > 0.0) {
    int64_t cols = out.empty() ? 0 : out.back();
    int64_t rows = out.empty() ? 0 : Product(out) / std::max<int64_t>(1, cols);
    if (rows > 0 && cols > 0 && std::min(rows, cols) < 16) {
      // A thin output (e.g. a 1-D convolution's weight gradient, [k, C, 1])
      // would run as a matrix-vector product, memory-bound and 10-20x slower
      // per FLOP than the GEMM that such a node is: shape the same elements
      // as square as their divisors allow.
      const int64_t elements = rows * cols;
      int64_t m = 1;
      for (int64_t d = 1; d * d <= elements; ++d) {
        if (elements % d == 0) m = d;
      }
      if (m >= 16) {
        rows = elements / m;
        cols = m;
      }
    }
    if (rows > 0 && cols > 0) {
      r = MatmulOf(node.flops, rows, cols);
    } else {
      const auto side = static_cast<int64_t>(std::cbrt(node.flops / 2.0));
      r = MatmulOf(node.flops, side, side);
    }
  } else {
    const int64_t bytes = std::max(node.bytes_read, node.bytes_written);
    r = CopyOf(bytes / 4);
  }
  r.fallback = true;
  return r;
}

// Stride and padding that take spatial size `in` to `out` with kernel `k`.
bool StridePad(int64_t in, int64_t out, int64_t k, int64_t* stride, int64_t* pad) {
  if (in <= 0 || out <= 0) return false;
  const int64_t s = std::max<int64_t>(1, (in + out - 1) / out);
  const int64_t p = std::max<int64_t>(0, ((out - 1) * s + k - in + 1) / 2);
  if ((in + 2 * p - k) / s + 1 != out || in + 2 * p < k) return false;
  *stride = s;
  *pad = p;
  return true;
}

// Stride and padding of a pooling window of size k mapping `in` to `out`,
// within ATen's bound (padding at most half the window): the smallest such
// stride, e.g. Inception's "valid" 3x3 / 2 pooling 73 -> 36 (stride 2, no
// padding), which StridePad's rounded-up stride (3, padding 18) misses.
bool PoolStridePad(int64_t in, int64_t out, int64_t k, int64_t* stride, int64_t* pad) {
  if (in <= 0 || out <= 0 || k <= 0) return false;
  for (int64_t s = 1; s <= std::max<int64_t>(1, (in + out - 1) / out); ++s) {
    const int64_t need = (out - 1) * s + k - in;  // 2p must reach it, plus what the floor drops
    for (int64_t p = std::max<int64_t>(0, need / 2); 2 * p <= k; ++p) {
      if (in + 2 * p >= k && (in + 2 * p - k) / s + 1 == out) {
        *stride = s;
        *pad = p;
        return true;
      }
    }
  }
  return false;
}

const InputInfo* Find(const std::vector<InputInfo>& in, const std::function<bool(const InputInfo&)>& pred) {
  for (const InputInfo& i : in) {
    if (pred(i)) return &i;
  }
  return nullptr;
}

Recipe PlanConv(const graphs::Node& node, const std::vector<InputInfo>& in, const std::vector<int64_t>& out,
                bool backward, bool weight_grad) {
  // Forward: out [N, K, Ho, Wo]. Backward input: out = x [N, C, H, W]. Backward weight: out = w [K, C, kh,
  // kw].
  if (out.size() != 4) return Fallback(node, out);
  std::vector<int64_t> x, w, y;  // activation, weight, conv output
  if (!backward) {
    y = out;
    const InputInfo* wi =
        Find(in, [&](const InputInfo& i) { return i.shape.size() == 4 && i.shape[0] == out[1]; });
    if (wi == nullptr) return Fallback(node, out);
    w = wi->shape;
    const InputInfo* xi = Find(in, [&](const InputInfo& i) {
      return i.shape.size() == 4 && i.shape[0] == out[0] && i.shape[1] == w[1] && &i != wi;
    });
    if (xi == nullptr) return Fallback(node, out);
    x = xi->shape;
  } else if (!weight_grad) {
    x = out;
    const InputInfo* wi =
        Find(in, [&](const InputInfo& i) { return i.shape.size() == 4 && i.shape[1] == out[1]; });
    if (wi == nullptr) return Fallback(node, out);
    w = wi->shape;
    const InputInfo* gi = Find(in, [&](const InputInfo& i) {
      return i.shape.size() == 4 && i.shape[0] == out[0] && i.shape[1] == w[0] && &i != wi;
    });
    if (gi == nullptr) return Fallback(node, out);
    y = gi->shape;
  } else {
    w = out;
    const InputInfo* xi =
        Find(in, [&](const InputInfo& i) { return i.shape.size() == 4 && i.shape[1] == out[1]; });
    const InputInfo* gi =
        Find(in, [&](const InputInfo& i) { return i.shape.size() == 4 && i.shape[1] == out[0] && &i != xi; });
    if (xi == nullptr || gi == nullptr) return Fallback(node, out);
    x = xi->shape;
    y = gi->shape;
  }
  int64_t sh = 1, ph = 0, sw = 1, pw = 0;
  if (x[0] != y[0] || !StridePad(x[2], y[2], w[2], &sh, &ph) || !StridePad(x[3], y[3], w[3], &sw, &pw)) {
    return Fallback(node, out);
  }
  Recipe r;
  r.params = {sh, sw, ph, pw};
  const RecordedArg ints = {{}, {}, ""};
  if (!backward) {
    r.kind = RecipeKind::kConv;
    r.aten = "aten::conv2d";
    r.operands = {Op(x), Op(w)};
    r.recorded = {TensorArg(x), TensorArg(w), ints, ints, ints, ints, ints};
  } else if (!weight_grad) {
    // Recorded as cuDNN's input-gradient op: its argument layout
    // (input_size, grad_output, weight) gives op_work.h one pass of FLOPs.
    r.kind = RecipeKind::kConvBackwardInput;
    r.aten = "aten::cudnn_convolution_backward_input";
    r.operands = {Op(y), Op(x, at::kFloat), Op(w)};
    r.operands[1].from_input = false;  // only its shape matters
    r.recorded = {ints, TensorArg(y), TensorArg(w), ints, ints, ints, ints};
  } else {
    r.kind = RecipeKind::kConvBackwardWeight;
    r.aten = "aten::cudnn_convolution_backward_weight";
    r.operands = {Op(y), Op(x), Op(w)};
    r.operands[2].from_input = false;
    r.recorded = {ints, TensorArg(y), TensorArg(x), ints, ints, ints, ints};
  }
  return r;
}

}  // namespace

at::ScalarType TorchDType(graphs::DType dtype) {
  switch (dtype) {
    case graphs::DType::kInt64:
    case graphs::DType::kInt32:
    case graphs::DType::kInt16:
    case graphs::DType::kInt8:
    case graphs::DType::kUInt8:
      return at::kLong;
    default:
      return at::kFloat;  // half / bfloat16 graphs run in float32 on the CPU
  }
}

int64_t ElementCount(const graphs::TensorInfo& info) {
  if (!info.shape.empty()) return std::max<int64_t>(1, Product(info.shape));
  const int size = graphs::DTypeSize(info.dtype);
  return std::max<int64_t>(1, info.bytes / (size > 0 ? size : 4));
}

std::vector<int64_t> RunShape(const graphs::TensorInfo& info) {
  if (!info.shape.empty() && Product(info.shape) > 0) return info.shape;
  return {ElementCount(info)};
}

Recipe PlanNode(const Graph& graph, NodeId id) {
  const graphs::Node& node = graph.node(id);
  const std::string& type = graph.op_type_name(node.op);
  const std::string name = Lower(type);
  const OpClass cls = graphs::ClassifyOp(type);
  const std::vector<InputInfo> in = DataInputs(graph, id);
  const std::vector<int64_t> out = node.outputs.empty() ? std::vector<int64_t>{} : RunShape(node.outputs[0]);
  const int64_t out_numel = out.empty() ? 0 : Product(out);
  const int64_t bytes = node.bytes_read + node.bytes_written;
  if (node.flops <= 0.0 && bytes <= 0) return Recipe{};  // sources, views, no-ops
  const InputInfo* largest = nullptr;
  for (const InputInfo& i : in) {
    if (largest == nullptr || i.numel > largest->numel) largest = &i;
  }

  switch (cls) {
    case OpClass::kMatMul: {
      if (node.flops <= 0.0 || out.empty()) return Fallback(node, out);
      const int64_t n = out.back();
      const int64_t m = out.size() >= 2 ? out[out.size() - 2] : 1;
      const int64_t b = out.size() >= 3 ? LeadingProduct(out, out.size() - 2) : 1;
      if (b > 1) {
        // A dense layer on a batched activation ([b, m, k] x [k, n], the
        // weight not batched) runs as one [b * m, k] x [k, n] product, as
        // torch.matmul and TensorFlow do: the weight is read once, not b
        // times as a bmm over copies of it would.
        const int64_t k =
            std::max<int64_t>(1, std::llround(node.flops / (2.0 * static_cast<double>(b * m * n))));
        const bool shared_weight = Find(in, [&](const InputInfo& i) { return i.numel == k * n; }) &&
                                   !Find(in, [&](const InputInfo& i) { return i.numel == b * k * n; });
        if (shared_weight) return MatmulOf(node.flops, b * m, n);
      }
      return MatmulOf(node.flops, m, n, b);
    }
    case OpClass::kConv:
      return PlanConv(node, in, out, false, false);
    case OpClass::kConvBackward:
      return PlanConv(node, in, out, true, Contains(name, "filter") || Contains(name, "weight"));
    case OpClass::kElementwise: {
      if (out_numel <= 0) return Fallback(node, out);
      Recipe r;
      int same = 0;
      for (const InputInfo& i : in) same += i.numel == out_numel && i.dtype == at::kFloat ? 1 : 0;
      if (Contains(name, "addn") && same > 2) {
        r.kind = RecipeKind::kAddN;
        r.aten = "aten::add";
        for (int k = 0; k < same; ++k) r.operands.push_back(Op(out));
        r.recorded = {TensorArg(out), TensorArg(out), Scalar()};
        r.params = {same};
        return r;
      }
      const bool binary_name = Contains(name, "grad") || Contains(name, "add") || Contains(name, "mul") ||
                               Contains(name, "sub") || Contains(name, "div") || Contains(name, "maximum") ||
                               Contains(name, "minimum") || Contains(name, "pow");
      if (binary_name && !in.empty() && (same >= 2 || in.size() >= 2)) {
        r.kind = RecipeKind::kBinary;
        r.operands = {Op(out), Op(out)};
        // A broadcast operand (BiasAdd's bias): the last dimension only.
        if (same < 2 && out.size() >= 1 &&
            Find(in, [&](const InputInfo& i) { return i.numel == out.back(); })) {
          r.operands[1] = Op({out.back()});
        }
        if (Contains(name, "relugrad"))
          r.unary = "threshold_backward", r.aten = "aten::threshold_backward";
        else if (Contains(name, "sigmoidgrad"))
          r.unary = "sigmoid_backward", r.aten = "aten::sigmoid_backward";
        else if (Contains(name, "tanhgrad"))
          r.unary = "tanh_backward", r.aten = "aten::tanh_backward";
        else if (Contains(name, "gelugrad"))
          r.unary = "gelu_backward", r.aten = "aten::gelu_backward";
        else if (Contains(name, "mul") || Contains(name, "dropoutgrad"))
          r.unary = "mul", r.aten = "aten::mul";
        else if (Contains(name, "sub"))
          r.unary = "sub", r.aten = "aten::sub";
        else if (Contains(name, "div"))
          r.unary = "div", r.aten = "aten::div";
        else
          r.unary = "add", r.aten = "aten::add";
        r.recorded = {TensorArg(r.operands[0].shape), TensorArg(r.operands[1].shape)};
        return r;
      }
      r.kind = RecipeKind::kUnary;
      r.operands = {Op(out)};
      if (Contains(name, "relu"))
        r.unary = "relu";
      else if (Contains(name, "sigmoid"))
        r.unary = "sigmoid";
      else if (Contains(name, "tanh"))
        r.unary = "tanh";
      else if (Contains(name, "gelu"))
        r.unary = "gelu";
      else if (Contains(name, "dropout"))
        r.unary = "dropout";
      else if (Contains(name, "exp"))
        r.unary = "exp";
      else if (Contains(name, "sqrt"))
        r.unary = "sqrt";
      else
        r.unary = "mul";
      r.aten = "aten::" + r.unary;
      r.recorded = {TensorArg(out)};
      if (r.unary == "dropout" || r.unary == "mul") r.recorded.push_back(Scalar());
      return r;
    }
    case OpClass::kReduction: {
      if (largest == nullptr || out_numel <= 0 || largest->numel <= out_numel ||
          largest->numel % out_numel != 0) {
        return Fallback(node, out);
      }
      Recipe r;
      r.kind = RecipeKind::kReduce;
      r.aten = "aten::sum";
      // BiasAddGrad-like (the kept dimension is the last one) reduces dim 0.
      const bool keep_last = largest->shape.back() == out_numel;
      const std::vector<int64_t> shape = keep_last
                                             ? std::vector<int64_t>{largest->numel / out_numel, out_numel}
                                             : std::vector<int64_t>{out_numel, largest->numel / out_numel};
      r.params = {keep_last ? 0 : 1};
      r.operands = {Op(shape)};
      r.recorded = {TensorArg(shape), {{}, {}, "int[]"}, Scalar()};
      return r;
    }
    case OpClass::kSoftmax: {
      if (largest == nullptr || largest->shape.empty()) return Fallback(node, out);
      const int64_t classes = largest->shape.back();
      const int64_t rows = largest->numel / std::max<int64_t>(1, classes);
      Recipe r;
      const std::vector<int64_t> shape = {rows, classes};
      if (Contains(name, "crossentropy")) {
        const bool grad = Contains(name, "grad");
        r.kind = grad ? RecipeKind::kCrossEntropyBackward : RecipeKind::kCrossEntropy;
        r.aten = grad ? "aten::_log_softmax_backward_data" : "aten::cross_entropy_loss";
        r.operands = {Op(shape), Op({rows}, at::kLong, classes)};
        if (grad) {
          r.operands = {Op(shape), Op(shape)};
          r.recorded = {TensorArg(shape), TensorArg(shape), Scalar(), Scalar()};
        } else {
          r.recorded = {TensorArg(shape), TensorArg({rows}, at::kLong)};
        }
        return r;
      }
      const bool grad = Contains(name, "grad");
      r.kind = grad ? RecipeKind::kSoftmaxBackward : RecipeKind::kSoftmax;
      r.aten = grad ? "aten::_softmax_backward_data" : "aten::_softmax";
      r.operands = grad ? std::vector<Operand>{Op(shape), Op(shape)} : std::vector<Operand>{Op(shape)};
      r.recorded = grad ? std::vector<RecordedArg>{TensorArg(shape), TensorArg(shape), Scalar(), Scalar()}
                        : std::vector<RecordedArg>{TensorArg(shape), Scalar(), Scalar()};
      return r;
    }
    case OpClass::kNormalization: {
      if (out.empty() || out_numel <= 0) return Fallback(node, out);
      Recipe r;
      const bool grad = Contains(name, "grad");
      if (Contains(name, "batchnorm") && out.size() == 4) {
        const int64_t c = out[1];
        r.kind = grad ? RecipeKind::kBatchNormBackward : RecipeKind::kBatchNorm;
        r.aten = grad ? "aten::native_batch_norm_backward" : "aten::batch_norm";
        r.operands = {Op(out), Op({c}), Op({c}), Op({c}), Op({c})};
        if (grad) r.operands.insert(r.operands.begin(), Op(out));  // grad_out first
        for (Operand& o : r.operands) o.from_input = o.shape.size() == 4;
        for (const Operand& o : r.operands) r.recorded.push_back(TensorArg(o.shape));
        return r;
      }
      const int64_t d = out.back();
      const int64_t rows = out_numel / std::max<int64_t>(1, d);
      const std::vector<int64_t> shape = {rows, d};
      r.kind = grad ? RecipeKind::kLayerNormBackward : RecipeKind::kLayerNorm;
      r.aten = grad ? "aten::native_layer_norm_backward" : "aten::layer_norm";
      if (grad) {
        r.operands = {Op(shape), Op(shape), Op({rows, 1}), Op({rows, 1}), Op({d}), Op({d})};
        r.recorded = {TensorArg(shape),     TensorArg(shape), {{}, {}, "int[]"}, TensorArg({rows, 1}),
                      TensorArg({rows, 1}), TensorArg({d}),   TensorArg({d}),    {{}, {}, ""}};
      } else {
        r.operands = {Op(shape), Op({d}), Op({d})};
        r.recorded = {TensorArg(shape), {{}, {}, "int[]"}, TensorArg({d}),
                      TensorArg({d}),   Scalar(),          Scalar()};
      }
      for (Operand& o : r.operands)
        o.from_input = o.shape.size() == 2 && o.shape[0] == rows && o.shape[1] == d;
      return r;
    }
    case OpClass::kPooling: {
      const bool grad = Contains(name, "grad");
      if (!Contains(name, "maxpool") || out.size() != 4) return Fallback(node, out);
      // Forward: out [N, C, Ho, Wo] from x [N, C, H, W]; backward: out = x.
      const InputInfo* big = Find(in, [&](const InputInfo& i) {
        return i.shape.size() == 4 && i.shape[0] == out[0] && i.shape[1] == out[1] &&
               (grad ? i.shape[2] < out[2] : i.shape[2] > out[2]);
      });
      if (big == nullptr) return Fallback(node, out);
      const std::vector<int64_t> x = grad ? out : big->shape;
      const std::vector<int64_t> y = grad ? big->shape : out;
      int64_t s = 1, p = 0, k = 3;
      if (!PoolStridePad(x[2], y[2], k, &s, &p)) {
        k = std::max<int64_t>(1, x[2] / y[2]);
        if (!PoolStridePad(x[2], y[2], k, &s, &p)) return Fallback(node, out);
      }
      Recipe r;
      r.params = {k, s, p};
      r.kind = grad ? RecipeKind::kMaxPoolBackward : RecipeKind::kMaxPool;
      r.aten = grad ? "aten::max_pool2d_with_indices_backward" : "aten::max_pool2d";
      r.operands = grad ? std::vector<Operand>{Op(y), Op(x)} : std::vector<Operand>{Op(x)};
      for (const Operand& o : r.operands) r.recorded.push_back(TensorArg(o.shape));
      return r;
    }
    case OpClass::kEmbedding: {
      if (!Contains(name, "gather") || out.empty()) return Fallback(node, out);
      const int64_t d = out.back();
      const InputInfo* table = Find(in, [&](const InputInfo& i) {
        return i.shape.size() == 2 && i.shape[1] == d && i.dtype == at::kFloat;
      });
      if (table == nullptr) return Fallback(node, out);
      const int64_t rows = out_numel / std::max<int64_t>(1, d);
      Recipe r;
      r.kind = RecipeKind::kEmbedding;
      r.aten = "aten::embedding";
      r.operands = {Op(table->shape), Op({rows}, at::kLong, table->shape[0])};
      r.recorded = {TensorArg(table->shape), TensorArg({rows}, at::kLong), Scalar(), Scalar(), Scalar()};
      return r;
    }
    case OpClass::kOptimizer: {
      const InputInfo* var = in.empty() ? nullptr : &in.front();
      if (var == nullptr || !Contains(name, "adam")) return Fallback(node, out);
      int64_t params = var->numel;
      if (Contains(name, "sparse") && in.size() >= 2) params = std::min(params, in[1].numel);
      Recipe r;
      r.kind = RecipeKind::kAdam;
      r.aten = "aten::_fused_adam";
      r.operands = {Op({params}), Op({params}), Op({params}), Op({params})};
      r.operands[0].from_input = false;  // the update is in place on private state
      r.operands[2].from_input = false;
      r.operands[3].from_input = false;
      for (int k = 0; k < 4; ++k) {
        r.recorded.push_back(
            {{}, std::vector<std::vector<int64_t>>{std::vector<int64_t>{params}}, "TensorList"});
      }
      return r;
    }
    default:
      break;
  }
  if (cls == OpClass::kMemory || node.flops <= 0.0) {
    int64_t elements = 0;
    for (const graphs::TensorInfo& t : node.outputs) elements += ElementCount(t);
    if (elements == 0) elements = std::max(node.bytes_read, node.bytes_written) / 4;
    return CopyOf(elements);
  }
  return Fallback(node, out);
}

void PrepareConstants(Recipe* recipe, const at::Device& device) {
  recipe->constants.clear();
  const auto options = at::TensorOptions().device(device);
  for (const Operand& o : recipe->operands) {
    if (o.dtype == at::kLong) {
      recipe->constants.push_back(
          at::randint(std::max<int64_t>(1, o.index_range), o.shape, options.dtype(at::kLong)));
    } else {
      recipe->constants.push_back(at::rand(o.shape, options.dtype(at::kFloat)) + 0.5);
    }
  }
  if (recipe->kind == RecipeKind::kMaxPoolBackward) {
    // Indices of a forward pass over the constant input: valid window
    // positions, so the backward does the work of the real one.
    const auto& p = recipe->params;
    recipe->constants.push_back(std::get<1>(
        at::max_pool2d_with_indices(recipe->constants[1], {p[0], p[0]}, {p[1], p[1]}, {p[2], p[2]})));
  }
}

std::vector<at::Tensor> RunRecipe(const Recipe& r, const std::vector<at::Tensor>& inputs) {
  // Operands: the first unused input of the same numel and dtype, else the constant.
  std::vector<at::Tensor> x(r.operands.size());
  std::vector<bool> used(inputs.size(), false);
  for (size_t k = 0; k < r.operands.size(); ++k) {
    const Operand& o = r.operands[k];
    const int64_t numel = Product(o.shape);
    if (o.from_input) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (used[i] || !inputs[i].defined() || inputs[i].numel() != numel ||
            inputs[i].scalar_type() != o.dtype)
          continue;
        used[i] = true;
        x[k] = inputs[i].reshape(o.shape);
        break;
      }
    }
    if (!x[k].defined()) x[k] = r.constants[k];
  }
  const auto& p = r.params;
  switch (r.kind) {
    case RecipeKind::kNone:
      return {};
    case RecipeKind::kMatmul:
      return {x[0].dim() == 2 ? at::mm(x[0], x[1]) : at::bmm(x[0], x[1])};
    case RecipeKind::kConv:
      return {at::conv2d(x[0], x[1], {}, {p[0], p[1]}, {p[2], p[3]})};
    case RecipeKind::kConvBackwardInput:
      return {std::get<0>(at::convolution_backward(x[0], x[1], x[2], c10::nullopt, {p[0], p[1]}, {p[2], p[3]},
                                                   {1, 1}, false, {0, 0}, 1, {true, false, false}))};
    case RecipeKind::kConvBackwardWeight:
      return {std::get<1>(at::convolution_backward(x[0], x[1], x[2], c10::nullopt, {p[0], p[1]}, {p[2], p[3]},
                                                   {1, 1}, false, {0, 0}, 1, {false, true, false}))};
    case RecipeKind::kUnary: {
      const std::string& f = r.unary;
      if (f == "relu") return {at::relu(x[0])};
      if (f == "sigmoid") return {at::sigmoid(x[0])};
      if (f == "tanh") return {at::tanh(x[0])};
      if (f == "gelu") return {at::gelu(x[0])};
      if (f == "dropout") return {at::dropout(x[0], 0.1, true)};
      if (f == "exp") return {at::exp(x[0])};
      if (f == "sqrt") return {at::sqrt(x[0])};
      return {at::mul(x[0], 0.5)};
    }
    case RecipeKind::kBinary: {
      const std::string& f = r.unary;
      if (f == "threshold_backward") return {at::threshold_backward(x[0], x[1], 0.0)};
      if (f == "sigmoid_backward") return {at::sigmoid_backward(x[0], x[1])};
      if (f == "tanh_backward") return {at::tanh_backward(x[0], x[1])};
      if (f == "gelu_backward") return {at::gelu_backward(x[0], x[1])};
      if (f == "mul") return {at::mul(x[0], x[1])};
      if (f == "sub") return {at::sub(x[0], x[1])};
      if (f == "div") return {at::div(x[0], x[1])};
      return {at::add(x[0], x[1])};
    }
    case RecipeKind::kAddN: {
      at::Tensor sum = at::add(x[0], x[1]);
      for (size_t k = 2; k < x.size(); ++k) sum.add_(x[k]);
      return {sum};
    }
    case RecipeKind::kReduce:
      return {at::sum(x[0], {p[0]})};
    case RecipeKind::kSoftmax:
      return {at::_softmax(x[0], -1, false)};
    case RecipeKind::kSoftmaxBackward:
      return {at::_softmax_backward_data(x[0], x[1], -1, at::kFloat)};
    case RecipeKind::kCrossEntropy:
      return {at::cross_entropy_loss(x[0], x[1], {}, at::Reduction::None)};
    case RecipeKind::kCrossEntropyBackward:
      return {at::_log_softmax_backward_data(x[0], x[1], 1, at::kFloat)};
    case RecipeKind::kLayerNorm:
      return {std::get<0>(at::native_layer_norm(x[0], {x[0].size(1)}, x[1], x[2], 1e-5))};
    case RecipeKind::kLayerNormBackward: {
      auto g = at::native_layer_norm_backward(x[0], x[1], {x[1].size(1)}, x[2], x[3], x[4], x[5],
                                              {true, true, true});
      return {std::get<0>(g), std::get<1>(g), std::get<2>(g)};
    }
    case RecipeKind::kBatchNorm:
      return {std::get<0>(at::native_batch_norm(x[0], x[1], x[2], x[3], x[4], true, 0.1, 1e-5))};
    case RecipeKind::kBatchNormBackward: {
      auto g = at::native_batch_norm_backward(x[0], x[1], x[2], x[3], x[4], x[3], x[4], true, 1e-5,
                                              {true, true, true});
      return {std::get<0>(g), std::get<1>(g), std::get<2>(g)};
    }
    case RecipeKind::kMaxPool:
      return {at::max_pool2d(x[0], {p[0], p[0]}, {p[1], p[1]}, {p[2], p[2]})};
    case RecipeKind::kMaxPoolBackward: {
      return {at::max_pool2d_with_indices_backward(x[0], x[1], {p[0], p[0]}, {p[1], p[1]}, {p[2], p[2]},
                                                   {1, 1}, false, r.constants.back())};
    }
    case RecipeKind::kEmbedding:
      return {at::embedding(x[0], x[1])};
    case RecipeKind::kAdam: {
      // Adam (Kingma & Ba 2015, Algorithm 1) on private state: p, g, m, v.
      at::Tensor p0 = x[0], g = x[1], m = x[2], v = x[3];
      m.mul_(0.9).add_(g, 0.1);
      v.mul_(0.999).addcmul_(g, g, 0.001);
      p0.addcdiv_(m, v.sqrt().add_(1e-8), -1e-6);
      return {};
    }
    case RecipeKind::kCopy: {
      at::Tensor out = at::empty_like(x[0]);
      out.copy_(x[0]);
      return {out};
    }
  }
  return {};
}

}  // namespace gosim::calibration::hardware
