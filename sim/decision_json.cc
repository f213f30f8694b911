// Decision JSON I/O keyed by node name (docs/FORMATS.md, "Decision JSON").
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/io.h"
#include "core/json_text.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/strings.h"
#include "sim/cluster.h"
#include "sim/decision.h"
#include "sim/decision_check.h"
#include "sim/msr.h"

namespace gosim::sim {
namespace {

using Json = nlohmann::json;
using graphs::NodeId;

constexpr const char* kFormat = "gosim.decision";
constexpr int kVersion = 1;

class DecisionReader {
 public:
  DecisionReader(const std::string& text, const std::string& source, const graphs::Graph& graph,
                 const Cluster& cluster)
      : text_(text), source_(source), g_(graph), c_(cluster) {}

  Decision Read() {
    const Json root = ParseJsonText<DecisionError, Json>(text_, source_,
                                                         "fix the JSON syntax (a truncated file ends early)");
    if (!root.is_object()) Fail("", "a decision must be a JSON object", "see docs/FORMATS.md, Decision JSON");
    if (!root.contains("format") && root.contains("fpgas") && root.contains("cpus"))
      return ParseMsrSplit(text_, source_, g_, c_);  // msr-fiddle's split (sim/msr.h)
    static const std::vector<std::string> kKeys{
        "format",   "version",           "graph",  "cluster",  "placement",
        "priority", "transfer_priority", "fusion", "metadata", "data_parallel"};
    for (const auto& [key, value] : root.items()) {
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        Fail(key, "unknown key '" + key + "'." + DidYouMean(key, kKeys), "valid keys: " + Join(kKeys, ", "));
      }
    }
    if (!root.contains("format") || root["format"] != kFormat) {
      Fail("format", std::string("not a decision file: \"format\" must be \"") + kFormat + "\"");
    }
    if (!root.contains("version") || !root["version"].is_number_integer() || root["version"] != kVersion) {
      Fail("version", "unsupported decision version (this gosim reads version 1)");
    }
    for (const char* key : {"graph", "cluster"}) {
      if (root.contains(key) && !root[key].is_string()) Fail(key, std::string(key) + " must be a string");
    }
    std::string digest;
    if (root.contains("metadata")) {
      const Json& metadata = root["metadata"];
      if (!metadata.is_object()) Fail("metadata", "metadata must be an object");
      if (metadata.contains("graph_digest")) {
        if (!metadata["graph_digest"].is_string()) {
          throw DecisionError("metadata.graph_digest must be a string", At("metadata.graph_digest"));
        }
        digest = metadata["graph_digest"].get<std::string>();
      }
    }
    Decision d;
    if (root.contains("data_parallel")) {
      const Json& replicas = root["data_parallel"];
      if (!replicas.is_number_integer() || replicas.get<int64_t>() < 2 ||
          replicas.get<int64_t>() > c_.num_devices()) {
        Fail("data_parallel", "data_parallel must be a number of replicas from 2 to " +
                                  std::to_string(c_.num_devices()) + " (the cluster's devices), not " +
                                  replicas.dump());
      }
      d = DataParallelDecision(g_, static_cast<int32_t>(replicas.get<int64_t>()));
    }
    if (!root.contains("placement") && !d.is_data_parallel())
      Fail("", "missing \"placement\"", "map every node name to a device, or give \"data_parallel\": N");
    if (root.contains("placement")) ReadPlacement(root["placement"], &d);
    if (root.contains("priority")) ReadPriority(root["priority"], &d);
    if (root.contains("transfer_priority")) ReadTransferPriority(root["transfer_priority"], &d);
    if (root.contains("fusion")) ReadFusion(root["fusion"], &d);
    internal::CheckDecision(d, g_, c_, false, [this, &d](internal::Field field, int64_t index) {
      return Locate(field, index, d);
    });
    if (!digest.empty() && digest != GraphDigest(g_)) {
      const bool hex =
          digest.size() == 16 && digest.find_first_not_of("0123456789abcdef") == std::string::npos;
      GOSIM_LOG(Warn) << Location(source_).ToString()
                      << ": this decision was made for a graph with the same node names but other ops or "
                         "edges (graph digest "
                      << (hex ? digest : "malformed") << ", this graph's " << GraphDigest(g_)
                      << "); its result may not carry over";
    }
    return d;
  }

