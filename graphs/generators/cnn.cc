// Inception-v3 (Szegedy et al. 2016) and ResNet-50/101/152 (He et al. 2016),
// layer for layer as torchvision builds them (ResNet v1.5: the stride sits
// in the 3x3 convolution of a bottleneck), so that weight counts match
// torchvision's exactly.
#include <string>

#include "graphs/generators/models.h"

namespace gosim::graphs::gen {
namespace {

std::string ModeName(const ModelOptions& o) {
  return o.training ? "train" : "infer";
}

// torchvision's BasicConv2d: convolution without bias, batch norm, ReLU.
Tensor BasicConv(ModelBuilder& b, Tensor x, std::string_view name, int64_t filters, int kh, int kw,
                 int stride = 1, int ph = 0, int pw = 0) {
  auto scope = b.Scope(name);
  const Tensor y =
      b.Conv2D(x, {.filters = filters, .kh = kh, .kw = kw, .stride = stride, .ph = ph, .pw = pw}, "conv");
  return b.Relu(b.BatchNorm(y, "bn"));
}

Tensor InceptionA(ModelBuilder& b, Tensor x, int64_t pool_features, std::string_view name) {
  auto scope = b.Scope(name);
  const Tensor b1 = BasicConv(b, x, "branch1x1", 64, 1, 1);
  Tensor b5 = BasicConv(b, x, "branch5x5_1", 48, 1, 1);
  b5 = BasicConv(b, b5, "branch5x5_2", 64, 5, 5, 1, 2, 2);
  Tensor b3 = BasicConv(b, x, "branch3x3dbl_1", 64, 1, 1);
  b3 = BasicConv(b, b3, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1);
  b3 = BasicConv(b, b3, "branch3x3dbl_3", 96, 3, 3, 1, 1, 1);
  const Tensor bp = BasicConv(b, b.AvgPool(x, 3, 1, 1), "branch_pool", pool_features, 1, 1);
  return b.Concat({b1, b5, b3, bp}, 1);
}

// Grid reduction 35x35 -> 17x17.
Tensor InceptionB(ModelBuilder& b, Tensor x, std::string_view name) {
  auto scope = b.Scope(name);
  const Tensor b3 = BasicConv(b, x, "branch3x3", 384, 3, 3, 2);
  Tensor d = BasicConv(b, x, "branch3x3dbl_1", 64, 1, 1);
  d = BasicConv(b, d, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1);
  d = BasicConv(b, d, "branch3x3dbl_3", 96, 3, 3, 2);
  const Tensor p = b.MaxPool(x, 3, 2, 0);
  return b.Concat({b3, d, p}, 1);
}

// Factorized 7x7 convolutions (1x7 then 7x1).
Tensor InceptionC(ModelBuilder& b, Tensor x, int64_t c7, std::string_view name) {
  auto scope = b.Scope(name);
  const Tensor b1 = BasicConv(b, x, "branch1x1", 192, 1, 1);
  Tensor b7 = BasicConv(b, x, "branch7x7_1", c7, 1, 1);
  b7 = BasicConv(b, b7, "branch7x7_2", c7, 1, 7, 1, 0, 3);
  b7 = BasicConv(b, b7, "branch7x7_3", 192, 7, 1, 1, 3, 0);
  Tensor d = BasicConv(b, x, "branch7x7dbl_1", c7, 1, 1);
  d = BasicConv(b, d, "branch7x7dbl_2", c7, 7, 1, 1, 3, 0);
  d = BasicConv(b, d, "branch7x7dbl_3", c7, 1, 7, 1, 0, 3);
  d = BasicConv(b, d, "branch7x7dbl_4", c7, 7, 1, 1, 3, 0);
  d = BasicConv(b, d, "branch7x7dbl_5", 192, 1, 7, 1, 0, 3);
  const Tensor bp = BasicConv(b, b.AvgPool(x, 3, 1, 1), "branch_pool", 192, 1, 1);
  return b.Concat({b1, b7, d, bp}, 1);
}

// Grid reduction 17x17 -> 8x8.
Tensor InceptionD(ModelBuilder& b, Tensor x, std::string_view name) {
  auto scope = b.Scope(name);
  Tensor b3 = BasicConv(b, x, "branch3x3_1", 192, 1, 1);
  b3 = BasicConv(b, b3, "branch3x3_2", 320, 3, 3, 2);
  Tensor b7 = BasicConv(b, x, "branch7x7x3_1", 192, 1, 1);
  b7 = BasicConv(b, b7, "branch7x7x3_2", 192, 1, 7, 1, 0, 3);
  b7 = BasicConv(b, b7, "branch7x7x3_3", 192, 7, 1, 1, 3, 0);
  b7 = BasicConv(b, b7, "branch7x7x3_4", 192, 3, 3, 2);
  const Tensor p = b.MaxPool(x, 3, 2, 0);
  return b.Concat({b3, b7, p}, 1);
}

// Expanded filter bank (parallel 1x3 and 3x1).
Tensor InceptionE(ModelBuilder& b, Tensor x, std::string_view name) {
  auto scope = b.Scope(name);
  const Tensor b1 = BasicConv(b, x, "branch1x1", 320, 1, 1);
  const Tensor b3 = BasicConv(b, x, "branch3x3_1", 384, 1, 1);
  const Tensor b3a = BasicConv(b, b3, "branch3x3_2a", 384, 1, 3, 1, 0, 1);
  const Tensor b3b = BasicConv(b, b3, "branch3x3_2b", 384, 3, 1, 1, 1, 0);
  Tensor d = BasicConv(b, x, "branch3x3dbl_1", 448, 1, 1);
  d = BasicConv(b, d, "branch3x3dbl_2", 384, 3, 3, 1, 1, 1);
  const Tensor da = BasicConv(b, d, "branch3x3dbl_3a", 384, 1, 3, 1, 0, 1);
  const Tensor db = BasicConv(b, d, "branch3x3dbl_3b", 384, 3, 1, 1, 1, 0);
  const Tensor bp = BasicConv(b, b.AvgPool(x, 3, 1, 1), "branch_pool", 192, 1, 1);
  return b.Concat({b1, b.Concat({b3a, b3b}, 1), b.Concat({da, db}, 1), bp}, 1);
}

Tensor Classifier(ModelBuilder& b, Tensor pooled, int64_t classes, Tensor labels, double dropout) {
  Tensor x = b.Dropout(pooled, dropout);
  const Tensor logits = b.Dense(x, classes, true, "fc");
  return b.SoftmaxCrossEntropy(logits, labels);
}

Graph InceptionV3(GeneratorParams& p) {
  const ModelOptions o = p.Model(32);
  const int64_t image = p.Int("image_size", 299, 75, 2048);
  const int64_t classes = p.Int("num_classes", 1000, 1, 1'000'000);
  const bool aux = p.Bool("aux_logits", o.training);
  if (aux && image < 299) {
    p.Fail("image_size", "must be at least 299 with the auxiliary head", "set aux_logits: false");
  }
  const std::string name = p.Name("inception_v3_" + ModeName(o) + "_b" + std::to_string(o.batch));
  p.Finish();

  ModelBuilder b(name, o);
  Tensor x = b.Input("images", {o.batch, 3, image, image});
  const Tensor labels = b.Input("labels", {o.batch}, DType::kInt64);
  x = BasicConv(b, x, "Conv2d_1a_3x3", 32, 3, 3, 2);
  x = BasicConv(b, x, "Conv2d_2a_3x3", 32, 3, 3);
  x = BasicConv(b, x, "Conv2d_2b_3x3", 64, 3, 3, 1, 1, 1);
  {
    auto s = b.Scope("maxpool1");
    x = b.MaxPool(x, 3, 2, 0);
  }
  x = BasicConv(b, x, "Conv2d_3b_1x1", 80, 1, 1);
  x = BasicConv(b, x, "Conv2d_4a_3x3", 192, 3, 3);
  {
    auto s = b.Scope("maxpool2");
    x = b.MaxPool(x, 3, 2, 0);
  }
  x = InceptionA(b, x, 32, "Mixed_5b");
  x = InceptionA(b, x, 64, "Mixed_5c");
  x = InceptionA(b, x, 64, "Mixed_5d");
  x = InceptionB(b, x, "Mixed_6a");
  x = InceptionC(b, x, 128, "Mixed_6b");
  x = InceptionC(b, x, 160, "Mixed_6c");
  x = InceptionC(b, x, 160, "Mixed_6d");
  x = InceptionC(b, x, 192, "Mixed_6e");
  if (aux) {
    auto s = b.Scope("AuxLogits");
    Tensor a = b.AvgPool(x, 5, 3, 0);
    a = BasicConv(b, a, "conv0", 128, 1, 1);
    a = BasicConv(b, a, "conv1", 768, 5, 5);
    b.SoftmaxCrossEntropy(b.Dense(b.GlobalAvgPool(a), classes, true, "fc"), labels);
  }
  x = InceptionD(b, x, "Mixed_7a");
  x = InceptionE(b, x, "Mixed_7b");
  x = InceptionE(b, x, "Mixed_7c");
  {
    auto s = b.Scope("logits");
    Classifier(b, b.GlobalAvgPool(x), classes, labels, 0.5);
  }
  return b.Build();
}

Tensor Bottleneck(ModelBuilder& b, Tensor x, int64_t planes, int stride, bool downsample,
                  std::string_view name) {
  auto scope = b.Scope(name);
  Tensor y = b.Relu(b.BatchNorm(b.Conv2D(x, {.filters = planes, .ph = 0, .pw = 0}, "conv1"), "bn1"));
  y = b.Relu(b.BatchNorm(
      b.Conv2D(y, {.filters = planes, .kh = 3, .kw = 3, .stride = stride, .ph = 1, .pw = 1}, "conv2"),
      "bn2"));
  y = b.BatchNorm(b.Conv2D(y, {.filters = planes * 4, .ph = 0, .pw = 0}, "conv3"), "bn3");
  Tensor identity = x;
  if (downsample) {
    auto s = b.Scope("downsample");
    identity =
        b.BatchNorm(b.Conv2D(x, {.filters = planes * 4, .stride = stride, .ph = 0, .pw = 0}, "conv"), "bn");
  }
  return b.Relu(b.Add(y, identity));
}

Graph ResNet(GeneratorParams& p) {
  const int64_t depth = p.Int("depth", 50, 50, 152);
  std::vector<int> blocks;
  if (depth == 50) {
    blocks = {3, 4, 6, 3};
  } else if (depth == 101) {
    blocks = {3, 4, 23, 3};
  } else if (depth == 152) {
    blocks = {3, 8, 36, 3};
  } else {
    p.Fail("depth", "is " + std::to_string(depth), "valid depths are 50, 101 and 152");
  }
  const ModelOptions o = p.Model(32);
  const int64_t image = p.Int("image_size", 224, 32, 2048);
  const int64_t classes = p.Int("num_classes", 1000, 1, 1'000'000);
  const std::string name =
      p.Name("resnet" + std::to_string(depth) + "_" + ModeName(o) + "_b" + std::to_string(o.batch));
  p.Finish();

  ModelBuilder b(name, o);
  Tensor x = b.Input("images", {o.batch, 3, image, image});
  const Tensor labels = b.Input("labels", {o.batch}, DType::kInt64);
  {
    auto s = b.Scope("stem");
    x = b.Relu(b.BatchNorm(
        b.Conv2D(x, {.filters = 64, .kh = 7, .kw = 7, .stride = 2, .ph = 3, .pw = 3}, "conv1"), "bn1"));
    x = b.MaxPool(x, 3, 2, 1);
  }
  int64_t planes = 64;
  for (size_t layer = 0; layer < blocks.size(); ++layer) {
    auto s = b.Scope("layer" + std::to_string(layer + 1));
    for (int block = 0; block < blocks[layer]; ++block) {
      const int stride = block == 0 && layer > 0 ? 2 : 1;
      x = Bottleneck(b, x, planes, stride, block == 0, "block" + std::to_string(block));
    }
    planes *= 2;
  }
  {
    auto s = b.Scope("head");
    Classifier(b, b.GlobalAvgPool(x), classes, labels, 0.0);
  }
  return b.Build();
}

}  // namespace

void RegisterCnnGenerators(GeneratorRegistry& registry) {
  registry.Register(
      "inception_v3", InceptionV3,
      "Inception-v3 (torchvision layout): stem, modules A/B/C/D/E with factorized 7x7 convolutions, "
      "auxiliary head when training; params image_size, num_classes, aux_logits");
  registry.Register("resnet", ResNet,
                    "ResNet v1.5 with bottleneck blocks (torchvision layout); params depth (50, 101, 152), "
                    "image_size, num_classes");
}

}  // namespace gosim::graphs::gen
