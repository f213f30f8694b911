#include "graphs/op_class.h"

#include <unordered_map>

namespace gosim::graphs {
namespace {

constexpr std::array<std::string_view, kNumOpClasses> kNames{
    "matmul",  "conv",      "conv_backward", "elementwise", "reduction",     "pooling", "normalization",
    "softmax", "embedding", "optimizer",     "memory",      "communication", "other"};

// Normalized names (lowercase, no underscores, no namespace) of known ops.
const std::unordered_map<std::string_view, OpClass>& Table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string_view, OpClass>();
    const auto add = [t](OpClass c, std::initializer_list<std::string_view> names) {
      for (std::string_view n : names) t->emplace(n, c);
    };
    add(OpClass::kMatMul, {"matmul",
                           "batchmatmul",
                           "mm",
                           "bmm",
                           "addmm",
                           "addbmm",
                           "baddbmm",
                           "addmv",
                           "mv",
                           "dot",
                           "vdot",
                           "linear",
                           "gemm",
                           "einsum",
                           "tensordot",
                           "matmulinteger",
                           "qlinearmatmul",
                           "fusedmatmul",
                           "sparsematmul",
                           "sparsetensordensematmul",
                           "lstm",
                           "gru",
                           "rnn",
                           "lstmcell",
                           "grucell",
                           "rnncell",
                           "blocklstm",
                           "cudnnrnn",
                           "bilinear",
                           "outer",
                           "ger",
                           "scaleddotproductattention",
                           "scaleddotproductflashattention",
                           "scaleddotproductefficientattention",
                           "multiheadattention",
                           "attention"});
    add(OpClass::kElementwise, {"add",
                                "addv2",
                                "addn",
                                "sub",
                                "rsub",
                                "mul",
                                "div",
                                "truediv",
                                "realdiv",
                                "floordiv",
                                "floormod",
                                "mod",
                                "remainder",
                                "fmod",
                                "pow",
                                "neg",
                                "negative",
                                "abs",
                                "exp",
                                "exp2",
                                "expm1",
                                "log",
                                "log2",
                                "log10",
                                "log1p",
                                "sqrt",
                                "rsqrt",
                                "square",
                                "squareddifference",
                                "reciprocal",
                                "sign",
                                "floor",
                                "ceil",
                                "round",
                                "trunc",
                                "clamp",
                                "clip",
                                "clipbyvalue",
                                "clampmin",
                                "clampmax",
                                "maximum",
                                "minimum",
                                "relu",
                                "relu6",
                                "leakyrelu",
                                "elu",
                                "selu",
                                "celu",
                                "prelu",
                                "gelu",
                                "silu",
                                "swish",
                                "mish",
                                "hardswish",
                                "hardsigmoid",
                                "hardtanh",
                                "sigmoid",
                                "logsigmoid",
                                "tanh",
                                "softplus",
                                "softsign",
                                "erf",
                                "erfc",
                                "erfinv",
                                "sin",
                                "cos",
                                "threshold",
                                "dropout",
                                "nativedropout",
                                "featuredropout",
                                "alphadropout",
                                "bernoulli",
                                "rand",
                                "randn",
                                "randomuniform",
                                "randomstandardnormal",
                                "truncatednormal",
                                "biasadd",
                                "cast",
                                "convertelementtype",
                                "where",
                                "selectv2",
                                "select",
                                "logicaland",
                                "logicalor",
                                "logicalnot",
                                "not",
                                "and",
                                "or",
                                "xor",
                                "bitwiseand",
                                "bitwiseor",
                                "bitwisenot",
                                "eq",
                                "ne",
                                "lt",
                                "le",
                                "gt",
                                "ge",
                                "equal",
                                "notequal",
                                "less",
                                "lessequal",
                                "greater",
                                "greaterequal",
                                "isnan",
                                "isinf",
                                "isfinite",
                                "lerp",
                                "addcmul",
                                "addcdiv",
                                "fma",
                                "maskedfill",
                                "maskedscatter",
                                "meangrad",
                                "axpy"});
    add(OpClass::kReduction, {"sum",
                              "mean",
                              "max",
                              "min",
                              "prod",
                              "amax",
                              "amin",
                              "aminmax",
                              "argmax",
                              "argmin",
                              "all",
                              "any",
                              "reducesum",
                              "reducemean",
                              "reducemax",
                              "reducemin",
                              "reduceprod",
                              "reducel1",
                              "reducel2",
                              "reducelogsum",
                              "reducelogsumexp",
                              "reducesumsquare",
                              "logsumexp",
                              "norm",
                              "linalgvectornorm",
                              "frobeniusnorm",
                              "var",
                              "std",
                              "varmean",
                              "stdmean",
                              "cumsum",
                              "cumprod",
                              "topk",
                              "topkv2",
                              "sort",
                              "argsort",
                              "nllloss",
                              "nllloss2d",
                              "nlllossforward",
                              "nllloss2dforward",
                              "crossentropyloss",
                              "mseloss",
                              "l1loss",
                              "smoothl1loss",
                              "huberloss",
                              "binarycrossentropy",
                              "binarycrossentropywithlogits",
                              "l2loss",
                              "biasaddgrad",
                              "segmentsum",
                              "segmentmean",
                              "bincount"});
    add(OpClass::kPooling, {"maxpool",
                            "avgpool",
                            "maxpool1d",
                            "maxpool2d",
                            "maxpool3d",
                            "avgpool1d",
                            "avgpool2d",
                            "avgpool3d",
                            "maxpool2dwithindices",
                            "maxpool3dwithindices",
                            "adaptiveavgpool1d",
                            "adaptiveavgpool2d",
                            "adaptiveavgpool3d",
                            "adaptivemaxpool2d",
                            "globalaveragepool",
                            "globalmaxpool",
                            "averagepool",
                            "lppool",
                            "globallppool",
                            "maxpoolwithargmax",
                            "fractionalmaxpool",
                            "maxunpool",
                            "maxunpool2d"});
    add(OpClass::kNormalization, {"batchnorm",
                                  "fusedbatchnorm",
                                  "batchnormalization",
                                  "nativebatchnorm",
                                  "cudnnbatchnorm",
                                  "miopenbatchnorm",
                                  "batchnormwithglobalnormalization",
                                  "layernorm",
                                  "nativelayernorm",
                                  "layernormalization",
                                  "groupnorm",
                                  "nativegroupnorm",
                                  "instancenorm",
                                  "instancenormalization",
                                  "rmsnorm",
                                  "lrn",
                                  "localresponsenorm",
                                  "localresponsenormalization",
                                  "l2normalize",
                                  "normalize",
                                  "lpnormalization",
                                  "meanvariancenormalization"});
    add(OpClass::kSoftmax, {"softmax", "logsoftmax", "hardmax", "sparsesoftmaxcrossentropywithlogits",
                            "softmaxcrossentropywithlogits", "softmaxcrossentropyloss", "crossentropy"});
    add(OpClass::kEmbedding,
        {"embedding",    "embeddingbag",       "embeddinglookup", "gather",        "gatherelements",
         "gathernd",     "resourcegather",     "indexselect",     "index",         "take",
         "takealongdim", "unsortedsegmentsum", "scatter",         "scatteradd",    "scatterreduce",
         "scatternd",    "scatterelements",    "scattersub",      "scatterupdate", "indexput",
         "indexadd",     "indexcopy",          "sparselengthssum"});
    add(OpClass::kMemory, {"identity",
                           "identityn",
                           "reshape",
                           "view",
                           "unsafeview",
                           "reshapealias",
                           "t",
                           "transpose",
                           "permute",
                           "expand",
                           "expandas",
                           "squeeze",
                           "unsqueeze",
                           "flatten",
                           "contiguous",
                           "clone",
                           "copy",
                           "tocopy",
                           "to",
                           "detach",
                           "alias",
                           "slice",
                           "split",
                           "splitv",
                           "splitwithsizes",
                           "unbind",
                           "chunk",
                           "narrow",
                           "cat",
                           "concat",
                           "concatv2",
                           "concatenate",
                           "stack",
                           "pack",
                           "unpack",
                           "unstack",
                           "pad",
                           "padv2",
                           "mirrorpad",
                           "constantpadnd",
                           "reflectionpad2d",
                           "replicationpad2d",
                           "tile",
                           "repeat",
                           "broadcastto",
                           "expanddims",
                           "shape",
                           "size",
                           "rank",
                           "const",
                           "constant",
                           "constantofshape",
                           "zeros",
                           "ones",
                           "zeroslike",
                           "oneslike",
                           "empty",
                           "emptylike",
                           "emptystrided",
                           "full",
                           "fulllike",
                           "fill",
                           "newzeros",
                           "newones",
                           "newempty",
                           "newemptystrided",
                           "newfull",
                           "arange",
                           "range",
                           "linspace",
                           "variable",
                           "variablev2",
                           "varhandleop",
                           "readvariableop",
                           "assign",
                           "assignvariableop",
                           "stopgradient",
                           "memcpy",
                           "memcpyhtod",
                           "memcpydtoh",
                           "memcpydtod",
                           "memset",
                           "relshift",
                           "roll",
                           "flip",
                           "reverse",
                           "reversev2",
                           "diagonal",
                           "asstrided",
                           "liftfresh",
                           "lift",
                           "scalartensor",
                           "set",
                           "resize",
                           "dynamicstitch",
                           "gathershape",
                           "depthtospace",
                           "spacetodepth",
                           "pixelshuffle",
                           "upsamplenearest2d",
                           "resizenearestneighbor"});
    add(OpClass::kOther, {"input", "placeholder", "parameter", "buffer", "optimizerstate", "noop", "getitem",
                          "output", "retval", "arg"});
    return t;
  }();
  return *table;
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}
bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool IsCommunication(std::string_view key) {
  for (std::string_view part :
       {"allreduce", "allgather", "reducescatter", "alltoall", "nccl", "collective"}) {
    if (Contains(key, part)) return true;
  }
  for (std::string_view name :
       {"send", "recv", "isend", "irecv", "hostsend", "hostrecv", "broadcast", "barrier"}) {
    if (key == name) return true;
  }
  return false;
}

