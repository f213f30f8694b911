// The cluster YAML reader: YAML -> ClusterBuilder calls, with every error
// pointing at the YAML line and path that caused it. Schema: docs/SIMULATOR.md.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "core/data_path.h"
#include "core/error.h"
#include "core/io.h"
#include "core/strings.h"
#include "core/yaml.h"
#include "sim/cluster.h"
#include "sim/units.h"

namespace gosim::sim {
namespace {

constexpr const char* kPresetDir = "configs/clusters";

// A required (no fallback) or optional quantity of a mapping.
double ReadQuantity(YamlMap& m, const std::string& key, sim::Quantity kind, std::optional<double> fallback) {
  const YAML::Node node = m.Node(key);
  if (!node || node.IsNull()) {
    if (!fallback) m.Fail("", "missing required key '" + key + "'", std::string(QuantityExamples(kind)));
    return *fallback;
  }
  return YamlQuantity(node, kind, m.file(), m.ChildPath(key));
}

int64_t ByteCount(YamlMap& m, const std::string& key, std::optional<double> fallback) {
  const double bytes = ReadQuantity(m, key, sim::Quantity::kBytes, fallback);
  if (std::fabs(bytes) > 9.0e18) m.Fail(key, "size is too large", "sizes must fit in 64 bits");
  return std::llround(bytes);
}

// Runs `add` (a ClusterBuilder call) and moves any error it throws to the
// exact line of the key it names inside `entry`.
template <typename F>
auto Located(const YamlMap& entry, F&& add) {
  try {
    return add();
  } catch (const ConfigError& e) {
    const std::string prefix = entry.path() + ".";
    std::string key;
    if (StartsWith(e.where().path, prefix)) key = e.where().path.substr(prefix.size());
    Location where = entry.Where(key);
    if (!key.empty() && where.path != entry.ChildPath(key)) where.path = entry.ChildPath(key);
    throw ConfigError(e.message(), where, e.hint());
  }
}

// A scalar or a list of scalars, as strings.
std::vector<std::string> StringList(YamlMap& m, const std::string& key, bool required) {
  const YAML::Node node = m.Node(key);
  std::vector<std::string> out;
  if (!node || node.IsNull()) {
    if (required) m.Fail("", "missing required key '" + key + "'");
    return out;
  }
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
    return out;
  }
  if (!node.IsSequence()) m.Fail(key, "expected a name or a list of names");
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar()) {
      throw ConfigError("expected a name",
                        YamlLocation(node[i], m.file(), m.ChildPath(key) + "[" + std::to_string(i) + "]"));
    }
    out.push_back(node[i].Scalar());
  }
  return out;
}

std::vector<std::string> ExpandAt(const std::string& pattern, const YamlMap& m, const std::string& key) {
  try {
    return ExpandNamePattern(pattern);
  } catch (const ConfigError& e) {
    throw ConfigError(e.message() + " ('" + pattern + "')", m.Where(key), e.hint());
  }
}

std::string Substitute(std::string text, const std::string& src, const std::string& dst) {
  for (const auto& [token, value] :
       {std::pair<std::string, const std::string&>{"{src}", src}, {"{dst}", dst}}) {
    for (size_t pos = text.find(token); pos != std::string::npos;
         pos = text.find(token, pos + value.size())) {
      text.replace(pos, token.size(), value);
    }
  }
  return text;
}

class ClusterReader {
 public:
  ClusterReader(const YAML::Node& root, const std::string& source) : root_(YamlMap::Root(root, source)) {}

