#include "graphs/generators/generators.h"

#include <cmath>

#include "core/rng.h"
#include "core/strings.h"
#include "graphs/generators/models.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs {

GeneratorParams::GeneratorParams(const YAML::Node& params, std::string file, std::string path,
                                 Overrides overrides)
    : map_(params, std::move(file), std::move(path)), overrides_(std::move(overrides)) {}

YAML::Node GeneratorParams::Value(const std::string& key) {
  const YAML::Node value = map_.Node(key);  // marks the key as used
  for (const auto& [k, v] : overrides_) {
    if (k == key) return v;
  }
  return value;
}

template <typename T>
T GeneratorParams::Read(const std::string& key, const T& fallback) {
  const YAML::Node value = Value(key);
  if (!value || value.IsNull()) return fallback;
  return YamlAs<T>(value, map_.file(), map_.ChildPath(key));
}

void GeneratorParams::Fail(const std::string& key, const std::string& message,
                           const std::string& hint) const {
  map_.Fail(key, "parameter '" + key + "' " + message, hint);
}

int64_t GeneratorParams::Int(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  const int64_t v = Read<int64_t>(key, fallback);
  if (v < min || v > max) {
    Fail(key,
         "is " + std::to_string(v) + ", outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

double GeneratorParams::Double(const std::string& key, double fallback, double min, double max) {
  const double v = Read<double>(key, fallback);
  if (!std::isfinite(v) || v < min || v > max) {
    Fail(key,
         "is " + std::to_string(v) + ", outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

bool GeneratorParams::Bool(const std::string& key, bool fallback) {
  return Read<bool>(key, fallback);
}

std::string GeneratorParams::String(const std::string& key, const std::string& fallback) {
  return Read<std::string>(key, fallback);
}

std::string GeneratorParams::Choice(const std::string& key, const std::string& fallback,
                                    const std::vector<std::string>& choices) {
  const std::string v = String(key, fallback);
  for (const std::string& c : choices) {
    if (c == v) return v;
  }
  Fail(key, "is '" + v + "'." + DidYouMean(v, choices), "valid values are: " + Join(choices, ", "));
}

std::vector<int64_t> GeneratorParams::IntList(const std::string& key, const std::vector<int64_t>& fallback,
                                              int64_t min, int64_t max) {
  const YAML::Node node = Value(key);
  if (!node || node.IsNull()) return fallback;
  const std::vector<int64_t> v = YamlAs<std::vector<int64_t>>(node, map_.file(), map_.ChildPath(key));
  if (v.empty()) Fail(key, "is an empty list");
  for (int64_t x : v) {
    if (x < min || x > max) {
      Fail(key, "has " + std::to_string(x) + ", outside [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
    }
  }
  return v;
}

gen::ModelOptions GeneratorParams::Model(int64_t default_batch, bool default_training) {
  gen::ModelOptions o;
  o.batch = Int("batch", default_batch, 1, 1 << 16);
  o.dtype = ParseDType(Choice("dtype", "float32", {"float32", "float16", "bfloat16"}));
  o.training = Bool("training", default_training);
  const std::string opt = Choice("optimizer", "adam", {"sgd", "momentum", "adam"});
  o.optimizer = opt == "sgd"        ? gen::Optimizer::kSgd
                : opt == "momentum" ? gen::Optimizer::kMomentum
                                    : gen::Optimizer::kAdam;
  return o;
}

const GeneratorRegistry& Generators() {
  static const GeneratorRegistry registry = [] {
    GeneratorRegistry r("graph generator");
    gen::RegisterCnnGenerators(r);
    gen::RegisterAmoebaNetGenerator(r);
    gen::RegisterRnnGenerators(r);
    gen::RegisterTransformerGenerators(r);
    gen::RegisterWaveNetGenerator(r);
    gen::RegisterRegalGenerator(r);
    return r;
  }();
  return registry;
}

std::vector<GeneratorInfo> ListGenerators() {
  std::vector<GeneratorInfo> out;
  const GeneratorRegistry& r = Generators();
  for (const std::string& name : r.Names()) out.push_back({name, r.Description(name)});
  return out;
}

Graph Generate(const std::string& name, const YAML::Node& params, const std::string& source_for_errors,
               const std::string& params_path, GeneratorParams::Overrides overrides) {
  GeneratorParams p(params, source_for_errors, params_path, std::move(overrides));
  Location where = p.map().Where();
  Graph g = Generators().Create(name, p, where);
  p.Finish();
  return g;
}

std::pair<std::string, YAML::Node> ParseGeneratorSpec(const std::string& spec) {
  const size_t colon = spec.find(':');
  std::string name = spec.substr(0, colon);
  if (name.empty())
    throw ConfigError("generator spec '" + spec + "' has no generator name", {}, "write gen:NAME[:k=v,...]");
  YAML::Node params(YAML::NodeType::Map);
  if (colon == std::string::npos) return {name, params};
  const std::string rest = spec.substr(colon + 1);
  // Split at commas outside brackets.
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char ch : rest) {
    if (ch == '[' || ch == '{') ++depth;
    if (ch == ']' || ch == '}') --depth;
    if (ch == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += ch;
    }
  }
  parts.push_back(current);
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("generator parameter '" + part + "' is not of the form key=value", {},
                        "write e.g. gen:gnmt:layers=8,training=true");
    }
    const std::string key = part.substr(0, eq);
    params[key] = LoadYamlString(part.substr(eq + 1), "generator parameter " + key);
  }
  return {name, params};
}

Graph AugmentTensorSizes(const Graph& graph, uint64_t seed, int64_t index, double sigma,
                         const std::string& new_name) {
  Rng rng = Rng::Derive(seed, {0x617567ULL /* "aug" */, static_cast<uint64_t>(index)});
  std::vector<int64_t> new_bytes(static_cast<size_t>(graph.num_tensors()));
  std::vector<bool> changed(new_bytes.size(), false);
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    const Node& node = graph.node(n);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const TensorId t = graph.tensor(n, static_cast<int32_t>(k));
      const int64_t old = node.outputs[k].bytes;
      int64_t b = old;
      if (index != 0 && old > 0) {
        const double scaled = static_cast<double>(old) * rng.LogNormal(0.0, sigma);
        if (old % 4 == 0) {
          b = std::max<int64_t>(4, 4 * std::llround(scaled / 4.0));
        } else {
          b = std::max<int64_t>(1, std::llround(scaled));
        }
      }
      new_bytes[static_cast<size_t>(t)] = b;
      changed[static_cast<size_t>(t)] = b != old;
    }
  }
  GraphBuilder builder(new_name.empty() ? graph.name() + "_aug" + std::to_string(index) : new_name,
                       graph.source());
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    const Node& node = graph.node(n);
    NodeSpec s;
    s.name = node.name;
    s.op = graph.op_type_name(node.op);
    s.flops = node.flops;
    s.bytes_read = node.bytes_read;
    s.bytes_written = node.bytes_written;
    s.outputs = node.outputs;
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      const size_t t = static_cast<size_t>(graph.tensor(n, static_cast<int32_t>(k)));
      if (!changed[t]) continue;
      s.bytes_written = std::max<int64_t>(0, s.bytes_written + new_bytes[t] - s.outputs[k].bytes);
      s.outputs[k].bytes = new_bytes[t];
      s.outputs[k].shape.clear();  // the size no longer follows from a shape
    }
    for (EdgeId e : graph.in_edges(n)) {
      const Edge& edge = graph.edge(e);
      if (edge.is_control()) continue;
      const size_t t = static_cast<size_t>(graph.tensor(edge.src, edge.output_index));
      if (changed[t]) s.bytes_read = std::max<int64_t>(0, s.bytes_read + new_bytes[t] - edge.bytes);
    }
    s.persistent_bytes = node.persistent_bytes;
    if (node.colocation >= 0) s.colocation = graph.colocation_groups()[static_cast<size_t>(node.colocation)];
    s.scope = node.scope;
    s.phase = node.phase;
    s.measured = node.measured;
    builder.AddNode(std::move(s));
  }
  for (const Edge& e : graph.edges()) builder.AddEdge(e.src, e.dst, e.output_index);
  return builder.Build();
}

}  // namespace gosim::graphs
