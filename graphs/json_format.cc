#include "graphs/json_format.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kFormatName = "gosim.graph";
constexpr int64_t kVersion = 1;
constexpr int kMaxDepth = 64;

const std::vector<std::string> kTopKeys{"format", "version", "name", "metadata", "nodes"};
const std::vector<std::string> kNodeKeys{
    "name",       "op",    "flops", "bytes_read", "bytes_written", "outputs", "persistent_bytes",
    "colocation", "scope", "phase", "measured",   "inputs"};
const std::vector<std::string> kOutputKeys{"bytes", "shape", "dtype", "alias"};
const std::vector<std::string> kPhaseNames{"forward", "backward", "update"};

// TrackingIterator (core/json_text.h) tells how far nlohmann's lexer has
// read, so that the parse can tell where each node object starts.

// nlohmann's DOM builder plus what the reader needs from the parse: a depth
// limit and where each entry of the top-level "nodes" array starts. (The
// callback parser that could do the same is quadratic in the length of an
// array: after each element it scans the whole array for discarded values,
// which was most of the time of loading a 92.8k-node graph.)
class TrackingDomBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  // `on_depth_exceeded` and `on_duplicate` (a key repeated in one object)
  // throw; `offsets` receives the node start offsets.
  TrackingDomBuilder(Json& result, const char* const* read_up_to, const char* text_begin,
                     std::function<void()> on_depth_exceeded,
                     std::function<void(const std::string&)> on_duplicate, std::vector<size_t>* offsets)
      : dom_(result, /*allow_exceptions_=*/true),
        read_up_to_(read_up_to),
        text_begin_(text_begin),
        on_depth_exceeded_(std::move(on_depth_exceeded)),
        on_duplicate_(std::move(on_duplicate)),
        offsets_(offsets) {}

  bool null() { return Value() && dom_.null(); }
  bool boolean(bool v) { return Value() && dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return Value() && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return Value() && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& text) { return Value() && dom_.number_float(v, text); }
  bool string(string_t& v) { return Value() && dom_.string(v); }
  bool binary(binary_t& v) { return Value() && dom_.binary(v); }
  bool start_object(std::size_t n) {
    keys_.Open();
    return Open() && dom_.start_object(n);
  }
  bool end_object() {
    --open_;
    keys_.Close();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return Open() && dom_.start_array(n); }
  bool end_array() {
    --open_;
    return dom_.end_array();
  }
  bool key(string_t& k) {
    if (!keys_.Add(k)) on_duplicate_(k);
    if (open_ == 1) in_nodes_ = k == "nodes";
    return dom_.key(k);
  }
  // A template, so that the parse_error nlohmann throws keeps its type.
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);
  }

 private:
  // A value or a container starts at nesting depth `open_`.
  bool Value() {
    if (open_ > kMaxDepth) on_depth_exceeded_();                 // nlohmann copies values recursively
    if (open_ == 2 && in_nodes_) offsets_->push_back(Offset());  // for a number or string: where it ends
    return true;
  }
  bool Open() {
    Value();
    ++open_;
    return true;
  }
  size_t Offset() const { return static_cast<size_t>(*read_up_to_ - text_begin_) - 1; }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const char* const* read_up_to_;
  const char* text_begin_;
  std::function<void()> on_depth_exceeded_;
  std::function<void(const std::string&)> on_duplicate_;
  JsonKeyTracker keys_;
  std::vector<size_t>* offsets_;
  int open_ = 0;  // containers open around the current event
  bool in_nodes_ = false;
};

// nlohmann's message without its "[json.exception...] parse error at line L,
// column C: " prefix (the location is reported separately).
std::string ParseErrorMessage(const std::string& what) {
  const size_t column = what.find("column");
  const size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

bool IsAllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// `text` cut to 40 characters, with anything but printable ASCII as '?', so
// that a foreign file's keys cannot break the one-line error.
std::string Quoted(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 40) out += "...";
  return "'" + out + "'";
}

