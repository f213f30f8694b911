// Cluster, its builder (validation and routes) and name patterns. The YAML
// reader is in cluster_yaml.cc.
#include "sim/cluster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/strings.h"

namespace gosim::sim {

const char* DeviceRoleName(DeviceRole role) {
  return role == DeviceRole::kCpu ? "cpu" : "accelerator";
}

double DeviceSpec::PeakFlops(graphs::DType dtype) const {
  switch (dtype) {
    case graphs::DType::kFloat16:
    case graphs::DType::kBFloat16:
      return peak_flops_fp16 > 0.0 ? peak_flops_fp16 : peak_flops_fp32;
    case graphs::DType::kFloat64:
      return peak_flops_fp64 > 0.0 ? peak_flops_fp64 : peak_flops_fp32;
    case graphs::DType::kTFloat32:
      return peak_flops_tf32 > 0.0 ? peak_flops_tf32 : peak_flops_fp32;
    default:
      return peak_flops_fp32;
  }
}

double DeviceSpec::CeilingFlops(graphs::DType dtype) const {
  const double peak = PeakFlops(dtype);
  return dtype == graphs::DType::kFloat32 || dtype == graphs::DType::kTFloat32
             ? std::max(peak, peak_flops_tf32)
             : peak;
}

int32_t Cluster::FindDevice(const std::string& name) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (devices_[d].name == name) return static_cast<int32_t>(d);
  }
  return -1;
}

int32_t Cluster::FindResource(const std::string& name) const {
  for (size_t r = 0; r < resources_.size(); ++r) {
    if (resources_[r].name == name) return static_cast<int32_t>(r);
  }
  return -1;
}

int32_t Cluster::FindLink(int32_t src, int32_t dst) const {
  for (size_t l = 0; l < links_.size(); ++l) {
    if (links_[l].src == src && links_[l].dst == dst) return static_cast<int32_t>(l);
  }
  return -1;
}

const std::string& Cluster::EndpointName(int32_t endpoint) const {
  return endpoint == kHost ? host_.name : device(endpoint).name;
}

const std::vector<int32_t>& Cluster::Route(int32_t src, int32_t dst) const {
  const size_t n = devices_.size();
  return routes_[static_cast<size_t>(src) * n + static_cast<size_t>(dst)];
}

namespace {

bool Positive(double x) {
  return std::isfinite(x) && x > 0.0;
}
bool NonNegative(double x) {
  return std::isfinite(x) && x >= 0.0;
}

Location At(Location where, const std::string& source, const std::string& key) {
  if (where.file.empty()) where.file = source;
  if (!key.empty()) where.path = where.path.empty() ? key : where.path + "." + key;
  return where;
}

}  // namespace

ClusterBuilder::ClusterBuilder(std::string name, std::string source) : source_(std::move(source)) {
  cluster_.name_ = std::move(name);
}

void ClusterBuilder::SetDescription(std::string description) {
  cluster_.description_ = std::move(description);
}

void ClusterBuilder::SetHost(HostSpec host, Location where) {
  if (host.name.empty()) throw ConfigError("the host needs a name", At(where, source_, "name"));
  if (host.memory_capacity < 0) {
    throw ConfigError("host memory capacity is negative", At(where, source_, "memory_capacity"),
                      "give the host memory in bytes (e.g. 512 GiB), or leave it out");
  }
  if (device_index_.count(host.name) > 0) {
    throw ConfigError("host name '" + host.name + "' is also a device name", At(where, source_, "name"));
  }
  cluster_.host_ = std::move(host);
}

