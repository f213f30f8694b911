#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/cluster.h"

namespace gosim::sim {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message of the ConfigError that loading `name` raises.
std::string LoadError(const std::string& name) {
  try {
    LoadCluster(name);
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    return e.what();
  }
  FAIL("no error loading " << name);
  return "";
}

std::vector<int32_t> Resources(const Cluster& c, const std::vector<std::string>& names) {
  std::vector<int32_t> out;
  for (const std::string& name : names) {
    out.push_back(c.FindResource(name));
    CHECK_MESSAGE(out.back() >= 0, "no resource " << name);
  }
  return out;
}

// Every pair of distinct devices has a route starting and ending right.
void CheckRoutes(const Cluster& c) {
  for (int32_t s = 0; s < c.num_devices(); ++s) {
    for (int32_t d = 0; d < c.num_devices(); ++d) {
      if (s == d) continue;
      const std::vector<int32_t>& route = c.Route(s, d);
      REQUIRE_FALSE(route.empty());
      CHECK(c.link(route.front()).src == s);
      CHECK(c.link(route.back()).dst == d);
    }
  }
}

}  // namespace

TEST_CASE("p100x4_pcie:gpus=N replicates the two-GPU PCIe switch") {
  const Cluster c = LoadCluster("p100x4_pcie:gpus=6");
  CHECK(c.name() == "p100x4_pcie:gpus=6");
  REQUIRE(c.num_devices() == 6);
  for (int32_t d = 0; d < 6; ++d) {
    CHECK(c.device(d).name == "gpu" + std::to_string(d));
    CHECK(c.device(d).kind == "P100");
    CHECK(c.device(d).memory_capacity == 16LL << 30);
  }
  // 3 P2P pairs both ways + 6 GPUs to and from the host.
  CHECK(c.num_links() == 6 + 12);
  // Per GPU tx / rx, per switch up / down.
  CHECK(c.num_resources() == 12 + 6);
  CheckRoutes(c);
  REQUIRE(c.Route(4, 5).size() == 1);
  CHECK(c.link(c.Route(4, 5)[0]).resources == Resources(c, {"gpu4.pcie_tx", "gpu5.pcie_rx"}));
  REQUIRE(c.Route(1, 4).size() == 2);
  CHECK(c.link(c.Route(1, 4)[0]).resources == Resources(c, {"gpu1.pcie_tx", "pcie_switch0.up"}));
  CHECK(c.link(c.Route(1, 4)[1]).resources == Resources(c, {"pcie_switch2.down", "gpu4.pcie_rx"}));
  CHECK(c.Route(3, 4).size() == 2);  // switch 1 -> host -> switch 2

  // Three GPUs: the second switch holds one.
  const Cluster three = LoadCluster("p100x4_pcie:gpus=3");
  CHECK(three.num_devices() == 3);
  CHECK(three.num_links() == 2 + 6);
  CHECK(three.num_resources() == 6 + 4);
  CheckRoutes(three);
  // gpus=4 is the preset itself, link for link.
  const Cluster four = LoadCluster("p100x4_pcie:gpus=4"), preset = LoadCluster("p100x4_pcie");
  REQUIRE(four.num_links() == preset.num_links());
  CHECK(four.num_resources() == preset.num_resources());
  for (int32_t s = 0; s < 4; ++s) {
    for (int32_t d = 0; d < 4; ++d) {
      if (s == d) continue;
      REQUIRE(four.Route(s, d).size() == preset.Route(s, d).size());
      for (size_t k = 0; k < four.Route(s, d).size(); ++k) {
        const LinkSpec& a = four.link(four.Route(s, d)[k]);
        const LinkSpec& b = preset.link(preset.Route(s, d)[k]);
        CHECK(a.bandwidth == b.bandwidth);
        CHECK(a.latency == b.latency);
        REQUIRE(a.resources.size() == b.resources.size());
        for (size_t r = 0; r < a.resources.size(); ++r)
          CHECK(four.resource(a.resources[r]).name == preset.resource(b.resources[r]).name);
      }
    }
  }
}

TEST_CASE("k80x2:gpus=N adds boards of two GPUs; an odd count is refused") {
  const Cluster c = LoadCluster("k80x2:gpus=4");
  const Cluster k80x4 = LoadCluster("k80x4");
  CHECK(c.num_devices() == 4);
  CHECK(c.num_links() == k80x4.num_links());
  CHECK(c.num_links() == 4 + 8);
  CHECK(c.num_resources() == 4);
  REQUIRE(c.Route(1, 2).size() == 2);
  CHECK(c.link(c.Route(1, 2)[0]).resources == Resources(c, {"board0_uplink.up"}));
  CHECK(c.link(c.Route(1, 2)[1]).resources == Resources(c, {"board1_uplink.down"}));
  CHECK(LoadCluster("k80x4:gpus=8").num_links() == 8 + 16);
  CHECK(LoadCluster("k80x4:gpus=2").num_links() == 2 + 4);
  CHECK(Contains(LoadError("k80x2:gpus=3"), "groups of 2"));
}

