// The layer helpers of ModelBuilder: shapes, FLOPs and gradient recipes.
#include <algorithm>

#include "core/error.h"
#include "graphs/generators/model_builder.h"

namespace gosim::graphs::gen {
namespace {

double D(int64_t x) {
  return static_cast<double>(x);
}

// FLOPs per element of gradient ops.
constexpr double kGradFlopsRelu = 1.0;
constexpr double kGradFlopsSigmoidTanh = 3.0;
constexpr double kGradFlopsGelu = 10.0;
constexpr double kGradFlopsSoftmax = 4.0;
constexpr double kGradFlopsNorm = 10.0;

int NormAxis(int axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int>(rank) : axis;
}

}  // namespace

int64_t ModelBuilder::ConvOut(int64_t in, int k, int stride, int pad, int dilation, const char* what) const {
  int64_t out;
  if (pad == ConvSpec::kSame) {
    out = (in + stride - 1) / stride;
  } else {
    out = (in + 2 * pad - static_cast<int64_t>(dilation) * (k - 1) - 1) / stride + 1;
  }
  if (out <= 0 || in <= 0) {
    Fail(std::string(what) + " input of size " + std::to_string(in) + " is too small for a kernel of " +
         std::to_string(k) + " with stride " + std::to_string(stride));
  }
  return out;
}

Shape ModelBuilder::Broadcast(const Shape& a, const Shape& b) const {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) Fail("shapes cannot be broadcast together");
    out[i] = std::max(da, db);
  }
  return out;
}

Tensor ModelBuilder::Conv2D(Tensor x, const ConvSpec& s, std::string_view name) {
  if (shape(x).size() != 4) Fail("Conv2D needs an NCHW input");
  auto scope = UniqueScope(name);
  const int64_t n = dim(x, 0), c = dim(x, 1);
  const int64_t ho = ConvOut(dim(x, 2), s.kh, s.stride, s.ph, s.dilation, "Conv2D");
  const int64_t wo = ConvOut(dim(x, 3), s.kw, s.stride, s.pw, s.dilation, "Conv2D");
  const Tensor w = Weight("kernel", {s.filters, c, s.kh, s.kw});
  const double flops = 2.0 * D(n) * D(ho) * D(wo) * D(s.filters) * D(c) * s.kh * s.kw;
  const int32_t r =
      Op({.op = "Conv2D", .inputs = {x, w}, .outputs = {{n, s.filters, ho, wo}}, .flops = flops});
  AddGrad(r, {.op = "Conv2DBackpropInput", .flops = flops, .wrt = 0, .saved = {w}});
  AddGrad(r, {.op = "Conv2DBackpropFilter", .flops = flops, .wrt = 1, .saved = {x}});
  Tensor y = output(r);
  if (s.bias) y = BiasAdd(y, Weight("bias", {s.filters}), 1);
  return y;
}

Tensor ModelBuilder::DepthwiseConv2D(Tensor x, int kh, int kw, int stride, int ph, int pw, int dilation) {
  if (shape(x).size() != 4) Fail("DepthwiseConv2D needs an NCHW input");
  auto scope = UniqueScope("depthwise");
  const int64_t n = dim(x, 0), c = dim(x, 1);
  const int64_t ho = ConvOut(dim(x, 2), kh, stride, ph, dilation, "DepthwiseConv2D");
  const int64_t wo = ConvOut(dim(x, 3), kw, stride, pw, dilation, "DepthwiseConv2D");
  const Tensor w = Weight("depthwise_kernel", {c, 1, kh, kw});
  const double flops = 2.0 * D(n) * D(ho) * D(wo) * D(c) * kh * kw;
  const int32_t r =
      Op({.op = "DepthwiseConv2dNative", .inputs = {x, w}, .outputs = {{n, c, ho, wo}}, .flops = flops});
  AddGrad(r, {.op = "DepthwiseConv2dNativeBackpropInput", .flops = flops, .wrt = 0, .saved = {w}});
  AddGrad(r, {.op = "DepthwiseConv2dNativeBackpropFilter", .flops = flops, .wrt = 1, .saved = {x}});
  return output(r);
}

Tensor ModelBuilder::SeparableConv2D(Tensor x, int64_t filters, int k, int stride) {
  auto scope = UniqueScope("separable_conv2d");
  const Tensor d = DepthwiseConv2D(x, k, k, stride);
  return Conv2D(d, {.filters = filters}, "pointwise");
}