  Cluster Read(const std::string& default_name) {
    root_.Allow({"name", "description", "host", "devices", "resources", "links", "mesh", "scaling"});
    root_.Finish();
    ClusterBuilder builder(root_.Get<std::string>("name", default_name), root_.file());
    builder_ = &builder;
    builder.SetDescription(root_.Get<std::string>("description", ""));
    ReadHost();
    for (YamlMap& entry : root_.ChildList("devices")) ReadDevice(entry);
    for (YamlMap& entry : root_.ChildList("resources")) ReadResource(entry);
    for (YamlMap& entry : root_.ChildList("links")) ReadLink(entry);
    if (root_.Has("mesh")) ReadMesh();
    if (builder.num_devices() == 0) {
      throw ConfigError("the cluster has no devices", root_.Where("devices"),
                        "add at least one entry under devices:");
    }
    if (root_.Has("scaling")) builder.SetScaling(ReadScaling(builder.num_devices()));
    return builder.Build();
  }

 private:
  // `scaling: {mode: subset|groups|fabric, group: N, partial: bool, max: N}`
  // (sim/cluster.h ClusterScaling).
  ClusterScaling ReadScaling(int32_t devices) {
    YamlMap m = root_.Child("scaling");
    m.Allow({"mode", "group", "partial", "max"});
    m.Finish();
    ClusterScaling s;
    const std::string mode = m.Require<std::string>("mode");
    const std::vector<std::string> modes = {"none", "subset", "groups", "fabric"};
    if (mode == "none") {
      s.mode = ClusterScaling::Mode::kNone;
    } else if (mode == "subset") {
      s.mode = ClusterScaling::Mode::kSubset;
    } else if (mode == "groups") {
      s.mode = ClusterScaling::Mode::kGroups;
    } else if (mode == "fabric") {
      s.mode = ClusterScaling::Mode::kFabric;
    } else {
      m.Fail("mode", "unknown scaling mode '" + mode + "'." + DidYouMean(mode, modes),
             "valid values are: " + Join(modes, ", "));
    }
    const int64_t group = m.Get<int64_t>("group", 1);
    if (group < 1 || group > devices || devices % group != 0) {
      m.Fail("group", "group must divide the cluster's " + std::to_string(devices) + " devices");
    }
    s.group = static_cast<int32_t>(group);
    s.partial = m.Get<bool>("partial", false);
    const int64_t max = m.Get<int64_t>("max", 0);
    if (max < 0 || max > ClusterBuilder::kMaxDevices) {
      m.Fail("max",
             "max must be between 1 and " + std::to_string(ClusterBuilder::kMaxDevices) + " (or left out)");
    }
    s.max = static_cast<int32_t>(max);
    return s;
  }

  void ReadHost() {
    if (!root_.Has("host")) {
      endpoints_["host"] = Cluster::kHost;
      endpoint_names_.push_back("host");
      return;
    }
    YamlMap m = root_.Child("host");
    m.Allow({"name", "kind", "memory_capacity", "execution", "processes"});
    m.Finish();
    HostSpec host;
    host.name = m.Get<std::string>("name", "host");
    host.kind = m.Get<std::string>("kind", "");
    host.memory_capacity = ByteCount(m, "memory_capacity", 0.0);
    if (m.Has("execution")) {
      const std::string text = m.Get<std::string>("execution", "");
      const std::optional<Execution> e = ParseExecution(text);
      if (!e)
        m.Fail("execution", "unknown execution '" + text + "'", "give auto, none, eager, graph or captured");
      host.execution = *e;
    }
    if (m.Has("processes")) {
      const std::string text = m.Get<std::string>("processes", "");
      const std::optional<Processes> p = ParseProcesses(text);
      if (!p) m.Fail("processes", "unknown processes '" + text + "'", "give auto, one or per_device");
      host.processes = *p;
    }
    Located(m, [&] {
      builder_->SetHost(host, m.Where());
      return 0;
    });
    endpoints_[host.name] = Cluster::kHost;
    endpoint_names_.push_back(host.name);
  }

