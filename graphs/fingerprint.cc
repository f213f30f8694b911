#include "graphs/fingerprint.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/rng.h"

namespace gosim::graphs {
namespace {

// FNV-1a over bytes, finished by Mix64.
class Hasher {
 public:
  void Bytes(std::string_view bytes) {
    for (const unsigned char c : bytes) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void Text(std::string_view text) {
    Int(static_cast<int64_t>(text.size()));
    Bytes(text);
  }
  void Int(int64_t value) {
    char buffer[sizeof(value)];
    std::memcpy(buffer, &value, sizeof(value));
    Bytes(std::string_view(buffer, sizeof(buffer)));
  }
  void Double(double value) {
    int64_t bits = 0;
    value += 0.0;  // -0.0 and 0.0 alike
    std::memcpy(&bits, &value, sizeof(bits));
    Int(bits);
  }
  uint64_t Value() const { return Mix64(hash_); }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string Hex(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016" PRIx64, value);
  return buffer;
}

// One WL round: a node's label with the sorted distinct labels of its in-
// and out-neighbours (data and control edges alike).
std::vector<uint64_t> Refine(const Graph& g, const std::vector<uint64_t>& label) {
  std::vector<uint64_t> next(label.size());
  std::vector<uint64_t> in, out;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    in.clear();
    out.clear();
    for (const EdgeId e : g.in_edges(v)) in.push_back(label[static_cast<size_t>(g.edge(e).src)]);
    for (const EdgeId e : g.out_edges(v)) out.push_back(label[static_cast<size_t>(g.edge(e).dst)]);
    for (auto* list : {&in, &out}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    Hasher h;
    h.Int(static_cast<int64_t>(label[static_cast<size_t>(v)]));
    h.Int(static_cast<int64_t>(in.size()));
    for (const uint64_t l : in) h.Int(static_cast<int64_t>(l));
    h.Int(static_cast<int64_t>(out.size()));
    for (const uint64_t l : out) h.Int(static_cast<int64_t>(l));
    next[static_cast<size_t>(v)] = h.Value();
  }
  return next;
}

}  // namespace

GraphFingerprint Fingerprint(const Graph& g) {
  GraphFingerprint out;
  {
    Hasher h;
    h.Int(g.num_nodes());
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      const Node& node = g.node(v);
      h.Text(g.op_type_name(node.op));
      h.Int(static_cast<int64_t>(node.phase));
      h.Double(node.flops);
      h.Int(node.persistent_bytes);
      h.Int(static_cast<int64_t>(node.outputs.size()));
      for (const TensorInfo& t : node.outputs) {
        h.Int(t.bytes);
        h.Int(static_cast<int64_t>(t.dtype));
        h.Int(static_cast<int64_t>(t.shape.size()));
        for (const int64_t d : t.shape) h.Int(d);
      }
    }
    h.Int(g.num_edges());
    for (const Edge& e : g.edges()) {
      h.Int(e.src);
      h.Int(e.dst);
      h.Int(e.output_index);
    }
    out.exact = Hex(h.Value());
  }
  {
    std::vector<uint64_t> label(static_cast<size_t>(g.num_nodes()));
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      Hasher h;
      h.Text(g.op_type_name_of(v));
      h.Int(static_cast<int64_t>(g.node(v).phase));
      label[static_cast<size_t>(v)] = h.Value();
    }
    std::vector<uint64_t> all(label);
    for (int round = 0; round < 2; ++round) {
      label = Refine(g, label);
      all.insert(all.end(), label.begin(), label.end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    Hasher h;
    h.Int(static_cast<int64_t>(all.size()));
    for (const uint64_t l : all) h.Int(static_cast<int64_t>(l));
    out.family = Hex(h.Value());
  }
  return out;
}

}  // namespace gosim::graphs
