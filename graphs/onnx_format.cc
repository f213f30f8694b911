#include "graphs/onnx_format.h"

#include "core/error.h"

#ifdef GOSIM_HAVE_ONNX

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <exception>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/strings.h"
#include "graphs/graph_builder.h"
#include "graphs/op_class.h"
#include "graphs/op_costs.h"

namespace gosim::graphs {
namespace {

// Longest time ONNX shape inference may take before the model is rejected.
constexpr int kInferenceTimeoutSeconds = 120;

// Element type and, when every dimension is a known non-negative number, the
// shape of one ONNX value.
struct ValueInfo {
  int32_t elem_type = 0;
  bool known = false;
  std::vector<int64_t> shape;
  int64_t bytes = 0;  // 0 when the shape or the element size is unknown
};

// Bytes per element of onnx::TensorProto::DataType (0 for strings and unknown).
int ElementSize(int32_t elem_type) {
  using T = onnx::TensorProto;
  switch (elem_type) {
    case T::FLOAT:
    case T::INT32:
    case T::UINT32:
      return 4;
    case T::UINT8:
    case T::INT8:
    case T::BOOL:
      return 1;
    case T::UINT16:
    case T::INT16:
    case T::FLOAT16:
    case T::BFLOAT16:
      return 2;
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
    case T::COMPLEX64:
      return 8;
    case T::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

DType ToDType(int32_t elem_type) {
  using T = onnx::TensorProto;
  switch (elem_type) {
    case T::FLOAT:
      return DType::kFloat32;
    case T::FLOAT16:
      return DType::kFloat16;
    case T::BFLOAT16:
      return DType::kBFloat16;
    case T::DOUBLE:
      return DType::kFloat64;
    case T::INT64:
      return DType::kInt64;
    case T::INT32:
      return DType::kInt32;
    case T::INT16:
      return DType::kInt16;
    case T::INT8:
      return DType::kInt8;
    case T::UINT8:
      return DType::kUInt8;
    case T::BOOL:
      return DType::kBool;
    default:
      return DType::kUnknown;
  }
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Runs ONNX shape inference in a child process and copies the inferred
// value_info and graph outputs into `model`. libonnx 1.12's inference
// functions index shapes without bounds checks (ConvTranspose reads dim(1) of
// a weight of any rank, for one), so a corrupt model could otherwise crash
// the whole program; a crash or a hang of the child becomes a GraphError.
void InferShapesIsolated(onnx::ModelProto& model, const std::string& source) {
  const onnx::ISchemaRegistry* registry = onnx::OpSchemaRegistry::Instance();
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                            /*data_prop_val=*/true);
  // libonnx builds its tables lazily; built once here, before any fork, they
  // are not rebuilt (and thrown away) by every child.
  static const bool warmed_up = [&] {
    onnx::ModelProto tiny;
    tiny.set_ir_version(8);
    tiny.add_opset_import()->set_version(13);
    onnx::NodeProto* node = tiny.mutable_graph()->add_node();
    node->set_op_type("Identity");
    node->add_input("x");
    node->add_output("y");
    onnx::ValueInfoProto* x = tiny.mutable_graph()->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
    try {
      onnx::shape_inference::InferShapes(tiny, registry, options);
    } catch (const std::exception&) {
      // only a warm-up
    }
    return true;
  }();
  (void)warmed_up;
  int fds[2];
  if (::pipe(fds) != 0)
    throw IoError(std::string("pipe() failed: ") + std::strerror(errno), Location(source));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError(std::string("fork() failed: ") + std::strerror(errno), Location(source));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A crash must end the child quietly: no crash handler of the parent's
    // (a test framework's, a backtrace printer) and no core file.
    for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(signal, SIG_DFL);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::string reply = "O";
    try {
      onnx::shape_inference::InferShapes(model, registry, options);
      onnx::GraphProto inferred;
      *inferred.mutable_value_info() = model.graph().value_info();
      *inferred.mutable_output() = model.graph().output();
      reply += inferred.SerializeAsString();
    } catch (const std::exception& e) {
      reply = std::string("E") + e.what();
    } catch (...) {
      reply = "Ean unknown exception";
    }
    WriteAll(fds[1], reply);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string reply;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kInferenceTimeoutSeconds);
  char buffer[1 << 16];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends the wait
    const ssize_t n = ready < 0 ? -1 : ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string hint = "the model is corrupt or inconsistent; check it with onnx.checker";
  if (timed_out) {
    throw GraphError(
        "ONNX shape inference did not finish in " + std::to_string(kInferenceTimeoutSeconds) + " s",
        Location(source), hint);
  }
  if (WIFSIGNALED(status)) {
    throw GraphError(
        "ONNX shape inference crashed on this model (" + std::string(strsignal(WTERMSIG(status))) + ")",
        Location(source), hint);
  }
  if (reply.empty()) throw GraphError("ONNX shape inference ended without a result", Location(source), hint);
  if (reply[0] == 'E')
    throw GraphError("ONNX shape inference failed: " + reply.substr(1), Location(source), hint);
  onnx::GraphProto inferred;
  if (!inferred.ParseFromArray(reply.data() + 1, static_cast<int>(reply.size() - 1))) {
    throw GraphError("ONNX shape inference returned an unreadable result", Location(source), hint);
  }
  *model.mutable_graph()->mutable_value_info() = std::move(*inferred.mutable_value_info());
  *model.mutable_graph()->mutable_output() = std::move(*inferred.mutable_output());
}

// The byte offset of the first top-level protobuf field of `bytes` whose tag
// or length is malformed, or that runs past the end; -1 when every top-level
// field is well formed (the fault is then inside a nested message).
int64_t FirstBadField(std::string_view bytes) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return -1;
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  for (;;) {
    const int64_t start = input.CurrentPosition();
    const uint32_t tag = input.ReadTag();
    if (tag == 0) return start == static_cast<int64_t>(bytes.size()) ? -1 : start;
    if (!google::protobuf::internal::WireFormatLite::SkipField(&input, tag)) return start;
  }
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(std::to_string(d));
  return parts.empty() ? "a scalar" : Join(parts, "x");
}

class Importer {
 public:
  Importer(const std::string& source, const std::string& name, const OnnxShapes& shapes)
      : source_(source), name_(name), shapes_(shapes) {}