  // `role: cpu | accelerator`; absent: cpu for kind "cpu" (any case).
  static DeviceRole ReadRole(YamlMap& m, const std::string& kind) {
    if (!m.Has("role")) {
      const bool cpu = kind.size() == 3 && ContainsIgnoreCase(kind, "cpu");
      return cpu ? DeviceRole::kCpu : DeviceRole::kAccelerator;
    }
    const std::string role = m.Get<std::string>("role", "");
    if (role == "cpu") return DeviceRole::kCpu;
    if (role == "accelerator") return DeviceRole::kAccelerator;
    m.Fail("role",
           "role must be cpu or accelerator, not '" + role + "'." + DidYouMean(role, {"cpu", "accelerator"}),
           "cpu: the device takes a graph's measured times for \"cpu\", never those for \"any\"");
  }

  // Each reader checks for unknown keys first: a typo is reported as such
  // rather than as the required key it misspells.
  void ReadDevice(YamlMap& m) {
    m.Allow({"name", "count", "kind", "peak_flops_fp32", "peak_flops_fp16", "peak_flops_tf32",
             "peak_flops_fp64", "memory_bandwidth", "memory_capacity", "launch_overhead", "role"});
    m.Finish();
    const std::string pattern = m.Require<std::string>("name");
    // No count: one device named as written. A count of 0 is not "one".
    const int64_t count = m.Get<int64_t>("count", 0);
    if (m.Has("count") && (count < 1 || count > 65536)) {
      m.Fail("count", "count must be between 1 and 65536, not " + std::to_string(count),
             "leave count out for one device named as written");
    }
    DeviceSpec spec;
    spec.kind = m.Require<std::string>("kind");
    spec.peak_flops_fp32 = ReadQuantity(m, "peak_flops_fp32", sim::Quantity::kFlopRate, std::nullopt);
    spec.peak_flops_fp16 = ReadQuantity(m, "peak_flops_fp16", sim::Quantity::kFlopRate, 0.0);
    spec.peak_flops_fp64 = ReadQuantity(m, "peak_flops_fp64", sim::Quantity::kFlopRate, 0.0);
    spec.peak_flops_tf32 = ReadQuantity(m, "peak_flops_tf32", sim::Quantity::kFlopRate, 0.0);
    spec.memory_bandwidth = ReadQuantity(m, "memory_bandwidth", sim::Quantity::kBandwidth, std::nullopt);
    spec.memory_capacity = ByteCount(m, "memory_capacity", std::nullopt);
    spec.launch_overhead = ReadQuantity(m, "launch_overhead", sim::Quantity::kSeconds, 0.0);
    spec.role = ReadRole(m, spec.kind);
    const std::vector<std::string> bases = ExpandAt(pattern, m, "name");
    const int64_t copies = count == 0 ? 1 : count;
    if (static_cast<int64_t>(bases.size()) * copies + builder_->num_devices() > ClusterBuilder::kMaxDevices) {
      m.Fail("name", "more than " + std::to_string(ClusterBuilder::kMaxDevices) + " devices");
    }
    for (const std::string& base : bases) {
      for (int64_t i = 0; i < copies; ++i) {
        DeviceSpec device = spec;
        device.name = count == 0 ? base : base + std::to_string(i);
        const int32_t index = Located(m, [&] { return builder_->AddDevice(device, m.Where()); });
        endpoints_[device.name] = index;
        endpoint_names_.push_back(device.name);
      }
    }
  }

  void ReadResource(YamlMap& m) {
    m.Allow({"name", "bandwidth"});
    m.Finish();
    const std::string pattern = m.Require<std::string>("name");
    SharedResource spec;
    spec.bandwidth = ReadQuantity(m, "bandwidth", sim::Quantity::kBandwidth, std::nullopt);
    for (const std::string& name : ExpandAt(pattern, m, "name")) {
      SharedResource resource = spec;
      resource.name = name;
      const int32_t index = Located(m, [&] { return builder_->AddResource(resource, m.Where()); });
      resources_[name] = index;
      resource_names_.push_back(name);
    }
  }

