// Fuzz targets, one per reader of user files: graph JSON (plain and gzip'd),
// CostGraphDef text, ONNX, profiler traces, experiment YAML (and its
// command-line overrides), cluster YAML and decision JSON.
//
// Each target starts from the committed corpus tests/data/fuzz/<reader>/ and
// feeds its reader seeded mutants of those files (bit flips, random bytes,
// deletions, duplications, splices between corpus files, truncations, and
// tokens that broke readers before: 1e400, a newline or an ANSI escape in a
// string, an empty list), and evenly spaced truncations of each corpus file.
// The property: every input either loads or throws a gosim::Error whose
// message is one line without control characters; never another exception, a
// crash or an input that takes seconds. A graph that loads must also survive a
// JSON round trip (same nodes and edges) unless writing it is refused with a
// gosim::Error (a node name that is not UTF-8).
//
// In `make test` each target runs a fixed number of mutants, at most a few
// seconds. GOSIM_FUZZ_SECONDS=N runs each target for N seconds instead (a
// longer hunt, docs/FORMATS.md); GOSIM_FUZZ_SAVE=DIR writes every failing input
// there; GOSIM_FUZZ_SEED=S changes the seed; GOSIM_FUZZ_VERBOSE=1 prints every
// error message.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "calibration/trace_reader.h"
#include "core/error.h"
#include "core/io.h"
#include "core/rng.h"
#include "experiments/experiment_config.h"
#include "graphs/io.h"
#include "graphs/json_format.h"
#include "graphs/onnx_format.h"
#include "sim/cluster.h"
#include "sim/decision.h"

