#include "graphs/costgraph_format.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "graphs/cost_graph.pb.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs {
namespace {

namespace pb = google::protobuf;
using tfproto::CostGraphDef;
using CostNode = tfproto::CostGraphDef::Node;

constexpr double kSecondsPerMicrosecond = 1e-6;
constexpr char kHint[] = "see docs/FORMATS.md, 'Graph: TensorFlow CostGraphDef text protobuf'";

// Keeps the first error the text parser reports (0-based line and column).
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }

  bool has_error() const { return has_error_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

// The type and field of protobuf's `Message type "T" has no field named "f".`
struct UnknownField {
  std::string type;
  std::string field;
};

std::optional<UnknownField> ParseUnknownField(const std::string& message) {
  const std::string type_marker = "Message type \"";
  const std::string field_marker = "has no field named \"";
  const size_t t = message.find(type_marker);
  const size_t f = message.find(field_marker);
  if (t == std::string::npos || f == std::string::npos) return std::nullopt;
  const size_t t_begin = t + type_marker.size();
  const size_t f_begin = f + field_marker.size();
  return UnknownField{message.substr(t_begin, message.find('"', t_begin) - t_begin),
                      message.substr(f_begin, message.find('"', f_begin) - f_begin)};
}

// " Did you mean 'x'?" among the fields of the message type.
std::string FieldSuggestion(const UnknownField& unknown) {
  const pb::Descriptor* descriptor =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName(unknown.type);
  if (descriptor == nullptr) return {};
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->field_count(); ++i) names.push_back(descriptor->field(i)->name());
  return DidYouMean(unknown.field, names);
}

// Protobuf reports an unknown field at the token after its name; this moves
// the 0-based `column` of 0-based `line` back to the start of the name.
int FieldColumn(std::string_view text, int line, int column, const std::string& field) {
  size_t start = 0;
  for (int l = 0; l < line && start != std::string_view::npos; ++l) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || field.empty()) return column;
  const std::string_view before = text.substr(start, static_cast<size_t>(std::max(column, 0)));
  const size_t at = before.rfind(field);
  return at == std::string_view::npos ? column : static_cast<int>(at);
}

// True when the first token of the text (after spaces and # comments) is
// `cost_graph`, i.e. the file holds a RunMetadata-style wrapper.
bool StartsWithCostGraphField(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  std::string_view rest = text.substr(i);
  if (!StartsWith(rest, "cost_graph")) return false;
  return rest.size() == 10 || !(std::isalnum(static_cast<unsigned char>(rest[10])) || rest[10] == '_');
}

DType FromTfDataType(int dtype) {
  if (dtype > 100) dtype -= 100;  // reference types (DT_FLOAT_REF, ...) hold the same values
  switch (dtype) {
    case tfproto::DT_FLOAT:
      return DType::kFloat32;
    case tfproto::DT_DOUBLE:
      return DType::kFloat64;
    case tfproto::DT_INT32:
      return DType::kInt32;
    case tfproto::DT_UINT8:
      return DType::kUInt8;
    case tfproto::DT_INT16:
      return DType::kInt16;
    case tfproto::DT_INT8:
      return DType::kInt8;
    case tfproto::DT_INT64:
      return DType::kInt64;
    case tfproto::DT_BOOL:
      return DType::kBool;
    case tfproto::DT_BFLOAT16:
      return DType::kBFloat16;
    case tfproto::DT_HALF:
      return DType::kFloat16;
    default:
      return DType::kUnknown;
  }
}

class Converter {
 public:
  Converter(const std::string& source, const std::string& name) : source_(source), name_(name) {}

  Graph Convert(std::string_view text) {
    const bool wrapped = StartsWithCostGraphField(text);
    tfproto::RunMetadataCostGraph wrapper;
    CostGraphDef plain;
    pb::TextFormat::ParseInfoTree root_tree;
    Parse(text, wrapped ? static_cast<pb::Message*>(&wrapper) : &plain, &root_tree);
    const CostGraphDef& def = wrapped ? wrapper.cost_graph() : plain;
    tree_ = &root_tree;
    if (wrapped) {
      const pb::TextFormat::ParseInfoTree* nested =
          root_tree.GetTreeForNested(wrapper.GetDescriptor()->FindFieldByName("cost_graph"), -1);
      if (nested != nullptr) tree_ = nested;
    }
    return Build(def);
  }