  std::vector<int32_t> Endpoints(YamlMap& m, const std::string& key) {
    std::vector<int32_t> out;
    for (const std::string& pattern : StringList(m, key, true)) {
      for (const std::string& name : ExpandAt(pattern, m, key)) {
        const auto it = endpoints_.find(name);
        if (it == endpoints_.end()) {
          m.Fail(key, "unknown link endpoint '" + name + "'." + DidYouMean(name, endpoint_names_),
                 "endpoints are device names or the host ('" + endpoint_names_.front() +
                     "'); devices: " + Join(DeviceNames(), ", "));
        }
        out.push_back(it->second);
      }
    }
    return out;
  }

  std::vector<std::string> DeviceNames() const {
    std::vector<std::string> names(endpoint_names_.begin() + 1, endpoint_names_.end());
    if (names.size() > 12) {
      names.resize(12);
      names.push_back("...");
    }
    return names;
  }

  std::vector<int32_t> Resources(YamlMap& m, const std::string& key, const std::vector<std::string>& patterns,
                                 const std::string& src, const std::string& dst) {
    std::vector<int32_t> out;
    for (const std::string& pattern : patterns) {
      const std::string name = Substitute(pattern, src, dst);
      const auto it = resources_.find(name);
      if (it == resources_.end()) {
        m.Fail(key, "unknown shared resource '" + name + "'." + DidYouMean(name, resource_names_),
               resource_names_.empty() ? "declare it under resources: (name, bandwidth)"
                                       : "declared resources: " + Join(resource_names_, ", "));
      }
      if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
    }
    return out;
  }

  void ReadLink(YamlMap& m) {
    m.Allow({"src", "dst", "type", "bandwidth", "latency", "bidirectional", "connect", "resources",
             "reverse_resources"});
    m.Finish();
    const std::vector<int32_t> srcs = Endpoints(m, "src");
    const std::vector<int32_t> dsts = Endpoints(m, "dst");
    LinkSpec spec;
    spec.type = m.Get<std::string>("type", "");
    spec.bandwidth = ReadQuantity(m, "bandwidth", sim::Quantity::kBandwidth, std::nullopt);
    spec.latency = ReadQuantity(m, "latency", sim::Quantity::kSeconds, 0.0);
    const bool bidirectional = m.Get<bool>("bidirectional", false);
    const std::string connect = m.Get<std::string>("connect", "all_pairs");
    const std::vector<std::string> forward = StringList(m, "resources", false);
    const bool has_reverse = m.Has("reverse_resources");
    const std::vector<std::string> reverse =
        has_reverse ? StringList(m, "reverse_resources", false) : forward;
    if (has_reverse && !bidirectional) {
      m.Fail("reverse_resources", "reverse_resources needs bidirectional: true",
             "remove it, or make the link bidirectional");
    }
    std::vector<std::pair<int32_t, int32_t>> pairs;
    if (connect == "zip") {
      if (srcs.size() != dsts.size()) {
        m.Fail("connect", "connect: zip needs as many sources as destinations (" +
                              std::to_string(srcs.size()) + " vs " + std::to_string(dsts.size()) + ")");
      }
      for (size_t i = 0; i < srcs.size(); ++i) pairs.emplace_back(srcs[i], dsts[i]);
    } else if (connect == "all_pairs") {
      const bool many = srcs.size() > 1 || dsts.size() > 1;
      for (const int32_t s : srcs) {
        for (const int32_t d : dsts) {
          if (!(many && s == d)) pairs.emplace_back(s, d);
        }
      }
    } else {
      m.Fail("connect", "connect must be all_pairs or zip, not '" + connect + "'." +
                            DidYouMean(connect, {"all_pairs", "zip"}));
    }
    std::set<std::pair<int32_t, int32_t>> made;
    const auto add = [&](int32_t s, int32_t d, const std::vector<std::string>& resource_patterns,
                         const std::string& key) {
      if (!made.insert({s, d}).second) return;
      LinkSpec link = spec;
      link.src = s;
      link.dst = d;
      link.resources = Resources(m, key, resource_patterns, EndpointName(s), EndpointName(d));
      Located(m, [&] { return builder_->AddLink(link, m.Where()); });
    };
    for (const auto& [s, d] : pairs) add(s, d, forward, "resources");
    if (bidirectional) {
      for (const auto& [s, d] : pairs) add(d, s, reverse, has_reverse ? "reverse_resources" : "resources");
    }
  }