Tensor ModelBuilder::Conv1D(Tensor x, int64_t filters, int k, int dilation, bool causal, bool bias,
                            std::string_view name) {
  if (shape(x).size() != 3) Fail("Conv1D needs a [batch, channels, time] input");
  auto scope = UniqueScope(name);
  const int64_t n = dim(x, 0), c = dim(x, 1), t = dim(x, 2);
  (void)causal;  // causal (left) and SAME padding both keep the length
  const Tensor w = Weight("kernel", {filters, c, k});
  const double flops = 2.0 * D(n) * D(t) * D(filters) * D(c) * k;
  const int32_t r = Op({.op = "Conv1D", .inputs = {x, w}, .outputs = {{n, filters, t}}, .flops = flops});
  AddGrad(r, {.op = "Conv1DBackpropInput", .flops = flops, .wrt = 0, .saved = {w}});
  AddGrad(r, {.op = "Conv1DBackpropFilter", .flops = flops, .wrt = 1, .saved = {x}});
  Tensor y = output(r);
  if (bias) y = BiasAdd(y, Weight("bias", {filters}), 1);
  return y;
}

Tensor ModelBuilder::BatchNorm(Tensor x, std::string_view name) {
  if (shape(x).size() < 2) Fail("BatchNorm needs a channel dimension");
  auto scope = UniqueScope(name);
  const int64_t c = dim(x, 1);
  const Tensor gamma = Weight("gamma", {c});
  const Tensor beta = Weight("beta", {c});
  const double per = options_.training ? kFlopsPerBatchNormTrain : kFlopsPerBatchNormInfer;
  const int32_t r = Op({.op = "FusedBatchNorm",
                        .inputs = {x, gamma, beta},
                        .outputs = {shape(x)},
                        .flops = per * D(numel(x)),
                        // moving mean and variance
                        .persistent_bytes = 2 * c * DTypeSize(options_.dtype)});
  AddGrad(r, {.op = "FusedBatchNormGrad",
              .flops = kGradFlopsNorm * D(numel(x)),
              .wrt = 0,
              .wrt_count = 3,
              .saved = {x}});
  return output(r);
}

Tensor ModelBuilder::LayerNorm(Tensor x, std::string_view name) {
  auto scope = UniqueScope(name);
  const int64_t d = dim(x, -1);
  const Tensor gamma = Weight("gamma", {d});
  const Tensor beta = Weight("beta", {d});
  const int32_t r = Op({.op = "LayerNorm",
                        .inputs = {x, gamma, beta},
                        .outputs = {shape(x)},
                        .flops = kFlopsPerLayerNorm * D(numel(x))});
  AddGrad(
      r,
      {.op = "LayerNormGrad", .flops = kGradFlopsNorm * D(numel(x)), .wrt = 0, .wrt_count = 3, .saved = {x}});
  return output(r);
}

Tensor ModelBuilder::Elementwise(std::string_view op, std::string_view grad_op, Tensor x, double per_element,
                                 bool grad_reads_output) {
  const int32_t r = Op({.op = op, .inputs = {x}, .outputs = {shape(x)}, .flops = per_element * D(numel(x))});
  const Tensor y = output(r);
  double grad_per = kGradFlopsSigmoidTanh;
  if (op == "Relu") grad_per = kGradFlopsRelu;
  if (op == "Gelu") grad_per = kGradFlopsGelu;
  if (op == "Softmax") grad_per = kGradFlopsSoftmax;
  AddGrad(r,
          {.op = grad_op, .flops = grad_per * D(numel(x)), .wrt = 0, .saved = {grad_reads_output ? y : x}});
  return y;
}

Tensor ModelBuilder::Relu(Tensor x) {
  return Elementwise("Relu", "ReluGrad", x, 1.0, true);
}
Tensor ModelBuilder::Sigmoid(Tensor x) {
  return Elementwise("Sigmoid", "SigmoidGrad", x, kFlopsPerSigmoid, true);
}
Tensor ModelBuilder::Tanh(Tensor x) {
  return Elementwise("Tanh", "TanhGrad", x, kFlopsPerTanh, true);
}
Tensor ModelBuilder::Gelu(Tensor x) {
  return Elementwise("Gelu", "GeluGrad", x, kFlopsPerGelu, false);
}
Tensor ModelBuilder::Softmax(Tensor x) {
  return Elementwise("Softmax", "SoftmaxGrad", x, kFlopsPerSoftmax, true);
}