bool IsOptimizer(std::string_view key) {
  for (std::string_view prefix : {"apply", "resourceapply", "sparseapply", "resourcesparseapply"}) {
    if (StartsWith(key, prefix)) return true;
  }
  for (std::string_view part : {"foreach", "adam", "sgd", "adagrad", "rmsprop", "adadelta", "ftrl"}) {
    if (Contains(key, part)) return true;
  }
  return false;
}

// "conv" but not "convert" (e.g. convert_element_type).
bool IsConv(std::string_view key) {
  for (size_t pos = key.find("conv"); pos != std::string_view::npos; pos = key.find("conv", pos + 1)) {
    if (key.substr(pos, 7) != "convert") return true;
  }
  return false;
}

// Removes one version ("v2") or gradient ("grad", "backward", ...) suffix;
// false when there is none.
bool StripSuffix(std::string_view* key) {
  const std::string_view k = *key;
  if (k.size() > 2 && k[k.size() - 2] == 'v' && k.back() >= '0' && k.back() <= '9') {
    key->remove_suffix(2);
    return true;
  }
  for (std::string_view suffix :
       {"backwarddata", "backwardinput", "backward", "gradgrad", "grad", "gradient"}) {
    if (k.size() > suffix.size() && EndsWith(k, suffix)) {
      key->remove_suffix(suffix.size());
      return true;
    }
  }
  return false;
}