// What a JSON document that is not a gosim graph looks like, with how to use
// it instead; "" when it is not recognized.
std::string LooksLike(const Json& root) {
  if (root.is_array()) {
    if (!root.empty() && root[0].is_object() && root[0].contains("ph")) {
      return "a Chrome / profiler trace (an array of events); give traces to gosim calibrate --trace";
    }
    return "";
  }
  if (!root.is_object()) return "";
  auto has = [&root](const char* key) { return root.contains(key); };
  if (has("traceEvents")) {
    return "a Chrome / PyTorch-profiler trace (traceEvents); give traces to gosim calibrate --trace";
  }
  if (has("format") && root["format"] == "gosim.decision") {
    return "a gosim decision; give it with --decision";
  }
  if (has("fpgas") && has("cpus")) {
    return "msr-fiddle's device split (fpgas, cpus); give it with --decision, beside its graph";
  }
  if (has("ir_version") || has("opset_import"))
    return "an ONNX model written as JSON; give the binary .onnx file";
  if (has("node") && root["node"].is_array()) {
    return "a TensorFlow GraphDef as JSON; give a CostGraphDef .pbtxt, or export with python3 -m gosim.torch";
  }
  if (has("class_name") && has("config"))
    return "a Keras model config; export the model with python3 -m gosim.torch";
  if (has("architectures") || has("model_type")) {
    return "a Hugging Face model config; export the model with python3 -m gosim.torch or to ONNX";
  }
  if (has("nodes") && (has("links") || has("edges")) && !has("format")) {
    return "a node-link graph (NetworkX style); convert it to gosim's graph JSON (docs/FORMATS.md)";
  }
  return "";
}