Tensor ModelBuilder::Pool(std::string_view op, Tensor x, int k, int stride, int pad) {
  if (shape(x).size() != 4) Fail(std::string(op) + " needs an NCHW input");
  const int64_t ho = ConvOut(dim(x, 2), k, stride, pad, 1, "pooling");
  const int64_t wo = ConvOut(dim(x, 3), k, stride, pad, 1, "pooling");
  const Shape out{dim(x, 0), dim(x, 1), ho, wo};
  const double flops = D(dim(x, 0) * dim(x, 1) * ho * wo) * k * k;
  const int32_t r = Op({.op = op, .inputs = {x}, .outputs = {out}, .flops = flops});
  if (op == "MaxPool") {
    AddGrad(r, {.op = "MaxPoolGrad", .flops = flops, .wrt = 0, .saved = {x, output(r)}});
  } else {
    AddGrad(r, {.op = "AvgPoolGrad", .flops = flops, .wrt = 0});
  }
  return output(r);
}

Tensor ModelBuilder::MaxPool(Tensor x, int k, int stride, int pad) {
  return Pool("MaxPool", x, k, stride, pad);
}
Tensor ModelBuilder::AvgPool(Tensor x, int k, int stride, int pad) {
  return Pool("AvgPool", x, k, stride, pad);
}

Tensor ModelBuilder::GlobalAvgPool(Tensor x) {
  if (shape(x).size() != 4) Fail("GlobalAvgPool needs an NCHW input");
  const int32_t r =
      Op({.op = "Mean", .inputs = {x}, .outputs = {{dim(x, 0), dim(x, 1)}}, .flops = D(numel(x))});
  AddGrad(r, {.op = "MeanGrad", .flops = D(numel(x)), .wrt = 0});
  return output(r);
}

Tensor ModelBuilder::MatMul(Tensor x, Tensor w, std::string_view name, bool transpose_w) {
  if (shape(w).size() != 2) Fail("MatMul needs a 2-D right operand");
  const int64_t k = dim(w, transpose_w ? 1 : 0), n = dim(w, transpose_w ? 0 : 1);
  if (dim(x, -1) != k) Fail("MatMul inner dimensions differ");
  Shape out = shape(x);
  out.back() = n;
  const double flops = 2.0 * D(numel(x)) * D(n);
  const int32_t r = Op({.op = "MatMul", .name = name, .inputs = {x, w}, .outputs = {out}, .flops = flops});
  AddGrad(r, {.op = "MatMul", .flops = flops, .wrt = 0, .saved = {w}});
  AddGrad(r, {.op = "MatMul", .flops = flops, .wrt = 1, .saved = {x}});
  return output(r);
}

Tensor ModelBuilder::Dense(Tensor x, int64_t units, bool bias, std::string_view name) {
  auto scope = UniqueScope(name);
  Tensor y = MatMul(x, Weight("kernel", {dim(x, -1), units}));
  if (bias) y = BiasAdd(y, Weight("bias", {units}));
  return y;
}

Tensor ModelBuilder::BiasAdd(Tensor x, Tensor b, int axis) {
  if (dim(b, 0) != dim(x, axis)) Fail("BiasAdd bias size differs from the channel dimension");
  const int32_t r = Op({.op = "BiasAdd", .inputs = {x, b}, .outputs = {shape(x)}, .flops = D(numel(x))});
  AddPassThrough(r, 0);
  AddGrad(r, {.op = "BiasAddGrad", .flops = D(numel(x)), .wrt = 1});
  return output(r);
}

Tensor ModelBuilder::BatchMatMul(Tensor a, Tensor b, bool transpose_b) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  if (sa.size() < 2 || sb.size() < 2) Fail("BatchMatMul needs operands of rank >= 2");
  const int64_t k = sa.back();
  const int64_t kb = transpose_b ? sb.back() : sb[sb.size() - 2];
  const int64_t n = transpose_b ? sb[sb.size() - 2] : sb.back();
  if (k != kb) Fail("BatchMatMul inner dimensions differ");
  Shape out = sa;
  out.back() = n;
  const double flops = 2.0 * D(numel(a) / k) * D(n) * D(k);
  const int32_t r = Op({.op = "BatchMatMul", .inputs = {a, b}, .outputs = {out}, .flops = flops});
  AddGrad(r, {.op = "BatchMatMul", .flops = flops, .wrt = 0, .saved = {b}});
  AddGrad(r, {.op = "BatchMatMul", .flops = flops, .wrt = 1, .saved = {a}});
  return output(r);
}