OpClass FromSubstrings(std::string_view key) {
  struct Rule {
    std::string_view part;
    OpClass op_class;
  };
  static constexpr Rule kRules[] = {
      {"matmul", OpClass::kMatMul},       {"gemm", OpClass::kMatMul},        {"einsum", OpClass::kMatMul},
      {"attention", OpClass::kMatMul},    {"norm", OpClass::kNormalization}, {"softmax", OpClass::kSoftmax},
      {"embedding", OpClass::kEmbedding}, {"gather", OpClass::kEmbedding},   {"scatter", OpClass::kEmbedding},
      {"pool", OpClass::kPooling},        {"reduce", OpClass::kReduction},   {"loss", OpClass::kReduction},
      {"memcpy", OpClass::kMemory},       {"copy", OpClass::kMemory},        {"reshape", OpClass::kMemory},
      {"transpose", OpClass::kMemory},    {"concat", OpClass::kMemory},      {"split", OpClass::kMemory},
      {"slice", OpClass::kMemory},        {"pad", OpClass::kMemory},         {"relu", OpClass::kElementwise},
      {"sigmoid", OpClass::kElementwise}, {"tanh", OpClass::kElementwise},   {"gelu", OpClass::kElementwise},
      {"dropout", OpClass::kElementwise},
  };
  for (const Rule& rule : kRules) {
    if (Contains(key, rule.part)) return rule.op_class;
  }
  return OpClass::kOther;
}

}  // namespace

std::string_view OpClassName(OpClass op_class) {
  return kNames[static_cast<size_t>(op_class)];
}

