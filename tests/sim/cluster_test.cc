#include "sim/cluster.h"

#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/io.h"
#include "core/rng.h"
#include "sim/units.h"

namespace gosim::sim {
namespace {

// A minimal valid cluster; `extra` is appended to it.
std::string Base(const std::string& extra = {}) {
  return "name: t\n"                                                              // 1
         "devices:\n"                                                             // 2
         "  - name: gpu\n"                                                        // 3
         "    count: 2\n"                                                         // 4
         "    kind: V100\n"                                                       // 5
         "    peak_flops_fp32: 15.7 TFLOP/s\n"                                    // 6
         "    memory_bandwidth: 900 GB/s\n"                                       // 7
         "    memory_capacity: 16 GiB\n"                                          // 8
         "links:\n"                                                               // 9
         "  - {src: gpu0, dst: gpu1, bidirectional: true, bandwidth: 25 GB/s}\n"  // 10
         + extra;
}

// Parses `yaml` and returns the ConfigError it must raise.
ConfigError ErrorOf(const std::string& yaml) {
  try {
    ParseCluster(yaml, "bad.yaml");
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError for:\n" << yaml);
  return ConfigError("unreachable");
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

LinkSpec Link(int32_t src, int32_t dst, double bandwidth, std::vector<int32_t> resources = {}) {
  LinkSpec link;
  link.src = src;
  link.dst = dst;
  link.bandwidth = bandwidth;
  link.resources = std::move(resources);
  return link;
}

SharedResource Resource(const std::string& name, double bandwidth) {
  SharedResource r;
  r.name = name;
  r.bandwidth = bandwidth;
  return r;
}

TEST_CASE("a mesh: one link per ordered pair over dimension-order channels, latency per hop") {
  const std::string yaml =
      "devices:\n"
      "  - {name: c, count: 6, kind: chiplet, peak_flops_fp32: 1 TFLOP/s, memory_bandwidth: 1 TB/s, "
      "memory_capacity: 1 MiB}\n"
      "mesh: {devices: c, rows: 2, cols: 3, bandwidth: 100 GB/s, hop_latency: 20 ns}\n";
  const Cluster cluster = ParseCluster(yaml, "mesh.yaml");
  REQUIRE(cluster.num_devices() == 6);
  CHECK(cluster.num_links() == 30);  // 6 x 5 ordered pairs
  // c0 -> c5: along the row first (c0 -> c1 -> c2), then down (c2 -> c5).
  const std::vector<int32_t>& route = cluster.Route(0, 5);
  REQUIRE(route.size() == 1);
  const LinkSpec& link = cluster.link(route[0]);
  CHECK(link.latency == doctest::Approx(60e-9));
  CHECK(link.bandwidth == doctest::Approx(100e9));
  REQUIRE(link.resources.size() == 3);
  CHECK(cluster.resource(link.resources[0]).name == "c0->c1");
  CHECK(cluster.resource(link.resources[1]).name == "c1->c2");
  CHECK(cluster.resource(link.resources[2]).name == "c2->c5");
  // Neighbours: one hop, one channel; the reverse direction is its own channel.
  const LinkSpec& back = cluster.link(cluster.Route(4, 1)[0]);
  CHECK(back.latency == doctest::Approx(20e-9));
  REQUIRE(back.resources.size() == 1);
  CHECK(cluster.resource(back.resources[0]).name == "c4->c1");
  // The shipped presets load.
  CHECK(LoadCluster("mcm_4x4").num_devices() == 16);
  CHECK(LoadCluster("mcm_6x6").num_devices() == 36);
}

TEST_CASE("a mesh with missing devices or a bad size is refused with the key named") {
  const std::string device =
      "devices:\n  - {name: c, count: 4, kind: chiplet, peak_flops_fp32: 1 TFLOP/s, memory_bandwidth: 1 "
      "TB/s, "
      "memory_capacity: 1 MiB}\n";
  CHECK_THROWS_WITH_AS(
      ParseCluster(device + "mesh: {devices: c, rows: 3, cols: 2, bandwidth: 1 GB/s}\n", "m.yaml"),
      doctest::Contains("needs a device 'c4'"), ConfigError);
  CHECK_THROWS_WITH_AS(
      ParseCluster(device + "mesh: {devices: c, rows: 1, cols: 1, bandwidth: 1 GB/s}\n", "m.yaml"),
      doctest::Contains("between 2 and 1024"), ConfigError);
  CHECK_THROWS_WITH_AS(
      ParseCluster(device + "mesh: {devices: c, rows: 2, cols: 2, bandwith: 1 GB/s}\n", "m.yaml"),
      doctest::Contains("bandwith"), ConfigError);
}

}  // namespace

TEST_CASE("Quantities parse SI numbers and readable units") {
  CHECK(ParseQuantity("900 GB/s", Quantity::kBandwidth) == 900e9);
  CHECK(ParseQuantity("16 GiB/s", Quantity::kBandwidth) == 16.0 * 1024 * 1024 * 1024);
  CHECK(ParseQuantity("200 Gb/s", Quantity::kBandwidth) == 25e9);
  CHECK(ParseQuantity("200 Gbps", Quantity::kBandwidth) == 25e9);
  CHECK(ParseQuantity("100 Gbit/s", Quantity::kBandwidth) == 12.5e9);
  CHECK(ParseQuantity("3.35 TB/s", Quantity::kBandwidth) == doctest::Approx(3.35e12).epsilon(1e-15));
  CHECK(ParseQuantity("1.5e9", Quantity::kBandwidth) == 1.5e9);
  CHECK(ParseQuantity("16 GiB", Quantity::kBytes) == 17179869184.0);
  CHECK(ParseQuantity("40GB", Quantity::kBytes) == 40e9);
  CHECK(ParseQuantity("512 KiB", Quantity::kBytes) == 524288.0);
  CHECK(ParseQuantity("12", Quantity::kBytes) == 12.0);
  CHECK(ParseQuantity("5 us", Quantity::kSeconds) == 5e-6);
  CHECK(ParseQuantity("5 \xC2\xB5s", Quantity::kSeconds) == 5e-6);
  CHECK(ParseQuantity("1.5 ms", Quantity::kSeconds) == 1.5e-3);
  CHECK(ParseQuantity("2ns", Quantity::kSeconds) == 2e-9);
  CHECK(ParseQuantity("15.7 TFLOP/s", Quantity::kFlopRate) == 15.7e12);
  CHECK(ParseQuantity("125 TFLOPS", Quantity::kFlopRate) == 125e12);
  CHECK(ParseQuantity("128 Gflop/s", Quantity::kFlopRate) == 128e9);
  CHECK(ParseQuantity("-3 GB/s", Quantity::kBandwidth) == -3e9);  // the sign is checked by the user

  double value = 0.0;
  std::string error;
  CHECK_FALSE(TryParseQuantity("16 GB", Quantity::kBandwidth, &value, &error));
  CHECK(Contains(error, "unknown unit 'GB'"));
  CHECK_FALSE(TryParseQuantity("GB/s", Quantity::kBandwidth, &value, &error));
  CHECK(Contains(error, "no number"));
  CHECK_FALSE(TryParseQuantity("5 parsecs", Quantity::kSeconds, &value, &error));
  CHECK_FALSE(TryParseQuantity("nan", Quantity::kBytes, &value, &error));
  CHECK_FALSE(TryParseQuantity("inf GB/s", Quantity::kBandwidth, &value, &error));
  CHECK_FALSE(TryParseQuantity("16 Gib", Quantity::kBytes, &value, &error));  // bits are not a size
  CHECK_FALSE(TryParseQuantity("", Quantity::kSeconds, &value, &error));
  CHECK_THROWS_AS(ParseQuantity("1 TFLOP", Quantity::kFlopRate), ConfigError);

  CHECK(FormatBandwidth(900e9) == "900.00 GB/s");
  CHECK(FormatFlopRate(15.7e12) == "15.70 TFLOP/s");
}

TEST_CASE("Name patterns expand ranges and lists") {
  CHECK(ExpandNamePattern("gpu") == std::vector<std::string>{"gpu"});
  CHECK(ExpandNamePattern("gpu[0-2]") == std::vector<std::string>{"gpu0", "gpu1", "gpu2"});
  CHECK(ExpandNamePattern("n[0-1]_gpu[3,5].tx") ==
        std::vector<std::string>{"n0_gpu3.tx", "n0_gpu5.tx", "n1_gpu3.tx", "n1_gpu5.tx"});
  CHECK(ExpandNamePattern("x[a,b]") == std::vector<std::string>{"xa", "xb"});
  CHECK_THROWS_AS(ExpandNamePattern("gpu[0-"), ConfigError);
  CHECK_THROWS_AS(ExpandNamePattern("gpu[3-1]"), ConfigError);
  CHECK_THROWS_AS(ExpandNamePattern("gpu[]"), ConfigError);
  CHECK_THROWS_AS(ExpandNamePattern("gpu0]"), ConfigError);
  CHECK_THROWS_AS(ExpandNamePattern("gpu[0-99999999]"), ConfigError);
}

TEST_CASE("A small cluster parses with counts, units and full-duplex links") {
  const Cluster c = ParseCluster(Base(), "t.yaml");
  CHECK(c.name() == "t");
  REQUIRE(c.num_devices() == 2);
  CHECK(c.device(1).name == "gpu1");
  CHECK(c.device(0).kind == "V100");
  CHECK(c.device(0).peak_flops_fp32 == 15.7e12);
  CHECK(c.device(0).memory_bandwidth == 900e9);
  CHECK(c.device(0).memory_capacity == 17179869184LL);
  CHECK(c.device(0).launch_overhead == 0.0);
  CHECK(c.host().name == "host");
  REQUIRE(c.num_links() == 2);
  CHECK(c.link(0).name == "gpu0->gpu1");
  CHECK(c.link(1).name == "gpu1->gpu0");
  CHECK(c.link(1).bandwidth == 25e9);
  CHECK(c.Route(0, 1) == std::vector<int32_t>{0});
  CHECK(c.Route(1, 0) == std::vector<int32_t>{1});
  CHECK(c.Route(0, 0).empty());
  CHECK(c.FindDevice("gpu1") == 1);
  CHECK(c.FindDevice("gpu9") == -1);
  CHECK(c.FindLink(1, 0) == 1);
  CHECK(c.EndpointName(Cluster::kHost) == "host");
}

TEST_CASE("PeakFlops picks the dtype's peak and falls back to fp32") {
  DeviceSpec d;
  d.peak_flops_fp32 = 10.0;
  CHECK(d.PeakFlops(graphs::DType::kFloat16) == 10.0);
  CHECK(d.PeakFlops(graphs::DType::kFloat64) == 10.0);
  d.peak_flops_fp16 = 80.0;
  d.peak_flops_fp64 = 5.0;
  CHECK(d.PeakFlops(graphs::DType::kFloat32) == 10.0);
  CHECK(d.PeakFlops(graphs::DType::kFloat16) == 80.0);
  CHECK(d.PeakFlops(graphs::DType::kBFloat16) == 80.0);
  CHECK(d.PeakFlops(graphs::DType::kFloat64) == 5.0);
  CHECK(d.PeakFlops(graphs::DType::kInt32) == 10.0);
  CHECK(d.PeakFlops(graphs::DType::kUnknown) == 10.0);
  // The ceiling: TF32 lifts fp32 only, and only when higher; the roofline's
  // PeakFlops keeps the fp32 peak.
  CHECK(d.CeilingFlops(graphs::DType::kFloat32) == 10.0);
  d.peak_flops_tf32 = 40.0;
  CHECK(d.CeilingFlops(graphs::DType::kFloat32) == 40.0);
  CHECK(d.PeakFlops(graphs::DType::kFloat32) == 10.0);
  CHECK(d.CeilingFlops(graphs::DType::kBFloat16) == 80.0);
  CHECK(d.CeilingFlops(graphs::DType::kFloat64) == 5.0);
}

TEST_CASE("Routes go through the host when there is no direct link") {
  const Cluster c = ParseCluster(
      "devices:\n"
      "  - {name: g, count: 3, kind: X, peak_flops_fp32: 1e12, memory_bandwidth: 1e11, memory_capacity: "
      "1e9}\n"
      "resources:\n"
      "  - {name: \"sw.up\", bandwidth: 10 GB/s}\n"
      "  - {name: \"sw.down\", bandwidth: 12 GB/s}\n"
      "links:\n"
      "  - {src: g0, dst: g1, bandwidth: 50 GB/s}\n"
      "  - {src: \"g[0-2]\", dst: host, bidirectional: true, bandwidth: 16 GB/s, latency: 2 us,\n"
      "     resources: [sw.up], reverse_resources: [sw.down], type: pcie}\n",
      "r.yaml");
  CHECK(c.name() == "r");  // the file's stem
  const int32_t g0_host = c.FindLink(0, Cluster::kHost);
  const int32_t host_g1 = c.FindLink(Cluster::kHost, 1);
  const int32_t host_g0 = c.FindLink(Cluster::kHost, 0);
  const int32_t g1_host = c.FindLink(1, Cluster::kHost);
  CHECK(c.Route(0, 1) == std::vector<int32_t>{c.FindLink(0, 1)});
  CHECK(c.Route(1, 0) == std::vector<int32_t>{g1_host, host_g0});
  CHECK(c.Route(0, 2) == std::vector<int32_t>{g0_host, c.FindLink(Cluster::kHost, 2)});
  CHECK(c.link(g0_host).resources == std::vector<int32_t>{c.FindResource("sw.up")});
  CHECK(c.link(host_g1).resources == std::vector<int32_t>{c.FindResource("sw.down")});
  CHECK(c.link(host_g1).latency == 2e-6);
  CHECK(c.link(host_g1).type == "pcie");
  CHECK(c.resource(c.FindResource("sw.down")).bandwidth == 12e9);
}

TEST_CASE("Every preset loads and routes every pair of devices") {
  struct Expect {
    const char* name;
    int devices;
    const char* kind;
    double fp32;
  };
  for (const Expect& e :
       {Expect{"k80x2", 2, "K80", 4.37e12}, Expect{"k80x4", 4, "K80", 4.37e12},
        Expect{"p100x4_pcie", 4, "P100", 9.3e12}, Expect{"dgx1_v100", 8, "V100", 15.7e12},
        Expect{"a100x8_nvswitch", 8, "A100", 19.5e12}, Expect{"h100x8_nvswitch", 8, "H100", 67e12},
        Expect{"h200x8_nvswitch", 8, "H200", 67e12}, Expect{"2node_16gpu_200g", 16, "A100", 19.5e12},
        Expect{"2node_h100x16_ib", 16, "H100", 67e12}, Expect{"local", 2, "cpu", 128e9}}) {
    CAPTURE(e.name);
    const Cluster c = LoadCluster(e.name);
    CHECK(c.name() == e.name);
    REQUIRE(c.num_devices() == e.devices);
    for (int32_t s = 0; s < c.num_devices(); ++s) {
      CHECK(c.device(s).kind == e.kind);
      CHECK(c.device(s).peak_flops_fp32 == doctest::Approx(e.fp32));
      for (int32_t d = 0; d < c.num_devices(); ++d) {
        const std::vector<int32_t>& route = c.Route(s, d);
        if (s == d) {
          CHECK(route.empty());
          continue;
        }
        REQUIRE_FALSE(route.empty());
        CHECK(c.link(route.front()).src == s);
        CHECK(c.link(route.back()).dst == d);
      }
    }
  }
  // The same file by path.
  CHECK(LoadCluster("configs/clusters/k80x2.yaml").num_devices() == 2);
}

TEST_CASE("DGX-1 has the hybrid cube mesh: six NVLinks per GPU, PCIe through the host otherwise") {
  const Cluster c = LoadCluster("dgx1_v100");
  for (int32_t g = 0; g < 8; ++g) {
    double nvlink_out = 0.0;
    int peers = 0;
    for (const LinkSpec& l : c.links()) {
      if (l.src == g && l.type == "nvlink") {
        nvlink_out += l.bandwidth;
        ++peers;
      }
    }
    CHECK(nvlink_out == 150e9);  // 6 links x 25 GB/s
    CHECK(peers == 4);
  }
  const auto bw = [&](int s, int d) { return c.link(c.Route(s, d).front()).bandwidth; };
  CHECK(bw(0, 1) == 25e9);
  CHECK(bw(0, 3) == 50e9);
  CHECK(bw(0, 4) == 50e9);
  CHECK(bw(6, 7) == 50e9);
  CHECK(bw(2, 6) == 25e9);
  REQUIRE(c.Route(0, 5).size() == 2);  // SYS: no NVLink
  CHECK(c.link(c.Route(0, 5)[0]).dst == Cluster::kHost);
  CHECK(c.link(c.Route(0, 5)[0]).resources == std::vector<int32_t>{c.FindResource("pcie_switch0.up")});
  CHECK(c.link(c.Route(0, 5)[1]).resources == std::vector<int32_t>{c.FindResource("pcie_switch2.down")});
  CHECK(c.device(0).peak_flops_fp16 == 125e12);
  CHECK(c.device(0).memory_capacity == 16LL << 30);
}

TEST_CASE("k80x4: peer-to-peer on a board, through the host between boards") {
  const Cluster c = LoadCluster("k80x4");
  REQUIRE(c.Route(0, 1).size() == 1);
  REQUIRE(c.Route(3, 2).size() == 1);
  CHECK(c.link(c.Route(0, 1).front()).bandwidth == 15.75e9);
  CHECK(c.link(c.Route(0, 1).front()).resources.empty());
  REQUIRE(c.Route(1, 2).size() == 2);  // board 0 -> host -> board 1
  CHECK(c.link(c.Route(1, 2)[0]).dst == Cluster::kHost);
  CHECK(c.link(c.Route(1, 2)[0]).resources == std::vector<int32_t>{c.FindResource("board0_uplink.up")});
  CHECK(c.link(c.Route(1, 2)[1]).resources == std::vector<int32_t>{c.FindResource("board1_uplink.down")});
  CHECK(c.device(3).memory_capacity == 12LL << 30);
}

TEST_CASE("Device roles: cpu for the presets' CPUs and kind cpu, accelerator otherwise; one per kind") {
  for (const char* preset : {"k80x2_cpu", "k80x4_cpu", "k80x8_cpu"}) {
    const Cluster c = LoadCluster(preset);
    for (const DeviceSpec& d : c.devices()) {
      CHECK_MESSAGE(d.role == (d.kind == "Haswell" ? DeviceRole::kCpu : DeviceRole::kAccelerator),
                    preset << " " << d.name);
    }
  }
  CHECK(LoadCluster("local").device(0).role == DeviceRole::kCpu);  // kind: cpu
  CHECK(LoadCluster("dgx1_v100").device(0).role == DeviceRole::kAccelerator);
  const std::string cpu =
      "  - name: host_cpu\n"
      "    kind: Xeon\n"
      "    peak_flops_fp32: 1 TFLOP/s\n"
      "    memory_bandwidth: 100 GB/s\n"
      "    memory_capacity: 64 GiB\n";
  std::string yaml =
      Base("  - {src: [gpu0, gpu1], dst: host_cpu, bidirectional: true, bandwidth: 10 GB/s}\n");
  yaml.insert(yaml.find("links:"), cpu + "    role: cpu\n");
  CHECK(ParseCluster(yaml, "t.yaml").device(2).role == DeviceRole::kCpu);
  yaml = Base();
  yaml.insert(yaml.find("links:"), cpu + "    role: cpus\n");
  ConfigError e = ErrorOf(yaml);
  CHECK(std::string(e.what()) ==
        "bad.yaml:14:11: [devices[1].role]: role must be cpu or accelerator, not 'cpus'. Did you mean 'cpu'? "
        "(cpu: the device takes a graph's measured times for \"cpu\", never those for \"any\")");
  // Two roles for one kind: which measured times would the kind take?
  yaml = Base();
  yaml.insert(yaml.find("links:"),
              "  - name: gpu_x\n    kind: V100\n    peak_flops_fp32: 15.7 TFLOP/s\n"
              "    memory_bandwidth: 900 GB/s\n    memory_capacity: 16 GiB\n    role: cpu\n");
  e = ErrorOf(yaml);
  CHECK(Contains(e.what(),
                 "device 'gpu_x': role cpu, but device 'gpu0' of the same kind 'V100' has role "
                 "accelerator"));
}

TEST_CASE("NVSwitch and two-node presets share per-GPU ports and per-node NICs") {
  const Cluster a = LoadCluster("a100x8_nvswitch");
  CHECK(a.num_links() == 56 + 16);
  const LinkSpec& l = a.link(a.Route(2, 5).front());
  CHECK(l.bandwidth == 300e9);
  CHECK(l.resources ==
        std::vector<int32_t>{a.FindResource("gpu2.nvlink_tx"), a.FindResource("gpu5.nvlink_rx")});

  const Cluster n = LoadCluster("2node_16gpu_200g");
  const int32_t s = n.FindDevice("n0_gpu1");
  const int32_t d = n.FindDevice("n1_gpu6");
  REQUIRE(n.Route(s, d).size() == 1);
  const LinkSpec& out = n.link(n.Route(s, d).front());
  CHECK(out.bandwidth == 25e9);
  CHECK(out.resources == std::vector<int32_t>{n.FindResource("nic0.tx"), n.FindResource("nic1.rx")});
  const LinkSpec& back = n.link(n.Route(d, s).front());
  CHECK(back.resources == std::vector<int32_t>{n.FindResource("nic1.tx"), n.FindResource("nic0.rx")});
  CHECK(n.resource(n.FindResource("nic1.rx")).bandwidth == 25e9);
  CHECK(n.num_links() == 2 * 56 + 2 * 64);

  // Two DGX H100: each GPU its own 400 Gb/s NIC; one process per GPU.
  const Cluster h = LoadCluster("2node_h100x16_ib");
  const int32_t hs = h.FindDevice("n1_gpu3");
  const int32_t hd = h.FindDevice("n0_gpu5");
  REQUIRE(h.Route(hs, hd).size() == 1);
  const LinkSpec& ib = h.link(h.Route(hs, hd).front());
  CHECK(ib.bandwidth == 50e9);
  CHECK(ib.resources ==
        std::vector<int32_t>{h.FindResource("n1_gpu3.nic_tx"), h.FindResource("n0_gpu5.nic_rx")});
  const LinkSpec& nv = h.link(h.Route(h.FindDevice("n1_gpu0"), h.FindDevice("n1_gpu7")).front());
  CHECK(nv.bandwidth == 450e9);
  CHECK(h.host().processes == Processes::kPerDevice);
  CHECK(h.num_links() == 2 * 56 + 2 * 64);
}

TEST_CASE("Invalid clusters are ConfigErrors with the YAML path and line") {
  SUBCASE("unknown link endpoint") {
    const ConfigError e = ErrorOf(Base("  - {src: gpu0, dst: gpu7, bandwidth: 1 GB/s}\n"));
    CHECK(e.where().line == 11);
    CHECK(e.where().path == "links[1].dst");
    CHECK(Contains(e.what(), "unknown link endpoint 'gpu7'"));
    CHECK(Contains(e.what(), "Did you mean 'gpu0'?"));
  }
  SUBCASE("zero bandwidth") {
    const ConfigError e = ErrorOf(Base("  - src: gpu0\n    dst: host\n    bandwidth: 0 GB/s\n"));
    CHECK(e.where().line == 13);
    CHECK(e.where().path == "links[1].bandwidth");
    CHECK(Contains(e.what(), "bandwidth must be positive"));
  }
  SUBCASE("negative memory") {
    std::string yaml = Base();
    yaml.replace(yaml.find("16 GiB"), 6, "-16 GiB");
    const ConfigError e = ErrorOf(yaml);
    CHECK(e.where().line == 8);
    CHECK(e.where().path == "devices[0].memory_capacity");
    CHECK(Contains(e.what(), "memory_capacity is negative"));
  }
  SUBCASE("duplicate device names in one list") {
    const ConfigError e = ErrorOf(
        "devices:\n"
        "  - {name: gpu, count: 2, kind: X, peak_flops_fp32: 1, memory_bandwidth: 1, memory_capacity: 1}\n"
        "  - {name: gpu1, kind: X, peak_flops_fp32: 1, memory_bandwidth: 1, memory_capacity: 1}\n");
    CHECK(e.where().line == 3);
    CHECK(e.where().path == "devices[1].name");
    CHECK(Contains(e.what(), "duplicate device name 'gpu1'"));
    CHECK(Contains(e.what(), "first defined at line 2"));
  }
  SUBCASE("a pair with no route") {
    const ConfigError e = ErrorOf(
        "devices:\n"
        "  - {name: gpu, count: 3, kind: X, peak_flops_fp32: 1, memory_bandwidth: 1, memory_capacity: 1}\n"
        "links:\n"
        "  - {src: gpu0, dst: gpu1, bidirectional: true, bandwidth: 1}\n");
    CHECK(e.where().line == 2);
    CHECK(e.where().path == "devices[0]");
    CHECK(Contains(e.what(), "no route from device 'gpu0' to device 'gpu2'"));
  }
  SUBCASE("unknown key with did-you-mean") {
    std::string yaml = Base();
    yaml.replace(yaml.find("memory_bandwidth"), 16, "memory_bandwith");
    const ConfigError e = ErrorOf(yaml);
    CHECK(e.where().line == 7);
    CHECK(Contains(e.what(), "Did you mean 'memory_bandwidth'?"));
  }
  SUBCASE("bad unit") {
    std::string yaml = Base();
    yaml.replace(yaml.find("900 GB/s"), 8, "900 GB");
    const ConfigError e = ErrorOf(yaml);
    CHECK(e.where().line == 7);
    CHECK(e.where().path == "devices[0].memory_bandwidth");
    CHECK(Contains(e.what(), "unknown unit 'GB'"));
  }
  SUBCASE("missing required key") {
    std::string yaml = Base();
    yaml.replace(yaml.find("    kind: V100\n"), 15, "");
    const ConfigError e = ErrorOf(yaml);
    CHECK(e.where().line == 3);
    CHECK(Contains(e.what(), "missing required key 'kind'"));
  }
  SUBCASE("unknown shared resource") {
    const ConfigError e =
        ErrorOf(Base("  - {src: gpu0, dst: host, bandwidth: 1 GB/s, resources: [pcie0]}\n"
                     "resources:\n  - {name: pcie1, bandwidth: 1 GB/s}\n"));
    CHECK(e.where().line == 11);
    CHECK(Contains(e.what(), "unknown shared resource 'pcie0'"));
    CHECK(Contains(e.what(), "Did you mean 'pcie1'?"));
  }
  SUBCASE("zero resource bandwidth") {
    const ConfigError e = ErrorOf(Base("resources:\n  - name: sw\n    bandwidth: 0\n"));
    CHECK(e.where().line == 13);
    CHECK(e.where().path == "resources[0].bandwidth");
  }
  SUBCASE("a second link for the same pair") {
    const ConfigError e = ErrorOf(Base("  - {src: gpu1, dst: gpu0, bandwidth: 1 GB/s}\n"));
    CHECK(e.where().line == 11);
    CHECK(Contains(e.what(), "a second link gpu1->gpu0"));
    CHECK(Contains(e.what(), "line 10"));
  }
  SUBCASE("negative latency") {
    const ConfigError e = ErrorOf(Base("  - {src: gpu0, dst: host, bandwidth: 1 GB/s, latency: -1 us}\n"));
    CHECK(e.where().line == 11);
    CHECK(e.where().path == "links[1].latency");
  }
  SUBCASE("zip with different lengths") {
    const ConfigError e = ErrorOf(Base("  - {src: [gpu0, gpu1], dst: [host], connect: zip, bandwidth: 1}\n"));
    CHECK(e.where().line == 11);
    CHECK(e.where().path == "links[1].connect");
  }
  SUBCASE("self link") {
    const ConfigError e = ErrorOf(Base("  - {src: gpu0, dst: gpu0, bandwidth: 1}\n"));
    CHECK(e.where().line == 11);
    CHECK(Contains(e.what(), "itself"));
  }
  SUBCASE("no devices") {
    const ConfigError e = ErrorOf("name: empty\n");
    CHECK(Contains(e.what(), "no devices"));
  }
  SUBCASE("not a mapping") {
    const ConfigError e = ErrorOf("- 1\n- 2\n");
    CHECK(e.where().line == 1);
  }
  SUBCASE("bad name pattern") {
    const ConfigError e = ErrorOf(
        "devices:\n"
        "  - {name: \"gpu[0-\", kind: X, peak_flops_fp32: 1, memory_bandwidth: 1, memory_capacity: 1}\n");
    CHECK(e.where().line == 2);
    CHECK(e.where().path == "devices[0].name");
  }
}

TEST_CASE("Mutated and truncated cluster files give gosim errors, never crashes") {
  Rng rng(7);
  const char* kAlphabet = "[]{}:,-0123456789 \n#\"'gpuhostGB/s";
  int errors = 0;
  int parsed = 0;
  for (const char* preset : {"dgx1_v100", "2node_16gpu_200g", "p100x4_pcie"}) {
    const std::string text = ReadFile(std::string("configs/clusters/") + preset + ".yaml");
    for (int trial = 0; trial < 150; ++trial) {
      std::string mutated = text;
      if (trial % 3 == 0) {
        mutated.resize(rng.UniformInt(mutated.size()));
      } else {
        for (int k = 0; k < 1 + trial % 4; ++k) {
          mutated[rng.UniformInt(mutated.size())] = kAlphabet[rng.UniformInt(std::string(kAlphabet).size())];
        }
      }
      try {
        const Cluster c = ParseCluster(mutated, "mutated.yaml");
        CHECK(c.num_devices() > 0);
        ++parsed;
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find("mutated.yaml") != std::string::npos);
        ++errors;
      }
    }
  }
  CHECK(errors > 100);
  CHECK(errors + parsed == 450);
}

TEST_CASE("Oversized clusters are rejected instead of exhausting memory") {
  const ConfigError e = ErrorOf(
      "devices:\n"
      "  - {name: \"g[0-65535]\", count: 65536, kind: X, peak_flops_fp32: 1, memory_bandwidth: 1, "
      "memory_capacity: 1}\n");
  CHECK(Contains(e.what(), "more than 1024 devices"));
}

TEST_CASE("Unknown presets list the valid ones") {
  try {
    LoadCluster("dgx1_v10");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(Contains(e.what(), "Did you mean 'dgx1_v100'?"));
    CHECK(Contains(e.what(), "k80x2"));
  }
}

TEST_CASE("ClusterBuilder validates specs given in code") {
  ClusterBuilder b("code");
  DeviceSpec d;
  d.name = "a";
  d.kind = "X";
  d.peak_flops_fp32 = 1e12;
  d.memory_bandwidth = 1e11;
  d.memory_capacity = 1 << 30;
  CHECK(b.AddDevice(d) == 0);
  d.name = "b";
  CHECK(b.AddDevice(d) == 1);
  CHECK_THROWS_AS(b.AddDevice(d), ConfigError);  // duplicate
  d.name = "c";
  d.memory_bandwidth = 0.0;
  CHECK_THROWS_AS(b.AddDevice(d), ConfigError);
  CHECK_THROWS_AS(b.AddLink(Link(0, 5, 1e9)), ConfigError);
  CHECK_THROWS_AS(b.AddLink(Link(0, 1, -1.0)), ConfigError);
  CHECK_THROWS_AS(b.AddLink(Link(0, 1, 1e9, {0})), ConfigError);
  CHECK(b.AddResource(Resource("r", 1e9)) == 0);
  CHECK(b.AddLink(Link(0, 1, 1e9, {0})) == 0);
  CHECK(b.AddLink(Link(1, 0, 1e9)) == 1);
  const Cluster c = b.Build();
  CHECK(c.num_devices() == 2);
  CHECK(c.link(0).name == "a->b");
  CHECK(c.Route(1, 0) == std::vector<int32_t>{1});
  ClusterBuilder empty("none");
  CHECK_THROWS_AS(empty.Build(), ConfigError);
}

}  // namespace gosim::sim
