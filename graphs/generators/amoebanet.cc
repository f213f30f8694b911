// AmoebaNet (Real et al. 2019): an ImageNet stem (a strided convolution and
// two reduction cells), then `num_cells` normal cells in three stacks with a
// reduction cell before the second and the third, an auxiliary head when
// training, and global pooling + dropout + a dense classifier. Cells follow
// the NASNet/AmoebaNet cell scheme of the TensorFlow TPU reference model:
// five pairwise combinations of operations (stacked separable convolutions,
// average / max pooling, identity, 1x7-7x1 convolutions) on the two cell
// inputs and earlier combinations, summed, and the unused states
// concatenated. The operation lists are AmoebaNet-A's.
#include <array>
#include <string>
#include <vector>

#include "graphs/generators/models.h"

namespace gosim::graphs::gen {
namespace {

struct CellSpec {
  std::array<const char*, 10> ops;
  std::array<int, 7> used;  // 1 = state not part of the cell output
  std::array<int, 10> indices;
};

constexpr CellSpec kNormalCell{
    {"avg_pool_3x3", "max_pool_3x3", "separable_3x3_2", "none", "none", "avg_pool_3x3", "separable_3x3_2",
     "separable_5x5_2", "avg_pool_3x3", "separable_3x3_2"},
    {1, 0, 1, 0, 0, 1, 0},
    {0, 0, 1, 1, 0, 1, 0, 2, 5, 0}};

constexpr CellSpec kReductionCell{
    {"separable_3x3_2", "avg_pool_3x3", "max_pool_3x3", "separable_7x7_2", "max_pool_3x3", "max_pool_3x3",
     "separable_3x3_2", "1x7_7x1", "avg_pool_3x3", "separable_7x7_2"},
    {1, 1, 0, 0, 0, 0, 0},
    {1, 0, 0, 2, 1, 0, 4, 0, 1, 0}};

Tensor ConvBn(ModelBuilder& b, Tensor x, int64_t filters, int kh, int kw, int stride, std::string_view name) {
  auto s = b.Scope(name);
  return b.BatchNorm(b.Conv2D(x, {.filters = filters, .kh = kh, .kw = kw, .stride = stride}, "conv"), "bn");
}

// Halves H and W with two offset 1x1 paths (NASNet's factorized_reduction).
Tensor FactorizedReduction(ModelBuilder& b, Tensor x, int64_t filters, int stride) {
  auto s = b.UniqueScope("factorized_reduction");
  if (stride == 1) return ConvBn(b, x, filters, 1, 1, 1, "path_conv");
  const Tensor p1 = b.Conv2D(b.AvgPool(x, 1, 2, 0), {.filters = filters / 2}, "path1_conv");
  // Path 2 shifts the input by one pixel (pad and slice) before pooling.
  const int32_t r = b.Op({.op = "Pad", .inputs = {x}, .outputs = {b.shape(x)}});
  b.AddGrad(r, {.op = "Slice", .wrt = 0});
  const Tensor p2 =
      b.Conv2D(b.AvgPool(b.output(r), 1, 2, 0), {.filters = filters - filters / 2}, "path2_conv");
  return b.BatchNorm(b.Concat({p1, p2}, 1), "bn");
}

Tensor ApplyOperation(ModelBuilder& b, Tensor x, const std::string& op, int stride, int64_t filters) {
  auto s = b.UniqueScope(op);
  const int64_t channels = b.dim(x, 1);
  if (op.rfind("separable_", 0) == 0) {
    const int k = op[10] - '0';
    const int layers = op.back() - '0';
    for (int l = 0; l < layers; ++l) {
      x = b.BatchNorm(b.SeparableConv2D(b.Relu(x), filters, k, l == 0 ? stride : 1), "bn");
    }
    return x;
  }
  if (op == "none") {
    if (stride > 1 || channels != filters) x = ConvBn(b, b.Relu(x), filters, 1, 1, stride, "1x1");
    return x;
  }
  if (op == "1x7_7x1") {
    x = ConvBn(b, b.Relu(x), filters, 1, 7, stride, "1x7");
    return ConvBn(b, b.Relu(x), filters, 7, 1, 1, "7x1");
  }
  x = op == "avg_pool_3x3" ? b.AvgPool(x, 3, stride) : b.MaxPool(x, 3, stride);
  if (channels != filters) x = ConvBn(b, x, filters, 1, 1, 1, "1x1");
  return x;
}

Tensor Cell(ModelBuilder& b, const CellSpec& spec, Tensor net, Tensor prev, int64_t filters, int stride,
            const std::string& name) {
  auto s = b.Scope(name);
  if (!prev.valid()) prev = net;
  if (b.dim(prev, 2) != b.dim(net, 2)) {
    prev = FactorizedReduction(b, b.Relu(prev), filters, 2);
  } else if (b.dim(prev, 1) != filters) {
    prev = ConvBn(b, b.Relu(prev), filters, 1, 1, 1, "prev_1x1");
  }
  net = ConvBn(b, b.Relu(net), filters, 1, 1, 1, "beginning_1x1");
  std::vector<Tensor> states{net, prev};
  for (int i = 0; i < 5; ++i) {
    auto c = b.Scope("comb_iter_" + std::to_string(i));
    Tensor sum;
    for (int side = 0; side < 2; ++side) {
      const int index = spec.indices[static_cast<size_t>(2 * i + side)];
      const int op_stride = index < 2 ? stride : 1;
      auto sd = b.Scope(side == 0 ? "left" : "right");
      const Tensor h = ApplyOperation(b, states[static_cast<size_t>(index)],
                                      spec.ops[static_cast<size_t>(2 * i + side)], op_stride, filters);
      sum = side == 0 ? h : b.Add(sum, h);
    }
    states.push_back(sum);
  }
  const int64_t final_size = b.dim(states.back(), 2);
  std::vector<Tensor> out;
  for (size_t i = 0; i < spec.used.size(); ++i) {
    if (spec.used[i]) continue;
    Tensor h = states[i];
    const bool spatial = b.dim(h, 2) != final_size;
    if (spatial || b.dim(h, 1) != filters) h = FactorizedReduction(b, h, filters, spatial ? 2 : 1);
    out.push_back(h);
  }
  return b.Concat(out, 1);
}

Graph AmoebaNet(GeneratorParams& p) {
  const ModelOptions o = p.Model(32);
  const int num_cells = static_cast<int>(p.Int("num_cells", 18, 3, 300));
  const int64_t filters = p.Int("filters", 190, 8, 8192);
  const int64_t stem_filters = p.Int("stem_filters", 32, 1, 8192);
  const int64_t image = p.Int("image_size", 331, 96, 2048);
  const int64_t classes = p.Int("num_classes", 1001, 1, 1'000'000);
  const bool aux = p.Bool("aux_head", o.training);
  const std::string name =
      p.Name("amoebanet_n" + std::to_string(num_cells / 3) + "_f" + std::to_string(filters) + "_" +
             (o.training ? "train" : "infer") + "_b" + std::to_string(o.batch));
  p.Finish();

  ModelBuilder b(name, o);
  Tensor x = b.Input("images", {o.batch, 3, image, image});
  const Tensor labels = b.Input("labels", {o.batch}, DType::kInt64);
  {
    auto s = b.Scope("stem");
    x = b.BatchNorm(
        b.Conv2D(x, {.filters = stem_filters, .kh = 3, .kw = 3, .stride = 2, .ph = 0, .pw = 0}, "conv0"),
        "conv0_bn");
  }
  std::vector<Tensor> outputs{Tensor{}, x};
  double scaling = 0.25;  // two stem cells, filter scaling rate 2
  for (int c = 0; c < 2; ++c) {
    x = Cell(b, kReductionCell, x, outputs[outputs.size() - 2], static_cast<int64_t>(filters * scaling), 2,
             "cell_stem_" + std::to_string(c));
    outputs.push_back(x);
    scaling *= 2;
  }
  const int reduction[2] = {num_cells / 3, 2 * num_cells / 3};
  scaling = 1.0;
  for (int c = 0; c < num_cells; ++c) {
    if (c == reduction[0] || c == reduction[1]) {
      scaling *= 2;
      x = Cell(b, kReductionCell, x, outputs[outputs.size() - 2], static_cast<int64_t>(filters * scaling), 2,
               "reduction_cell_" + std::to_string(c == reduction[0] ? 0 : 1));
      outputs.push_back(x);
    }
    x = Cell(b, kNormalCell, x, outputs[outputs.size() - 2], static_cast<int64_t>(filters * scaling), 1,
             "cell_" + std::to_string(c));
    outputs.push_back(x);
    if (aux && c == reduction[1] - 1) {
      auto s = b.Scope("aux_" + std::to_string(c));
      Tensor a = b.AvgPool(b.Relu(x), 5, 3, 0);
      a = b.Relu(ConvBn(b, a, 128, 1, 1, 1, "proj"));
      const int k = static_cast<int>(b.dim(a, 2));
      a = b.Relu(
          b.BatchNorm(b.Conv2D(a, {.filters = 768, .kh = k, .kw = k, .ph = 0, .pw = 0}, "conv"), "bn"));
      b.SoftmaxCrossEntropy(b.Dense(b.Reshape(a, {o.batch, 768}), classes, true, "fc"), labels);
    }
  }
  auto s = b.Scope("final_layer");
  const Tensor pooled = b.Dropout(b.GlobalAvgPool(b.Relu(x)), 0.5);
  b.SoftmaxCrossEntropy(b.Dense(pooled, classes, true, "fc"), labels);
  return b.Build();
}

}  // namespace

void RegisterAmoebaNetGenerator(GeneratorRegistry& registry) {
  registry.Register(
      "amoebanet", AmoebaNet,
      "AmoebaNet-A: stem + stacks of normal and reduction cells mixing separable convolutions and "
      "pooling (N = num_cells / 3, F = filters; default AmoebaNet-A N=6, F=190); params num_cells, "
      "filters, stem_filters, image_size, num_classes, aux_head");
}

}  // namespace gosim::graphs::gen
