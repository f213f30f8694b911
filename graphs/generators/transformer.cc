// Attention models:
//   bert            BERT pre-training (Devlin et al. 2019): embeddings, L
//                   post-LN encoder layers, masked-LM head tied to the word
//                   embeddings and next-sentence head (weights as in
//                   BertForPreTraining).
//   transformer_xl  Transformer-XL (Dai et al. 2019): segment-level
//                   recurrence (each layer attends over [memory; segment],
//                   the memory being the previous segment's hidden states
//                   behind a StopGradient) and relative positional
//                   attention (AC + BD terms with the relative shift).
#include <algorithm>
#include <string>
#include <vector>

#include "graphs/generators/models.h"

namespace gosim::graphs::gen {
namespace {

std::string Mode(const ModelOptions& o) {
  return o.training ? "train" : "infer";
}

// [B, S, heads * d] -> [B, heads, S, d].
Tensor SplitHeads(ModelBuilder& b, Tensor x, int64_t heads) {
  const int64_t batch = b.dim(x, 0), len = b.dim(x, 1), d = b.dim(x, 2) / heads;
  return b.Transpose(b.Reshape(x, {batch, len, heads, d}), {0, 2, 1, 3});
}

// [B, heads, S, d] -> [B, S, heads * d].
Tensor MergeHeads(ModelBuilder& b, Tensor x) {
  const int64_t batch = b.dim(x, 0), heads = b.dim(x, 1), len = b.dim(x, 2), d = b.dim(x, 3);
  return b.Reshape(b.Transpose(x, {0, 2, 1, 3}), {batch, len, heads * d});
}

// Rows of x [B, S, H] at positions [B, P] -> [B, P, H].
Tensor GatherRows(ModelBuilder& b, Tensor x, Tensor positions) {
  const Shape out{b.dim(x, 0), b.dim(positions, 1), b.dim(x, 2)};
  const int32_t r = b.Op({.op = "GatherV2", .inputs = {x, positions}, .outputs = {out}});
  b.AddGrad(r,
            {.op = "UnsortedSegmentSum", .flops = static_cast<double>(out[0] * out[1] * out[2]), .wrt = 0});
  return b.output(r);
}

// Transformer-XL's relative shift of the BD scores (pad, reshape, slice).
Tensor RelShift(ModelBuilder& b, Tensor x) {
  const int32_t r = b.Op({.op = "RelShift", .inputs = {x}, .outputs = {b.shape(x)}});
  b.AddGrad(r, {.op = "RelShift", .wrt = 0});
  return b.output(r);
}

struct BertConfig {
  int layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t intermediate = 3072;
  int64_t seq_len = 128;
  int64_t vocab = 30522;
  int64_t max_position = 512;
  int64_t type_vocab = 2;
  int64_t max_predictions = 20;
  double dropout = 0.1;
};

Tensor BertLayer(ModelBuilder& b, Tensor x, Tensor mask, const BertConfig& c) {
  Tensor attended;
  {
    auto s = b.Scope("attention");
    const Tensor q = SplitHeads(b, b.Dense(x, c.hidden, true, "query"), c.heads);
    const Tensor k = SplitHeads(b, b.Dense(x, c.hidden, true, "key"), c.heads);
    const Tensor v = SplitHeads(b, b.Dense(x, c.hidden, true, "value"), c.heads);
    Tensor scores = b.Add(b.Scale(b.BatchMatMul(q, k, true)), mask);
    const Tensor probs = b.Dropout(b.Softmax(scores), c.dropout);
    const Tensor ctx = MergeHeads(b, b.BatchMatMul(probs, v));
    const Tensor out = b.Dropout(b.Dense(ctx, c.hidden, true, "output"), c.dropout);
    attended = b.LayerNorm(b.Add(out, x), "output_norm");
  }
  auto s = b.Scope("ffn");
  Tensor h = b.Gelu(b.Dense(attended, c.intermediate, true, "intermediate"));
  h = b.Dropout(b.Dense(h, c.hidden, true, "output"), c.dropout);
  return b.LayerNorm(b.Add(h, attended), "output_norm");
}

Graph Bert(GeneratorParams& p) {
  const ModelOptions o = p.Model(32);
  BertConfig c;
  c.layers = static_cast<int>(p.Int("layers", c.layers, 1, 256));
  c.hidden = p.Int("hidden", c.hidden, 1, 65536);
  c.heads = p.Int("heads", c.heads, 1, 1024);
  if (c.hidden % c.heads != 0) p.Fail("heads", "must divide hidden (" + std::to_string(c.hidden) + ")");
  c.intermediate = p.Int("intermediate", 4 * c.hidden, 1, 1 << 20);
  c.seq_len = p.Int("seq_len", c.seq_len, 2, 65536);
  c.vocab = p.Int("vocab", c.vocab, 2, 10'000'000);
  c.max_position = p.Int("max_position", std::max<int64_t>(c.max_position, c.seq_len), c.seq_len, 1 << 20);
  c.max_predictions = p.Int("max_predictions", std::min<int64_t>(c.max_predictions, c.seq_len), 1, c.seq_len);
  c.dropout = p.Double("dropout", c.dropout, 0.0, 0.99);
  const std::string name =
      p.Name("bert_l" + std::to_string(c.layers) + "_h" + std::to_string(c.hidden) + "_" + Mode(o) + "_b" +
             std::to_string(o.batch) + "_s" + std::to_string(c.seq_len));
  p.Finish();

  ModelBuilder b(name, o);
  const int64_t batch = o.batch, seq = c.seq_len;
  const Tensor ids = b.Input("input_ids", {batch, seq}, DType::kInt64);
  const Tensor types = b.Input("token_type_ids", {batch, seq}, DType::kInt64);
  const Tensor mask = b.Input("attention_mask", {batch, 1, 1, seq});
  const Tensor positions = b.Input("masked_lm_positions", {batch, c.max_predictions}, DType::kInt64);
  const Tensor mlm_labels = b.Input("masked_lm_ids", {batch, c.max_predictions}, DType::kInt64);
  const Tensor nsp_labels = b.Input("next_sentence_labels", {batch}, DType::kInt64);

  Tensor word_table;
  Tensor x;
  {
    auto s = b.Scope("embeddings");
    word_table = b.Weight("word_embeddings", {c.vocab, c.hidden});
    const Tensor pos_table = b.Weight("position_embeddings", {c.max_position, c.hidden});
    const Tensor type_table = b.Weight("token_type_embeddings", {c.type_vocab, c.hidden});
    x = b.Add(b.Embedding(ids, word_table), b.Embedding(types, type_table));
    x = b.Add(x, b.Slice(pos_table, 0, 0, seq));
    x = b.Dropout(b.LayerNorm(x), c.dropout);
  }
  for (int l = 0; l < c.layers; ++l) {
    auto s = b.Scope("encoder/layer_" + std::to_string(l));
    x = BertLayer(b, x, mask, c);
  }
  {
    auto s = b.Scope("cls/predictions");
    Tensor h = GatherRows(b, x, positions);
    h = b.LayerNorm(b.Gelu(b.Dense(h, c.hidden, true, "transform")));
    Tensor logits = b.MatMul(h, word_table, "MatMul", /*transpose_w=*/true);
    logits = b.BiasAdd(logits, b.Weight("output_bias", {c.vocab}));
    b.SoftmaxCrossEntropy(logits, mlm_labels);
  }
  {
    auto s = b.Scope("cls/seq_relationship");
    const Tensor first = b.Reshape(b.Slice(x, 1, 0, 1), {batch, c.hidden});
    const Tensor pooled = b.Tanh(b.Dense(first, c.hidden, true, "pooler"));
    b.SoftmaxCrossEntropy(b.Dense(pooled, 2, true, "classifier"), nsp_labels);
  }
  return b.Build();
}

struct XlConfig {
  int layers = 12;
  int64_t d_model = 512;
  int64_t heads = 8;
  int64_t d_head = 64;
  int64_t d_inner = 2048;
  int64_t seq_len = 512;
  int64_t mem_len = 512;
  int64_t vocab = 204;
  int segments = 1;
  double dropout = 0.1;
};

struct XlLayerWeights {
  Tensor qkv, r_net, o, r_w_bias, r_r_bias;
};

Tensor XlLayer(ModelBuilder& b, Tensor h, Tensor mem, Tensor pos_emb, Tensor attn_mask,
               const XlLayerWeights& w, const XlConfig& c) {
  const int64_t len = c.seq_len, klen = c.mem_len + c.seq_len;
  const int64_t hd = c.heads * c.d_head;
  Tensor out;
  {
    auto s = b.Scope("rel_attn");
    const Tensor cat = c.mem_len > 0 ? b.Concat({mem, h}, 1) : h;
    const std::vector<Tensor> qkv = b.Split(b.MatMul(cat, w.qkv), {hd, hd, hd}, -1);
    const Tensor q = c.mem_len > 0 ? b.Slice(qkv[0], 1, c.mem_len, len) : qkv[0];
    const Tensor r_head = b.MatMul(pos_emb, w.r_net);  // [klen, hd]
    const Tensor rw_q = SplitHeads(b, b.Add(q, w.r_w_bias), c.heads);
    const Tensor rr_q = SplitHeads(b, b.Add(q, w.r_r_bias), c.heads);
    const Tensor k = SplitHeads(b, qkv[1], c.heads);
    const Tensor v = SplitHeads(b, qkv[2], c.heads);
    const Tensor r =
        b.Transpose(b.Reshape(r_head, {klen, c.heads, c.d_head}), {1, 0, 2});  // [heads, klen, d]
    const Tensor ac = b.BatchMatMul(rw_q, k, true);
    const Tensor bd = RelShift(b, b.BatchMatMul(rr_q, r, true));
    const Tensor score = b.Add(b.Scale(b.Add(ac, bd)), attn_mask);
    const Tensor prob = b.Dropout(b.Softmax(score), c.dropout);
    const Tensor vec = MergeHeads(b, b.BatchMatMul(prob, v));
    const Tensor attn = b.Dropout(b.MatMul(vec, w.o), c.dropout);
    out = b.LayerNorm(b.Add(attn, h));
  }
  auto s = b.Scope("ff");
  Tensor f = b.Dropout(b.Relu(b.Dense(out, c.d_inner, true, "layer_1")), c.dropout);
  f = b.Dropout(b.Dense(f, c.d_model, true, "layer_2"), c.dropout);
  return b.LayerNorm(b.Add(f, out));
}

Graph TransformerXl(GeneratorParams& p) {
  const ModelOptions o = p.Model(22);
  XlConfig c;
  c.layers = static_cast<int>(p.Int("layers", c.layers, 1, 256));
  c.d_model = p.Int("d_model", c.d_model, 1, 65536);
  c.heads = p.Int("heads", c.heads, 1, 1024);
  c.d_head = p.Int("d_head", c.d_model / c.heads > 0 ? c.d_model / c.heads : 1, 1, 65536);
  c.d_inner = p.Int("d_inner", 4 * c.d_model, 1, 1 << 20);
  c.seq_len = p.Int("seq_len", c.seq_len, 1, 65536);
  c.mem_len = p.Int("mem_len", c.mem_len, 0, 65536);
  c.vocab = p.Int("vocab", c.vocab, 2, 10'000'000);
  c.segments = static_cast<int>(p.Int("segments", c.segments, 1, 1024));
  c.dropout = p.Double("dropout", c.dropout, 0.0, 0.99);
  const std::string name = p.Name("transformer_xl_l" + std::to_string(c.layers) + "_" + Mode(o) + "_b" +
                                  std::to_string(o.batch) + "_s" + std::to_string(c.seq_len));
  p.Finish();

  ModelBuilder b(name, o);
  const int64_t batch = o.batch, len = c.seq_len, klen = c.mem_len + c.seq_len, hd = c.heads * c.d_head;
  Tensor table, out_bias, pos_emb, attn_mask;
  std::vector<XlLayerWeights> w(static_cast<size_t>(c.layers));
  std::vector<Tensor> mems(static_cast<size_t>(c.layers));
  {
    auto s = b.Scope("transformer");
    table = b.Weight("word_embeddings", {c.vocab, c.d_model});
    out_bias = b.Weight("softmax_bias", {c.vocab});
    pos_emb = b.Constant("pos_emb", {klen, c.d_model});  // sinusoid of relative positions
    attn_mask = b.Constant("attn_mask", {len, klen});
    for (int l = 0; l < c.layers; ++l) {
      auto sl = b.Scope("layer_" + std::to_string(l));
      w[static_cast<size_t>(l)] = {
          b.Weight("qkv_kernel", {c.d_model, 3 * hd}), b.Weight("r_kernel", {c.d_model, hd}),
          b.Weight("o_kernel", {hd, c.d_model}), b.Weight("r_w_bias", {hd}), b.Weight("r_r_bias", {hd})};
      if (c.mem_len > 0) mems[static_cast<size_t>(l)] = b.Input("mems", {batch, c.mem_len, c.d_model});
    }
  }
  for (int seg = 0; seg < c.segments; ++seg) {
    const std::string suffix = c.segments > 1 ? "/segment_" + std::to_string(seg) : "";
    const Tensor ids = b.Input("inputs" + suffix, {batch, len}, DType::kInt64);
    const Tensor labels = b.Input("labels" + suffix, {batch, len}, DType::kInt64);
    Tensor h;
    {
      auto s = b.Scope("transformer/embedding" + suffix);
      h = b.Dropout(b.Scale(b.Embedding(ids, table)), c.dropout);
    }
    for (int l = 0; l < c.layers; ++l) {
      auto s = b.Scope("transformer/layer_" + std::to_string(l) + suffix);
      const size_t k = static_cast<size_t>(l);
      const Tensor in = h;
      h = XlLayer(b, h, mems[k], pos_emb, attn_mask, w[k], c);
      if (c.mem_len > 0 && seg + 1 < c.segments) {
        // The next segment's memory: the last mem_len states of [memory; input].
        auto sm = b.Scope("new_mem");
        const Tensor cat = c.mem_len > len ? b.Concat({mems[k], in}, 1) : in;
        const int64_t total = b.dim(cat, 1);
        mems[k] = b.StopGradient(b.Slice(cat, 1, total - c.mem_len, c.mem_len));
      }
    }
    auto s = b.Scope("transformer/softmax" + suffix);
    const Tensor logits = b.BiasAdd(b.MatMul(b.Dropout(h, c.dropout), table, "MatMul", true), out_bias);
    b.SoftmaxCrossEntropy(logits, labels);
  }
  return b.Build();
}

}  // namespace

void RegisterTransformerGenerators(GeneratorRegistry& registry) {
  registry.Register(
      "bert", Bert,
      "BERT pre-training graph (BERT-base by default); params layers, hidden, heads, intermediate, "
      "seq_len, vocab, max_position, max_predictions, dropout");
  registry.Register(
      "transformer_xl", TransformerXl,
      "Transformer-XL with segment memory and relative attention (enwik8 base by default); params "
      "layers, d_model, heads, d_head, d_inner, seq_len, mem_len, vocab, segments, dropout");
}

}  // namespace gosim::graphs::gen