 private:
  void Parse(std::string_view text, pb::Message* message, pb::TextFormat::ParseInfoTree* tree) const {
    FirstErrorCollector errors;
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.WriteLocationsTo(tree);
    if (parser.ParseFromString(std::string(text), message)) return;
    Location where(source_);
    if (errors.has_error()) {
      int column = errors.column();
      std::string suggestion;
      if (const std::optional<UnknownField> unknown = ParseUnknownField(errors.message())) {
        column = FieldColumn(text, errors.line(), column, unknown->field);
        suggestion = FieldSuggestion(*unknown);
      }
      where.line = errors.line() + 1;
      where.column = column + 1;
      throw GraphError("invalid CostGraphDef text: " + errors.message() + suggestion, where, kHint);
    }
    throw GraphError("invalid CostGraphDef text", where, kHint);
  }

  // Location of field `field_name` (index `index`) of node `node`, or of the
  // node itself when `field_name` is null.
  Location At(int node, const char* field_name = nullptr, int index = -1) const {
    Location where(source_);
    where.path = "node[" + std::to_string(node) + "]";
    static const pb::FieldDescriptor* node_field = CostGraphDef::descriptor()->FindFieldByName("node");
    pb::TextFormat::ParseLocation location = tree_->GetLocation(node_field, node);
    if (field_name != nullptr) {
      where.path += std::string(".") + field_name;
      if (index >= 0) where.path += "[" + std::to_string(index) + "]";
      const pb::TextFormat::ParseInfoTree* node_tree = tree_->GetTreeForNested(node_field, node);
      const pb::FieldDescriptor* field = CostNode::descriptor()->FindFieldByName(field_name);
      if (node_tree != nullptr && field != nullptr) {
        const auto field_location = node_tree->GetLocation(field, field->is_repeated() ? index : -1);
        if (field_location.line >= 0) location = field_location;
      }
    }
    if (location.line >= 0) {
      where.line = location.line + 1;
      where.column = location.column + 1;
    }
    return where;
  }

  [[noreturn]] void Fail(const Location& where, const std::string& message,
                         const std::string& hint = kHint) const {
    throw GraphError(message, where, hint);
  }

