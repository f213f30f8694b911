// A small model-building DSL for the graph generators.
//
// A generator describes the forward pass of a model with tensor handles and
// layer helpers (Conv2D, BatchNorm, Dense, LstmCell, ...); every helper
// computes output shapes, dtypes, bytes, FLOPs and weight bytes and adds
// TensorFlow-like nodes through GraphBuilder:
//
//   ModelBuilder b("resnet50_train_b32", options);
//   Tensor x = b.Input("images", {32, 3, 224, 224});
//   {
//     auto scope = b.Scope("conv1");
//     x = b.Relu(b.BatchNorm(b.Conv2D(x, {.filters = 64, .kh = 7, .kw = 7, .stride = 2, .ph = 3, .pw = 3})));
//   }
//   ...
//   b.SoftmaxCrossEntropy(logits, labels);
//   Graph g = b.Build();
//
// Conventions (documented in docs/GRAPHS.md):
//   - Layout NCHW for images, [batch, channels, time] for 1-D signals,
//     [batch, ..., features] for dense layers.
//   - FLOPs: a multiply-add counts 2; elementwise ops count a documented
//     number of FLOPs per output element (kFlopsPer* below).
//   - bytes_read is the sum of the distinct input tensors, bytes_written the
//     sum of the outputs.
//   - Weights are `Variable` nodes whose persistent bytes hold the weight;
//     their output tensor aliases that memory (edges from a Variable carry
//     the weight bytes, which a transfer to another device moves). Each
//     Variable defines a colocation group (its node name) that its optimizer
//     update op joins.
//   - With options.training, Build() adds, in reverse order of the forward
//     ops, the gradient ops of every op on a path from a weight to a loss
//     (wrt its inputs and wrt its weights, reading the forward tensors they
//     need, so those activations stay live until the backward pass), AddN
//     ops where a tensor's gradient has several contributions, and one
//     optimizer update op per weight (phase update; Adam keeps 2 slots, so a
//     weight's colocation group holds 3x its bytes).
//
// Not thread-safe; a builder makes one graph.
#ifndef GOSIM_GRAPHS_GENERATORS_MODEL_BUILDER_H_
#define GOSIM_GRAPHS_GENERATORS_MODEL_BUILDER_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphs/graph.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs::gen {

using Shape = std::vector<int64_t>;

// FLOPs per output element of elementwise and normalization ops.
inline constexpr double kFlopsPerSigmoid = 4.0;
inline constexpr double kFlopsPerTanh = 4.0;
inline constexpr double kFlopsPerGelu = 8.0;
inline constexpr double kFlopsPerSoftmax = 5.0;         // max, sub, exp, sum, div
inline constexpr double kFlopsPerBatchNormTrain = 8.0;  // batch statistics + normalize
inline constexpr double kFlopsPerBatchNormInfer = 4.0;  // (x - mean) * rstd * gamma + beta
inline constexpr double kFlopsPerLayerNorm = 8.0;
inline constexpr double kFlopsPerCrossEntropy = 5.0;  // per logit

enum class Optimizer : uint8_t { kSgd, kMomentum, kAdam };
// Optimizer state slots per weight element: 0, 1, 2.
int OptimizerSlots(Optimizer optimizer);

struct ModelOptions {
  int64_t batch = 1;
  DType dtype = DType::kFloat32;  // activations and weights
  bool training = false;
  Optimizer optimizer = Optimizer::kAdam;
  // Building more nodes than this is a ConfigError (keeps bad parameters
  // from exhausting memory).
  int64_t max_nodes = 2'000'000;
};

// A handle to a tensor of the model being built (an index into the builder).
struct Tensor {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
};

// Parameters of a 2-D convolution. Padding kSame is TensorFlow's SAME
// (output = ceil(input / stride)); other values are explicit zero padding
// on both sides (0 = VALID).
struct ConvSpec {
  static constexpr int kSame = -1;
  int64_t filters = 0;
  int kh = 1;
  int kw = 1;
  int stride = 1;
  int ph = kSame;
  int pw = kSame;
  int dilation = 1;
  bool bias = false;
};

