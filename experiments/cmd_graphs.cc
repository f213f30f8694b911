// `gosim graphs list|stats|export|room`.
//
//   gosim graphs list                      the registered generators
//   gosim graphs list SUITE.yaml           a suite's entries and splits
//   gosim graphs stats TARGET [--json]     nodes, edges, FLOPs, bytes, depth, width
//   gosim graphs export TARGET --out F     native JSON (F.json[.gz]) or binary (F.gosimgraph[.gz])
//   gosim graphs room SUITE.yaml --out F   REGAL's "room for improvement"
//                                          selection (experiments/room_filter.h)
//   gosim graphs fingerprint TARGET        exact and family fingerprints
//                                          (graphs/fingerprint.h)
//   gosim graphs leaks SUITE.yaml...       entries of different splits with
//                                          equal fingerprints; exit 1 if any
//
// TARGET is a graph file (.json[.gz], .pbtxt, .onnx, ...), a suite YAML, or
// a generator spec `gen:NAME[:k=v,...]`.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/progress.h"
#include "core/strings.h"
#include "experiments/commands.h"
#include "experiments/graph_source.h"
#include "experiments/room_filter.h"
#include "graphs/fingerprint.h"
#include "graphs/generators/generators.h"
#include "graphs/io.h"
#include "graphs/stats.h"
#include "graphs/suite.h"

namespace gosim::cli {
namespace {

struct GraphsArgs {
  std::vector<std::string> suites;  // leaks
  std::string suite;                // list
  std::string target;               // stats, export
  ShapeArgs shape;                  // stats, export
  bool json = false;
  bool all = false;
  bool ops = false;
  std::string out;
  std::string entry;
  // room
  std::string cluster = "k80x2";
  std::string cost_model = "roofline";
  std::string objective = "peak_memory";
  int64_t low = 5000;
  int64_t high = 50000;
  double min_improvement = 0.2;
  std::vector<std::string> keep;
  uint64_t seed = 0;
  std::string cache;
  std::string name;
  std::string command_line;
};

bool IsSuitePath(const std::string& target) {
  return EndsWith(target, ".yaml") || EndsWith(target, ".yml");
}

// The graph of a `gen:NAME[:k=v,...]` target, with the generator's own
// descriptive name.
graphs::Graph Generated(const std::string& target) {
  auto [name, params] = graphs::ParseGeneratorSpec(target.substr(4));
  return graphs::Generate(name, params, "command line", "");
}

// The graph of a file target, found like every file argument, with the
// sizes of --dim / --input-shape.
graphs::Graph LoadTarget(const GraphsArgs& args) {
  return experiments::MaterializeGraph(experiments::ParseGraphArgument(
      args.target, experiments::ParseShapeArguments(args.shape.dims, args.shape.input_shapes)));
}

// --dim / --input-shape apply to one graph file; a suite names them per entry.
void RejectShapesForSuite(const GraphsArgs& args) {
  if (!args.shape.dims.empty() || !args.shape.input_shapes.empty()) {
    throw ConfigError("--dim and --input-shape apply to one graph file, not to a suite",
                      Location{args.target}, "give them in the suite's entries: dims: {batch: 32}");
  }
}

// A table with columns sized to their contents; numbers right-aligned.
void PrintTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                size_t left_columns) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c >= left_columns) out += pad;
      out += cells[c];
      if (c < left_columns && c + 1 < cells.size()) out += pad;
      if (c + 1 < cells.size()) out += "  ";
    }
    std::printf("%s\n", out.c_str());
  };
  line(header);
  for (const auto& row : rows) line(row);
}

std::string Thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