Tensor ModelBuilder::Add(Tensor a, Tensor b) {
  const Shape out = Broadcast(shape(a), shape(b));
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  const int32_t r = Op({.op = "Add", .inputs = {a, b}, .outputs = {out}, .flops = D(n)});
  const Tensor in[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    if (numel(in[i]) == n) {
      AddPassThrough(r, i);
    } else {  // a broadcast operand's gradient is a reduction
      AddGrad(r, {.op = "Sum", .flops = D(n), .wrt = i});
    }
  }
  return output(r);
}

Tensor ModelBuilder::Mul(Tensor a, Tensor b) {
  const Shape out = Broadcast(shape(a), shape(b));
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  const int32_t r = Op({.op = "Mul", .inputs = {a, b}, .outputs = {out}, .flops = D(n)});
  AddGrad(r, {.op = "Mul", .flops = D(n), .wrt = 0, .saved = {b}});
  AddGrad(r, {.op = "Mul", .flops = D(n), .wrt = 1, .saved = {a}});
  return output(r);
}

Tensor ModelBuilder::Scale(Tensor x) {
  const int32_t r = Op({.op = "Mul", .inputs = {x}, .outputs = {shape(x)}, .flops = D(numel(x))});
  AddGrad(r, {.op = "Mul", .flops = D(numel(x)), .wrt = 0});
  return output(r);
}

Tensor ModelBuilder::AddN(const std::vector<Tensor>& xs) {
  if (xs.empty()) Fail("AddN of nothing");
  for (Tensor x : xs) {
    if (numel(x) != numel(xs[0])) Fail("AddN of tensors of different sizes");
  }
  const int32_t r = Op({.op = "AddN",
                        .inputs = xs,
                        .outputs = {shape(xs[0])},
                        .flops = D(static_cast<int64_t>(xs.size()) - 1) * D(numel(xs[0]))});
  for (size_t i = 0; i < xs.size(); ++i) AddPassThrough(r, static_cast<int>(i));
  return output(r);
}

Tensor ModelBuilder::Concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) Fail("Concat of nothing");
  const size_t rank = shape(xs[0]).size();
  axis = NormAxis(axis, rank);
  Shape out = shape(xs[0]);
  out[static_cast<size_t>(axis)] = 0;
  for (Tensor x : xs) {
    const Shape& s = shape(x);
    if (s.size() != rank) Fail("Concat of tensors of different ranks");
    for (size_t i = 0; i < rank; ++i) {
      if (static_cast<int>(i) != axis && s[i] != out[i]) Fail("Concat of tensors of different shapes");
    }
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  const int32_t r = Op({.op = "ConcatV2", .inputs = xs, .outputs = {out}});
  AddGrad(r, {.op = "Split", .wrt = 0, .wrt_count = static_cast<int>(xs.size())});
  return output(r);
}

std::vector<Tensor> ModelBuilder::Split(Tensor x, const std::vector<int64_t>& sizes, int axis) {
  axis = NormAxis(axis, shape(x).size());
  std::vector<Shape> outs;
  int64_t total = 0;
  for (int64_t size : sizes) {
    Shape s = shape(x);
    s[static_cast<size_t>(axis)] = size;
    outs.push_back(std::move(s));
    total += size;
  }
  if (total != dim(x, axis)) Fail("Split sizes do not add up to the dimension");
  const int32_t r = Op({.op = "SplitV",
                        .inputs = {x},
                        .outputs = outs,
                        .output_dtypes = std::vector<DType>(sizes.size(), dtype(x))});
  AddGrad(r, {.op = "ConcatV2", .wrt = 0});
  std::vector<Tensor> parts;
  for (size_t k = 0; k < sizes.size(); ++k) parts.push_back(output(r, static_cast<int>(k)));
  return parts;
}