struct LstmWeights {
  Tensor kernel;  // [input + hidden, 4 * hidden]
  Tensor bias;    // [4 * hidden]
  int64_t hidden = 0;
};

class ModelBuilder {
 public:
  ModelBuilder(std::string graph_name, ModelOptions options);
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  const ModelOptions& options() const { return options_; }
  int64_t batch() const { return options_.batch; }
  bool training() const { return options_.training; }

  // Scopes nest: names and scope paths of the nodes added while a guard
  // lives get "<outer>/<name>" prefixes.
  class ScopeGuard {
   public:
    explicit ScopeGuard(ModelBuilder* b) : b_(b) {}
    ScopeGuard(ScopeGuard&& other) noexcept : b_(std::exchange(other.b_, nullptr)) {}
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;
    ~ScopeGuard() {
      if (b_) b_->PopScope();
    }

   private:
    ModelBuilder* b_;
  };
  [[nodiscard]] ScopeGuard Scope(std::string_view name);
  // Like Scope, but the scope's name is made unique first ("dense",
  // "dense_1", ...), as TensorFlow does for layers.
  [[nodiscard]] ScopeGuard UniqueScope(std::string_view name);
  const std::string& scope() const { return scope_; }
  // Reserves and returns a unique node name "<scope>/<base>".
  std::string ReserveName(std::string_view base);

  // --- tensor queries
  const Shape& shape(Tensor t) const { return tensors_[t.id].shape; }
  // Dimension `i` of `t`; negative `i` counts from the end.
  int64_t dim(Tensor t, int i) const;
  int64_t numel(Tensor t) const;
  int64_t bytes(Tensor t) const { return tensors_[t.id].bytes; }
  DType dtype(Tensor t) const { return tensors_[t.id].dtype; }
  int64_t num_nodes() const { return builder_.num_nodes(); }

  // --- leaves
  // A data input (op "Input"); never differentiated.
  Tensor Input(std::string_view name, Shape shape, DType dtype = DType::kUnknown);
  // A constant (op "Const"), e.g. zero initial RNN states or positional
  // encodings; never differentiated.
  Tensor Constant(std::string_view name, Shape shape, DType dtype = DType::kUnknown);
  // A weight (op "Variable"), trained when options.training.
  Tensor Weight(std::string_view name, Shape shape);