int32_t ClusterBuilder::AddDevice(DeviceSpec device, Location where) {
  if (device.name.empty()) throw ConfigError("a device needs a name", At(where, source_, "name"));
  if (device.name == cluster_.host_.name) {
    throw ConfigError("device name '" + device.name + "' is the host's name", At(where, source_, "name"),
                      "rename the device or the host");
  }
  if (const auto it = device_index_.find(device.name); it != device_index_.end()) {
    const Location& first = device_where_[static_cast<size_t>(it->second)];
    throw ConfigError("duplicate device name '" + device.name + "'", At(where, source_, "name"),
                      first.line > 0 ? "first defined at line " + std::to_string(first.line)
                                     : "device names must be unique");
  }
  const std::string who = "device '" + device.name + "': ";
  if (!Positive(device.peak_flops_fp32)) {
    throw ConfigError(who + "peak_flops_fp32 must be positive", At(where, source_, "peak_flops_fp32"),
                      "write e.g. 15.7 TFLOP/s");
  }
  if (!NonNegative(device.peak_flops_fp16)) {
    throw ConfigError(who + "peak_flops_fp16 must not be negative", At(where, source_, "peak_flops_fp16"),
                      "leave it out (or 0) to use the fp32 peak");
  }
  if (!NonNegative(device.peak_flops_tf32)) {
    throw ConfigError(who + "peak_flops_tf32 must not be negative", At(where, source_, "peak_flops_tf32"),
                      "leave it out (or 0) for a device without TF32 tensor cores");
  }
  if (!NonNegative(device.peak_flops_fp64)) {
    throw ConfigError(who + "peak_flops_fp64 must not be negative", At(where, source_, "peak_flops_fp64"),
                      "leave it out (or 0) to use the fp32 peak");
  }
  if (!Positive(device.memory_bandwidth)) {
    throw ConfigError(who + "memory_bandwidth must be positive", At(where, source_, "memory_bandwidth"),
                      "write e.g. 900 GB/s");
  }
  if (device.memory_capacity <= 0) {
    throw ConfigError(who + (device.memory_capacity < 0 ? "memory_capacity is negative"
                                                        : "memory_capacity must be positive"),
                      At(where, source_, "memory_capacity"), "write e.g. 16 GiB");
  }
  if (!NonNegative(device.launch_overhead)) {
    throw ConfigError(who + "launch_overhead must not be negative", At(where, source_, "launch_overhead"),
                      "write e.g. 5 us");
  }
  if (num_devices() >= kMaxDevices) {
    throw ConfigError("more than " + std::to_string(kMaxDevices) + " devices", At(where, source_, "name"));
  }
  // The role decides which measured times a device takes: one kind, one role.
  for (size_t i = 0; i < cluster_.devices_.size(); ++i) {
    const DeviceSpec& other = cluster_.devices_[i];
    if (other.kind != device.kind || other.role == device.role) continue;
    throw ConfigError(
        who + "role " + DeviceRoleName(device.role) + ", but device '" + other.name + "' of the same kind '" +
            device.kind + "' has role " + DeviceRoleName(other.role),
        At(where, source_, "role"),
        "give every device of a kind the same role (cpu or accelerator), or give them different kinds");
  }
  device_index_.emplace(device.name, num_devices());
  cluster_.devices_.push_back(std::move(device));
  device_where_.push_back(At(where, source_, ""));
  return static_cast<int32_t>(cluster_.devices_.size() - 1);
}

int32_t ClusterBuilder::AddResource(SharedResource resource, Location where) {
  if (resource.name.empty()) throw ConfigError("a shared resource needs a name", At(where, source_, "name"));
  if (resource_index_.count(resource.name) > 0) {
    throw ConfigError("duplicate shared resource '" + resource.name + "'", At(where, source_, "name"),
                      "resource names must be unique");
  }
  if (!Positive(resource.bandwidth)) {
    throw ConfigError("shared resource '" + resource.name + "': bandwidth must be positive",
                      At(where, source_, "bandwidth"), "write e.g. 15.75 GB/s");
  }
  if (cluster_.num_resources() >= kMaxResources) {
    throw ConfigError("more than " + std::to_string(kMaxResources) + " shared resources",
                      At(where, source_, "name"));
  }
  resource_index_.emplace(resource.name, cluster_.num_resources());
  cluster_.resources_.push_back(std::move(resource));
  return static_cast<int32_t>(cluster_.resources_.size() - 1);
}

