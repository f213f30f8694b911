// ScaleCluster: a cluster preset with another number of devices
// (`p100x4_pcie:gpus=6`), following the preset's `scaling` (sim/cluster.h).
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sim/cluster.h"

namespace gosim::sim {
namespace {

// "gpu12" -> {"gpu", 12}; nullopt without a trailing number.
std::optional<std::pair<std::string, int64_t>> SplitIndex(const std::string& name) {
  size_t start = name.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
  if (start == name.size() || name.size() - start > 6) return std::nullopt;
  return std::make_pair(name.substr(0, start), std::stoll(name.substr(start)));
}

// The first run of digits in `name` as (position, length), or nullopt.
std::optional<std::pair<size_t, size_t>> FirstNumber(const std::string& name) {
  const size_t begin = name.find_first_of("0123456789");
  if (begin == std::string::npos) return std::nullopt;
  size_t end = begin;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end - begin > 6) return std::nullopt;
  return std::make_pair(begin, end - begin);
}

// Replicates `base` to `n` devices (kGroups, kFabric).
class Replicator {
 public:
  Replicator(const Cluster& base, int32_t n, const Location& where)
      : base_(base), n_(n), g_(base.scaling().group), where_(where) {
    const int32_t count = base.num_devices();
    groups_ = count / g_;
    for (int32_t d = 0; d < count; ++d) {
      const auto split = SplitIndex(base.device(d).name);
      if (!split || split->second != d || (d > 0 && split->first != prefix_)) {
        Refuse("its devices are not named PREFIX0..PREFIX" + std::to_string(count - 1));
      }
      prefix_ = split->first;
    }
  }

  Cluster Build() {
    std::vector<LinkSpec> links;
    std::vector<std::vector<std::string>> link_resources;
    auto add = [&](const LinkSpec& tmpl, int32_t src, int32_t dst, const std::map<int32_t, int32_t>& map) {
      LinkSpec link = tmpl;
      link.name.clear();
      link.src = src;
      link.dst = dst;
      link.resources.clear();
      std::vector<std::string> names;
      for (int32_t r : tmpl.resources) names.push_back(MapResource(r, map));
      links.push_back(std::move(link));
      link_resources.push_back(std::move(names));
    };
    const bool fabric = base_.scaling().mode == ClusterScaling::Mode::kFabric;
    for (const LinkSpec& l : base_.links()) {
      if (l.dst == Cluster::kHost || l.src == Cluster::kHost) {
        const int32_t device = l.dst == Cluster::kHost ? l.src : l.dst;
        for (int32_t i = 0; i < n_; ++i) {
          if (Template(i) != device) continue;
          if (l.dst == Cluster::kHost) {
            add(l, i, Cluster::kHost, {{device, i}});
          } else {
            add(l, Cluster::kHost, i, {{device, i}});
          }
        }
        continue;
      }
      if (fabric) continue;  // every device pair below
      if (l.src / g_ != l.dst / g_) {
        Refuse("link " + l.name + " joins two of its groups of " + std::to_string(g_) +
               " devices, which replication cannot repeat");
      }
      for (int32_t j = 0; j * g_ < n_; ++j) {
        if (j % groups_ != l.src / g_) continue;
        const int32_t i = j * g_ + l.src % g_, k = j * g_ + l.dst % g_;
        if (i < n_ && k < n_) add(l, i, k, {{l.src, i}, {l.dst, k}});
      }
    }
    if (fabric) {
      for (int32_t i = 0; i < n_; ++i) {
        for (int32_t k = 0; k < n_; ++k) {
          if (i == k) continue;
          const int32_t a = Template(i);
          int32_t b = Template(k);
          if (b == a) b = (a + 1) % base_.num_devices();
          const int32_t l = base_.FindLink(a, b);
          if (l < 0 || a == b) Refuse("not every pair of its devices has a direct link");
          add(base_.link(l), i, k, {{a, i}, {b, k}});
        }
      }
    }

    ClusterBuilder builder(base_.name() + ":gpus=" + std::to_string(n_), base_.name());
    builder.SetDescription(base_.description() + ", scaled to " + std::to_string(n_) + " devices");
    builder.SetHost(base_.host());
    for (int32_t i = 0; i < n_; ++i) {
      DeviceSpec device = base_.device(Template(i));
      device.name = prefix_ + std::to_string(i);
      builder.AddDevice(device);
    }
    std::map<std::string, int32_t> resource_index;
    for (size_t l = 0; l < links.size(); ++l) {
      for (const std::string& name : link_resources[l]) {
        auto it = resource_index.find(name);
        if (it == resource_index.end()) {
          const int32_t index = builder.AddResource(SharedResource{name, resource_bandwidth_.at(name)});
          it = resource_index.emplace(name, index).first;
        }
        links[l].resources.push_back(it->second);
      }
      builder.AddLink(links[l]);
    }
    return builder.Build();
  }

