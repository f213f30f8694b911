// Feeds every graph reader hundreds of mutated and truncated versions of
// valid files. Each must either load or throw a gosim::Error: never another
// exception type, a crash or a hang. Mutants that load must also survive a
// JSON round trip.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/rng.h"
#include "graphs/costgraph_format.h"
#include "graphs/io.h"
#include "graphs/json_format.h"
#include "graphs/onnx_format.h"

namespace gosim::graphs {
namespace {

using Reader = std::function<Graph(const std::string& data)>;

struct Outcome {
  int loaded = 0;
  int errors = 0;
  std::vector<std::string> failures;  // other exceptions, with the mutation that caused them
};

// A copy of `data` with one random mutation; `what` describes it.
std::string Mutate(const std::string& data, Rng& rng, std::string* what) {
  std::string out = data;
  const auto pos = [&](size_t size) {
    return size == 0 ? size_t{0} : static_cast<size_t>(rng.UniformInt(size));
  };
  const auto span = [&](size_t max_len) {
    return static_cast<size_t>(rng.UniformInt(int64_t{1}, int64_t(max_len)));
  };
  switch (rng.UniformInt(uint64_t{7})) {
    case 0: {  // flip a few bits
      const int flips = static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{8}));
      for (int k = 0; k < flips && !out.empty(); ++k)
        out[pos(out.size())] ^= static_cast<char>(1 << rng.UniformInt(8));
      *what = "bit flips";
      break;
    }
    case 1: {  // overwrite bytes with random ones
      const int bytes = static_cast<int>(rng.UniformInt(int64_t{1}, int64_t{8}));
      for (int k = 0; k < bytes && !out.empty(); ++k) out[pos(out.size())] = static_cast<char>(rng.Next());
      *what = "random bytes";
      break;
    }
    case 2: {  // delete a span
      const size_t at = pos(out.size());
      out.erase(at, span(64));
      *what = "deletion at " + std::to_string(at);
      break;
    }
    case 3: {  // duplicate a span elsewhere
      const size_t from = pos(out.size());
      const std::string piece = out.substr(from, span(128));
      out.insert(pos(out.size() + 1), piece);
      *what = "duplicated span from " + std::to_string(from);
      break;
    }
    case 4: {  // insert garbage
      std::string garbage(span(32), '\0');
      for (char& c : garbage) c = static_cast<char>(rng.Next());
      out.insert(pos(out.size() + 1), garbage);
      *what = "inserted garbage";
      break;
    }
    case 5: {  // replace a digit with a sign, a large number or a decimal point
      static const std::vector<std::string> kSwaps{"-",         "99999999999999999999", "-1", "1e400", ".",
                                                   "2147483648"};
      std::vector<size_t> digits;
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] >= '0' && out[i] <= '9') digits.push_back(i);
      }
      if (!digits.empty()) {
        const size_t at = digits[pos(digits.size())];
        out.replace(at, 1, kSwaps[pos(kSwaps.size())]);
      }
      *what = "number swap";
      break;
    }
    default: {  // swap two spans
      const size_t a = pos(out.size());
      const size_t b = pos(out.size());
      const size_t len = std::min({span(32), out.size() - std::max(a, b)});
      for (size_t k = 0; k < len && a != b; ++k) std::swap(out[a + k], out[b + k]);
      *what = "swapped spans";
      break;
    }
  }
  return out;
}

void Try(const Reader& read, const std::string& data, const std::string& what, Outcome* outcome) {
  try {
    const Graph g = read(data);
    ++outcome->loaded;
    try {  // what loads must also survive a JSON round trip
      const Graph back = ReadGraphJson(WriteGraphJson(g), "roundtrip.json");
      if (back.num_nodes() != g.num_nodes() || back.num_edges() != g.num_edges()) {
        outcome->failures.push_back(what + ": JSON round trip changed the graph");
      }
    } catch (const Error&) {
      // e.g. a name that is not UTF-8 cannot be written as JSON
    }
  } catch (const Error&) {
    ++outcome->errors;
  } catch (const std::exception& e) {
    outcome->failures.push_back(what + ": " + e.what());
  } catch (...) {
    outcome->failures.push_back(what + ": unknown exception");
  }
}

// `mutants` random mutants (seeded) and `truncations` evenly spaced prefixes.
Outcome Fuzz(const std::string& name, const std::string& data, const Reader& read, uint64_t seed, int mutants,
             int truncations) {
  Outcome outcome;
  Rng rng = Rng::Derive(seed, {data.size()});
  for (int i = 0; i < mutants; ++i) {
    std::string what;
    const std::string mutant = Mutate(data, rng, &what);
    Try(read, mutant, name + " mutant " + std::to_string(i) + " (" + what + ")", &outcome);
  }
  for (int i = 0; i < truncations; ++i) {
    const size_t length = data.size() * static_cast<size_t>(i) / static_cast<size_t>(truncations);
    Try(read, data.substr(0, length), name + " truncated to " + std::to_string(length) + " bytes", &outcome);
  }
  return outcome;
}

void Report(const std::string& name, const Outcome& outcome, int total) {
  MESSAGE(name << ": " << outcome.loaded << " loaded, " << outcome.errors << " gosim errors");
  for (const std::string& f : outcome.failures) FAIL_CHECK(f);
  CHECK(outcome.failures.empty());
  CHECK(outcome.loaded + outcome.errors == total);
  CHECK(outcome.errors > total / 10);  // the mutations do break most files
}