int32_t ClusterBuilder::AddLink(LinkSpec link, Location where) {
  const int32_t n = num_devices();
  const auto valid_endpoint = [n](int32_t e) { return e == Cluster::kHost || (e >= 0 && e < n); };
  if (!valid_endpoint(link.src)) {
    throw ConfigError("link source " + std::to_string(link.src) + " is not a device or the host",
                      At(where, source_, "src"));
  }
  if (!valid_endpoint(link.dst)) {
    throw ConfigError("link destination " + std::to_string(link.dst) + " is not a device or the host",
                      At(where, source_, "dst"));
  }
  const std::string pair = cluster_.EndpointName(link.src) + "->" + cluster_.EndpointName(link.dst);
  if (link.src == link.dst) {
    throw ConfigError("link " + pair + " connects an endpoint to itself", At(where, source_, "dst"),
                      "a link needs two different endpoints");
  }
  const int64_t key = (int64_t{link.src} + 2) * (kMaxDevices + 2) + link.dst + 2;
  if (const auto it = link_index_.find(key); it != link_index_.end()) {
    const Location& first = link_where_[static_cast<size_t>(it->second)];
    throw ConfigError("a second link " + pair + " (one directed link per pair)", At(where, source_, "dst"),
                      (first.line > 0 ? "the first is at line " + std::to_string(first.line) + "; " : "") +
                          std::string("model parallel cables as one link with their summed bandwidth"));
  }
  if (!Positive(link.bandwidth)) {
    throw ConfigError("link " + pair + ": bandwidth must be positive", At(where, source_, "bandwidth"),
                      "write e.g. 25 GB/s");
  }
  if (!NonNegative(link.latency)) {
    throw ConfigError("link " + pair + ": latency must not be negative", At(where, source_, "latency"),
                      "write e.g. 2 us");
  }
  for (const int32_t r : link.resources) {
    if (r < 0 || r >= static_cast<int32_t>(cluster_.resources_.size())) {
      throw ConfigError(
          "link " + pair + " names shared resource " + std::to_string(r) + ", which does not exist",
          At(where, source_, "resources"));
    }
  }
  if (cluster_.num_links() >= kMaxLinks) {
    throw ConfigError("more than " + std::to_string(kMaxLinks) + " links", At(where, source_, "src"));
  }
  if (link.name.empty()) link.name = pair;
  link_index_.emplace(key, cluster_.num_links());
  cluster_.links_.push_back(std::move(link));
  link_where_.push_back(At(where, source_, ""));
  return static_cast<int32_t>(cluster_.links_.size() - 1);
}

Cluster ClusterBuilder::Build() {
  const int32_t n = num_devices();
  if (n == 0) {
    throw ConfigError("cluster '" + cluster_.name_ + "' has no devices", At({}, source_, "devices"),
                      "add at least one entry under devices:");
  }
  std::vector<int32_t> to_host(static_cast<size_t>(n), -1);
  std::vector<int32_t> from_host(static_cast<size_t>(n), -1);
  std::vector<int32_t> direct(static_cast<size_t>(n) * static_cast<size_t>(n), -1);
  for (size_t l = 0; l < cluster_.links_.size(); ++l) {
    const LinkSpec& link = cluster_.links_[l];
    const auto index = static_cast<int32_t>(l);
    if (link.dst == Cluster::kHost) {
      to_host[static_cast<size_t>(link.src)] = index;
    } else if (link.src == Cluster::kHost) {
      from_host[static_cast<size_t>(link.dst)] = index;
    } else {
      direct[static_cast<size_t>(link.src) * static_cast<size_t>(n) + static_cast<size_t>(link.dst)] = index;
    }
  }
  cluster_.routes_.assign(static_cast<size_t>(n) * static_cast<size_t>(n), {});
  for (int32_t s = 0; s < n; ++s) {
    for (int32_t d = 0; d < n; ++d) {
      if (s == d) continue;
      const size_t k = static_cast<size_t>(s) * static_cast<size_t>(n) + static_cast<size_t>(d);
      if (direct[k] >= 0) {
        cluster_.routes_[k] = {direct[k]};
        continue;
      }
      const int32_t up = to_host[static_cast<size_t>(s)];
      const int32_t down = from_host[static_cast<size_t>(d)];
      if (up >= 0 && down >= 0) {
        cluster_.routes_[k] = {up, down};
        continue;
      }
      const std::string& sname = cluster_.devices_[static_cast<size_t>(s)].name;
      const std::string& dname = cluster_.devices_[static_cast<size_t>(d)].name;
      std::string missing;
      if (up < 0) missing = "no link " + sname + "->" + cluster_.host_.name;
      if (down < 0) {
        missing +=
            std::string(missing.empty() ? "" : " and ") + "no link " + cluster_.host_.name + "->" + dname;
      }
      throw ConfigError(
          "no route from device '" + sname + "' to device '" + dname + "': no direct link, " + missing,
          device_where_[static_cast<size_t>(s)],
          "add a link " + sname + "->" + dname +
              " or links through the host (bidirectional: true "
              "makes both directions)");
    }
  }
  Cluster out = std::move(cluster_);
  cluster_ = Cluster();
  device_where_.clear();
  link_where_.clear();
  device_index_.clear();
  resource_index_.clear();
  link_index_.clear();
  return out;
}