 private:
  // 1-based line and column of byte `offset`.
  Location TextAt(size_t offset) const {
    offset = std::min(offset, text_.size());
    Location where(source_, 1, 1);
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text_[i] == '\n') {
        ++where.line;
        line_start = i + 1;
      }
    }
    where.column = static_cast<int>(offset - line_start) + 1;
    where.byte_offset = static_cast<int64_t>(offset);
    return where;
  }

  // The line of `"key"` after `"section"` in the text (best effort: JSON
  // values carry no positions once parsed); the path is always exact.
  Location At(const std::string& path, const std::string& section = {}, const std::string& key = {}) const {
    Location where(source_);
    where.path = path;
    size_t pos = 0;
    if (!section.empty()) {
      pos = text_.find(DumpJson(Json(section)));
      if (pos != std::string::npos && !key.empty())
        pos = text_.find(DumpJson(Json(key)), pos + section.size() + 2);
      if (pos != std::string::npos) {
        const Location at = TextAt(pos);
        where.line = at.line;
        where.column = at.column;
      }
    }
    return where;
  }

  [[noreturn]] void Fail(const std::string& key, const std::string& message,
                         const std::string& hint = {}) const {
    throw DecisionError(message, At(key, key), hint);
  }

  NodeId Node(const std::string& name, const std::string& section, const std::string& path) const {
    const std::optional<NodeId> v = g_.FindNode(name);
    if (!v) {
      std::vector<std::string> names;
      names.reserve(static_cast<size_t>(g_.num_nodes()));
      for (const graphs::Node& node : g_.nodes()) names.push_back(node.name);
      throw DecisionError(
          "unknown node '" + name + "' (graph '" + g_.name() + "')." + DidYouMean(name, names),
          At(path, section, name), "decisions name the nodes of the graph they were made for");
    }
    return *v;
  }

  int32_t Device(const Json& value, const std::string& path, const std::string& section,
                 const std::string& key) const {
    if (value.is_number_integer()) {
      const int64_t d = value.get<int64_t>();
      if (d < 0 || d >= c_.num_devices()) {
        throw DecisionError("device index " + std::to_string(d) + " is out of range: cluster '" + c_.name() +
                                "' has devices 0.." + std::to_string(c_.num_devices() - 1),
                            At(path, section, key));
      }
      return static_cast<int32_t>(d);
    }
    if (value.is_string()) {
      const std::string name = value.get<std::string>();
      const int32_t d = c_.FindDevice(name);
      if (d < 0) {
        std::vector<std::string> names;
        for (const DeviceSpec& spec : c_.devices()) names.push_back(spec.name);
        throw DecisionError(
            "unknown device '" + name + "' (cluster '" + c_.name() + "')." + DidYouMean(name, names),
            At(path, section, key), "devices: " + Join(names, ", "));
      }
      return d;
    }
    throw DecisionError("a device must be a name or an index", At(path, section, key));
  }

  // Every node must appear; names the first few missing ones.
  void RequireAll(const std::vector<char>& seen, const std::string& section) const {
    std::vector<std::string> missing;
    size_t count = 0;
    for (NodeId v = 0; v < g_.num_nodes(); ++v) {
      if (seen[static_cast<size_t>(v)]) continue;
      if (++count <= 5) missing.push_back("'" + g_.node(v).name + "'");
    }
    if (count == 0) return;
    std::string list = Join(missing, ", ");
    if (count > 5) list += " and " + std::to_string(count - 5) + " more";
    throw DecisionError(section + " misses " + std::to_string(count) + " of " +
                            std::to_string(g_.num_nodes()) + " nodes: " + list,
                        At(section, section), "give every node of the graph a value");
  }

  void ReadPlacement(const Json& j, Decision* d) const {
    if (!j.is_object()) Fail("placement", "placement must be an object {\"node\": device, ...}");
    d->placement.assign(static_cast<size_t>(g_.num_nodes()), -1);
    std::vector<char> seen(static_cast<size_t>(g_.num_nodes()), 0);
    for (const auto& [name, value] : j.items()) {
      const std::string path = "placement." + name;
      const NodeId v = Node(name, "placement", path);
      d->placement[static_cast<size_t>(v)] = Device(value, path, "placement", name);
      seen[static_cast<size_t>(v)] = 1;
    }
    RequireAll(seen, "placement");
  }

  void ReadPriority(const Json& j, Decision* d) const {
    if (!j.is_object()) Fail("priority", "priority must be an object {\"node\": number, ...}");
    d->priority.assign(static_cast<size_t>(g_.num_nodes()), 0.0);
    std::vector<char> seen(static_cast<size_t>(g_.num_nodes()), 0);
    for (const auto& [name, value] : j.items()) {
      const std::string path = "priority." + name;
      const NodeId v = Node(name, "priority", path);
      if (!value.is_number()) throw DecisionError("a priority must be a number", At(path, "priority", name));
      d->priority[static_cast<size_t>(v)] = value.get<double>();
      seen[static_cast<size_t>(v)] = 1;
    }
    RequireAll(seen, "priority");
  }

  void ReadTransferPriority(const Json& j, Decision* d) const {
    if (!j.is_object()) {
      Fail("transfer_priority",
           "transfer_priority must be an object {\"node:k\": {\"device\": number}, ...}");
    }
    const auto num_devices = static_cast<size_t>(c_.num_devices());
    d->transfer_priority.assign(static_cast<size_t>(g_.num_tensors()) * num_devices, 0.0);
    for (const auto& [tensor, per_device] : j.items()) {
      const std::string path = "transfer_priority." + tensor;
      const size_t colon = tensor.rfind(':');
      int64_t output = 0;
      std::string producer = tensor;
      if (colon != std::string::npos) {
        producer = tensor.substr(0, colon);
        try {
          size_t used = 0;
          output = std::stoll(tensor.substr(colon + 1), &used);
          if (used != tensor.size() - colon - 1) output = -1;
        } catch (const std::exception&) {
          output = -1;
        }
      }
      const NodeId v = Node(producer, "transfer_priority", path);
      if (output < 0 || output >= static_cast<int64_t>(g_.node(v).outputs.size())) {
        throw DecisionError("'" + tensor + "' is not an output of node '" + producer + "' (it has " +
                                std::to_string(g_.node(v).outputs.size()) + " outputs)",
                            At(path, "transfer_priority", tensor), "name tensors as producer:output_index");
      }
      if (!per_device.is_object()) {
        throw DecisionError("expected an object {\"device\": priority, ...}",
                            At(path, "transfer_priority", tensor));
      }
      const auto t = static_cast<size_t>(g_.tensor(v, static_cast<int32_t>(output)));
      for (const auto& [device, value] : per_device.items()) {
        const int32_t dev = Device(Json(device), path + "." + device, "transfer_priority", tensor);
        if (!value.is_number()) {
          throw DecisionError("a priority must be a number",
                              At(path + "." + device, "transfer_priority", tensor));
        }
        d->transfer_priority[t * num_devices + static_cast<size_t>(dev)] = value.get<double>();
      }
    }
  }

  void ReadFusion(const Json& j, Decision* d) const {
    if (!j.is_array()) Fail("fusion", "fusion must be a list of groups [[\"a\", \"b\"], ...]");
    d->fusion_group.assign(static_cast<size_t>(g_.num_nodes()), -1);
    for (size_t k = 0; k < j.size(); ++k) {
      const std::string path = "fusion[" + std::to_string(k) + "]";
      if (!j[k].is_array() || j[k].empty()) {
        throw DecisionError("a fusion group must be a non-empty list of node names", At(path, "fusion"));
      }
      for (size_t i = 0; i < j[k].size(); ++i) {
        const std::string item_path = path + "[" + std::to_string(i) + "]";
        if (!j[k][i].is_string()) throw DecisionError("expected a node name", At(item_path, "fusion"));
        const std::string name = j[k][i].get<std::string>();
        const NodeId v = Node(name, "fusion", item_path);
        int32_t& group = d->fusion_group[static_cast<size_t>(v)];
        if (group >= 0) {
          throw DecisionError("node '" + name + "' is in fusion groups " + std::to_string(group) + " and " +
                                  std::to_string(k),
                              At(item_path, "fusion", name), "a node belongs to at most one fusion group");
        }
        group = static_cast<int32_t>(k);
      }
    }
  }

  Location Locate(internal::Field field, int64_t index, const Decision& d) const {
    const auto node_name = [&](int64_t v) { return g_.node(static_cast<NodeId>(v)).name; };
    switch (field) {
      case internal::Field::kPlacement:
        return index < 0 ? At("placement", "placement")
                         : At("placement." + node_name(index), "placement", node_name(index));
      case internal::Field::kPriority:
        return index < 0 ? At("priority", "priority")
                         : At("priority." + node_name(index), "priority", node_name(index));
      case internal::Field::kTransferPriority: {
        if (index < 0) return At("transfer_priority", "transfer_priority");
        const auto t = static_cast<graphs::TensorId>(index / c_.num_devices());
        const NodeId v = g_.tensor_producer(t);
        const std::string tensor = g_.node(v).name + ":" + std::to_string(t - g_.tensor_offset(v));
        return At("transfer_priority." + tensor, "transfer_priority", tensor);
      }
      case internal::Field::kFusion: {
        if (index < 0 || d.fusion_group.empty()) return At("fusion", "fusion");
        const int32_t group = d.fusion_group[static_cast<size_t>(index)];
        return At("fusion[" + std::to_string(group) + "]", "fusion", node_name(index));
      }
      case internal::Field::kWhole:
        break;
    }
    return At("");
  }

  const std::string& text_;
  const std::string& source_;
  const graphs::Graph& g_;
  const Cluster& c_;
};

}  // namespace