  Graph Import(std::string_view bytes) {
    onnx::ModelProto model;
    if (bytes.size() > static_cast<size_t>(INT_MAX) ||
        !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      // Protobuf's parser says only that the bytes do not parse; a scan of
      // the top-level fields finds the first one that is broken.
      Location where(source_);
      where.byte_offset = FirstBadField(bytes);
      throw GraphError("not a valid ONNX model: its " + std::to_string(bytes.size()) +
                           " bytes do not parse as an onnx.ModelProto" +
                           (where.byte_offset >= 0 ? " (the top-level field at this byte is broken)"
                                                   : " (protobuf reports no position)"),
                       where, "is the file truncated, or not an ONNX model?");
    }
    if (!model.has_graph() || model.graph().node_size() == 0) {
      throw GraphError("the ONNX model has no graph nodes", Location(source_),
                       "export a model with at least one operator");
    }
    BindShapes(*model.mutable_graph());
    InferShapesIsolated(model, source_);
    const onnx::GraphProto& graph = model.graph();
    CollectValues(graph);
    Graph out = Build(graph);
    WarnUnknownShapes(graph);
    return out;
  }

 private:
  static bool IsTensor(const onnx::ValueInfoProto& v) { return v.type().has_tensor_type(); }

  // Applies shapes_ to the graph's inputs, value_info and outputs, then
  // checks that every graph input has a known size in every dimension.
  void BindShapes(onnx::GraphProto& graph) const {
    std::unordered_set<std::string> initializer_names;
    for (const auto& t : graph.initializer()) initializer_names.insert(t.name());
    // The graph inputs proper (old exporters list initializers as inputs too).
    std::vector<int> inputs;
    std::set<std::string> symbolic, input_names;
    for (int i = 0; i < graph.input_size(); ++i) {
      const onnx::ValueInfoProto& in = graph.input(i);
      if (initializer_names.count(in.name())) continue;
      inputs.push_back(i);
      input_names.insert(in.name());
      if (!IsTensor(in) || !in.type().tensor_type().has_shape()) continue;
      for (const auto& d : in.type().tensor_type().shape().dim()) {
        if (d.has_dim_param() && !d.dim_param().empty()) symbolic.insert(d.dim_param());
      }
    }
    const std::string how_dims =
        symbolic.empty() ? "its inputs have no symbolic dimensions"
                         : "its symbolic input dimensions are: " +
                               Join(std::vector<std::string>(symbolic.begin(), symbolic.end()), ", ");
    std::map<std::string, int64_t> bound;  // dim_param -> size
    for (const auto& [dim, size] : shapes_.dims) {
      if (!symbolic.count(dim))
        throw GraphError("the model has no symbolic input dimension named '" + dim + "'", At("graph.input"),
                         how_dims);
      if (size <= 0)
        throw GraphError("dimension '" + dim + "' is bound to " + std::to_string(size), At("graph.input"),
                         "sizes must be positive");
      bound[dim] = size;
    }
    for (const auto& [input, shape] : shapes_.input_shapes) {
      int index = -1;
      for (int i : inputs) {
        if (graph.input(i).name() == input) index = i;
      }
      if (index < 0) {
        throw GraphError("the model has no graph input named '" + input + "'", At("graph.input"),
                         "its inputs are: " +
                             Join(std::vector<std::string>(input_names.begin(), input_names.end()), ", "));
      }
      const std::string path = "graph.input[" + std::to_string(index) + "]";
      onnx::ValueInfoProto& in = *graph.mutable_input(index);
      if (!IsTensor(in))
        throw GraphError("input '" + input + "' is not a tensor; it has no shape to give", At(path));
      onnx::TypeProto::Tensor& t = *in.mutable_type()->mutable_tensor_type();
      for (int64_t d : shape) {
        if (d <= 0)
          throw GraphError("the shape " + ShapeText(shape) + " given for input '" + input + "' has a size " +
                               std::to_string(d),
                           At(path), "sizes must be positive");
      }
      if (t.has_shape()) {
        if (t.shape().dim_size() != static_cast<int>(shape.size())) {
          throw GraphError("input '" + input + "' has " + std::to_string(t.shape().dim_size()) +
                               " dimensions, the shape given " + ShapeText(shape) + " has " +
                               std::to_string(shape.size()),
                           At(path), "give one size per dimension");
        }
        for (int k = 0; k < t.shape().dim_size(); ++k) {
          const auto& d = t.shape().dim(k);
          const int64_t want = shape[static_cast<size_t>(k)];
          if (d.has_dim_value() && d.dim_value() != want) {
            throw GraphError("input '" + input + "' has size " + std::to_string(d.dim_value()) +
                                 " in dimension " + std::to_string(k) + ", the shape given " +
                                 ShapeText(shape) + " has " + std::to_string(want),
                             At(path), "only symbolic or unknown dimensions can be given");
          }
          if (d.has_dim_param() && !d.dim_param().empty()) {
            auto [it, fresh] = bound.emplace(d.dim_param(), want);
            if (!fresh && it->second != want) {
              throw GraphError("dimension '" + d.dim_param() + "' is given as both " +
                                   std::to_string(it->second) + " and " + std::to_string(want),
                               At(path), "give one size per symbolic dimension");
            }
          }
        }
      }
      t.mutable_shape()->clear_dim();
      for (int64_t d : shape) t.mutable_shape()->add_dim()->set_dim_value(d);
    }
    // Every occurrence of a bound name, so that stale symbolic value_info
    // written by the exporter cannot keep a dimension unknown.
    auto apply = [&](onnx::ValueInfoProto& v) {
      if (!IsTensor(v) || !v.type().tensor_type().has_shape()) return;
      for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (!d.has_dim_param()) continue;
        if (auto it = bound.find(d.dim_param()); it != bound.end()) d.set_dim_value(it->second);
      }
    };
    if (!bound.empty()) {
      for (auto& v : *graph.mutable_input()) apply(v);
      for (auto& v : *graph.mutable_value_info()) apply(v);
      for (auto& v : *graph.mutable_output()) apply(v);
    }
    for (int i : inputs) {
      const onnx::ValueInfoProto& in = graph.input(i);
      if (!IsTensor(in)) continue;  // sequences and maps: no shape to bind
      const std::string path = "graph.input[" + std::to_string(i) + "]";
      const onnx::TypeProto::Tensor& t = in.type().tensor_type();
      if (!t.has_shape()) {
        throw GraphError(
            "input '" + in.name() + "' has no shape, so no node's FLOPs and bytes can be known", At(path),
            "give it with --input-shape " + in.name() + "=AxBx..., or input_shapes in a suite entry");
      }
      for (int k = 0; k < t.shape().dim_size(); ++k) {
        const auto& d = t.shape().dim(k);
        if (d.has_dim_value() && d.dim_value() >= 0) continue;
        if (d.has_dim_param() && !d.dim_param().empty()) {
          throw GraphError("input '" + in.name() + "' has the symbolic dimension '" + d.dim_param() +
                               "' (dimension " + std::to_string(k) +
                               "), whose size is unknown: FLOPs and bytes that depend on it would be 0",
                           At(path),
                           "bind it with --dim " + d.dim_param() + "=N, or dims: {" + d.dim_param() +
                               ": N} in a suite entry");
        }
        throw GraphError("dimension " + std::to_string(k) + " of input '" + in.name() +
                             "' has no size and no name: FLOPs and bytes that depend on it would be 0",
                         At(path),
                         "give the whole shape with --input-shape " + in.name() +
                             "=AxBx..., or input_shapes: {" + in.name() + ": [A, B, ...]} in a suite entry");
      }
    }
  }