  // `mesh: {devices: PREFIX, rows: R, cols: C, bandwidth: B, hop_latency: L,
  // type: T}`: the devices PREFIX0 .. PREFIX{R*C-1} (row-major) joined as a
  // 2D mesh (docs/SIMULATOR.md, "Meshes"). Each neighbour pair gets a
  // physical channel per direction, a shared resource "PREFIXa->PREFIXb" of
  // bandwidth B; each ordered pair of mesh devices gets one link of
  // bandwidth B and latency hops x L whose transfers hold every channel of
  // the dimension-order route (X first, then Y) for their duration: a
  // cut-through (wormhole) transfer, so a far pair pays the per-hop latency
  // once per hop but the bytes once, and transfers crossing a channel queue
  // for it.
  void ReadMesh() {
    YamlMap m = root_.Child("mesh");
    m.Allow({"devices", "rows", "cols", "bandwidth", "hop_latency", "type"});
    m.Finish();
    const std::string prefix = m.Require<std::string>("devices");
    const int64_t rows = m.Require<int64_t>("rows");
    const int64_t cols = m.Require<int64_t>("cols");
    if (rows < 1 || cols < 1 || rows * cols < 2 || rows * cols > 1024) {
      m.Fail("rows", "a mesh needs between 2 and 1024 devices (rows x cols), not " + std::to_string(rows) +
                         " x " + std::to_string(cols));
    }
    const double bandwidth = ReadQuantity(m, "bandwidth", sim::Quantity::kBandwidth, std::nullopt);
    const double hop_latency = ReadQuantity(m, "hop_latency", sim::Quantity::kSeconds, 0.0);
    if (!(bandwidth > 0.0)) m.Fail("bandwidth", "bandwidth must be positive");
    if (hop_latency < 0.0) m.Fail("hop_latency", "hop_latency must not be negative");
    const std::string type = m.Get<std::string>("type", "mesh");
    const auto n = static_cast<int32_t>(rows * cols);
    std::vector<int32_t> device(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
      const std::string name = prefix + std::to_string(i);
      const auto it = endpoints_.find(name);
      if (it == endpoints_.end() || it->second == Cluster::kHost) {
        m.Fail("devices",
               "the mesh needs a device '" + name + "' (" + std::to_string(rows) + " x " +
                   std::to_string(cols) + " devices named " + prefix + "0 .. " + prefix +
                   std::to_string(n - 1) + ")",
               "declare them under devices: (name: " + prefix + ", count: " + std::to_string(n) + ")");
      }
      device[static_cast<size_t>(i)] = it->second;
    }
    // One channel (shared resource) per neighbour pair and direction.
    std::map<std::pair<int32_t, int32_t>, int32_t> channel;
    const auto add_channel = [&](int32_t a, int32_t b) {
      SharedResource r;
      r.name = prefix + std::to_string(a) + "->" + prefix + std::to_string(b);
      r.bandwidth = bandwidth;
      const int32_t index = Located(m, [&] { return builder_->AddResource(r, m.Where()); });
      channel[{a, b}] = index;
    };
    for (int32_t i = 0; i < n; ++i) {
      const int32_t r = i / static_cast<int32_t>(cols), c = i % static_cast<int32_t>(cols);
      if (c + 1 < cols) {
        add_channel(i, i + 1);
        add_channel(i + 1, i);
      }
      if (r + 1 < rows) {
        add_channel(i, i + static_cast<int32_t>(cols));
        add_channel(i + static_cast<int32_t>(cols), i);
      }
    }
    for (int32_t s = 0; s < n; ++s) {
      for (int32_t d = 0; d < n; ++d) {
        if (s == d) continue;
        LinkSpec link;
        link.type = type;
        link.bandwidth = bandwidth;
        link.src = device[static_cast<size_t>(s)];
        link.dst = device[static_cast<size_t>(d)];
        int32_t at = s;
        const auto step = [&](int32_t next) {
          link.resources.push_back(channel.at({at, next}));
          at = next;
        };
        const int32_t dc = d % static_cast<int32_t>(cols), dr = d / static_cast<int32_t>(cols);
        while (at % cols != dc) step(at % cols < dc ? at + 1 : at - 1);
        while (at / cols != dr)
          step(at / cols < dr ? at + static_cast<int32_t>(cols) : at - static_cast<int32_t>(cols));
        link.latency = hop_latency * static_cast<double>(link.resources.size());
        Located(m, [&] { return builder_->AddLink(link, m.Where()); });
      }
    }
  }