nlohmann::json StatsJson(const graphs::GraphStats& s, const std::string& split, const std::string& source) {
  nlohmann::json j = {{"name", s.name},
                      {"nodes", s.nodes},
                      {"edges", s.edges},
                      {"control_edges", s.control_edges},
                      {"flops", s.flops},
                      {"weight_bytes", s.weight_bytes},
                      {"optimizer_bytes", s.optimizer_bytes},
                      {"persistent_bytes", s.persistent_bytes},
                      {"activation_bytes", s.activation_bytes},
                      {"depth", s.depth},
                      {"width", s.width},
                      {"forward_nodes", s.forward_nodes},
                      {"backward_nodes", s.backward_nodes},
                      {"update_nodes", s.update_nodes},
                      {"op_histogram", s.op_histogram}};
  if (!split.empty()) j["split"] = split;
  if (!source.empty()) j["source"] = source;
  return j;
}

std::vector<std::string> StatsRow(const graphs::GraphStats& s) {
  return {Thousands(s.nodes),
          Thousands(s.edges),
          FormatCount(s.flops, "FLOP"),
          FormatBytes(static_cast<double>(s.weight_bytes)),
          FormatBytes(static_cast<double>(s.optimizer_bytes)),
          FormatBytes(static_cast<double>(s.activation_bytes)),
          Thousands(s.depth),
          Thousands(s.width)};
}

// "weights" are the persistent bytes of forward and backward nodes,
// "optimizer" those of update nodes (graphs/stats.h).
const std::vector<std::string> kStatsHeader = {"nodes",     "edges",       "FLOPs", "weights",
                                               "optimizer", "activations", "depth", "width"};

void PrintOps(const graphs::GraphStats& s) {
  std::vector<std::pair<int64_t, std::string>> ops;
  for (const auto& [op, n] : s.op_histogram) ops.emplace_back(-n, op);
  std::sort(ops.begin(), ops.end());
  std::vector<std::vector<std::string>> rows;
  for (const auto& [n, op] : ops) rows.push_back({op, Thousands(-n)});
  std::printf("\nop types of %s:\n", s.name.c_str());
  PrintTable({"op", "nodes"}, rows, 1);
}

int ListCommand(const GraphsArgs& args) {
  if (args.suite.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const graphs::GeneratorInfo& g : graphs::ListGenerators()) rows.push_back({g.name, g.description});
    PrintTable({"generator", "description"}, rows, 2);
    std::printf(
        "\nUse a generator as gen:NAME[:k=v,...], e.g. gosim graphs stats "
        "gen:resnet:depth=50,training=true\n");
    return 0;
  }
  const graphs::Suite suite = graphs::LoadSuite(args.suite);
  std::map<std::string, int64_t> per_split;
  for (const graphs::SuiteEntry& e : suite.entries) ++per_split[e.split.empty() ? "(none)" : e.split];
  std::printf("suite %s: %zu graphs", suite.name.c_str(), suite.entries.size());
  for (const auto& [split, n] : per_split) std::printf(", %s %lld", split.c_str(), static_cast<long long>(n));
  std::printf("\n");
  if (!suite.description.empty()) std::printf("%s\n", suite.description.c_str());
  for (const std::string& note : suite.notes) std::printf("note: %s\n", note.c_str());
  std::vector<std::vector<std::string>> rows;
  for (const graphs::SuiteEntry& e : suite.entries) rows.push_back({e.name, e.split, e.Spec()});
  std::printf("\n");
  PrintTable({"name", "split", "source"}, rows, 3);
  return 0;
}

struct Measured {
  graphs::GraphStats stats;
  std::string split;
  std::string source;
};