namespace {

// Expands the first bracket group of `pattern` and recurses on the rest.
void Expand(const std::string& prefix, const std::string& rest, std::vector<std::string>* out) {
  constexpr size_t kMaxNames = 1 << 16;
  const size_t open = rest.find('[');
  const size_t stray_close = rest.find(']');
  if (open == std::string::npos) {
    if (stray_close != std::string::npos) throw ConfigError("unbalanced ']' in name pattern");
    out->push_back(prefix + rest);
    if (out->size() > kMaxNames) throw ConfigError("name pattern expands to more than 65536 names");
    return;
  }
  if (stray_close < open) throw ConfigError("unbalanced ']' in name pattern");
  const size_t close = rest.find(']', open);
  if (close == std::string::npos)
    throw ConfigError("unbalanced '[' in name pattern", {}, "write e.g. gpu[0-7]");
  const std::string head = prefix + rest.substr(0, open);
  const std::string body = rest.substr(open + 1, close - open - 1);
  const std::string tail = rest.substr(close + 1);
  if (body.empty()) throw ConfigError("empty '[]' in name pattern", {}, "write e.g. gpu[0-7] or gpu[0,2,4]");
  for (const std::string& item : Split(body, ',')) {
    const size_t dash = item.find('-');
    if (dash == std::string::npos) {
      if (item.empty()) throw ConfigError("empty item in '[" + body + "]'", {}, "write e.g. gpu[0,2,4]");
      Expand(head + item, tail, out);
      continue;
    }
    long long lo = 0;
    long long hi = 0;
    size_t lo_end = 0;
    size_t hi_end = 0;
    try {
      lo = std::stoll(item.substr(0, dash), &lo_end);
      hi = std::stoll(item.substr(dash + 1), &hi_end);
    } catch (const std::exception&) {
      throw ConfigError("range '" + item + "' in name pattern is not of the form a-b", {},
                        "write e.g. gpu[0-7]");
    }
    if (lo_end != dash || hi_end != item.size() - dash - 1 || lo < 0 || hi < lo) {
      throw ConfigError("range '" + item + "' in name pattern is not of the form a-b with 0 <= a <= b", {},
                        "write e.g. gpu[0-7]");
    }
    if (hi - lo >= static_cast<long long>(kMaxNames)) {
      throw ConfigError("name pattern expands to more than 65536 names");
    }
    for (long long i = lo; i <= hi; ++i) Expand(head + std::to_string(i), tail, out);
  }
}

}  // namespace

std::vector<std::string> ExpandNamePattern(const std::string& pattern) {
  std::vector<std::string> out;
  Expand("", pattern, &out);
  return out;
}

}  // namespace gosim::sim
