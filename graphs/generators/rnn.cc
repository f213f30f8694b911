// Recurrent models unrolled over time, one LSTM cell per layer and step
// (TensorFlow static_rnn graphs, as the device-placement papers used):
//   rnnlm  the LSTM language model (Zaremba et al. 2014; Jozefowicz et al. 2016)
//   nmt    attentional encoder-decoder (Bahdanau et al. 2015; Luong-style
//          attention layer on the top decoder layer, input feeding)
//   gnmt   Google's NMT (Wu et al. 2016): bidirectional first encoder layer,
//          residual connections from the third layer on, attention computed
//          from the bottom decoder layer and fed to every decoder layer.
#include <string>
#include <tuple>
#include <vector>

#include "graphs/generators/models.h"

namespace gosim::graphs::gen {
namespace {

std::string Mode(const ModelOptions& o) {
  return o.training ? "train" : "infer";
}
std::string Step(int t) {
  return "t" + std::to_string(t);
}

// Splits [B, T, D] into T tensors [B, D].
std::vector<Tensor> Unstack(ModelBuilder& b, Tensor x) {
  const int64_t batch = b.dim(x, 0), steps = b.dim(x, 1), d = b.dim(x, 2);
  std::vector<Tensor> parts = b.Split(x, std::vector<int64_t>(static_cast<size_t>(steps), 1), 1);
  for (Tensor& p : parts) p = b.Reshape(p, {batch, d});
  return parts;
}

// Concatenates T tensors [B, D] into [B, T, D].
Tensor Stack(ModelBuilder& b, const std::vector<Tensor>& xs) {
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (Tensor x : xs) parts.push_back(b.Reshape(x, {b.dim(x, 0), 1, b.dim(x, 1)}));
  return b.Concat(parts, 1);
}

// One unidirectional LSTM layer over `inputs` (in order, or reversed).
std::vector<Tensor> LstmLayer(ModelBuilder& b, const std::vector<Tensor>& inputs, int64_t hidden,
                              bool reverse, double dropout) {
  const int64_t batch = b.dim(inputs[0], 0);
  const LstmWeights w = b.NewLstmWeights(b.dim(inputs[0], 1), hidden);
  Tensor h = b.Constant("zero_h", {batch, hidden});
  Tensor c = b.Constant("zero_c", {batch, hidden});
  const int steps = static_cast<int>(inputs.size());
  std::vector<Tensor> out(inputs.size());
  for (int k = 0; k < steps; ++k) {
    const int t = reverse ? steps - 1 - k : k;
    auto s = b.Scope(Step(t));
    std::tie(h, c) = b.LstmCell(b.Dropout(inputs[static_cast<size_t>(t)], dropout), h, c, w);
    out[static_cast<size_t>(t)] = h;
  }
  return out;
}

Graph Rnnlm(GeneratorParams& p) {
  const ModelOptions o = p.Model(64);
  const int layers = static_cast<int>(p.Int("layers", 2, 1, 64));
  const int64_t hidden = p.Int("hidden", 2048, 1, 65536);
  const int64_t vocab = p.Int("vocab", 10000, 2, 10'000'000);
  const int steps = static_cast<int>(p.Int("seq_len", 20, 1, 10000));
  const double dropout = p.Double("dropout", 0.0, 0.0, 0.99);
  const std::string name =
      p.Name("rnnlm" + std::to_string(layers) + "_" + Mode(o) + "_b" + std::to_string(o.batch));
  p.Finish();

  ModelBuilder b(name, o);
  const Tensor ids = b.Input("inputs", {o.batch, steps}, DType::kInt64);
  const Tensor labels = b.Input("labels", {o.batch, steps}, DType::kInt64);
  std::vector<Tensor> xs;
  {
    auto s = b.Scope("embedding");
    xs = Unstack(b, b.Embedding(ids, b.Weight("embedding", {vocab, hidden})));
  }
  for (int l = 0; l < layers; ++l) {
    auto s = b.Scope("rnn/layer_" + std::to_string(l + 1));
    xs = LstmLayer(b, xs, hidden, false, dropout);
  }
  auto s = b.Scope("softmax");
  const Tensor logits = b.Dense(b.Dropout(Stack(b, xs), dropout), vocab, true, "softmax_w");
  b.SoftmaxCrossEntropy(logits, labels);
  return b.Build();
}

struct Seq2SeqConfig {
  int layers = 8;
  int64_t hidden = 1024;
  int64_t vocab = 32000;
  int src_len = 50;
  int tgt_len = 50;
  bool bidirectional = true;
  int residual_from = 3;  // 1-based layer; 0 = none
  bool attention = true;
  bool gnmt_attention = true;  // bottom-layer attention fed to all layers (GNMT); else top (Luong)
  double dropout = 0.2;
};

// Additive attention of `query` [B, H] over memory [B, S, H] with
// precomputed keys [B, S, A]; returns the context [B, H].
struct Attention {
  Tensor memory, keys, query_w, score_v;