int StatsCommand(const GraphsArgs& args) {
  std::vector<Measured> graphs_out;
  std::string suite_name;
  if (IsSuitePath(args.target)) {
    RejectShapesForSuite(args);
    const graphs::Suite suite = graphs::LoadSuite(args.target);
    suite_name = suite.name;
    for (const std::string& note : suite.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    ProgressBar progress("graphs", static_cast<int64_t>(suite.entries.size()));
    for (const graphs::SuiteEntry& e : suite.entries) {
      graphs_out.push_back({graphs::ComputeStats(graphs::MaterializeGraph(e)), e.split, e.Spec()});
      progress.Add();
    }
    progress.Finish();
  } else if (StartsWith(args.target, "gen:") && args.shape.dims.empty() && args.shape.input_shapes.empty()) {
    graphs_out.push_back({graphs::ComputeStats(Generated(args.target)), "", args.target});
  } else {
    graphs_out.push_back({graphs::ComputeStats(LoadTarget(args)), "", args.target});
  }

  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Measured& m : graphs_out) list.push_back(StatsJson(m.stats, m.split, m.source));
    nlohmann::json out = list[0];
    if (!suite_name.empty()) {
      out = nlohmann::json::object();
      out["suite"] = suite_name;
      out["graphs"] = list;
    }
    std::printf("%s\n", DumpJson(out, 2).c_str());
    return 0;
  }
  const bool summarize = graphs_out.size() > 100 && !args.all;
  if (summarize) {
    // Per split: count and min / mean / max of nodes and edges.
    std::map<std::string, std::vector<const Measured*>> by_split;
    for (const Measured& m : graphs_out) by_split[m.split.empty() ? "(none)" : m.split].push_back(&m);
    std::vector<std::vector<std::string>> rows;
    for (const auto& [split, ms] : by_split) {
      int64_t min_n = INT64_MAX, max_n = 0, sum_n = 0, sum_e = 0, max_e = 0;
      double flops = 0;
      for (const Measured* m : ms) {
        min_n = std::min(min_n, m->stats.nodes);
        max_n = std::max(max_n, m->stats.nodes);
        sum_n += m->stats.nodes;
        sum_e += m->stats.edges;
        max_e = std::max(max_e, m->stats.edges);
        flops += m->stats.flops;
      }
      const int64_t n = static_cast<int64_t>(ms.size());
      rows.push_back({split, Thousands(n), Thousands(min_n), Thousands(sum_n / n), Thousands(max_n),
                      Thousands(sum_e / n), Thousands(max_e),
                      FormatCount(flops / static_cast<double>(n), "FLOP")});
    }
    std::printf("suite %s: %zu graphs (per-graph rows with --all)\n", suite_name.c_str(), graphs_out.size());
    PrintTable(
        {"split", "graphs", "min nodes", "mean nodes", "max nodes", "mean edges", "max edges", "mean FLOPs"},
        rows, 1);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  const bool with_split = !suite_name.empty();
  for (const Measured& m : graphs_out) {
    std::vector<std::string> row{m.stats.name};
    if (with_split) row.push_back(m.split);
    for (std::string& cell : StatsRow(m.stats)) row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header{"graph"};
  if (with_split) header.push_back("split");
  header.insert(header.end(), kStatsHeader.begin(), kStatsHeader.end());
  if (with_split) std::printf("suite %s: %zu graphs\n", suite_name.c_str(), graphs_out.size());
  PrintTable(header, rows, with_split ? 2 : 1);
  if (args.ops) {
    for (const Measured& m : graphs_out) PrintOps(m.stats);
  }
  return 0;
}

int ExportCommand(const GraphsArgs& args) {
  graphs::Graph g;
  if (IsSuitePath(args.target)) {
    RejectShapesForSuite(args);
    if (args.entry.empty()) {
      throw ConfigError("exporting from a suite needs --entry NAME", Location{args.target},
                        "see the names with gosim graphs list " + args.target);
    }
    const graphs::Suite suite = graphs::LoadSuite(args.target);
    const graphs::SuiteEntry* found = suite.Find(args.entry);
    if (!found) {
      throw ConfigError("suite '" + suite.name + "' has no graph '" + args.entry + "'." +
                            DidYouMean(args.entry, suite.Names()),
                        Location{args.target}, "see the names with gosim graphs list " + args.target);
    }
    g = graphs::MaterializeGraph(*found);
  } else if (StartsWith(args.target, "gen:") && args.shape.dims.empty() && args.shape.input_shapes.empty()) {
    g = Generated(args.target);
  } else {
    g = LoadTarget(args);
  }
  graphs::SaveGraph(g, args.out);
  std::printf("wrote %s: %s, %d nodes, %d edges\n", args.out.c_str(), g.name().c_str(), g.num_nodes(),
              g.num_edges());
  return 0;
}

std::string ShortNumber(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", x);
  return buffer;
}

int RoomCommand(const GraphsArgs& args) {
  experiments::RoomFilterOptions o;
  o.suite = args.suite;
  o.cluster = args.cluster;
  o.cost_model = args.cost_model;
  o.objective.kind = agents::ParseObjectiveKind(args.objective, Location{"--objective"});
  o.low_budget = args.low;
  o.high_budget = args.high;
  o.min_improvement = args.min_improvement;
  o.seed = args.seed;
  o.cache = args.cache;
  for (const std::string& item : args.keep) {
    const size_t eq = item.find('=');
    const std::string split = eq == std::string::npos ? "" : item.substr(0, eq);
    char* end = nullptr;
    const long long count = eq == std::string::npos ? -1 : std::strtoll(item.c_str() + eq + 1, &end, 10);
    if ((split != "train" && split != "valid" && split != "test") || count <= 0 || *end != '\0') {
      throw ConfigError("bad --keep item '" + item + "'", Location{"--keep"},
                        "write SPLIT=COUNT with SPLIT train, valid or test, e.g. --keep train=600,valid=50");
    }
    o.keep[split] = count;
  }
  if (o.keep.empty()) {
    throw ConfigError("no split to keep", Location{"--keep"}, "give e.g. --keep train=600,valid=50,test=100");
  }
  if (o.low_budget >= o.high_budget) {
    throw ConfigError("--low must be below --high", Location{"--low"}, "e.g. --low 5000 --high 50000");
  }
  const experiments::RoomFilterResult result =
      experiments::FilterRoom(o, [&](const experiments::RoomCandidate& c) {
        std::printf("%-6s %-24s low %.6g high %.6g %s\n", c.split.c_str(), c.name.c_str(), c.low, c.high,
                    c.kept ? "kept" : "-");
        std::fflush(stdout);
      });
  for (const auto& [split, count] : o.keep) {
    const int64_t kept = result.kept.count(split) ? result.kept.at(split) : 0;
    std::printf("%s: %lld kept of %lld examined%s\n", split.c_str(), static_cast<long long>(kept),
                static_cast<long long>(result.examined.count(split) ? result.examined.at(split) : 0),
                kept < count ? " (the split ran out of candidates)" : "");
  }
  const std::string name = args.name.empty() ? graphs::LoadSuite(o.suite).name + "_room" : args.name;
  WriteFileAtomic(args.out, experiments::RoomSuiteYaml(o, result, name, args.command_line));
  std::printf("wrote %s\n", args.out.c_str());
  return 0;
}

// One built graph with its fingerprints, for `fingerprint` and `leaks`.
struct Printed {
  std::string name;
  std::string split;
  std::string suite;
  std::string source;
  graphs::GraphFingerprint fp;
};

// Every entry of the suites (or the one graph of a file or generator
// target), built and fingerprinted, with a progress bar.
std::vector<Printed> FingerprintTargets(const GraphsArgs& args, const std::vector<std::string>& targets) {
  std::vector<Printed> out;
  for (const std::string& target : targets) {
    if (!IsSuitePath(target)) {
      GraphsArgs one = args;
      one.target = target;
      const graphs::Graph g =
          StartsWith(target, "gen:") && args.shape.dims.empty() && args.shape.input_shapes.empty()
              ? Generated(target)
              : LoadTarget(one);
      out.push_back({g.name(), "", "", target, graphs::Fingerprint(g)});
      continue;
    }
    GraphsArgs one = args;
    one.target = target;
    RejectShapesForSuite(one);
    const graphs::Suite suite = graphs::LoadSuite(target);
    for (const std::string& note : suite.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    ProgressBar progress("fingerprints of " + suite.name, static_cast<int64_t>(suite.entries.size()));
    for (const graphs::SuiteEntry& e : suite.entries) {
      out.push_back(
          {e.name, e.split, suite.path, e.Spec(), graphs::Fingerprint(graphs::MaterializeGraph(e))});
      progress.Add();
    }
    progress.Finish();
  }
  return out;
}

nlohmann::json PrintedJson(const Printed& p) {
  nlohmann::json j = {{"name", p.name}, {"exact", p.fp.exact}, {"family", p.fp.family}, {"source", p.source}};
  if (!p.suite.empty()) {
    j["suite"] = p.suite;
    j["split"] = p.split;
  }
  return j;
}

int FingerprintCommand(const GraphsArgs& args) {
  const std::vector<Printed> all = FingerprintTargets(args, {args.target});
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Printed& p : all) list.push_back(PrintedJson(p));
    std::printf("%s\n", DumpJson(all.size() == 1 && all[0].suite.empty() ? list[0] : list, 2).c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Printed& p : all) rows.push_back({p.name, p.split, p.fp.exact, p.fp.family});
  PrintTable({"graph", "split", "exact", "family"}, rows, 4);
  return 0;
}

// A split's role in the check; entries without a split (a suite of graphs
// each trained and evaluated on itself, as HRL's) are not compared.
std::string SplitLabel(const Printed& p) {
  return p.split.empty() ? "(none)" : p.split;
}

int LeaksCommand(const GraphsArgs& args) {
  const std::vector<Printed> all = FingerprintTargets(args, args.suites);
  struct Pair {
    size_t a, b;
    std::string kind;
  };
  std::vector<Pair> pairs;
  for (const std::string kind : {"exact", "family"}) {
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i = 0; i < all.size(); ++i)
      groups[kind == std::string("exact") ? all[i].fp.exact : all[i].fp.family].push_back(i);
    for (const auto& [key, members] : groups) {
      for (size_t x = 0; x < members.size(); ++x) {
        for (size_t y = x + 1; y < members.size(); ++y) {
          const Printed& a = all[members[x]];
          const Printed& b = all[members[y]];
          if (a.split.empty() || b.split.empty() || a.split == b.split) continue;   // not a leak
          if (kind == std::string("family") && a.fp.exact == b.fp.exact) continue;  // reported as exact
          pairs.push_back({members[x], members[y], kind});
        }
      }
    }
  }
  auto where = [](const Printed& p) { return p.name + " (" + SplitLabel(p) + " of " + p.suite + ")"; };
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Pair& p : pairs)
      list.push_back({{"kind", p.kind}, {"a", PrintedJson(all[p.a])}, {"b", PrintedJson(all[p.b])}});
    std::printf("%s\n", DumpJson(nlohmann::json{{"entries", all.size()}, {"pairs", list}}, 2).c_str());
  } else if (pairs.empty()) {
    std::printf(
        "no leaks: %zu entries, no two of different splits with equal exact or family fingerprints (entries "
        "without a split are not compared)\n",
        all.size());
  } else {
    for (const Pair& p : pairs) {
      std::printf("%s: %s and %s\n", p.kind == "exact" ? "same graph" : "same family",
                  where(all[p.a]).c_str(), where(all[p.b]).c_str());
    }
    std::printf(
        "%zu pair(s) across splits among %zu entries (exact: the same built graph; family: the same "
        "model at another batch size or depth)\n",
        pairs.size(), all.size());
  }
  return pairs.empty() ? 0 : 1;
}

}  // namespace