 private:
  [[noreturn]] void Refuse(const std::string& why) const {
    throw ConfigError("cluster '" + base_.name() + "' cannot be scaled: " + why, where_,
                      "fix its scaling: entry, or write the cluster out in YAML");
  }

  // The device of `base_` that new device `i` copies.
  int32_t Template(int32_t i) const { return (i / g_) % groups_ * g_ + i % g_; }

  // The name of base resource `r` on a link whose endpoints map as `map`
  // (base device -> new device).
  std::string MapResource(int32_t r, const std::map<int32_t, int32_t>& map) {
    const SharedResource& res = base_.resource(r);
    std::string name = res.name;
    for (const auto& [from, to] : map) {
      const std::string& device = base_.device(from).name;
      if (name.size() > device.size() && name.compare(0, device.size() + 1, device + ".") == 0) {
        name = prefix_ + std::to_string(to) + name.substr(device.size());
        resource_bandwidth_[name] = res.bandwidth;
        return name;
      }
    }
    if (const auto number = FirstNumber(name)) {
      const int64_t group = std::stoll(name.substr(number->first, number->second));
      for (const auto& [from, to] : map) {
        if (from / g_ == group) {
          name.replace(number->first, number->second, std::to_string(to / g_));
          break;
        }
      }
    }
    resource_bandwidth_[name] = res.bandwidth;
    return name;
  }

  const Cluster& base_;
  const int32_t n_;
  const int32_t g_;
  const Location& where_;
  int32_t groups_ = 1;
  std::string prefix_;
  std::map<std::string, double> resource_bandwidth_;
};

// The first `n` devices of `base`, with the links and resources among them.
Cluster Subset(const Cluster& base, int32_t n) {
  ClusterBuilder builder(base.name() + ":gpus=" + std::to_string(n), base.name());
  builder.SetDescription(base.description() + ", its first " + std::to_string(n) + " devices");
  builder.SetHost(base.host());
  for (int32_t i = 0; i < n; ++i) builder.AddDevice(base.device(i));
  std::map<int32_t, int32_t> resource_index;
  auto kept = [n](int32_t endpoint) { return endpoint == Cluster::kHost || endpoint < n; };
  for (const LinkSpec& l : base.links()) {
    if (!kept(l.src) || !kept(l.dst)) continue;
    LinkSpec link = l;
    link.resources.clear();
    for (int32_t r : l.resources) {
      auto it = resource_index.find(r);
      if (it == resource_index.end())
        it = resource_index.emplace(r, builder.AddResource(base.resource(r))).first;
      link.resources.push_back(it->second);
    }
    builder.AddLink(link);
  }
  return builder.Build();
}

}  // namespace

Cluster ScaleCluster(const Cluster& base, int32_t devices, const Location& where) {
  const ClusterScaling& s = base.scaling();
  const int32_t count = base.num_devices();
  const std::string n = std::to_string(devices);
  if (s.mode == ClusterScaling::Mode::kNone) {
    throw ConfigError(
        "cluster '" + base.name() + "' takes no gpus=N", where,
        "only clusters with a scaling: key take it (docs/SIMULATOR.md, presets with parameters); "
        "or write the cluster out in YAML");
  }
  const int32_t max =
      s.max > 0 ? s.max : (s.mode == ClusterScaling::Mode::kSubset ? count : ClusterBuilder::kMaxDevices);
  if (devices < 1 || devices > max) {
    const std::string why = s.mode == ClusterScaling::Mode::kSubset
                                ? "gpus=N takes the first N of its " + std::to_string(count) + " devices"
                                : "gpus=N allows 1 to " + std::to_string(max) + " devices";
    throw ConfigError("cluster '" + base.name() + "' cannot have gpus=" + n + ": " + why, where,
                      "give gpus between 1 and " + std::to_string(max));
  }
  switch (s.mode) {
    case ClusterScaling::Mode::kSubset:
      return Subset(base, devices);
    case ClusterScaling::Mode::kGroups:
      if (!s.partial && devices % s.group != 0) {
        throw ConfigError("cluster '" + base.name() + "' cannot have gpus=" + n +
                              ": its devices come in groups of " + std::to_string(s.group) +
                              " (a board or switch)",
                          where, "give a multiple of " + std::to_string(s.group));
      }
      return Replicator(base, devices, where).Build();
    case ClusterScaling::Mode::kFabric:
      return Replicator(base, devices, where).Build();
    case ClusterScaling::Mode::kNone:
      break;
  }
  throw ConfigError("unknown cluster scaling", where);
}

}  // namespace gosim::sim