TEST_CASE("dgx1_v100:gpus=N keeps the first N GPUs of the hybrid cube mesh") {
  const Cluster c = LoadCluster("dgx1_v100:gpus=4");
  REQUIRE(c.num_devices() == 4);
  // gpu0-3 are fully connected by NVLink (12 directed links) + 8 host links.
  CHECK(c.num_links() == 12 + 8);
  CHECK(c.num_resources() == 4);  // the uplinks of PCIe switches 0 and 1
  for (int32_t s = 0; s < 4; ++s) {
    for (int32_t d = 0; d < 4; ++d) {
      if (s != d) CHECK(c.Route(s, d).size() == 1);
    }
  }
  CHECK(c.link(c.Route(0, 3)[0]).bandwidth == 50e9);
  CHECK(c.link(c.Route(0, 1)[0]).bandwidth == 25e9);
  // Six GPUs: gpu0-5, where gpu0 and gpu5 have no NVLink.
  const Cluster six = LoadCluster("dgx1_v100:gpus=6");
  CHECK(six.Route(0, 5).size() == 2);
  CheckRoutes(six);
  CHECK(Contains(LoadError("dgx1_v100:gpus=9"), "first N of its 8 devices"));
  CHECK(Contains(LoadError("dgx1_v100:gpus=0"), "cannot have gpus=0"));
}

TEST_CASE("NVSwitch presets take any number of GPUs") {
  const Cluster c = LoadCluster("a100x8_nvswitch:gpus=12");
  REQUIRE(c.num_devices() == 12);
  CHECK(c.num_links() == 12 * 11 + 24);
  CHECK(c.num_resources() == 24 + 12);  // NVLink ports, 6 PCIe switches up / down
  CheckRoutes(c);
  REQUIRE(c.Route(0, 11).size() == 1);
  CHECK(c.link(c.Route(0, 11)[0]).bandwidth == 300e9);
  CHECK(c.link(c.Route(0, 11)[0]).resources == Resources(c, {"gpu0.nvlink_tx", "gpu11.nvlink_rx"}));
  CHECK(c.link(c.Route(8, 0)[0]).resources == Resources(c, {"gpu8.nvlink_tx", "gpu0.nvlink_rx"}));
  const LinkSpec& up = c.link(c.FindLink(10, Cluster::kHost));
  CHECK(up.resources == Resources(c, {"pcie_switch5.up"}));
  const Cluster two = LoadCluster("h100x8_nvswitch:gpus=2");
  CHECK(two.num_links() == 2 + 4);
  CHECK(two.link(two.Route(0, 1)[0]).bandwidth == 450e9);
  CHECK(LoadCluster("a100x8_nvswitch:gpus=8").num_links() == LoadCluster("a100x8_nvswitch").num_links());
}

TEST_CASE("Cluster parameters: one-line errors for what makes no sense") {
  CHECK(Contains(LoadError("2node_16gpu_200g:gpus=4"), "takes no gpus=N"));
  CHECK(Contains(LoadError("local:gpus=4"), "takes no gpus=N"));
  CHECK(Contains(LoadError("p100x4_pcie:gpu=6"), "Did you mean 'gpus'?"));
  CHECK(Contains(LoadError("p100x4_pcie:gpus=six"), "not a whole number"));
  CHECK(Contains(LoadError("p100x4_pcie:gpus=2000"), "1 to 1024"));
  CHECK(Contains(LoadError("p100x4_pcie:gpus=6:gpus=2"), "takes no gpus=N"));
  CHECK(Contains(LoadError("p100x4_pcie:gpus=-1"), "cannot have gpus=-1"));
  // A file path takes them too.
  CHECK(LoadCluster("configs/clusters/p100x4_pcie.yaml:gpus=2").num_devices() == 2);
}

TEST_CASE("count: 0 in a cluster file is an error, not one device") {
  const std::string device = "kind: X, peak_flops_fp32: 1, memory_bandwidth: 1, memory_capacity: 1}\n";
  try {
    ParseCluster("devices:\n  - {name: gpu, count: 0, " + device, "zero.yaml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.where().path == "devices[0].count");
    CHECK(Contains(e.what(), "count must be between 1 and 65536, not 0"));
  }
  const Cluster one = ParseCluster("devices:\n  - {name: gpu, " + device, "one.yaml");
  REQUIRE(one.num_devices() == 1);
  CHECK(one.device(0).name == "gpu");
  CHECK(ParseCluster("devices:\n  - {name: gpu, count: 1, " + device, "c.yaml").device(0).name == "gpu0");
}

}  // namespace gosim::sim