std::optional<OpClass> ParseOpClass(std::string_view name) {
  if (name == "data_movement") return OpClass::kMemory;
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<OpClass>(i);
  }
  return std::nullopt;
}

const std::array<OpClass, kNumOpClasses>& AllOpClasses() {
  static constexpr std::array<OpClass, kNumOpClasses> kAll{
      OpClass::kMatMul,    OpClass::kConv,      OpClass::kConvBackward,  OpClass::kElementwise,
      OpClass::kReduction, OpClass::kPooling,   OpClass::kNormalization, OpClass::kSoftmax,
      OpClass::kEmbedding, OpClass::kOptimizer, OpClass::kMemory,        OpClass::kCommunication,
      OpClass::kOther};
  return kAll;
}

OpClass ClassifyOp(std::string_view op_type) {
  std::string_view name = op_type;
  std::string_view ns;
  if (const size_t colons = name.rfind("::"); colons != std::string_view::npos) {
    ns = name.substr(0, colons);
    name = name.substr(colons + 2);
  } else {
    if (StartsWith(name, "torch.ops.")) name.remove_prefix(10);
    for (std::string_view space : {"aten.", "prims.", "c10d.", "_c10d_functional."}) {
      if (StartsWith(name, space)) {
        ns = space.substr(0, space.size() - 1);
        name.remove_prefix(space.size());
        name = name.substr(0, name.find('.'));  // drop the overload (".default", ".Tensor")
        break;
      }
    }
  }
  for (std::string_view comm : {"c10d", "_c10d_functional", "nccl", "dist"}) {
    if (ns == comm) return OpClass::kCommunication;
  }
  const bool aten = ns == "aten";

  // Lowercase without underscores; names longer than the buffer are unknown.
  char buffer[128];
  size_t n = 0;
  for (const char c : name) {
    if (c == '_') continue;
    if (n == sizeof(buffer)) return OpClass::kOther;
    buffer[n++] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  std::string_view key(buffer, n);
  if (key.empty()) return OpClass::kOther;

  if (aten && key == "select") return OpClass::kMemory;  // indexing; TensorFlow's Select is elementwise
  if (IsCommunication(key)) return OpClass::kCommunication;
  if (IsOptimizer(key)) return OpClass::kOptimizer;
  if (IsConv(key)) {
    const bool backward = Contains(key, "backprop") || Contains(key, "backward") || Contains(key, "grad");
    return backward ? OpClass::kConvBackward : OpClass::kConv;
  }
  const auto& table = Table();
  for (int pass = 0; pass < 4; ++pass) {
    if (const auto it = table.find(key); it != table.end()) return it->second;
    if (!StripSuffix(&key)) break;
  }
  return FromSubstrings(key);
}

std::string_view ConvKindName(ConvKind kind) {
  switch (kind) {
    case ConvKind::kDepthwise:
      return "depthwise";
    case ConvKind::kGrouped:
      return "grouped";
    default:
      return "";
  }
}

std::string ConvKindSuffix(ConvKind kind) {
  return kind == ConvKind::kDense ? std::string() : " (" + std::string(ConvKindName(kind)) + ")";
}

ConvKind ConvKindOf(int64_t per_group, int64_t channels) {
  if (per_group <= 0 || channels <= 0 || per_group >= channels) return ConvKind::kDense;
  return per_group == 1 ? ConvKind::kDepthwise : ConvKind::kGrouped;
}

ConvKind TypeConvKind(std::string_view op_type) {
  if (op_type.ends_with("]")) {
    const size_t open = op_type.rfind(" [");
    if (open != std::string_view::npos) op_type = op_type.substr(0, open);
  }
  if (op_type.ends_with(" (depthwise)")) return ConvKind::kDepthwise;
  if (op_type.ends_with(" (grouped)")) return ConvKind::kGrouped;
  return ConvKind::kDense;
}

bool SynchronizesHost(std::string_view op_type) {
  static constexpr std::string_view kSync[] = {
      "aten::item",        "aten::_local_scalar_dense", "aten::is_nonzero",      "aten::equal",
      "aten::nonzero",     "aten::masked_select",       "aten::unique",          "aten::_unique",
      "aten::_unique2",    "aten::unique_consecutive",  "aten::unique_dim",      "aten::allclose",
      "aten::synchronize", "cudaDeviceSynchronize",     "cudaStreamSynchronize", "aten::_to_cpu",
  };
  for (const std::string_view s : kSync) {
    if (op_type == s) return true;
  }
  return false;
}

}  // namespace gosim::graphs