std::string GraphDigest(const graphs::Graph& graph) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto add = [&hash](std::string_view bytes) {
    for (const unsigned char c : bytes) {
      hash ^= c;
      hash *= 0x100000001b3ULL;
    }
  };
  auto add_int = [&add](int64_t value) {
    add(std::string_view(reinterpret_cast<const char*>(&value), sizeof(value)));
  };
  add_int(graph.num_nodes());
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    const graphs::Node& node = graph.node(v);
    add(node.name);
    add(std::string_view("\0", 1));
    add(graph.op_type_name(node.op));
    add(std::string_view("\0", 1));
  }
  add_int(graph.num_edges());
  for (const graphs::Edge& e : graph.edges()) {
    add_int(e.src);
    add_int(e.dst);
    add_int(e.output_index);
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016" PRIx64, Mix64(hash));
  return buffer;
}

Decision ParseDecisionJson(const std::string& text, const std::string& source, const graphs::Graph& graph,
                           const Cluster& cluster) {
  return DecisionReader(text, source, graph, cluster).Read();
}

namespace {

// The placement, priorities and fusion groups of a placement decision.
void WriteAssignment(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                     nlohmann::ordered_json* out) {
  nlohmann::ordered_json& root = *out;
  nlohmann::ordered_json placement = nlohmann::ordered_json::object();
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    placement[graph.node(v).name] = cluster.device(decision.placement[static_cast<size_t>(v)]).name;
  }
  root["placement"] = std::move(placement);
  if (decision.has_priority()) {
    nlohmann::ordered_json priority = nlohmann::ordered_json::object();
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      priority[graph.node(v).name] = decision.priority[static_cast<size_t>(v)];
    }
    root["priority"] = std::move(priority);
  }
  if (decision.has_transfer_priority()) {
    nlohmann::ordered_json transfer = nlohmann::ordered_json::object();
    const auto num_devices = static_cast<size_t>(cluster.num_devices());
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      for (size_t k = 0; k < graph.node(v).outputs.size(); ++k) {
        const auto t = static_cast<size_t>(graph.tensor(v, static_cast<int32_t>(k)));
        nlohmann::ordered_json per_device = nlohmann::ordered_json::object();
        for (size_t dev = 0; dev < num_devices; ++dev) {
          const double p = decision.transfer_priority[t * num_devices + dev];
          if (p != 0.0) per_device[cluster.device(static_cast<int32_t>(dev)).name] = p;
        }
        if (!per_device.empty())
          transfer[graph.node(v).name + ":" + std::to_string(k)] = std::move(per_device);
      }
    }
    root["transfer_priority"] = std::move(transfer);
  }
  if (decision.has_fusion()) {
    // Groups in the order of their first node; members in node order.
    std::map<int32_t, size_t> index;
    nlohmann::ordered_json fusion = nlohmann::ordered_json::array();
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      const int32_t group = decision.fusion_group[static_cast<size_t>(v)];
      if (group < 0) continue;
      auto [it, inserted] = index.emplace(group, fusion.size());
      if (inserted) fusion.push_back(nlohmann::ordered_json::array());
      fusion[it->second].push_back(graph.node(v).name);
    }
    root["fusion"] = std::move(fusion);
  }
}

}  // namespace