Tensor ModelBuilder::Slice(Tensor x, int axis, int64_t start, int64_t length) {
  axis = NormAxis(axis, shape(x).size());
  if (start < 0 || length <= 0 || start + length > dim(x, axis)) Fail("Slice out of range");
  Shape out = shape(x);
  out[static_cast<size_t>(axis)] = length;
  const int32_t r = Op({.op = "Slice", .inputs = {x}, .outputs = {out}, .output_dtypes = {dtype(x)}});
  AddGrad(r, {.op = "Pad", .wrt = 0});
  return output(r);
}

Tensor ModelBuilder::Transpose(Tensor x, const std::vector<int>& perm) {
  const Shape& s = shape(x);
  if (perm.size() != s.size()) Fail("Transpose permutation of the wrong rank");
  Shape out;
  for (int p : perm) out.push_back(s[static_cast<size_t>(p)]);
  const int32_t r = Op({.op = "Transpose", .inputs = {x}, .outputs = {out}, .output_dtypes = {dtype(x)}});
  AddGrad(r, {.op = "Transpose", .wrt = 0});
  return output(r);
}

Tensor ModelBuilder::StopGradient(Tensor x) {
  const int32_t r =
      Op({.op = "StopGradient", .inputs = {x}, .outputs = {shape(x)}, .output_dtypes = {dtype(x)}});
  const Tensor y = output(r);
  tensors_[y.id].requires_grad = false;
  return y;
}

Tensor ModelBuilder::Embedding(Tensor ids, Tensor table) {
  if (shape(table).size() != 2) Fail("Embedding needs a [vocab, dim] table");
  Shape out = shape(ids);
  out.push_back(dim(table, 1));
  const int32_t r = Op({.op = "GatherV2", .inputs = {table, ids}, .outputs = {out}});
  // The gradient is sparse: one row per id.
  AddGrad(r, {.op = "UnsortedSegmentSum",
              .flops = D(numel(output(r))),
              .wrt = 0,
              .grad_shape = {numel(ids), dim(table, 1)}});
  return output(r);
}

Tensor ModelBuilder::Dropout(Tensor x, double rate) {
  if (!options_.training || rate <= 0.0) return x;
  const int32_t r = Op({.op = "Dropout",
                        .inputs = {x},
                        .outputs = {shape(x), shape(x)},
                        .output_dtypes = {dtype(x), DType::kBool},
                        .flops = 2.0 * D(numel(x))});
  AddGrad(r, {.op = "DropoutGrad", .flops = D(numel(x)), .wrt = 0, .saved = {output(r, 1)}});
  return output(r);
}

Tensor ModelBuilder::SoftmaxCrossEntropy(Tensor logits, Tensor labels) {
  Shape rows = shape(logits);
  rows.pop_back();
  if (numel(labels) != [&] {
        int64_t n = 1;
        for (int64_t d : rows) n *= d;
        return n;
      }()) {
    Fail("labels do not match the logits");
  }
  const int32_t r = Op({.op = "SparseSoftmaxCrossEntropyWithLogits",
                        .inputs = {logits, labels},
                        .outputs = {rows},
                        .flops = kFlopsPerCrossEntropy * D(numel(logits))});
  MarkLoss(r);
  AddGrad(r, {.op = "SparseSoftmaxCrossEntropyWithLogitsGrad",
              .flops = 3.0 * D(numel(logits)),
              .wrt = 0,
              .saved = {logits, labels},
              .reads_dy = false});
  return output(r);
}

LstmWeights ModelBuilder::NewLstmWeights(int64_t input_size, int64_t hidden) {
  LstmWeights w;
  w.hidden = hidden;
  w.kernel = Weight("kernel", {input_size + hidden, 4 * hidden});
  w.bias = Weight("bias", {4 * hidden});
  return w;
}

std::pair<Tensor, Tensor> ModelBuilder::LstmCell(Tensor x, Tensor h, Tensor c, const LstmWeights& w) {
  const int64_t hd = w.hidden;
  const Tensor xh = Concat({x, h}, -1);
  const Tensor gates = BiasAdd(MatMul(xh, w.kernel), w.bias);
  const std::vector<Tensor> g = Split(gates, {hd, hd, hd, hd}, -1);  // i, j, f, o
  const Tensor new_c = Add(Mul(c, Sigmoid(g[2])), Mul(Sigmoid(g[0]), Tanh(g[1])));
  const Tensor new_h = Mul(Tanh(new_c), Sigmoid(g[3]));
  return {new_h, new_c};
}

}  // namespace gosim::graphs::gen
