// WaveNet (van den Oord et al. 2016), laid out as the TensorFlow reference
// implementation (ibab/tensorflow-wavenet) builds it: a causal input
// convolution over one-hot mu-law samples, stacks of dilated causal
// convolutions (dilations 1, 2, ..., 512 per stack) with gated activations
// tanh(filter) * sigmoid(gate), a 1x1 residual projection added to the
// layer input and a 1x1 skip projection; the skips are summed, then
// ReLU, 1x1, ReLU, 1x1 and a softmax over the quantization levels.
#include <string>
#include <vector>

#include "graphs/generators/models.h"

namespace gosim::graphs::gen {
namespace {

Graph WaveNet(GeneratorParams& p) {
  const ModelOptions o = p.Model(1);
  const int stacks = static_cast<int>(p.Int("stacks", 5, 1, 1000));
  const int per_stack = static_cast<int>(p.Int("layers_per_stack", 10, 1, 30));
  std::vector<int64_t> standard;
  for (int s = 0; s < stacks; ++s) {
    for (int l = 0; l < per_stack; ++l) standard.push_back(int64_t{1} << l);
  }
  const std::vector<int64_t> dilations = p.IntList("dilations", standard, 1, 1 << 20);
  const int64_t residual = p.Int("residual_channels", 32, 1, 65536);
  const int64_t dilation_ch = p.Int("dilation_channels", 32, 1, 65536);
  const int64_t skip = p.Int("skip_channels", 512, 1, 65536);
  const int64_t levels = p.Int("quantization_channels", 256, 2, 65536);
  const int64_t samples = p.Int("samples", 16000, 2, 10'000'000);
  const int filter_width = static_cast<int>(p.Int("filter_width", 2, 1, 64));
  const bool biases = p.Bool("use_biases", false);
  const std::string name = p.Name("wavenet_" + std::to_string(dilations.size()) + "l_" +
                                  (o.training ? "train" : "infer") + "_b" + std::to_string(o.batch));
  p.Finish();

  ModelBuilder b(name, o);
  const Tensor audio = b.Input("encoded_audio", {o.batch, levels, samples});
  const Tensor labels = b.Input("targets", {o.batch, samples}, DType::kInt64);
  Tensor x;
  {
    auto s = b.Scope("causal_layer");
    x = b.Conv1D(audio, residual, filter_width, 1, true, biases, "filter");
  }
  std::vector<Tensor> skips;
  for (size_t i = 0; i < dilations.size(); ++i) {
    auto s = b.Scope("dilated_stack/layer" + std::to_string(i));
    const int d = static_cast<int>(dilations[i]);
    const Tensor filter = b.Conv1D(x, dilation_ch, filter_width, d, true, biases, "filter");
    const Tensor gate = b.Conv1D(x, dilation_ch, filter_width, d, true, biases, "gate");
    const Tensor out = b.Mul(b.Tanh(filter), b.Sigmoid(gate));
    const Tensor transformed = b.Conv1D(out, residual, 1, 1, false, biases, "dense");
    skips.push_back(b.Conv1D(out, skip, 1, 1, false, biases, "skip"));
    x = b.Add(x, transformed);
  }
  auto s = b.Scope("postprocessing");
  Tensor total = skips.size() == 1 ? skips[0] : b.AddN(skips);
  total = b.Conv1D(b.Relu(total), skip, 1, 1, false, biases, "postprocess1");
  const Tensor logits = b.Conv1D(b.Relu(total), levels, 1, 1, false, biases, "postprocess2");
  b.SoftmaxCrossEntropy(b.Transpose(logits, {0, 2, 1}), labels);
  return b.Build();
}

}  // namespace

void RegisterWaveNetGenerator(GeneratorRegistry& registry) {
  registry.Register(
      "wavenet", WaveNet,
      "WaveNet: dilated causal convolutions with gated activations, residual and skip connections; "
      "params stacks, layers_per_stack (or dilations), residual_channels, dilation_channels, "
      "skip_channels, quantization_channels, samples, filter_width, use_biases");
}

}  // namespace gosim::graphs::gen