namespace gosim {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// An input that takes longer than this is reported as a (near) hang.
constexpr double kSlowSeconds = 5.0;
// No mutant grows beyond this many bytes (bounded inputs, bounded time).
constexpr size_t kMaxInputBytes = 1 << 16;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && std::atoll(text) > 0 ? std::atoll(text) : fallback;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteBytes(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// Tokens that broke a reader once, or that readers treat specially.
const std::vector<std::string> kTokens{"1e400",
                                       "-1e400",
                                       "99999999999999999999",
                                       "9223372036854775808",
                                       "-1",
                                       "0",
                                       "NaN",
                                       "nan",
                                       "inf",
                                       "null",
                                       "[]",
                                       "{}",
                                       "\"\"",
                                       "\n",
                                       "\\n",
                                       "\x1b[2J",
                                       "\\u001b[2J",
                                       "\xc2\x9b",
                                       "\t",
                                       "\"",
                                       "'",
                                       ":",
                                       ",",
                                       "true",
                                       "~",
                                       "&a",
                                       "*a",
                                       "!!binary",
                                       "count: 0",
                                       "- ",
                                       "{",
                                       "[",
                                       "\\u0000",
                                       "\xff\xfe",
                                       "1.7976931348623157e308",
                                       ".",
                                       "2147483648"};

// A copy of `data` with 1 to 3 random mutations; `what` describes them.
std::string Mutate(const std::string& data, const std::vector<std::string>& corpus, Rng& rng,
                   std::string* what) {
  std::string out = data;
  const auto pos = [&](size_t size) {
    return size == 0 ? size_t{0} : static_cast<size_t>(rng.UniformInt(size));
  };
  const auto span = [&](size_t max_len) {
    return static_cast<size_t>(rng.UniformInt(int64_t{1}, int64_t(max_len)));
  };
  // Half the mutants carry one mutation (most still reach the checks past the
  // syntax), the others two or three.
  const int count =
      rng.UniformInt(uint64_t{2}) == 0 ? 1 : static_cast<int>(rng.UniformInt(int64_t{2}, int64_t{3}));
  for (int m = 0; m < count; ++m) {
    switch (rng.UniformInt(uint64_t{10})) {
      case 0:  // flip bits
        for (int k = 0; k < 2 && !out.empty(); ++k)
          out[pos(out.size())] ^= static_cast<char>(1 << rng.UniformInt(8));
        *what += "[bit flips]";
        break;
      case 1:  // random bytes
        for (int k = 0; k < 2 && !out.empty(); ++k) out[pos(out.size())] = static_cast<char>(rng.Next());
        *what += "[random bytes]";
        break;
      case 2: {  // delete a span
        const size_t at = pos(out.size());
        out.erase(at, span(64));
        *what += "[deletion at " + std::to_string(at) + "]";
        break;
      }
      case 3: {  // duplicate a span elsewhere
        const size_t from = pos(out.size());
        out.insert(pos(out.size() + 1), out.substr(from, span(128)));
        *what += "[duplicated span]";
        break;
      }
      case 4: {  // splice a span of another corpus file
        const std::string& other = corpus[pos(corpus.size())];
        const size_t from = pos(other.size());
        out.insert(pos(out.size() + 1), other.substr(from, span(256)));
        *what += "[splice]";
        break;
      }
      case 5: {  // insert a token
        const std::string& token = kTokens[pos(kTokens.size())];
        out.insert(pos(out.size() + 1), token);
        *what += "[token]";
        break;
      }
      case 6: {  // replace a number by a token
        std::vector<size_t> digits;
        for (size_t i = 0; i < out.size(); ++i) {
          if (out[i] >= '0' && out[i] <= '9') digits.push_back(i);
        }
        if (!digits.empty()) {
          size_t at = digits[pos(digits.size())];
          size_t end = at;
          while (end < out.size() && ((out[end] >= '0' && out[end] <= '9') || out[end] == '.')) ++end;
          while (at > 0 && out[at - 1] >= '0' && out[at - 1] <= '9') --at;
          out.replace(at, end - at, kTokens[pos(kTokens.size())]);
        }
        *what += "[number swap]";
        break;
      }
      case 7: {  // insert random bytes
        std::string garbage(span(32), '\0');
        for (char& c : garbage) c = static_cast<char>(rng.Next());
        out.insert(pos(out.size() + 1), garbage);
        *what += "[inserted garbage]";
        break;
      }
      case 8: {  // swap two spans
        const size_t a = pos(out.size());
        const size_t b = pos(out.size());
        const size_t len = std::min(span(32), out.size() - std::max(a, b));
        for (size_t k = 0; k < len && a != b; ++k) std::swap(out[a + k], out[b + k]);
        *what += "[swapped spans]";
        break;
      }
      default: {  // truncate
        out.resize(pos(out.size() + 1));
        *what += "[truncated to " + std::to_string(out.size()) + "]";
        break;
      }
    }
  }
  if (out.size() > kMaxInputBytes) out.resize(kMaxInputBytes);
  return out;
}

// True when `text` holds a byte below 0x20 or DEL: a message that would span
// lines or drive the terminal.
bool HasControl(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// A loaded input that breaks a property beyond "loads or throws a gosim::Error".
struct PropertyViolation : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A graph that loads survives a JSON round trip with the same nodes and edges;
// writing it may be refused with a gosim::Error (a name that is not UTF-8).
void RoundTrip(const graphs::Graph& g) {
  std::string json;
  try {
    json = graphs::WriteGraphJson(g);
  } catch (const Error&) {
    return;
  }
  try {
    const graphs::Graph back = graphs::ReadGraphJson(json, "roundtrip.json");
    if (back.num_nodes() != g.num_nodes() || back.num_edges() != g.num_edges()) {
      throw PropertyViolation("JSON round trip changed the graph");
    }
  } catch (const Error& e) {
    throw PropertyViolation(std::string("its JSON does not read back: ") + e.what());
  }
}

struct Outcome {
  int64_t inputs = 0;
  int64_t loaded = 0;
  int64_t errors = 0;
  double slowest = 0.0;
  std::vector<std::string> failures;
};

// Runs `read` on `data` and checks the property.
void Try(const std::function<void(const std::string&)>& read, const std::string& data,
         const std::string& what, const std::string& save_as, Outcome* outcome) {
  ++outcome->inputs;
  const auto start = Clock::now();
  std::string failure;
  try {
    read(data);
    ++outcome->loaded;
  } catch (const PropertyViolation& e) {
    failure = e.what();
  } catch (const Error& e) {
    ++outcome->errors;
    const std::string message = e.what();
    if (std::getenv("GOSIM_FUZZ_VERBOSE") != nullptr) MESSAGE(what << " -> " << message);
    if (message.empty()) failure = "empty error message";
    if (HasControl(message)) failure = "error message with control characters: " + EscapeControl(message);
  } catch (const std::exception& e) {
    failure = std::string("not a gosim::Error: ") + EscapeControl(e.what());
  } catch (...) {
    failure = "unknown exception";
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  outcome->slowest = std::max(outcome->slowest, seconds);
  if (failure.empty() && seconds > kSlowSeconds) failure = "took " + std::to_string(seconds) + " s";
  if (failure.empty()) return;
  outcome->failures.push_back(what + ": " + failure);
  if (const char* dir = std::getenv("GOSIM_FUZZ_SAVE")) {
    fs::create_directories(dir);
    WriteBytes(fs::path(dir) / (std::to_string(outcome->failures.size()) + "_" + save_as), data);
  }
}

// A fuzz target: a reader, its corpus folder and the file name it reads from.
struct Target {
  std::string name;                              // tests/data/fuzz/<name>/
  std::string suffix;                            // file name ending the reader needs, e.g. ".pbtxt"
  std::function<void(const std::string&)> read;  // reads a file
  int64_t mutants = 300;                         // per `make test` run
  double min_error_share = 0.0;                  // of the inputs, at least (text formats: most mutants break)
};

// Evenly spaced prefixes of each corpus file, besides the random truncations.
constexpr int kTruncations = 16;

Outcome Fuzz(const Target& target) {
  std::vector<std::string> corpus;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator("tests/data/fuzz/" + target.name)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& n : names)
    corpus.push_back(ReadBytes(fs::path("tests/data/fuzz/" + target.name) / n));
  REQUIRE(!corpus.empty());

  const fs::path dir = fs::temp_directory_path() / ("gosim_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / ("input" + target.suffix)).string();
  const auto read_file = [&](const std::string& data) {
    WriteBytes(path, data);
    target.read(path);
  };

  Outcome outcome;
  // The corpus itself: its files load or fail cleanly (some are reproducers).
  for (size_t i = 0; i < corpus.size(); ++i) {
    Try(read_file, corpus[i], names[i], names[i], &outcome);
    for (int k = 1; k < kTruncations; ++k) {
      const size_t length = corpus[i].size() * static_cast<size_t>(k) / kTruncations;
      Try(read_file, corpus[i].substr(0, length),
          names[i] + " truncated to " + std::to_string(length) + " bytes", names[i], &outcome);
    }
  }

  const double seconds = static_cast<double>(EnvInt("GOSIM_FUZZ_SECONDS", 0));
  const double limit = seconds > 0 ? seconds : 4.0;  // `make test`: the mutant count, or 4 s at most
  const int64_t mutants = seconds > 0 ? INT64_MAX : target.mutants;
  Rng rng = Rng::Derive(static_cast<uint64_t>(EnvInt("GOSIM_FUZZ_SEED", 1)),
                        {std::hash<std::string>{}(target.name)});
  const auto start = Clock::now();
  for (int64_t i = 0; i < mutants; ++i) {
    if (std::chrono::duration<double>(Clock::now() - start).count() > limit) break;
    const size_t k = static_cast<size_t>(rng.UniformInt(corpus.size()));
    std::string what = target.name + " mutant " + std::to_string(i) + " of " + names[k] + " ";
    const std::string mutant = Mutate(corpus[k], corpus, rng, &what);
    Try(read_file, mutant, what, "mutant" + target.suffix, &outcome);
  }
  fs::remove_all(dir);
  return outcome;
}

void Report(const Target& target, const Outcome& outcome) {
  MESSAGE(target.name << ": " << outcome.inputs << " inputs, " << outcome.loaded << " loaded, "
                      << outcome.errors << " gosim errors, slowest " << outcome.slowest << " s, "
                      << outcome.failures.size() << " failures");
  for (const std::string& f : outcome.failures) FAIL_CHECK(f);
  CHECK(outcome.failures.empty());
  CHECK(outcome.loaded + outcome.errors + static_cast<int64_t>(outcome.failures.size()) >= outcome.inputs);
  CHECK(outcome.inputs > 20);  // the time limit left room for a real run
  CHECK(outcome.errors > 0);   // the mutations do break files
  CHECK(static_cast<double>(outcome.errors) >= target.min_error_share * static_cast<double>(outcome.inputs));
}

// The reader's error for the file `path`, or "" when it loads.
std::string ErrorOf(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    return std::string(e.kind()) + ": " + e.what();
  }
  return "";
}

TEST_CASE("fuzz findings: each reproducer in the corpus gives its one-line error") {
  const std::string d = "tests/data/fuzz/";
  // A number beyond a double: file, line, column (or byte) instead of an internal error.
  CHECK(ErrorOf([&] { graphs::LoadGraph(d + "graph_json/number_overflow.json"); }) ==
        "graph error: " + d +
            "graph_json/number_overflow.json:2:50: number overflow parsing '1e400' "
            "(numbers must fit a 64-bit double (magnitude below 1.8e308))");
  CHECK(ErrorOf([&] { calibration::ReadTrace(d + "trace/number_overflow.json"); }) ==
        "trace error: " + d +
            "trace/number_overflow.json: byte 65: number overflow parsing '1e400' "
            "(numbers must fit a 64-bit double (magnitude below 1.8e308))");
  const graphs::Graph graph = graphs::LoadGraph(d + "graph_json/tiny_branches.json");
  const sim::Cluster cluster = sim::LoadCluster(d + "cluster/two_gpus.yaml");
  CHECK(ErrorOf([&] { sim::LoadDecision(d + "decision/number_overflow.json", graph, cluster); }) ==
        "decision error: " + d +
            "decision/number_overflow.json:4:20: number overflow parsing '1e400' "
            "(numbers must fit a 64-bit double (magnitude below 1.8e308))");
  CHECK(ErrorOf([&] { sim::LoadDecision(d + "decision/tiny_branches.json", graph, cluster); }).empty());
  // An empty graph is refused at load.
  for (const char* empty : {"graph_json/nodes_empty.json", "costgraph/empty.pbtxt"}) {
    CHECK(ErrorOf([&] { graphs::LoadGraph(d + empty); }) ==
          "graph error: " + d + empty +
              ": the graph has no nodes (the file is empty or truncated, or its nodes are missing; a graph "
              "needs at least one node)");
  }
  // Control characters from a node name are escaped: one line.
  const std::string control = ErrorOf([&] { graphs::LoadGraph(d + "graph_json/control_characters.json"); });
  CHECK(control.find("no\\nsuch\\x1b[2J") != std::string::npos);
  CHECK(!HasControl(control));
  // Several gzip members are read; trailing garbage is refused at its byte.
  CHECK(graphs::LoadGraph(d + "graph_json_gz/two_members.json.gz").num_nodes() == 2);
  CHECK(ErrorOf([&] { graphs::LoadGraph(d + "graph_json_gz/trailing_garbage.json.gz"); }) ==
        "i/o error: " + d +
            "graph_json_gz/trailing_garbage.json.gz: byte 142: data after the end of the gzip "
            "stream (the file holds something besides gzip data; re-create or re-download it)");
  // A node name that is not UTF-8 (CostGraphDef text and ONNX strings may hold
  // any bytes): the graph loads; a decision naming a missing node, one that
  // leaves that node out, and writing the graph as JSON give one line with the
  // bytes escaped, never nlohmann's type_error 316.
  const graphs::Graph bad_names = graphs::LoadGraph(d + "costgraph/invalid_utf8.pbtxt");
  REQUIRE(bad_names.num_nodes() == 2);
  CHECK(bad_names.node(1).name == "bad\xff\xfename");
  const std::string missing =
      ErrorOf([&] { sim::LoadDecision(d + "decision/missing_node_utf8_graph.json", bad_names, cluster); });
  CHECK(missing.rfind("decision error: " + d + "decision/missing_node_utf8_graph.json:8:", 0) == 0);
  CHECK(missing.find("unknown node 'badname'") != std::string::npos);
  CHECK(missing.find("bad\\xff\\xfename") != std::string::npos);  // the "did you mean"
  CHECK(!HasControl(missing));
  const std::string left_out = ErrorOf([&] {
    sim::ParseDecisionJson(R"({"format": "gosim.decision", "version": 1, "placement": {"ok": "gpu0"}})",
                           "left_out.json", bad_names, cluster);
  });
  CHECK(left_out ==
        "decision error: left_out.json:1:44: [placement]: placement misses 1 of 2 nodes: 'bad\\xff\\xfename' "
        "(give every node of the graph a value)");
  CHECK(ErrorOf([&] { graphs::WriteGraphJson(bad_names); }) ==
        "graph error: " + d +
            "costgraph/invalid_utf8.pbtxt: node 1 ('bad\\xff\\xfename') contains text that is not valid "
            "UTF-8 (JSON files hold UTF-8 text; rename it)");
  CHECK(ErrorOf([&] {
          sim::DecisionToJson(sim::SingleDeviceDecision(bad_names), bad_names, cluster);
        }).find("cannot write the decision as JSON") != std::string::npos);
  // count: 0 is not one device: a one-line error at the count.
  CHECK(ErrorOf([&] { sim::LoadCluster(d + "cluster/count_zero.yaml"); }) ==
        "config error: " + d +
            "cluster/count_zero.yaml:6:12: [devices[0].count]: count must be between 1 and 65536, not 0 "
            "(leave count out for one device named as written)");
  // budget: 1000 with the documented override budget.evaluations=500.
  const experiments::ExperimentConfig config =
      experiments::LoadExperiment(d + "experiment/budget_scalar.yaml", {"budget.evaluations=500"});
  CHECK(config.budget.evaluations == 500);
  CHECK(config.agents[0].budget.evaluations == 500);
  CHECK(config.agents[1].budget.evaluations == 8);  // its own budget
}

TEST_CASE("fuzz: graph JSON") {
  const Target t{"graph_json", ".json", [](const std::string& p) { RoundTrip(graphs::LoadGraph(p)); }, 400,
                 0.1};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: gzip'd graph JSON") {
  const Target t{"graph_json_gz", ".json.gz", [](const std::string& p) { RoundTrip(graphs::LoadGraph(p)); },
                 300, 0.1};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: CostGraphDef text") {
  const Target t{"costgraph", ".pbtxt", [](const std::string& p) { RoundTrip(graphs::LoadGraph(p)); }, 400,
                 0.1};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: gzip'd CostGraphDef text") {
  // Recognized by its first two bytes, whatever the name says.
  const Target t{"costgraph_gz", ".pbtxt.gz", [](const std::string& p) { RoundTrip(graphs::LoadGraph(p)); },
                 150, 0.1};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: ONNX" * doctest::skip(!graphs::OnnxSupported())) {
  // Shape inference runs in a child process per model: fewer mutants.
  const Target t{"onnx", ".onnx", [](const std::string& p) { RoundTrip(graphs::LoadGraph(p)); }, 150};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: profiler traces") {
  const Target t{"trace", ".json", [](const std::string& p) { calibration::ReadTrace(p); }, 400};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: experiment YAML") {
  const Target t{"experiment", ".yaml", [](const std::string& p) { experiments::LoadExperiment(p); }, 300};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: experiment overrides") {
  // The corpus holds override lists, one per line, applied to tiny.yaml.
  const Target t{"override", ".txt",
                 [](const std::string& p) {
                   std::vector<std::string> overrides;
                   std::istringstream in(ReadBytes(p));
                   for (std::string line; std::getline(in, line);) overrides.push_back(line);
                   experiments::LoadExperiment("tests/data/fuzz/experiment/tiny.yaml", overrides);
                 },
                 300};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: cluster YAML") {
  const Target t{"cluster", ".yaml", [](const std::string& p) { sim::LoadCluster(p); }, 400};
  Report(t, Fuzz(t));
}

TEST_CASE("fuzz: decision JSON") {
  const graphs::Graph graph = graphs::LoadGraph("tests/data/fuzz/graph_json/tiny_branches.json");
  const sim::Cluster cluster = sim::LoadCluster("tests/data/fuzz/cluster/two_gpus.yaml");
  const Target t{"decision", ".json", [&](const std::string& p) { sim::LoadDecision(p, graph, cluster); },
                 400};
  Report(t, Fuzz(t));
}

}  // namespace
}  // namespace gosim