  int64_t Add(int64_t a, int64_t b, const Location& where) const {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) Fail(where, "sizes add up to more than 2^63 bytes");
    return sum;
  }

  // Unique names: the first holder of a name keeps it; later ones (and empty
  // names) get the node id appended.
  std::vector<std::string> UniqueNames(const CostGraphDef& def) const {
    std::unordered_set<std::string> original;
    for (const CostNode& n : def.node()) original.insert(n.name());
    std::unordered_set<std::string> taken;
    std::vector<std::string> names;
    names.reserve(static_cast<size_t>(def.node_size()));
    for (const CostNode& n : def.node()) {
      std::string name = n.name();
      if (name.empty() || taken.count(name)) {
        const std::string base = (name.empty() ? std::string("node") : name) + "_" + std::to_string(n.id());
        name = base;
        for (int k = 2; taken.count(name) || original.count(name); ++k) name = base + "_" + std::to_string(k);
      }
      taken.insert(name);
      names.push_back(std::move(name));
    }
    return names;
  }

  Graph Build(const CostGraphDef& def) {
    const int n = def.node_size();
    std::unordered_map<int32_t, int> by_id;
    by_id.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto [it, inserted] = by_id.emplace(def.node(i).id(), i);
      if (!inserted) {
        Fail(At(i, "id"),
             "node '" + def.node(i).name() + "' has id " + std::to_string(def.node(i).id()) +
                 ", which node '" + def.node(it->second).name() + "' already has",
             "node ids must be unique; inputs refer to nodes by id");
      }
    }
    const std::vector<std::string> names = UniqueNames(def);

    GraphBuilder builder(name_.empty() ? "costgraph" : name_, source_);
    std::vector<NodeSpec> specs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const CostNode& c = def.node(i);
      NodeSpec& s = specs[static_cast<size_t>(i)];
      s.name = names[static_cast<size_t>(i)];
      s.op = (c.name() == "_SOURCE" || c.name() == "_SINK") ? "NoOp" : "CostGraphNode";
      s.where = At(i);
      for (int k = 0; k < c.output_info_size(); ++k) {
        const CostNode::OutputInfo& o = c.output_info(k);
        if (o.size() < 0) Fail(At(i, "output_info", k), "output size is " + std::to_string(o.size()));
        TensorInfo t;
        t.bytes = o.size();
        t.dtype = FromTfDataType(o.dtype());
        if (o.has_shape() && !o.shape().unknown_rank()) {
          bool known = true;
          for (const auto& d : o.shape().dim()) known = known && d.size() >= 0;
          if (known) {
            for (const auto& d : o.shape().dim()) t.shape.push_back(d.size());
          }
        }
        s.bytes_written = Add(s.bytes_written, t.bytes, At(i, "output_info", k));
        s.outputs.push_back(std::move(t));
      }
      if (c.persistent_memory_size() < 0) {
        Fail(At(i, "persistent_memory_size"),
             "persistent_memory_size is " + std::to_string(c.persistent_memory_size()));
      }
      s.persistent_bytes = c.persistent_memory_size();
      if (c.compute_cost() < 0)
        Fail(At(i, "compute_cost"), "compute_cost is " + std::to_string(c.compute_cost()));
      s.measured.push_back(
          MeasuredTime{"any", static_cast<double>(c.compute_cost()) * kSecondsPerMicrosecond});
    }

    for (int i = 0; i < n; ++i) {
      const CostNode& c = def.node(i);
      NodeSpec& s = specs[static_cast<size_t>(i)];
      for (int k = 0; k < c.input_info_size(); ++k) {
        const CostNode::InputInfo& in = c.input_info(k);
        const Location where = At(i, "input_info", k);
        const int src = Producer(by_id, in.preceding_node(), s.name, where);
        const std::vector<TensorInfo>& outputs = specs[static_cast<size_t>(src)].outputs;
        if (in.preceding_port() < 0 || in.preceding_port() >= static_cast<int>(outputs.size())) {
          Fail(where,
               "node '" + s.name + "' reads output " + std::to_string(in.preceding_port()) + " of '" +
                   specs[static_cast<size_t>(src)].name + "' (id " + std::to_string(in.preceding_node()) +
                   "), which has " + std::to_string(outputs.size()) + " output_info entr" +
                   (outputs.size() == 1 ? "y" : "ies"),
               "preceding_port must name an existing output_info of the preceding node");
        }
        s.bytes_read = Add(s.bytes_read, outputs[static_cast<size_t>(in.preceding_port())].bytes, where);
        edges_.push_back({src, i, in.preceding_port(), where});
      }
      for (int k = 0; k < c.control_input_size(); ++k) {
        const Location where = At(i, "control_input", k);
        edges_.push_back({Producer(by_id, c.control_input(k), s.name, where), i, Edge::kControl, where});
      }
    }

    for (NodeSpec& s : specs) builder.AddNode(std::move(s));
    for (const PendingEdge& e : edges_) builder.AddEdge(e.src, e.dst, e.output, e.where);
    return builder.Build();
  }

  int Producer(const std::unordered_map<int32_t, int>& by_id, int32_t id, const std::string& consumer,
               const Location& where) const {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      Fail(where,
           "dangling reference: node '" + consumer + "' has an input from node id " + std::to_string(id) +
               ", which no node has",
           "every preceding_node and control_input must be the id of a node in the file");
    }
    return it->second;
  }

  struct PendingEdge {
    int src;
    int dst;
    int32_t output;
    Location where;
  };

  const std::string& source_;
  const std::string& name_;
  const pb::TextFormat::ParseInfoTree* tree_ = nullptr;
  std::vector<PendingEdge> edges_;
};

}  // namespace

Graph ReadCostGraphText(std::string_view text, const std::string& source, const std::string& name) {
  return Converter(source, name).Convert(text);
}

}  // namespace gosim::graphs