// msr-fiddle's problem files are recognised by their machine keys.
bool IsMsr(const Json& root) {
  return root.is_object() && !root.contains("format") &&
         (root.contains("maxSizePerFPGA") || root.contains("maxFPGAs") || root.contains("maxCPUs"));
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  MsrProblem ReadMsrRoot() {
    const Json root = Parse();
    if (!IsMsr(root)) {
      Fail("", -1, "not an msr-fiddle problem: no maxSizePerFPGA, maxFPGAs or maxCPUs",
           "docs/FORMATS.md, 'msr-fiddle workloads'");
    }
    return ReadMsr(root);
  }

  Graph Read() {
    const Json root = Parse();
    if (!root.is_object()) {
      const std::string looks_like = LooksLike(root);
      if (!looks_like.empty()) Fail("", -1, "not a gosim graph (looks like " + looks_like + ")");
      Fail("", -1, "a graph file must be a JSON object, not " + std::string(root.type_name()),
           "see docs/FORMATS.md, 'Graph: native JSON'");
    }
    if (IsMsr(root)) return ReadMsr(root).graph;
    // Another program's JSON: say what it looks like, not which key is unknown.
    const auto format_it = root.find("format");
    if (format_it == root.end() || *format_it != kFormatName) {
      const std::string looks_like = LooksLike(root);
      if (!looks_like.empty()) Fail("", -1, "not a gosim graph (looks like " + looks_like + ")");
      if (format_it == root.end()) {
        std::vector<std::string> keys;
        for (const auto& [key, value] : root.items()) {
          if (keys.size() == 6) {
            keys.push_back("...");
            break;
          }
          keys.push_back(Quoted(key));
        }
        Fail("", -1,
             "not a gosim graph: no \"format\": \"gosim.graph\" (top-level keys: " + Join(keys, ", ") + ")",
             "see docs/FORMATS.md, 'Graph: native JSON'");
      }
      const std::string format =
          format_it->is_string() ? Quoted(format_it->get<std::string>()) : format_it->dump();
      Fail("format", -1, "not a gosim graph: unknown format " + format,
           "a gosim graph has \"format\": \"gosim.graph\"");
    }
    CheckKeys(root, kTopKeys, "", -1);
    const Json& version = Require(root, "version", "", -1);
    if (!version.is_number_integer() || version.get<int64_t>() != kVersion) {
      Fail("version", -1, "unsupported version " + version.dump(),
           "this gosim reads version " + std::to_string(kVersion));
    }
    const std::string& name = GetString(Require(root, "name", "", -1), "name", -1);
    const Json& nodes = Require(root, "nodes", "", -1);
    if (!nodes.is_array())
      Fail("nodes", -1, "must be an array of nodes, not " + std::string(nodes.type_name()));
    ComputeNodeLines(nodes.size());

    GraphBuilder builder(name, source_);
    for (size_t i = 0; i < nodes.size(); ++i) ReadNode(nodes[i], static_cast<int>(i), builder);
    return builder.Build();
  }

 private:
  Json Parse() {
    const char* read_up_to = text_.data();
    Json result;
    auto too_deep = [&] {
      throw GraphError("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels",
                       TextLocation(text_, static_cast<size_t>(read_up_to - text_.data()) - 1, source_),
                       "a graph file nests objects and arrays only a few levels deep");
    };
    auto duplicate = [&](const std::string& key) {
      throw GraphError(
          DuplicateKeyMessage(key),
          TextLocation(text_, KeyStart(text_, static_cast<size_t>(read_up_to - text_.data())), source_),
          "remove one of the two: a JSON reader would silently keep only one value");
    };
    TrackingDomBuilder builder(result, &read_up_to, text_.data(), too_deep, duplicate, &node_offsets_);
    try {
      Json::sax_parse(TrackingIterator(text_.data(), &read_up_to),
                      TrackingIterator(text_.data() + text_.size(), &read_up_to), &builder);
    } catch (const Json::parse_error& e) {
      const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
      throw GraphError("invalid JSON: " + ParseErrorMessage(e.what()), TextLocation(text_, offset, source_),
                       "fix the JSON syntax (a truncated file ends early)");
    } catch (const Json::exception& e) {
      // out_of_range.406, a number beyond a double (1e400): the lexer has just read it.
      const size_t at = NumberStart(text_, static_cast<size_t>(read_up_to - text_.data()));
      throw GraphError(JsonErrorText(e.what()), TextLocation(text_, at, source_),
                       "numbers must fit a 64-bit double (magnitude below 1.8e308)");
    }
    return result;
  }

  // Converts the node start offsets to lines and columns in one pass.
  void ComputeNodeLines(size_t num_nodes) {
    if (node_offsets_.size() != num_nodes) node_offsets_.clear();  // unexpected: report no lines then
    node_lines_.resize(node_offsets_.size());
    int line = 1;
    size_t line_start = 0;
    size_t pos = 0;
    for (size_t k = 0; k < node_offsets_.size(); ++k) {
      const size_t target = std::min(node_offsets_[k], text_.size());
      for (; pos < target; ++pos) {
        if (text_[pos] == '\n') {
          ++line;
          line_start = pos + 1;
        }
      }
      node_lines_[k] = {line, static_cast<int>(target - line_start) + 1};
    }
  }

  // Location of JSON path `path`; `node` >= 0 adds the line where that node starts.
  Location At(const std::string& path, int node) const {
    Location where(source_);
    if (node >= 0 && static_cast<size_t>(node) < node_lines_.size()) {
      where.line = node_lines_[static_cast<size_t>(node)].first;
      where.column = node_lines_[static_cast<size_t>(node)].second;
    }
    where.path = path;
    return where;
  }

  [[noreturn]] void Fail(const std::string& path, int node, const std::string& message,
                         const std::string& hint = {}) const {
    throw GraphError(message, At(path, node), hint);
  }

  static std::string Child(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string Element(const std::string& path, size_t index) {
    return path + "[" + std::to_string(index) + "]";
  }

  void CheckKeys(const Json& object, const std::vector<std::string>& allowed, const std::string& path,
                 int node) const {
    for (const auto& [key, value] : object.items()) {
      bool known = false;
      for (const std::string& a : allowed) known = known || key == a;
      if (!known) {
        Fail(Child(path, key), node, "unknown key '" + key + "'." + DidYouMean(key, allowed),
             "valid keys here: " + Join(allowed, ", "));
      }
    }
  }

  const Json& Require(const Json& object, const std::string& key, const std::string& path, int node) const {
    auto it = object.find(key);
    if (it == object.end()) Fail(path, node, "missing required key '" + key + "'");
    return *it;
  }

  const std::string& GetString(const Json& v, const std::string& path, int node) const {
    if (!v.is_string()) Fail(path, node, "must be a string, not " + std::string(v.type_name()));
    return v.get_ref<const std::string&>();
  }

  // A non-negative integer (an integral floating-point value is accepted).
  int64_t GetSize(const Json& v, const std::string& path, int node) const {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        Fail(path, node, "value is too large");
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if (x < 0) Fail(path, node, "must be >= 0, got " + std::to_string(x));
      return x;
    }
    if (v.is_number_float()) {
      const double x = v.get<double>();
      if (x < 0) Fail(path, node, "must be >= 0, got " + v.dump());
      if (x != std::floor(x) || x >= 9.2e18) Fail(path, node, "must be an integer, got " + v.dump());
      return static_cast<int64_t>(x);
    }
    Fail(path, node, "must be a non-negative integer, not " + std::string(v.type_name()));
  }

  double GetNonNegative(const Json& v, const std::string& path, int node) const {
    if (!v.is_number()) Fail(path, node, "must be a number, not " + std::string(v.type_name()));
    const double x = v.get<double>();
    if (!(x >= 0)) Fail(path, node, "must be >= 0, got " + v.dump());
    return x;
  }

  TensorInfo ReadOutput(const Json& j, const std::string& path, int node) const {
    if (!j.is_object()) Fail(path, node, "an output must be an object, not " + std::string(j.type_name()));
    CheckKeys(j, kOutputKeys, path, node);
    TensorInfo t;
    if (auto it = j.find("bytes"); it != j.end()) t.bytes = GetSize(*it, Child(path, "bytes"), node);
    if (auto it = j.find("shape"); it != j.end()) {
      const std::string shape_path = Child(path, "shape");
      if (!it->is_array()) Fail(shape_path, node, "must be an array of dimensions");
      for (size_t d = 0; d < it->size(); ++d)
        t.shape.push_back(GetSize((*it)[d], Element(shape_path, d), node));
    }
    if (auto it = j.find("dtype"); it != j.end()) {
      const std::string& text = GetString(*it, Child(path, "dtype"), node);
      t.dtype = ParseDType(text);
      if (t.dtype == DType::kUnknown && text != DTypeName(DType::kUnknown)) {
        std::vector<std::string> names;
        for (int k = 0; k <= static_cast<int>(kLastDType); ++k) {
          names.emplace_back(DTypeName(static_cast<DType>(k)));
        }
        Fail(Child(path, "dtype"), node, "unknown dtype '" + text + "'." + DidYouMean(text, names),
             "valid dtypes: " + Join(names, ", "));
      }
    }
    if (auto it = j.find("alias"); it != j.end()) {
      if (!it->is_boolean()) Fail(Child(path, "alias"), node, "must be true or false, not " + it->dump());
      t.alias = it->get<bool>();
    }
    return t;
  }

  // --- msr-fiddle's problems (docs/FORMATS.md, "msr-fiddle workloads") ---

  // A 0/1 integer or a boolean (their README allows both).
  bool GetFlag(const Json& v, const std::string& path, int node) const {
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() || v.is_number_unsigned()) {
      const int64_t x = v.get<int64_t>();
      if (x == 0 || x == 1) return x == 1;
    }
    Fail(path, node, "must be 0, 1, true or false, not " + v.dump());
  }

  int64_t GetId(const Json& v, const std::string& path, int node) const {
    if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
    if (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()) &&
        std::abs(v.get<double>()) < 9e15)
      return static_cast<int64_t>(v.get<double>());
    Fail(path, node, "must be an integer id, not " + v.dump());
  }

  MsrProblem ReadMsr(const Json& root) {
    const std::string hint = "docs/FORMATS.md, 'msr-fiddle workloads'";
    MsrProblem problem;
    problem.accelerator_memory =
        GetNonNegative(Require(root, "maxSizePerFPGA", "", -1), "maxSizePerFPGA", -1);
    const int64_t accelerators = GetSize(Require(root, "maxFPGAs", "", -1), "maxFPGAs", -1);
    const int64_t cpus = GetSize(Require(root, "maxCPUs", "", -1), "maxCPUs", -1);
    if (accelerators > 1024 || cpus > 1024) Fail("maxFPGAs", -1, "more than 1024 devices", hint);
    if (accelerators + cpus == 0)
      Fail("maxFPGAs", -1, "the machine has no device (maxFPGAs and maxCPUs are 0)", hint);
    if (accelerators > 0 && !(problem.accelerator_memory > 0))
      Fail("maxSizePerFPGA", -1, "must be > 0 when there are accelerators", hint);
    problem.accelerators = static_cast<int32_t>(accelerators);
    problem.cpus = static_cast<int32_t>(cpus);
    const Json& nodes = Require(root, "nodes", "", -1);
    if (!nodes.is_array() || nodes.empty()) Fail("nodes", -1, "must be a non-empty array of nodes", hint);
    const Json& edges = Require(root, "edges", "", -1);
    if (!edges.is_array()) Fail("edges", -1, "must be an array of edges", hint);
    ComputeNodeLines(nodes.size());

    // Nodes: ids, then the edges' costs (each source's output), then the graph.
    std::vector<NodeSpec> specs(nodes.size());
    std::unordered_map<int64_t, size_t> index;  // msr id -> position in `nodes`
    std::vector<int64_t> id_of(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int n = static_cast<int>(i);
      const std::string path = Element("nodes", i);
      const Json& j = nodes[i];
      if (!j.is_object()) Fail(path, n, "a node must be an object, not " + std::string(j.type_name()), hint);
      const int64_t id = GetId(Require(j, "id", path, n), Child(path, "id"), n);
      if (!index.emplace(id, i).second)
        Fail(Child(path, "id"), n, "node id " + std::to_string(id) + " repeats", hint);
      id_of[i] = id;
      NodeSpec& s = specs[i];
      s.where = At(path, n);
      s.name = "node" + std::to_string(id);
      if (auto it = j.find("name"); it != j.end()) s.name = GetString(*it, Child(path, "name"), n);
      s.op = "msr";
      if (!GetFlag(Require(j, "supportedOnFpga", path, n), Child(path, "supportedOnFpga"), n) &&
          accelerators > 0) {
        Fail(Child(path, "supportedOnFpga"), n,
             "node " + std::to_string(id) +
                 " cannot run on an accelerator, and gosim has no per-node device "
                 "restriction",
             "gosim reads problems whose nodes all run on accelerators (every layer graph of msr-fiddle "
             "does)");
      }
      const double cpu = GetNonNegative(Require(j, "cpuLatency", path, n), Child(path, "cpuLatency"), n);
      const double accel = GetNonNegative(Require(j, "fpgaLatency", path, n), Child(path, "fpgaLatency"), n);
      s.measured = {MeasuredTime{"any", accel * 1e-3}, MeasuredTime{"cpu", cpu * 1e-3}};
      if (GetFlag(Require(j, "isBackwardNode", path, n), Child(path, "isBackwardNode"), n))
        s.phase = Phase::kBackward;
      if (auto it = j.find("colorClass"); it != j.end())
        s.colocation = "color" + std::to_string(GetId(*it, Child(path, "colorClass"), n));
      if (auto it = j.find("size"); it != j.end()) {
        const double size = GetNonNegative(*it, Child(path, "size"), n);
        if (size >= 9.2e18) Fail(Child(path, "size"), n, "is too large", hint);
        s.persistent_bytes = static_cast<int64_t>(std::llround(size));
      }
    }
    std::vector<double> cost(nodes.size(), -1.0);  // ms per source; -1 = no outgoing edge
    std::vector<std::pair<size_t, size_t>> pairs;
    pairs.reserve(edges.size());
    for (size_t k = 0; k < edges.size(); ++k) {
      const std::string path = Element("edges", k);
      const Json& e = edges[k];
      if (!e.is_object())
        Fail(path, -1, "an edge must be an object, not " + std::string(e.type_name()), hint);
      size_t ends[2];
      const char* keys[2] = {"sourceId", "destId"};
      for (int side = 0; side < 2; ++side) {
        const int64_t id = GetId(Require(e, keys[side], path, -1), Child(path, keys[side]), -1);
        const auto it = index.find(id);
        if (it == index.end())
          Fail(Child(path, keys[side]), -1, "no node has id " + std::to_string(id),
               "every edge joins two nodes' ids");
        ends[side] = it->second;
      }
      if (ends[0] == ends[1])
        Fail(path, -1, "edge from node " + std::to_string(id_of[ends[0]]) + " to itself",
             "remove the self-loop");
      const double c = GetNonNegative(Require(e, "cost", path, -1), Child(path, "cost"), -1);
      double& known = cost[ends[0]];
      if (known >= 0.0 && std::abs(known - c) > 1e-6 * std::max(1.0, known)) {
        char text[160];
        std::snprintf(text, sizeof(text),
                      "node %lld's edges disagree on the cost of its output (%g and %g ms)",
                      static_cast<long long>(id_of[ends[0]]), known, c);
        Fail(Child(path, "cost"), -1, text, "give every edge of one source the same cost");
      }
      known = c;
      pairs.emplace_back(ends[0], ends[1]);
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      if (cost[i] < 0.0) continue;
      const double bytes = cost[i] * 1e-3 * kMsrTransferBandwidth;
      specs[i].outputs.push_back(TensorInfo{static_cast<int64_t>(std::llround(bytes)), {}, DType::kUnknown});
    }
    std::string name = source_;
    if (const size_t slash = name.find_last_of('/'); slash != std::string::npos)
      name = name.substr(slash + 1);
    if (const size_t dot = name.find('.'); dot != std::string::npos && dot > 0) name = name.substr(0, dot);
    GraphBuilder builder(name.empty() ? "msr" : name, source_);
    std::vector<std::string> names;
    names.reserve(specs.size());
    for (NodeSpec& s : specs) {
      names.push_back(s.name);
      builder.AddNode(std::move(s));
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    for (const auto& [src, dst] : pairs)
      builder.AddEdge(static_cast<int32_t>(src), static_cast<int32_t>(dst), 0);
    problem.graph = builder.Build();
    for (size_t i = 0; i < names.size(); ++i)
      problem.ids.emplace_back(id_of[i], *problem.graph.FindNode(names[i]));
    std::sort(problem.ids.begin(), problem.ids.end());
    return problem;
  }

  void ReadNode(const Json& j, int index, GraphBuilder& builder) const {
    const std::string path = Element("nodes", static_cast<size_t>(index));
    if (!j.is_object()) Fail(path, index, "a node must be an object, not " + std::string(j.type_name()));
    CheckKeys(j, kNodeKeys, path, index);
    NodeSpec s;
    s.where = At(path, index);
    s.name = GetString(Require(j, "name", path, index), Child(path, "name"), index);
    s.op = GetString(Require(j, "op", path, index), Child(path, "op"), index);
    if (auto it = j.find("flops"); it != j.end()) s.flops = GetNonNegative(*it, Child(path, "flops"), index);
    if (auto it = j.find("bytes_read"); it != j.end()) {
      s.bytes_read = GetSize(*it, Child(path, "bytes_read"), index);
    }
    if (auto it = j.find("bytes_written"); it != j.end()) {
      s.bytes_written = GetSize(*it, Child(path, "bytes_written"), index);
    }
    if (auto it = j.find("persistent_bytes"); it != j.end()) {
      s.persistent_bytes = GetSize(*it, Child(path, "persistent_bytes"), index);
    }
    if (auto it = j.find("outputs"); it != j.end()) {
      const std::string outputs_path = Child(path, "outputs");
      if (!it->is_array()) Fail(outputs_path, index, "must be an array of outputs");
      for (size_t k = 0; k < it->size(); ++k)
        s.outputs.push_back(ReadOutput((*it)[k], Element(outputs_path, k), index));
    }
    if (auto it = j.find("colocation"); it != j.end())
      s.colocation = GetString(*it, Child(path, "colocation"), index);
    if (auto it = j.find("scope"); it != j.end()) s.scope = GetString(*it, Child(path, "scope"), index);
    if (auto it = j.find("phase"); it != j.end()) {
      const std::string& text = GetString(*it, Child(path, "phase"), index);
      if (!ParsePhase(text, &s.phase)) {
        Fail(Child(path, "phase"), index, "unknown phase '" + text + "'." + DidYouMean(text, kPhaseNames),
             "phase is one of forward, backward, update");
      }
    }
    if (auto it = j.find("measured"); it != j.end()) {
      const std::string measured_path = Child(path, "measured");
      if (!it->is_object()) Fail(measured_path, index, "must be an object mapping device kind to seconds");
      for (const auto& [kind, seconds] : it->items()) {
        if (kind.empty()) Fail(measured_path, index, "a measured time has an empty device kind");
        s.measured.push_back(MeasuredTime{kind, GetNonNegative(seconds, Child(measured_path, kind), index)});
      }
    }
    const std::string node_name = s.name;
    builder.AddNode(std::move(s));

    auto it = j.find("inputs");
    if (it == j.end()) return;
    const std::string inputs_path = Child(path, "inputs");
    if (!it->is_array()) Fail(inputs_path, index, "must be an array of \"producer:output\" strings");
    for (size_t k = 0; k < it->size(); ++k) {
      const std::string input_path = Element(inputs_path, k);
      const std::string& ref = GetString((*it)[k], input_path, index);
      Location where = At(input_path, index);
      if (!ref.empty() && ref[0] == '^') {
        if (ref.size() == 1) Fail(input_path, index, "empty control input '^'", "write ^producer");
        builder.AddControlEdge(ref.substr(1), node_name, where);
        continue;
      }
      std::string producer = ref;
      int32_t output = 0;
      const size_t colon = ref.rfind(':');
      if (colon != std::string::npos && IsAllDigits(std::string_view(ref).substr(colon + 1))) {
        const std::string digits = ref.substr(colon + 1);
        if (digits.size() > 9) Fail(input_path, index, "output index " + digits + " is out of range");
        output = std::stoi(digits);
        producer = ref.substr(0, colon);
      }
      if (producer.empty()) Fail(input_path, index, "input '" + ref + "' names no producer");
      builder.AddEdge(producer, node_name, output, where);
    }
  }

  std::string_view text_;
  const std::string& source_;
  std::vector<size_t> node_offsets_;
  std::vector<std::pair<int, int>> node_lines_;
};