  // --- layers (layers.cc). Every helper names its node after its op type
  // within the current scope unless a name is given.
  Tensor Conv2D(Tensor x, const ConvSpec& spec, std::string_view name = "Conv2D");
  // Depthwise convolution with channel multiplier 1.
  Tensor DepthwiseConv2D(Tensor x, int kh, int kw, int stride, int ph = ConvSpec::kSame,
                         int pw = ConvSpec::kSame, int dilation = 1);
  // Depthwise k x k then pointwise 1x1 to `filters` (TensorFlow's
  // separable_conv2d: two nodes).
  Tensor SeparableConv2D(Tensor x, int64_t filters, int k, int stride);
  // 1-D convolution over [batch, channels, time]; causal keeps the length
  // (left padding of dilation * (k - 1)), otherwise SAME padding.
  Tensor Conv1D(Tensor x, int64_t filters, int k, int dilation, bool causal, bool bias,
                std::string_view name = "Conv1D");
  Tensor BatchNorm(Tensor x, std::string_view name = "BatchNorm");
  Tensor LayerNorm(Tensor x, std::string_view name = "LayerNorm");
  Tensor Relu(Tensor x);
  Tensor Sigmoid(Tensor x);
  Tensor Tanh(Tensor x);
  Tensor Gelu(Tensor x);
  Tensor Softmax(Tensor x);  // over the last dimension
  Tensor MaxPool(Tensor x, int k, int stride, int pad = ConvSpec::kSame);
  Tensor AvgPool(Tensor x, int k, int stride, int pad = ConvSpec::kSame);
  // Mean over H and W: [N, C, H, W] -> [N, C].
  Tensor GlobalAvgPool(Tensor x);
  // x [..., K] times w [K, N] (a weight or an activation) -> [..., N];
  // with transpose_w, w is [N, K] (e.g. a tied embedding table).
  Tensor MatMul(Tensor x, Tensor w, std::string_view name = "MatMul", bool transpose_w = false);
  // MatMul with a new weight [K, units], then BiasAdd when `bias`.
  Tensor Dense(Tensor x, int64_t units, bool bias = true, std::string_view name = "dense");
  // Adds b [C] along `axis` (1 for NCHW and [batch, channels, time]).
  Tensor BiasAdd(Tensor x, Tensor b, int axis = -1);
  // a [..., M, K] x b [..., K, N] (or b [..., N, K] with transpose_b);
  // b's leading dims may be absent (broadcast).
  Tensor BatchMatMul(Tensor a, Tensor b, bool transpose_b = false);
  // Elementwise with NumPy broadcasting.
  Tensor Add(Tensor a, Tensor b);
  Tensor Mul(Tensor a, Tensor b);
  // Multiplies by a scalar constant.
  Tensor Scale(Tensor x);
  // Sum of same-shaped tensors (op "AddN").
  Tensor AddN(const std::vector<Tensor>& xs);
  Tensor Concat(const std::vector<Tensor>& xs, int axis);
  std::vector<Tensor> Split(Tensor x, const std::vector<int64_t>& sizes, int axis);
  Tensor Slice(Tensor x, int axis, int64_t start, int64_t length);
  Tensor Transpose(Tensor x, const std::vector<int>& perm);
  // Same data, new shape (no node; the number of elements must match).
  Tensor Reshape(Tensor x, Shape shape);
  // Blocks gradients (op "StopGradient").
  Tensor StopGradient(Tensor x);
  // ids [...] (int) into table [V, D] -> [..., D] (op "GatherV2").
  Tensor Embedding(Tensor ids, Tensor table);
  // Identity unless training and rate > 0.
  Tensor Dropout(Tensor x, double rate);
  // Sparse softmax cross-entropy of logits [..., V] against integer labels
  // [...]; a loss (gradients start here).
  Tensor SoftmaxCrossEntropy(Tensor logits, Tensor labels);
  // One unrolled LSTM step: Concat, MatMul, BiasAdd, Split, 3 Sigmoid, 2
  // Tanh, 3 Mul, Add (TensorFlow BasicLSTMCell). Returns {h, c}.
  LstmWeights NewLstmWeights(int64_t input_size, int64_t hidden);
  std::pair<Tensor, Tensor> LstmCell(Tensor x, Tensor h, Tensor c, const LstmWeights& w);

  // Adds the backward and update ops when training and builds the graph.
  // The builder is left empty.
  Graph Build();

  // ---- the generic op interface used by the helpers (and by generators
  // that need an op the helpers lack).
  struct GradSpec {
    std::string_view op{};  // op type of the gradient node (a string literal)
    double flops = 0.0;
    int wrt = 0;                    // first forward input position it differentiates
    int wrt_count = 1;              // number of consecutive input positions
    std::array<Tensor, 2> saved{};  // forward tensors it reads besides the output gradients
    bool reads_dy = true;
    // The gradient's shape when it differs from the input's (a sparse
    // gradient; only with wrt_count == 1).
    Shape grad_shape{};
  };
  struct OpArgs {
    std::string_view op{};    // a string literal or otherwise outliving the builder call
    std::string_view name{};  // base name within the current scope; "" = op
    std::string full_name{};  // a name from ReserveName(), used as is when set
    std::vector<Tensor> inputs{};
    std::vector<Shape> outputs{};
    std::vector<DType> output_dtypes{};  // empty: the model dtype
    double flops = 0.0;
    int64_t persistent_bytes = 0;
  };
  // Adds a forward op; returns its record index. Describe its gradient with
  // AddGrad / AddPassThrough / MarkLoss right after (ignored unless training).
  int32_t Op(OpArgs args);
  Tensor output(int32_t record, int k = 0) const { return Tensor{records_[record].first_output + k}; }
  // At most two GradSpecs per op.
  void AddGrad(int32_t record, GradSpec grad);
  // Output 0's gradient flows unchanged to input `input` (consecutive
  // inputs only).
  void AddPassThrough(int32_t record, int input);
  void MarkLoss(int32_t record) { records_[record].loss = true; }