void AddGraphsCommand(CLI::App& root) {
  CLI::App* graphs = root.add_subcommand("graphs", "List, inspect and export graphs and suites");
  graphs->require_subcommand(1);
  auto args = std::make_shared<GraphsArgs>();

  CLI::App* list = graphs->add_subcommand("list", "List the graph generators, or the entries of a suite");
  InputFile(list->add_option("suite", args->suite, "a suite YAML (configs/suites/*.yaml)"));

  CLI::App* stats =
      graphs->add_subcommand("stats", "Print graph statistics of a file, a suite or a generator");
  InputFile(stats->add_option("target", args->target, "graph file, suite YAML, or gen:NAME[:k=v,...]"))
      ->required();
  stats->add_flag("--json", args->json, "print JSON instead of a table");
  stats->add_flag("--all", args->all, "one row per graph even for suites of more than 100 graphs");
  stats->add_flag("--ops", args->ops, "also print the op-type histogram of each graph");
  AddShapeOptions(stats, &args->shape);

  CLI::App* exp = graphs->add_subcommand("export",
                                         "Write a graph as native JSON (.json[.gz]) or the binary format "
                                         "(.gosimgraph[.gz], the fastest to load)");
  InputFile(
      exp->add_option("target", args->target, "graph file, suite YAML (with --entry), or gen:NAME[:k=v,...]"))
      ->required();
  exp->add_option("--out", args->out, "output file, .json or .gosimgraph (optionally .gz)")->required();
  exp->add_option("--entry", args->entry, "the suite entry to export");
  AddShapeOptions(exp, &args->shape);

  CLI::App* room = graphs->add_subcommand(
      "room", "Keep the graphs of a suite where a high-budget BRKGA clearly beats a low-budget one (REGAL)");
  InputFile(room->add_option("suite", args->suite, "the candidate suite YAML"))->required();
  room->add_option("--out", args->out, "the suite YAML to write")->required();
  room->add_option("--keep", args->keep, "graphs to keep per split: train=N,valid=N,test=N")
      ->delimiter(',')
      ->required();
  room->add_option("--cluster", args->cluster, "cluster (default k80x2)");
  room->add_option("--cost-model", args->cost_model, "cost model (default roofline)");
  room->add_option("--objective", args->objective, "step_time or peak_memory (default)");
  room->add_option("--low", args->low, "evaluations of the low-budget BRKGA (default 5000)");
  room->add_option("--high", args->high, "evaluations of the high-budget BRKGA (default 50000)");
  room->add_option("--min-improvement", args->min_improvement,
                   "keep when (low - high) / low reaches this (default 0.2, REGAL's)");
  room->add_option("--seed", args->seed, "seed of the BRKGA runs (default 0)");
  room->add_option("--cache", args->cache, "CSV of finished candidates; a rerun skips them");
  room->add_option("--name", args->name, "name of the written suite (default: SUITE_room)");

  CLI::App* fingerprint = graphs->add_subcommand(
      "fingerprint", "Print a graph's exact fingerprint and its family fingerprint (batch and depth aside)");
  InputFile(fingerprint->add_option("target", args->target, "graph file, suite YAML, or gen:NAME[:k=v,...]"))
      ->required();
  fingerprint->add_flag("--json", args->json, "print JSON instead of a table");
  AddShapeOptions(fingerprint, &args->shape);

  CLI::App* leaks = graphs->add_subcommand(
      "leaks",
      "List entries of different splits that are the same graph or the same model family; exit 1 if any");
  InputFile(leaks->add_option("suites", args->suites, "suite YAMLs (every entry of all of them is compared)"))
      ->required();
  leaks->add_flag("--json", args->json, "print JSON instead of lines");

  Commands().push_back({graphs, [args, list, stats, exp, room, fingerprint, leaks] {
                          if (fingerprint->parsed()) return FingerprintCommand(*args);
                          if (leaks->parsed()) return LeaksCommand(*args);
                          if (list->parsed()) return ListCommand(*args);
                          if (stats->parsed()) return StatsCommand(*args);
                          if (exp->parsed()) return ExportCommand(*args);
                          if (room->parsed()) {
                            args->command_line =
                                "gosim graphs room " + args->suite + " --out " + args->out + " --keep " +
                                Join(args->keep, ",") + " --cluster " + args->cluster + " --cost-model " +
                                args->cost_model + " --objective " + args->objective + " --low " +
                                std::to_string(args->low) + " --high " + std::to_string(args->high) +
                                " --min-improvement " + ShortNumber(args->min_improvement) + " --seed " +
                                std::to_string(args->seed) +
                                (args->name.empty() ? "" : " --name " + args->name);
                            return RoomCommand(*args);
                          }
                          return 2;
                        }});
}

}  // namespace gosim::cli