// Whether a data input of producer `name` must spell out ":0" because the
// name itself ends in ":<digits>".
bool NeedsExplicitIndex(const std::string& name) {
  const size_t colon = name.rfind(':');
  return colon != std::string::npos && IsAllDigits(std::string_view(name).substr(colon + 1));
}

Json NodeJson(const Graph& g, NodeId id) {
  const Node& node = g.node(id);
  Json n = Json::object();
  n["name"] = node.name;
  n["op"] = g.op_type_name(node.op);
  if (node.flops != 0) n["flops"] = node.flops;
  if (node.bytes_read != 0) n["bytes_read"] = node.bytes_read;
  if (node.bytes_written != 0) n["bytes_written"] = node.bytes_written;
  if (!node.outputs.empty()) {
    Json outputs = Json::array();
    for (const TensorInfo& t : node.outputs) {
      Json o = Json::object();
      o["bytes"] = t.bytes;
      if (!t.shape.empty()) o["shape"] = t.shape;
      if (t.dtype != DType::kUnknown) o["dtype"] = DTypeName(t.dtype);
      if (t.alias) o["alias"] = true;
      outputs.push_back(std::move(o));
    }
    n["outputs"] = std::move(outputs);
  }
  if (node.persistent_bytes != 0) n["persistent_bytes"] = node.persistent_bytes;
  if (node.colocation >= 0) n["colocation"] = g.colocation_groups()[static_cast<size_t>(node.colocation)];
  if (!node.scope.empty()) n["scope"] = node.scope;
  if (node.phase != Phase::kForward) n["phase"] = PhaseName(node.phase);
  if (!node.measured.empty()) {
    Json measured = Json::object();
    for (const MeasuredTime& m : node.measured) {
      if (measured.contains(m.device_kind)) {
        throw GraphError(
            "node '" + node.name + "' has two measured times for device kind '" + m.device_kind + "'",
            Location(g.source()), "keep one measured time per device kind");
      }
      measured[m.device_kind] = m.seconds;
    }
    n["measured"] = std::move(measured);
  }
  Json inputs = Json::array();
  for (EdgeId e : g.in_edges(id)) {
    const Edge& edge = g.edge(e);
    if (edge.is_control()) continue;
    const std::string& producer = g.node(edge.src).name;
    if (!producer.empty() && producer[0] == '^') {
      throw GraphError("node '" + producer + "' has a name starting with '^' and consumers of its data",
                       Location(g.source()), "rename the node; '^' marks control inputs in this format");
    }
    if (edge.output_index == 0 && !NeedsExplicitIndex(producer)) {
      inputs.push_back(producer);
    } else {
      inputs.push_back(producer + ":" + std::to_string(edge.output_index));
    }
  }
  for (EdgeId e : g.in_edges(id)) {
    const Edge& edge = g.edge(e);
    if (edge.is_control()) inputs.push_back("^" + g.node(edge.src).name);
  }
  if (!inputs.empty()) n["inputs"] = std::move(inputs);
  return n;
}

