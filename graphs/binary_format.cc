#include "graphs/binary_format.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs {
namespace {

// Header: magic (8), version (u32), reserved (u32, 0), payload bytes (u64),
// CRC-32 of the payload (u32), reserved (u32, 0).
constexpr size_t kHeaderBytes = 32;
// Per-output flags (version 2).
constexpr uint8_t kAliasFlag = 1;
constexpr const char* kFix =
    "write the file again (gosim graphs export G --out F.gosimgraph) or use its JSON";

static_assert(std::endian::native == std::endian::little, "the binary graph format is little-endian");

uint32_t Crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes lengths as uInt: feed it in pieces.
  for (size_t at = 0; at < data.size();) {
    const size_t n = std::min<size_t>(data.size() - at, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + at), static_cast<uInt>(n));
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

class Writer {
 public:
  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  // Index of `s` in the string table (added on first use).
  uint32_t Intern(const std::string& s) {
    const auto [it, added] = strings_.emplace(s, static_cast<uint32_t>(table_.size()));
    if (added) table_.push_back(&it->first);
    return it->second;
  }
  std::string& out() { return out_; }
  const std::vector<const std::string*>& table() const { return table_; }

 private:
  std::string out_;
  std::unordered_map<std::string, uint32_t> strings_;
  std::vector<const std::string*> table_;
};

class Reader {
 public:
  Reader(std::string_view data, size_t base, const std::string& source)
      : data_(data), base_(base), source_(source) {}

  template <typename T>
  T Get(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    Need(sizeof(T), what);
    T value;
    std::memcpy(&value, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  // A count of items of at least `min_item_bytes` each that must fit in what is left.
  uint32_t Count(const char* what, size_t min_item_bytes) {
    const size_t start = at_;
    const uint32_t n = Get<uint32_t>(what);
    if (min_item_bytes > 0 && n > (data_.size() - at_) / min_item_bytes) {
      Fail(start, std::string(what) + " " + std::to_string(n) + " does not fit in the file");
    }
    return n;
  }
  std::string_view Bytes(size_t n, const char* what) {
    Need(n, what);
    std::string_view s = data_.substr(at_, n);
    at_ += n;
    return s;
  }
  const std::string& String(const std::vector<std::string>& table, const char* what) {
    const size_t start = at_;
    const uint32_t index = Get<uint32_t>(what);
    if (index >= table.size()) {
      Fail(start, std::string(what) + ": string " + std::to_string(index) + " of a table of " +
                      std::to_string(table.size()));
    }
    return table[index];
  }
  size_t at() const { return at_; }
  bool done() const { return at_ == data_.size(); }

  [[noreturn]] void Fail(size_t offset, const std::string& message) const {
    Location where(source_);
    where.byte_offset = static_cast<int64_t>(base_ + offset);
    throw GraphError(message, where, kFix);
  }

 private:
  void Need(size_t n, const char* what) const {
    if (n > data_.size() - at_) Fail(at_, std::string("truncated: the file ends inside ") + what);
  }

  std::string_view data_;
  size_t base_;  // offset of data_ in the file, for messages
  const std::string& source_;
  size_t at_ = 0;
};

}  // namespace

bool IsBinaryGraph(std::string_view data) {
  return data.substr(0, kBinaryGraphMagic.size()) == kBinaryGraphMagic;
}

std::string WriteGraphBinary(const Graph& graph, uint32_t version) {
  if (version < 1 || version > kBinaryGraphVersion)
    throw GraphError("cannot write binary graph version " + std::to_string(version), Location(graph.name()));
  if (version < 2) {
    for (const Node& node : graph.nodes()) {
      for (const TensorInfo& t : node.outputs) {
        if (t.alias)
          throw GraphError("binary graph version 1 cannot hold aliases (node '" + node.name + "')",
                           Location(graph.name()), "write version 2");
      }
    }
  }
  // The body refers to strings by index; the table is written before it.
  Writer body;
  body.Put<uint32_t>(body.Intern(graph.name()));
  body.Put<uint32_t>(static_cast<uint32_t>(graph.num_nodes()));
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    body.Put<uint32_t>(body.Intern(node.name));
    body.Put<uint32_t>(body.Intern(graph.op_type_name(node.op)));
    body.Put<double>(node.flops);
    body.Put<int64_t>(node.bytes_read);
    body.Put<int64_t>(node.bytes_written);
    body.Put<int64_t>(node.persistent_bytes);
    body.Put<uint32_t>(body.Intern(node.colocation >= 0
                                       ? graph.colocation_groups()[static_cast<size_t>(node.colocation)]
                                       : std::string()));
    body.Put<uint32_t>(body.Intern(node.scope));
    body.Put<uint8_t>(static_cast<uint8_t>(node.phase));
    body.Put<uint32_t>(static_cast<uint32_t>(node.outputs.size()));
    for (const TensorInfo& t : node.outputs) {
      body.Put<int64_t>(t.bytes);
      body.Put<uint8_t>(static_cast<uint8_t>(t.dtype));
      if (version >= 2) body.Put<uint8_t>(t.alias ? kAliasFlag : 0);
      body.Put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
      for (int64_t d : t.shape) body.Put<int64_t>(d);
    }
    body.Put<uint32_t>(static_cast<uint32_t>(node.measured.size()));
    for (const MeasuredTime& m : node.measured) {
      body.Put<uint32_t>(body.Intern(m.device_kind));
      body.Put<double>(m.seconds);
    }
  }
  // Edges by consumer, data edges first, as the JSON lists a node's inputs.
  std::vector<const Edge*> edges;
  edges.reserve(static_cast<size_t>(graph.num_edges()));
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    for (EdgeId e : graph.in_edges(id)) {
      if (!graph.edge(e).is_control()) edges.push_back(&graph.edge(e));
    }
    for (EdgeId e : graph.in_edges(id)) {
      if (graph.edge(e).is_control()) edges.push_back(&graph.edge(e));
    }
  }
  body.Put<uint32_t>(static_cast<uint32_t>(edges.size()));
  for (const Edge* edge : edges) {
    body.Put<uint32_t>(static_cast<uint32_t>(edge->src));
    body.Put<uint32_t>(static_cast<uint32_t>(edge->dst));
    body.Put<int32_t>(edge->output_index);
  }