std::string DecisionToJson(const Decision& decision, const graphs::Graph& graph, const Cluster& cluster,
                           const DecisionInfo& info) {
  ValidateDecision(decision, graph, cluster);
  // ordered_json keeps the node order of the graph in the file.
  nlohmann::ordered_json root;
  root["format"] = kFormat;
  root["version"] = kVersion;
  root["graph"] = graph.name();
  root["cluster"] = cluster.name();
  if (decision.is_data_parallel()) {
    root["data_parallel"] = decision.data_parallel;  // replicas of the whole graph: no placement
  } else {
    WriteAssignment(decision, graph, cluster, &root);
  }
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  if (!info.agent.empty()) metadata["agent"] = info.agent;
  if (info.seed >= 0) metadata["seed"] = info.seed;
  if (info.budget >= 0) metadata["budget"] = info.budget;
  if (info.evaluations >= 0) metadata["evaluations"] = info.evaluations;
  if (!info.objective.empty()) metadata["objective"] = info.objective;
  metadata["graph_digest"] = GraphDigest(graph);
  root["metadata"] = std::move(metadata);
  try {
    return root.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    throw DecisionError(std::string("cannot write the decision as JSON: ") + e.what(),
                        Location(graph.source()), "node and device names must be valid UTF-8");
  }
}

Decision LoadDecision(const std::string& path, const graphs::Graph& graph, const Cluster& cluster) {
  return ParseDecisionJson(ReadFile(path), path, graph, cluster);
}

void SaveDecision(const std::string& path, const Decision& decision, const graphs::Graph& graph,
                  const Cluster& cluster, const DecisionInfo& info) {
  WriteFileAtomic(path, DecisionToJson(decision, graph, cluster, info));
}

}  // namespace gosim::sim