std::string Dump(const Json& j, const std::string& what, const Graph& g) {
  try {
    return j.dump();
  } catch (const Json::type_error& e) {
    throw GraphError(what + " contains text that is not valid UTF-8", Location(g.source()),
                     "JSON files hold UTF-8 text; rename it");
  }
}

}  // namespace

Graph ReadGraphJson(std::string_view text, const std::string& source) {
  try {
    return Reader(text, source).Read();
  } catch (const Json::exception& e) {
    // Every value is type-checked before use; this only guards against surprises.
    throw GraphError(std::string("invalid graph JSON: ") + e.what(), Location(source));
  }
}

bool IsMsrProblem(std::string_view text) {
  // The machine keys are the first of every msr-fiddle file; a look at the
  // first kilobytes avoids parsing other formats twice.
  const std::string_view head = text.substr(0, 4096);
  return head.find("\"maxFPGAs\"") != std::string_view::npos ||
         head.find("\"maxSizePerFPGA\"") != std::string_view::npos;
}

MsrProblem ReadMsrProblem(std::string_view text, const std::string& source) {
  try {
    return Reader(text, source).ReadMsrRoot();
  } catch (const Json::exception& e) {
    throw GraphError(std::string("invalid msr-fiddle JSON: ") + e.what(), Location(source));
  }
}

std::string WriteGraphJson(const Graph& graph) {
  std::string out =
      "{\n  \"format\": \"" + std::string(kFormatName) + "\",\n  \"version\": " + std::to_string(kVersion) +
      ",\n  \"name\": " + Dump(Json(graph.name()), "the graph name", graph) + ",\n  \"nodes\": [";
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    out += id == 0 ? "\n    " : ",\n    ";
    out +=
        Dump(NodeJson(graph, id), "node " + std::to_string(id) + " ('" + graph.node(id).name + "')", graph);
  }
  out += graph.num_nodes() == 0 ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace gosim::graphs
