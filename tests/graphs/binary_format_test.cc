// The binary graph format (graphs/binary_format.h): an exact round trip of
// every attribute, the same graph as through JSON, and one GraphError with a
// byte offset for every truncation and for corrupt bytes.
#include "graphs/binary_format.h"

#include <doctest/doctest.h>

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "graphs/generators/generators.h"
#include "graphs/io.h"
#include "graphs/json_format.h"
#include "tests/graphs/rich_graph.h"

namespace gosim::graphs {
namespace {

using testing::CheckSameGraph;
using testing::RichGraph;

TEST_CASE("binary round trip is exact and gives the graph JSON gives") {
  const Graph g = RichGraph();
  const std::string data = WriteGraphBinary(g);
  CHECK(data.substr(0, 8) == "GOSIMGRB");
  CHECK(IsBinaryGraph(data));
  CHECK_FALSE(IsBinaryGraph(WriteGraphJson(g)));
  const Graph back = ReadGraphBinary(data, "rich.gosimgraph");
  CheckSameGraph(g, back);
  CHECK(back.source() == "rich.gosimgraph");
  CHECK(back.node(4).persistent_bytes == 9007199254740993);
  CHECK(back.node(2).measured[2].seconds == 5e-324);
  CHECK(WriteGraphJson(back) == WriteGraphJson(g));
  CHECK(WriteGraphBinary(back) == data);
  CHECK(back.node(3).outputs[0].alias);

  // Version 1 (before aliases) is still read; it cannot hold an alias.
  CHECK_THROWS_WITH_AS(WriteGraphBinary(g, 1), doctest::Contains("cannot hold aliases (node 'conv1_grad')"),
                       GraphError);
  GraphBuilder plain_builder("plain");
  NodeSpec only;
  only.name = "x";
  only.op = "Placeholder";
  only.outputs = {TensorInfo{12, {3}, DType::kInt32}};
  plain_builder.AddNode(only);
  const Graph plain = plain_builder.Build();
  const std::string v1 = WriteGraphBinary(plain, 1);
  CHECK(v1[8] == 1);
  CHECK(v1.size() + 1 == WriteGraphBinary(plain).size());  // one flags byte per output
  CheckSameGraph(plain, ReadGraphBinary(v1, "v1.gosimgraph"));
  CHECK_THROWS_WITH_AS(WriteGraphBinary(plain, 3), doctest::Contains("cannot write binary graph version 3"),
                       GraphError);

  // A generated model with thousands of nodes, through files, gzip'd or not.
  const Graph nmt = Generate("nmt", YAML::Load("{training: true}"), "test");
  REQUIRE(nmt.num_nodes() > 1000);
  for (const char* name : {"gosim_binary_test.gosimgraph", "gosim_binary_test.gosimgraph.gz"}) {
    const std::string path = (std::filesystem::temp_directory_path() / name).string();
    SaveGraph(nmt, path);
    const Graph loaded = LoadGraph(path);
    CHECK(WriteGraphJson(loaded) == WriteGraphJson(nmt));
    std::filesystem::remove(path);
  }
}

TEST_CASE("binary reader: every truncation and a flipped byte are one GraphError with a byte offset") {
  const std::string data = WriteGraphBinary(RichGraph());
  for (size_t n = 0; n < data.size(); ++n) {
    try {
      ReadGraphBinary(std::string_view(data).substr(0, n), "t.gosimgraph");
      FAIL("no error for a file cut at byte " << n);
    } catch (const GraphError& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find('\n') == std::string::npos, what);
      CHECK_MESSAGE(what.rfind("t.gosimgraph: byte ", 0) == 0, what);
      if (n < 32) CHECK_MESSAGE(what.find("truncated") != std::string::npos, what);
    }
  }
  // Past the header a changed byte fails the checksum.
  std::string corrupt = data;
  corrupt[data.size() / 2] ^= 0x10;
  try {
    ReadGraphBinary(corrupt, "c.gosimgraph");
    FAIL("no error for a corrupt byte");
  } catch (const GraphError& e) {
    CHECK(std::string(e.what()) ==
          "c.gosimgraph: byte 32: corrupt: the checksum (CRC-32) of the graph does not match (write the file "
          "again (gosim graphs export G --out F.gosimgraph) or use its JSON)");
  }
  std::string newer = data;
  newer[8] = 3;
  CHECK_THROWS_WITH_AS(ReadGraphBinary(newer, "v.gosimgraph"),
                       doctest::Contains("unsupported binary graph version 3"), GraphError);
  newer[8] = 0;
  CHECK_THROWS_WITH_AS(ReadGraphBinary(newer, "v.gosimgraph"),
                       doctest::Contains("unsupported binary graph version 0"), GraphError);
  CHECK_THROWS_WITH_AS(ReadGraphBinary(data + "x", "x.gosimgraph"), doctest::Contains("trailing bytes"),
                       GraphError);
}

TEST_CASE("binary reader: a consistent file with a bad index or value is one GraphError") {
  // Rewrites the payload after a change and fixes the checksum, so that the
  // checks behind it are reached.
  const Graph g = RichGraph();
  const std::string data = WriteGraphBinary(g);
  auto reseal = [](std::string file) {
    const std::string payload = file.substr(32);
    const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0L, nullptr, 0),
                                                     reinterpret_cast<const unsigned char*>(payload.data()),
                                                     static_cast<unsigned>(payload.size())));
    std::memcpy(file.data() + 24, &crc, 4);
    return file;
  };
  // The last edge's source index (the last 12 bytes are src, dst, output).
  std::string bad_edge = data;
  const uint32_t huge = 1000;
  std::memcpy(bad_edge.data() + bad_edge.size() - 12, &huge, 4);
  CHECK_THROWS_WITH_AS(ReadGraphBinary(reseal(bad_edge), "e.gosimgraph"),
                       doctest::Contains("joins nodes 1000 and 4 of 5"), GraphError);
  // An edge onto itself is a cycle, which the graph builder reports.
  std::string cycle = data;
  const uint32_t four = 4;
  std::memcpy(cycle.data() + cycle.size() - 12, &four, 4);
  CHECK_THROWS_AS(ReadGraphBinary(reseal(cycle), "y.gosimgraph"), GraphError);
}

TEST_CASE("binary reader: non-zero reserved header bytes are a corrupt header") {
  const std::string data = WriteGraphBinary(RichGraph());
  CHECK(ReadGraphBinary(data, "ok.gosimgraph").num_nodes() == RichGraph().num_nodes());
  for (const size_t at : {size_t{12}, size_t{28}, size_t{31}}) {
    std::string bad = data;
    bad[at] = '\x01';
    const size_t field = at < 16 ? 12 : 28;
    const std::string expected = "r.gosimgraph: byte " + std::to_string(field) +
                                 ": corrupt header: the reserved bytes at offset " + std::to_string(field) +
                                 " are not 0";
    CHECK_THROWS_WITH_AS(ReadGraphBinary(bad, "r.gosimgraph"), doctest::Contains(expected.c_str()),
                         GraphError);
  }
}

}  // namespace
}  // namespace gosim::graphs