  // One warning line naming the nodes whose output shapes stayed unknown
  // (their FLOPs and bytes count as 0).
  void WarnUnknownShapes(const onnx::GraphProto& graph) const {
    std::vector<std::string> unknown;
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& node = graph.node(i);
      for (const std::string& output : node.output()) {
        const ValueInfo* v = Value(output);
        if (!output.empty() && (v == nullptr || !v->known)) {
          unknown.push_back(node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name());
          break;
        }
      }
    }
    if (unknown.empty()) return;
    const size_t shown = std::min<size_t>(unknown.size(), 3);
    std::string names = Join(std::vector<std::string>(unknown.begin(), unknown.begin() + shown), ", ");
    if (unknown.size() > shown) names += ", ...";
    GOSIM_LOG(Warn) << source_ << ": " << unknown.size() << " of " << graph.node_size()
                    << " ONNX nodes have an output of unknown shape (" << names
                    << "); their FLOPs and output bytes count as 0";
  }

  Location At(const std::string& path) const {
    Location where(source_);
    where.path = path;
    return where;
  }

  int64_t Add(int64_t a, int64_t b, const std::string& path) const {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum))
      throw GraphError("sizes add up to more than 2^63 bytes", At(path));
    return sum;
  }

  ValueInfo MakeValue(int32_t elem_type, bool known, std::vector<int64_t> shape,
                      const std::string& name) const {
    ValueInfo v;
    v.elem_type = elem_type;
    v.known = known;
    if (!known) return v;
    v.shape = std::move(shape);
    int64_t bytes = ElementSize(elem_type);
    for (int64_t d : v.shape) {
      if (__builtin_mul_overflow(bytes, d, &bytes)) {
        throw GraphError("value '" + name + "' has more than 2^63 bytes", At("graph"),
                         "the shapes in the model are corrupt");
      }
    }
    v.bytes = bytes;
    return v;
  }

  void AddValueInfo(const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type()) return;  // sequences and maps: size unknown
    const onnx::TypeProto::Tensor& t = info.type().tensor_type();
    bool known = t.has_shape();
    std::vector<int64_t> shape;
    if (known) {
      for (const auto& d : t.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) {
          known = false;
          break;
        }
        shape.push_back(d.dim_value());
      }
    }
    values_[info.name()] = MakeValue(t.elem_type(), known, std::move(shape), info.name());
  }

  void CollectValues(const onnx::GraphProto& graph) {
    for (const auto& v : graph.input()) AddValueInfo(v);
    for (const auto& v : graph.value_info()) AddValueInfo(v);
    for (const auto& v : graph.output()) AddValueInfo(v);
    for (int i = 0; i < graph.initializer_size(); ++i) {
      const onnx::TensorProto& t = graph.initializer(i);
      std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
      for (int64_t d : dims) {
        if (d < 0) {
          throw GraphError("initializer '" + t.name() + "' has a negative dimension",
                           At("graph.initializer[" + std::to_string(i) + "]"), "the model is corrupt");
        }
      }
      values_[t.name()] = MakeValue(t.data_type(), true, std::move(dims), t.name());
      initializers_.insert(t.name());
    }
    for (const auto& v : graph.input()) graph_inputs_.insert(v.name());
  }

  const ValueInfo* Value(const std::string& name) const {
    if (name.empty()) return nullptr;
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }

  static const onnx::AttributeProto* Attribute(const onnx::NodeProto& node, const std::string& name) {
    for (const auto& a : node.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }

  // The kind of a Conv (op_class.h) from its `group` attribute: dense for
  // one group; depthwise when each group reads one input channel (the
  // weight's dimension 1, or the input's channels / group); grouped
  // otherwise, and when neither shape is known. A group count that is not
  // positive, or that the shapes contradict, is a GraphError.
  ConvKind KindOfConv(const onnx::NodeProto& node, const std::string& path) const {
    const onnx::AttributeProto* attribute = Attribute(node, "group");
    const int64_t groups = attribute == nullptr ? 1 : attribute->i();
    if (groups < 1) {
      throw GraphError("Conv attribute 'group' is " + std::to_string(groups) + "; it must be at least 1",
                       At(path), "fix the model's exporter (ONNX Conv: group >= 1)");
    }
    if (groups == 1) return ConvKind::kDense;
    auto dim1 = [&](int k) -> int64_t {
      const ValueInfo* v = k < node.input_size() ? Value(node.input(k)) : nullptr;
      return v != nullptr && v->known && v->shape.size() >= 2 ? v->shape[1] : 0;
    };
    const int64_t channels = dim1(0);
    const int64_t per_group = dim1(1);
    if (channels > 0 && per_group > 0 && per_group * groups != channels) {
      throw GraphError("Conv input has " + std::to_string(channels) + " channels, but its weight takes " +
                           std::to_string(per_group) + " per group in " + std::to_string(groups) + " groups",
                       At(path), "the weight's dimension 1 times 'group' must equal the input's channels");
    }
    if (per_group == 1 || (per_group == 0 && channels == groups)) return ConvKind::kDepthwise;
    return ConvKind::kGrouped;
  }

  // FLOPs of `node` from the shapes of its inputs and outputs (op_costs.h);
  // 0 when a shape it needs is unknown.
  double Flops(const onnx::NodeProto& node, bool standard_domain) const {
    auto input = [&](int k) -> const ValueInfo* {
      const ValueInfo* v = k < node.input_size() ? Value(node.input(k)) : nullptr;
      return v != nullptr && v->known ? v : nullptr;
    };
    auto output = [&](int k) -> const ValueInfo* {
      const ValueInfo* v = k < node.output_size() ? Value(node.output(k)) : nullptr;
      return v != nullptr && v->known ? v : nullptr;
    };
    auto has_input = [&](int k) { return k < node.input_size() && !node.input(k).empty(); };
    auto elements = [](const ValueInfo* v) { return v == nullptr ? 0.0 : NumElements(v->shape); };
    const ValueInfo* x = input(0);
    const ValueInfo* w = input(1);
    const ValueInfo* y = output(0);
    const OpCostClass cls = standard_domain ? ClassifyOnnxOp(node.op_type()) : OpCostClass::kOther;
    switch (cls) {
      case OpCostClass::kConv: {
        if (y == nullptr || w == nullptr || y->shape.size() < 2 || w->shape.size() < 2) return 0;
        const std::span<const int64_t> ys(y->shape), ws(w->shape);
        return ConvFlops(static_cast<double>(ys[0]), static_cast<double>(ys[1]), NumElements(ys.subspan(2)),
                         static_cast<double>(ws[1]), NumElements(ws.subspan(2)), has_input(2));
      }
      case OpCostClass::kConvTranspose: {
        if (x == nullptr || w == nullptr || x->shape.size() < 2 || w->shape.size() < 2) return 0;
        const std::span<const int64_t> xs(x->shape), ws(w->shape);
        return ConvTransposeFlops(static_cast<double>(xs[0]), static_cast<double>(xs[1]),
                                  NumElements(xs.subspan(2)), static_cast<double>(ws[1]),
                                  NumElements(ws.subspan(2))) +
               (has_input(2) ? ElementwiseFlops(elements(y)) : 0.0);
      }
      case OpCostClass::kGemm: {
        if (x == nullptr || y == nullptr || x->shape.size() != 2 || y->shape.size() != 2) return 0;
        const onnx::AttributeProto* trans_a = Attribute(node, "transA");
        const bool transposed = trans_a != nullptr && trans_a->i() != 0;
        const double k = static_cast<double>(transposed ? x->shape[0] : x->shape[1]);
        return GemmFlops(static_cast<double>(y->shape[0]), k, static_cast<double>(y->shape[1]), has_input(2));
      }
      case OpCostClass::kMatMul: {
        if (x == nullptr || w == nullptr || y == nullptr || x->shape.empty() || w->shape.empty()) return 0;
        const double k = static_cast<double>(x->shape.back());
        const double m = x->shape.size() >= 2 ? static_cast<double>(x->shape[x->shape.size() - 2]) : 1.0;
        const double n = w->shape.size() >= 2 ? static_cast<double>(w->shape.back()) : 1.0;
        if (m * n == 0) return 0;
        return MatMulFlops(elements(y) / (m * n), m, k, n);
      }
      case OpCostClass::kElementwise:
        return ElementwiseFlops(elements(y));
      case OpCostClass::kPool: {
        const onnx::AttributeProto* kernel = Attribute(node, "kernel_shape");
        if (kernel == nullptr) return 0;
        std::vector<int64_t> k(kernel->ints().begin(), kernel->ints().end());
        for (int64_t d : k) {
          if (d < 0) return 0;
        }
        return PoolFlops(elements(y), NumElements(k));
      }
      case OpCostClass::kGlobalPool:
        return GlobalPoolFlops(elements(x));
      case OpCostClass::kReduce:
        return ReduceFlops(elements(x));
      case OpCostClass::kBatchNorm:
        return BatchNormFlops(elements(y));
      case OpCostClass::kLayerNorm:
        return LayerNormFlops(elements(y));
      case OpCostClass::kSoftmax:
        return SoftmaxFlops(elements(y));
      case OpCostClass::kGather:
      case OpCostClass::kDataMovement:
        return 0;
      case OpCostClass::kOther: {
        double total = 0;
        for (int k = 0; k < node.output_size(); ++k) total += ElementwiseFlops(elements(output(k)));
        return total;
      }
    }
    return 0;
  }

  Graph Build(const onnx::GraphProto& graph) {
    const int n = graph.node_size();
    // Producer of every value: (node, output index).
    std::unordered_map<std::string, std::pair<int, int>> producers;
    for (int i = 0; i < n; ++i) {
      const onnx::NodeProto& node = graph.node(i);
      for (int k = 0; k < node.output_size(); ++k) {
        if (node.output(k).empty()) continue;
        const std::string path = "graph.node[" + std::to_string(i) + "].output[" + std::to_string(k) + "]";
        if (!producers.emplace(node.output(k), std::make_pair(i, k)).second) {
          throw GraphError("value '" + node.output(k) + "' is produced by two nodes", At(path),
                           "ONNX graphs assign every value once");
        }
        if (initializers_.count(node.output(k)) || graph_inputs_.count(node.output(k))) {
          throw GraphError(
              "value '" + node.output(k) + "' is both a node output and a graph input or initializer",
              At(path), "ONNX graphs assign every value once");
        }
      }
    }

    GraphBuilder builder(name_.empty() ? (graph.name().empty() ? "onnx" : graph.name()) : name_, source_);
    std::unordered_set<std::string> names;
    std::unordered_set<std::string> owned_initializers;
    for (int i = 0; i < n; ++i) {
      const onnx::NodeProto& node = graph.node(i);
      const std::string path = "graph.node[" + std::to_string(i) + "]";
      const bool standard_domain = node.domain().empty() || node.domain() == "ai.onnx";
      NodeSpec s;
      s.op = standard_domain ? node.op_type() : node.domain() + "::" + node.op_type();
      // A grouped or depthwise Conv carries its kind in its op type, as a
      // calibrated one does ("Conv (depthwise)"): its weight is an
      // initializer, not an input node the cost models could read it from.
      if (standard_domain && node.op_type() == "Conv") {
        s.op += ConvKindSuffix(KindOfConv(node, path));
      }
      s.name = node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name();
      while (names.count(s.name)) s.name += "_" + std::to_string(i);
      names.insert(s.name);
      if (const size_t slash = s.name.rfind('/'); slash != std::string::npos) {
        const size_t begin = s.name[0] == '/' ? 1 : 0;
        if (slash > begin) s.scope = s.name.substr(begin, slash - begin);
      }
      s.where = At(path);
      s.flops = Flops(node, standard_domain);
      for (int k = 0; k < node.output_size(); ++k) {
        const ValueInfo* v = Value(node.output(k));
        TensorInfo t;
        if (v != nullptr) {
          t.bytes = v->bytes;
          t.shape = v->shape;
          t.dtype = ToDType(v->elem_type);
        }
        s.bytes_written = Add(s.bytes_written, t.bytes, path);
        s.outputs.push_back(std::move(t));
      }
      const bool gather = standard_domain && ClassifyOnnxOp(node.op_type()) == OpCostClass::kGather;
      for (int k = 0; k < node.input_size(); ++k) {
        const std::string& input = node.input(k);
        if (input.empty()) continue;  // an omitted optional input
        const std::string input_path = path + ".input[" + std::to_string(k) + "]";
        const ValueInfo* v = Value(input);
        const int64_t bytes = v == nullptr ? 0 : v->bytes;
        // Gather reads the indices and only the rows it gathers (= its output).
        if (!(gather && k == 0)) s.bytes_read = Add(s.bytes_read, bytes, input_path);
        if (initializers_.count(input)) {
          if (owned_initializers.insert(input).second)
            s.persistent_bytes = Add(s.persistent_bytes, bytes, input_path);
        } else if (auto it = producers.find(input); it != producers.end()) {
          edges_.push_back({it->second.first, i, it->second.second, At(input_path)});
        } else if (!graph_inputs_.count(input)) {
          throw GraphError("node '" + s.name + "' reads '" + input +
                               "', which is no graph input, initializer or node output",
                           At(input_path), "the model is incomplete or corrupt");
        }
      }
      if (gather) s.bytes_read = Add(s.bytes_read, s.bytes_written, path);
      builder.AddNode(std::move(s));
    }
    for (const PendingEdge& e : edges_) builder.AddEdge(e.src, e.dst, e.output, e.where);
    return builder.Build();
  }

  struct PendingEdge {
    int src;
    int dst;
    int32_t output;
    Location where;
  };

  const std::string& source_;
  const std::string& name_;
  const OnnxShapes& shapes_;
  std::unordered_map<std::string, ValueInfo> values_;
  std::unordered_set<std::string> initializers_;
  std::unordered_set<std::string> graph_inputs_;
  std::vector<PendingEdge> edges_;
};

}  // namespace

bool OnnxSupported() {
  return true;
}

Graph ReadOnnx(std::string_view bytes, const std::string& source, const std::string& name,
               const OnnxShapes& shapes) {
  return Importer(source, name, shapes).Import(bytes);
}

}  // namespace gosim::graphs

#else  // !GOSIM_HAVE_ONNX

namespace gosim::graphs {

bool OnnxSupported() {
  return false;
}

Graph ReadOnnx(std::string_view, const std::string& source, const std::string&, const OnnxShapes&) {
  throw GraphError("this gosim was built without ONNX support", Location(source),
                   "install libonnx-dev and rebuild gosim");
}

}  // namespace gosim::graphs

#endif  // GOSIM_HAVE_ONNX