 private:
  struct TensorRec {
    int32_t node = -1;  // builder node index
    int32_t output = 0;
    int64_t bytes = 0;
    Shape shape;
    DType dtype = DType::kUnknown;
    bool requires_grad = false;
    int32_t weight = -1;  // index into weights_
  };
  struct Record {
    int32_t node = -1;  // -1 for a Reshape view
    int32_t first_output = 0;
    int32_t num_outputs = 0;
    int32_t input_begin = 0;  // into inputs_ (kept only when training)
    int32_t input_count = 0;
    std::array<GradSpec, 2> grads;
    int num_grads = 0;
    int pass_first = 0;
    int pass_count = 0;
    bool loss = false;
  };
  // An open-addressing set of name hashes with a suffix counter per name
  // (a hash collision only costs an unneeded suffix, never a duplicate).
  struct NameTable {
    std::vector<std::pair<uint64_t, int32_t>> slots;
    size_t used = 0;
    // The counter of `hash`, inserting it (counter 0) when absent; sets
    // *inserted.
    int32_t& Find(uint64_t hash, bool* inserted);
  };
  struct WeightRec {
    Tensor tensor;
    int32_t node = -1;
    bool trainable = true;
  };

  void PopScope();
  void PushScope(std::string_view name);
  // `full` made unique ("x", "x_1", ...) and reserved.
  std::string UniqueName(const std::string& full);
  // Adds a node named `name` (already unique) reading `inputs`.
  int32_t NewNode(std::string_view op, std::string name, double flops, const std::vector<Tensor>& inputs,
                  const std::vector<std::pair<Shape, DType>>& outputs, Phase phase, const std::string& scope);
  Tensor NewTensor(int32_t node, int32_t output, Shape shape, DType dtype, bool requires_grad);
  [[noreturn]] void Fail(const std::string& what) const;
  Tensor Elementwise(std::string_view op, std::string_view grad_op, Tensor x, double flops_per_element,
                     bool grad_reads_output);
  Tensor Pool(std::string_view op, Tensor x, int k, int stride, int pad);
  int64_t ConvOut(int64_t in, int k, int stride, int pad, int dilation, const char* what) const;
  Shape Broadcast(const Shape& a, const Shape& b) const;

  // Backward expansion (model_builder.cc).
  void AddBackward();
  Tensor AccumulateGrad(Tensor t, const std::string& scope, const std::string& name);
  void PushGrad(Tensor t, Tensor grad);
  Tensor input(const Record& rec, int i) const { return inputs_[static_cast<size_t>(rec.input_begin + i)]; }

  std::string name_;
  ModelOptions options_;
  GraphBuilder builder_;
  std::string scope_;
  std::vector<size_t> scope_lengths_;
  NameTable names_;
  std::vector<TensorRec> tensors_;
  std::vector<Record> records_;
  std::vector<WeightRec> weights_;
  std::vector<Tensor> inputs_;  // the inputs of every record, back to back
  // Gradient contributions per forward tensor: a linked list through
  // grad_links_ (tensor, next), -1 terminated.
  std::vector<int32_t> grad_head_;
  std::vector<std::pair<Tensor, int32_t>> grad_links_;
};

}  // namespace gosim::graphs::gen

#endif  // GOSIM_GRAPHS_GENERATORS_MODEL_BUILDER_H_