  const std::string& EndpointName(int32_t e) const {
    return endpoint_names_[e == Cluster::kHost ? 0 : static_cast<size_t>(e) + 1];
  }

  YamlMap root_;
  ClusterBuilder* builder_ = nullptr;
  std::map<std::string, int32_t> endpoints_;
  std::vector<std::string> endpoint_names_;  // host first, then devices in order
  std::map<std::string, int32_t> resources_;
  std::vector<std::string> resource_names_;
};

std::string StemOf(const std::string& source) {
  std::string stem = std::filesystem::path(source).filename().string();
  for (const char* ext : {".yaml", ".yml"}) {
    if (EndsWith(stem, ext)) stem.resize(stem.size() - std::string(ext).size());
  }
  return stem.empty() ? "cluster" : stem;
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ResolveDataPath(kPresetDir), ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Cluster ParseCluster(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root = LoadYamlString(yaml_text, source);
  if (root && !root.IsNull() && !root.IsMap()) {
    throw ConfigError("a cluster file must be a mapping (name, devices, links, ...)",
                      YamlLocation(root, source, ""));
  }
  return ClusterReader(root, source).Read(StemOf(source));
}

Cluster LoadCluster(const std::string& given) {
  // NAME_OR_PATH[:gpus=N]: parameters after the last ':' that holds an '='.
  std::string path_or_preset = given;
  std::optional<int32_t> gpus;
  if (const size_t colon = given.rfind(':'); colon != std::string::npos &&
                                             given.find('=', colon) != std::string::npos &&
                                             given.find('/', colon) == std::string::npos) {
    path_or_preset = given.substr(0, colon);
    for (const std::string& item : Split(given.substr(colon + 1), ',')) {
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (key != "gpus") {
        throw ConfigError("unknown cluster parameter '" + key + "'." + DidYouMean(key, {"gpus"}),
                          Location{given}, "clusters take gpus=N, e.g. p100x4_pcie:gpus=6");
      }
      int32_t n = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (error != std::errc() || end != value.data() + value.size()) {
        throw ConfigError("gpus=" + value + " is not a whole number", Location{given},
                          "write e.g. p100x4_pcie:gpus=6");
      }
      gpus = n;
    }
  }
  if (gpus) return ScaleCluster(LoadCluster(path_or_preset), *gpus, Location{given});
  std::string path = path_or_preset;
  const bool bare = path.find('/') == std::string::npos && !EndsWith(path, ".yaml") &&
                    !EndsWith(path, ".yml") && !EndsWith(path, ".yaml.gz") && !EndsWith(path, ".yml.gz");
  if (bare) path = std::string(kPresetDir) + "/" + path_or_preset + ".yaml";
  path = ResolveDataPath(path);
  if (!FileExists(path)) {
    const std::vector<std::string> presets = PresetNames();
    throw ConfigError("no cluster file '" + path + "'." + (bare ? DidYouMean(path_or_preset, presets) : ""),
                      Location{path_or_preset},
                      presets.empty() ? "give a path to a cluster YAML file"
                                      : "give a path, or one of the presets in " + std::string(kPresetDir) +
                                            ": " + Join(presets, ", "));
  }
  return ParseCluster(ReadFile(path), path);
}

}  // namespace gosim::sim