  Tensor operator()(ModelBuilder& b, Tensor query) const {
    auto s = b.Scope("attention");
    const int64_t batch = b.dim(memory, 0), src = b.dim(memory, 1), units = b.dim(keys, 2);
    const Tensor q = b.Reshape(b.MatMul(query, query_w), {batch, 1, units});
    const Tensor scores = b.MatMul(b.Tanh(b.Add(keys, q)), score_v);  // [B, S, 1]
    const Tensor probs = b.Softmax(b.Reshape(scores, {batch, src}));
    const Tensor ctx = b.BatchMatMul(b.Reshape(probs, {batch, 1, src}), memory);  // [B, 1, H]
    return b.Reshape(ctx, {batch, b.dim(memory, 2)});
  }
};

Graph Seq2Seq(const std::string& name, const ModelOptions& o, const Seq2SeqConfig& c) {
  ModelBuilder b(name, o);
  const int64_t hd = c.hidden;
  const Tensor src = b.Input("source", {o.batch, c.src_len}, DType::kInt64);
  const Tensor tgt = b.Input("target_input", {o.batch, c.tgt_len}, DType::kInt64);
  const Tensor labels = b.Input("target_output", {o.batch, c.tgt_len}, DType::kInt64);

  std::vector<Tensor> xs, ys;
  {
    auto s = b.Scope("embeddings");
    xs = Unstack(b, b.Embedding(src, b.Weight("encoder", {c.vocab, hd})));
    ys = Unstack(b, b.Embedding(tgt, b.Weight("decoder", {c.vocab, hd})));
  }

  // Encoder.
  for (int l = 0; l < c.layers; ++l) {
    auto s = b.Scope("encoder/layer_" + std::to_string(l + 1));
    std::vector<Tensor> out;
    if (l == 0 && c.bidirectional) {
      std::vector<Tensor> fw, bw;
      {
        auto f = b.Scope("fw");
        fw = LstmLayer(b, xs, hd, false, c.dropout);
      }
      {
        auto r = b.Scope("bw");
        bw = LstmLayer(b, xs, hd, true, c.dropout);
      }
      for (int t = 0; t < c.src_len; ++t) {
        auto st = b.Scope(Step(t));
        out.push_back(b.Concat({fw[static_cast<size_t>(t)], bw[static_cast<size_t>(t)]}, 1));
      }
    } else {
      out = LstmLayer(b, xs, hd, false, c.dropout);
      if (c.residual_from > 0 && l + 1 >= c.residual_from && b.dim(xs[0], 1) == hd) {
        for (int t = 0; t < c.src_len; ++t) {
          auto st = b.Scope(Step(t));
          out[static_cast<size_t>(t)] = b.Add(out[static_cast<size_t>(t)], xs[static_cast<size_t>(t)]);
        }
      }
    }
    xs = std::move(out);
  }

  Attention att;
  Tensor att_w;
  if (c.attention) {
    auto s = b.Scope("decoder/attention");
    att.memory = Stack(b, xs);
    att.keys = b.Dense(att.memory, hd, false, "memory_layer");
    att.query_w = b.Weight("query_kernel", {hd, hd});
    att.score_v = b.Weight("attention_v", {hd, 1});
    if (!c.gnmt_attention) att_w = b.Weight("attention_layer_kernel", {2 * hd, hd});
  }

  // Decoder: weights per layer, then the time loop.
  std::vector<LstmWeights> w(static_cast<size_t>(c.layers));
  for (int l = 0; l < c.layers; ++l) {
    auto s = b.Scope("decoder/layer_" + std::to_string(l + 1));
    int64_t in = hd;
    if (c.attention && (l == 0 || c.gnmt_attention)) in += hd;
    w[static_cast<size_t>(l)] = b.NewLstmWeights(in, hd);
  }
  std::vector<Tensor> h(static_cast<size_t>(c.layers)), cs(static_cast<size_t>(c.layers));
  Tensor feed;
  {
    auto s = b.Scope("decoder");
    for (int l = 0; l < c.layers; ++l) {
      h[static_cast<size_t>(l)] = b.Constant("zero_h", {o.batch, hd});
      cs[static_cast<size_t>(l)] = b.Constant("zero_c", {o.batch, hd});
    }
    if (c.attention) feed = b.Constant("zero_attention", {o.batch, hd});
  }
  std::vector<Tensor> outputs;
  for (int t = 0; t < c.tgt_len; ++t) {
    Tensor ctx;
    Tensor below = ys[static_cast<size_t>(t)];
    for (int l = 0; l < c.layers; ++l) {
      auto s = b.Scope("decoder/layer_" + std::to_string(l + 1) + "/" + Step(t));
      Tensor in = b.Dropout(below, c.dropout);
      if (c.attention && l == 0) in = b.Concat({in, feed}, 1);
      if (c.attention && l > 0 && c.gnmt_attention) in = b.Concat({in, ctx}, 1);
      const size_t k = static_cast<size_t>(l);
      std::tie(h[k], cs[k]) = b.LstmCell(in, h[k], cs[k], w[k]);
      Tensor out = h[k];
      if (c.residual_from > 0 && l + 1 >= c.residual_from) out = b.Add(out, below);
      if (c.attention && c.gnmt_attention && l == 0) ctx = att(b, out);
      below = out;
    }
    if (c.attention && !c.gnmt_attention) {
      auto s = b.Scope("decoder/attention/" + Step(t));
      ctx = att(b, below);
      below = b.Tanh(b.MatMul(b.Concat({below, ctx}, 1), att_w));
      feed = below;
    } else if (c.attention) {
      feed = ctx;
    }
    outputs.push_back(below);
  }
  auto s = b.Scope("decoder/output_projection");
  const Tensor logits = b.Dense(Stack(b, outputs), c.vocab, false, "dense");
  b.SoftmaxCrossEntropy(logits, labels);
  return b.Build();
}

Seq2SeqConfig ReadSeq2Seq(GeneratorParams& p, Seq2SeqConfig c) {
  c.layers = static_cast<int>(p.Int("layers", c.layers, 1, 64));
  c.hidden = p.Int("hidden", c.hidden, 1, 65536);
  c.vocab = p.Int("vocab", c.vocab, 2, 10'000'000);
  c.src_len = static_cast<int>(p.Int("seq_len", c.src_len, 1, 10000));
  c.tgt_len = static_cast<int>(p.Int("tgt_len", c.src_len, 1, 10000));
  c.attention = p.Bool("attention", c.attention);
  c.bidirectional = p.Bool("bidirectional", c.bidirectional);
  c.residual_from = static_cast<int>(p.Int("residual_from", c.residual_from, 0, 64));
  c.dropout = p.Double("dropout", c.dropout, 0.0, 0.99);
  return c;
}

Graph Gnmt(GeneratorParams& p) {
  const ModelOptions o = p.Model(128);
  const Seq2SeqConfig c = ReadSeq2Seq(p, Seq2SeqConfig{});
  const std::string name = p.Name("gnmt" + std::to_string(c.layers) + "_" + Mode(o) + "_b" +
                                  std::to_string(o.batch) + "_s" + std::to_string(c.src_len));
  p.Finish();
  return Seq2Seq(name, o, c);
}

Graph Nmt(GeneratorParams& p) {
  const ModelOptions o = p.Model(64);
  Seq2SeqConfig defaults;
  defaults.layers = 2;
  defaults.bidirectional = false;
  defaults.residual_from = 0;
  defaults.gnmt_attention = false;
  defaults.dropout = 0.0;
  const Seq2SeqConfig c = ReadSeq2Seq(p, defaults);
  const std::string name = p.Name("nmt" + std::to_string(c.layers) + "_" + Mode(o) + "_b" +
                                  std::to_string(o.batch) + "_s" + std::to_string(c.src_len));
  p.Finish();
  return Seq2Seq(name, o, c);
}

}  // namespace

void RegisterRnnGenerators(GeneratorRegistry& registry) {
  registry.Register("rnnlm", Rnnlm,
                    "LSTM language model unrolled over time; params layers, hidden, vocab, seq_len, dropout");
  registry.Register(
      "nmt", Nmt,
      "attentional LSTM encoder-decoder (2 layers by default, attention on the top layer, input "
      "feeding); params layers, hidden, vocab, seq_len, tgt_len, attention, bidirectional, "
      "residual_from, dropout");
  registry.Register("gnmt", Gnmt,
                    "Google NMT: 8+8 LSTM layers, bidirectional first encoder layer, residuals from layer 3, "
                    "bottom-layer attention fed to all decoder layers; same params as nmt");
}

}  // namespace gosim::graphs::gen