  Writer payload;
  payload.Put<uint32_t>(static_cast<uint32_t>(body.table().size()));
  for (const std::string* s : body.table()) payload.PutString(*s);
  payload.out() += body.out();

  Writer file;
  file.out().append(kBinaryGraphMagic);
  file.Put<uint32_t>(version);
  file.Put<uint32_t>(0);
  file.Put<uint64_t>(payload.out().size());
  file.Put<uint32_t>(Crc32(payload.out()));
  file.Put<uint32_t>(0);
  file.out() += payload.out();
  return std::move(file.out());
}

Graph ReadGraphBinary(std::string_view data, const std::string& source) {
  Reader header(data.substr(0, std::min(data.size(), kHeaderBytes)), 0, source);
  if (!IsBinaryGraph(data)) {
    if (data.size() < kBinaryGraphMagic.size() && kBinaryGraphMagic.substr(0, data.size()) == data) {
      header.Fail(data.size(), "truncated: the file ends inside the magic bytes");
    }
    header.Fail(0, "not a gosim binary graph (no GOSIMGRB magic bytes)");
  }
  header.Bytes(kBinaryGraphMagic.size(), "the magic bytes");
  const uint32_t version = header.Get<uint32_t>("the header");
  if (version < 1 || version > kBinaryGraphVersion) {
    throw GraphError("unsupported binary graph version " + std::to_string(version), Location(source),
                     "this gosim reads versions 1 to " + std::to_string(kBinaryGraphVersion) +
                         "; export the graph again with this gosim, or use its JSON");
  }
  const bool has_flags = version >= 2;
  // Reserved fields are 0 in every file: anything else is damage
  // (or a later format this reader does not know).
  const auto reserved = [&] {
    const size_t at = header.at();
    if (header.Get<uint32_t>("the header") != 0) {
      header.Fail(at, "corrupt header: the reserved bytes at offset " + std::to_string(at) + " are not 0");
    }
  };
  reserved();
  const uint64_t payload_bytes = header.Get<uint64_t>("the header");
  const uint32_t crc = header.Get<uint32_t>("the header");
  reserved();
  const std::string_view payload = data.substr(kHeaderBytes);
  if (payload.size() != payload_bytes) {
    header.Fail(kHeaderBytes, (payload.size() < payload_bytes ? "truncated: " : "trailing bytes: ") +
                                  std::string("the header announces ") + std::to_string(payload_bytes) +
                                  " bytes of graph, the file has " + std::to_string(payload.size()));
  }
  if (Crc32(payload) != crc)
    header.Fail(kHeaderBytes, "corrupt: the checksum (CRC-32) of the graph does not match");

  Reader in(payload, kHeaderBytes, source);
  std::vector<std::string> table(in.Count("the string table", 4));
  for (std::string& s : table) {
    const uint32_t length = in.Count("a string's length", 1);
    s = in.Bytes(length, "a string");
  }
  GraphBuilder builder(in.String(table, "the graph name"), source);
  const uint32_t num_nodes =
      in.Count("the node count", 57);  // the bytes of a node without outputs or measured times
  for (uint32_t i = 0; i < num_nodes; ++i) {
    const size_t start = in.at();
    NodeSpec s;
    s.where = Location(source);
    s.where.byte_offset = static_cast<int64_t>(kHeaderBytes + start);
    s.name = in.String(table, "a node name");
    s.op = in.String(table, "an op type");
    s.flops = in.Get<double>("a node");
    s.bytes_read = in.Get<int64_t>("a node");
    s.bytes_written = in.Get<int64_t>("a node");
    s.persistent_bytes = in.Get<int64_t>("a node");
    s.colocation = in.String(table, "a colocation group");
    s.scope = in.String(table, "a scope");
    const uint8_t phase = in.Get<uint8_t>("a node");
    if (phase > static_cast<uint8_t>(Phase::kUpdate))
      in.Fail(in.at() - 1, "unknown phase " + std::to_string(phase));
    s.phase = static_cast<Phase>(phase);
    s.outputs.resize(in.Count("an output count", has_flags ? 14 : 13));
    for (TensorInfo& t : s.outputs) {
      t.bytes = in.Get<int64_t>("an output");
      const uint8_t dtype = in.Get<uint8_t>("an output");
      if (dtype > static_cast<uint8_t>(kLastDType))
        in.Fail(in.at() - 1, "unknown dtype " + std::to_string(dtype));
      t.dtype = static_cast<DType>(dtype);
      if (has_flags) {
        const uint8_t flags = in.Get<uint8_t>("an output");
        if ((flags & ~kAliasFlag) != 0) in.Fail(in.at() - 1, "unknown output flags " + std::to_string(flags));
        t.alias = (flags & kAliasFlag) != 0;
      }
      t.shape.resize(in.Count("a shape's rank", 8));
      for (int64_t& d : t.shape) {
        d = in.Get<int64_t>("a shape");
        if (d < 0) in.Fail(in.at() - 8, "negative dimension " + std::to_string(d));
      }
    }
    s.measured.resize(in.Count("a measured-time count", 12));
    for (MeasuredTime& m : s.measured) {
      m.device_kind = in.String(table, "a device kind");
      m.seconds = in.Get<double>("a measured time");
    }
    builder.AddNode(std::move(s));
  }
  const uint32_t num_edges = in.Count("the edge count", 12);
  for (uint32_t k = 0; k < num_edges; ++k) {
    const size_t start = in.at();
    const uint32_t src = in.Get<uint32_t>("an edge");
    const uint32_t dst = in.Get<uint32_t>("an edge");
    const int32_t output = in.Get<int32_t>("an edge");
    if (src >= num_nodes || dst >= num_nodes) {
      in.Fail(start, "edge " + std::to_string(k) + " joins nodes " + std::to_string(src) + " and " +
                         std::to_string(dst) + " of " + std::to_string(num_nodes));
    }
    Location where(source);
    where.byte_offset = static_cast<int64_t>(kHeaderBytes + start);
    if (output == Edge::kControl) {
      builder.AddControlEdge(static_cast<int32_t>(src), static_cast<int32_t>(dst), where);
    } else if (output >= 0) {
      builder.AddEdge(static_cast<int32_t>(src), static_cast<int32_t>(dst), output, where);
    } else {
      in.Fail(start + 8, "edge " + std::to_string(k) + " has output index " + std::to_string(output));
    }
  }
  if (!in.done()) in.Fail(in.at(), "trailing bytes after the last edge");
  return builder.Build();
}

}  // namespace gosim::graphs