constexpr int kTruncations = 100;
// GOSIM_FUZZ_MUTANTS=N runs N mutants per file instead of 400 (a longer hunt).
const int kMutants = [] {
  const char* n = std::getenv("GOSIM_FUZZ_MUTANTS");
  return n != nullptr && std::atoi(n) > 0 ? std::atoi(n) : 400;
}();

}  // namespace

TEST_CASE("malformed native JSON graphs throw gosim errors") {
  const std::string valid_json = WriteGraphJson(LoadGraph("tests/data/costgraph/regal_style.pbtxt"));
  const std::string example =
      R"({"format": "gosim.graph", "version": 1, "name": "g", "metadata": {"a": [1, 2]},
 "nodes": [
  {"name": "x", "op": "Placeholder", "outputs": [{"bytes": 1536, "shape": [32, 3, 4, 4], "dtype": "float16"}]},
  {"name": "conv", "op": "Conv", "flops": 2.5e8, "bytes_read": 1536, "bytes_written": 64, "persistent_bytes": 9,
   "outputs": [{"bytes": 64, "shape": [4, 4], "dtype": "float32"}, {"bytes": 8}], "colocation": "w",
   "scope": "a/b", "phase": "backward", "measured": {"V100": 1.5e-4, "any": 2e-4}, "inputs": ["x:0", "^x"]},
  {"name": "y", "op": "Add", "phase": "update", "inputs": ["conv:1", "conv"]}
 ]})";
  REQUIRE(ReadGraphJson(example).num_nodes() == 3);
  const Reader read = [](const std::string& data) { return ReadGraphJson(data, "fuzz.json"); };
  const Outcome a = Fuzz("regal.json", valid_json, read, 1, kMutants, kTruncations);
  Report("regal.json", a, kMutants + kTruncations);
  const Outcome b = Fuzz("example.json", example, read, 2, kMutants, kTruncations);
  Report("example.json", b, kMutants + kTruncations);
}

TEST_CASE("deeply nested input is an error, not a stack overflow") {
  const std::string deep_json = R"({"format": "gosim.graph", "version": 1, "name": "g", "metadata": )" +
                                std::string(200000, '[') + std::string(200000, ']') + R"(, "nodes": []})";
  try {
    ReadGraphJson(deep_json, "deep.json");
    FAIL("no error");
  } catch (const GraphError& e) {
    CHECK(std::string(e.what()).find("nested deeper than") != std::string::npos);
    CHECK(e.where().line == 1);
  }
  std::string deep_text;
  for (int i = 0; i < 5000; ++i) deep_text += "node { output_info { shape { ";
  CHECK_THROWS_AS(ReadCostGraphText(deep_text, "deep.pbtxt"), GraphError);
}

TEST_CASE("malformed CostGraphDef text throws gosim errors") {
  const Reader read = [](const std::string& data) { return ReadCostGraphText(data, "fuzz.pbtxt"); };
  for (const std::string file : {"regal_style.pbtxt", "run_metadata.pbtxt"}) {
    const std::string data = ReadFile("tests/data/costgraph/" + file);
    REQUIRE(read(data).num_nodes() > 0);
    const Outcome outcome = Fuzz(file, data, read, 3, kMutants, kTruncations);
    Report(file, outcome, kMutants + kTruncations);
  }
}

TEST_CASE("malformed ONNX models throw gosim errors" * doctest::skip(!OnnxSupported())) {
  const Reader read = [](const std::string& data) { return ReadOnnx(data, "fuzz.onnx"); };
  for (const std::string file : {"tiny_cnn.onnx", "tiny_attention.onnx", "handmade.onnx"}) {
    const std::string data = ReadFile("tests/data/onnx/" + file);
    REQUIRE(read(data).num_nodes() > 0);
    const Outcome outcome = Fuzz(file, data, read, 4, kMutants, kTruncations);
    // Protobuf's binary encoding survives many mutations (a changed weight
    // value still parses), so fewer mutants fail here than in text formats.
    MESSAGE(file << ": " << outcome.loaded << " loaded, " << outcome.errors << " gosim errors");
    for (const std::string& f : outcome.failures) FAIL_CHECK(f);
    CHECK(outcome.loaded + outcome.errors == kMutants + kTruncations);
    CHECK(outcome.errors >= kTruncations / 2);
  }
}

TEST_CASE("corrupt gzip'd graph files throw gosim errors") {
  const std::string gz = Gzip(ReadFile("tests/data/costgraph/regal_style.pbtxt"));
  const std::string path =
      (std::filesystem::temp_directory_path() / "gosim_malformed_test.pbtxt.gz").string();
  const Reader read = [&](const std::string& data) {
    WriteFileAtomic(path + ".raw", data);  // written as is: the name does not end in .gz
    std::filesystem::rename(path + ".raw", path);
    return LoadGraph(path);
  };
  const Outcome outcome = Fuzz("regal_style.pbtxt.gz", gz, read, 5, 100, 20);
  Report("regal_style.pbtxt.gz", outcome, 120);
  std::filesystem::remove(path);
}

}  // namespace gosim::graphs
