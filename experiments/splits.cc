#include "experiments/splits.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/data_path.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/version.h"
#include "experiments/cells.h"
#include "experiments/results.h"
#include "graphs/fingerprint.h"

namespace gosim::experiments {

namespace fs = std::filesystem;

namespace {

// The suite files (*.yaml, *.yml) of `folder`, found as ResolveDataPath
// finds data, sorted; none when there is no such folder.
std::vector<std::string> SuiteFiles(const std::string& folder) {
  std::vector<std::string> files;
  const std::string resolved = ResolveDataPath(folder);
  std::error_code ec;
  if (!fs::is_directory(resolved, ec)) return files;
  for (const auto& item : fs::directory_iterator(resolved, ec)) {
    const std::string path = item.path().string();
    if (item.is_regular_file() && (EndsWith(path, ".yaml") || EndsWith(path, ".yml"))) files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TestGraphIndex TestGraphIndex::FromSuites(const std::string& folder) {
  TestGraphIndex index;
  for (const std::string& path : SuiteFiles(folder)) {
    try {
      index.Add(graphs::LoadSuite(path));
    } catch (const Error& e) {
      GOSIM_LOG(Warn) << "test-split check: skipping suite " << path << ": " << e.what();
    }
  }
  return index;
}

const TestGraphIndex& ProjectTestGraphs() {
  static const TestGraphIndex index = TestGraphIndex::FromSuites();
  return index;
}

std::string TestGraphIndex::Key(const graphs::SuiteEntry& entry) {
  if (entry.kind == graphs::SuiteEntry::Kind::kFile) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(entry.path, ec);
    std::string key = "file:" + (ec ? entry.path : canonical.string());
    if (entry.augment_index > 0) key += "#aug=" + std::to_string(entry.augment_index);
    return key;
  }
  return entry.Spec();
}

void TestGraphIndex::Add(const graphs::Suite& suite) {
  for (const graphs::SuiteEntry* entry : suite.EntriesOf("test")) {
    Add(*entry, "entry '" + entry->name + "' of the test split of " + suite.path);
  }
}

void TestGraphIndex::Add(const graphs::SuiteEntry& entry, const std::string& where) {
  where_.emplace(Key(entry), where);
}

std::string TestGraphIndex::TestSourceOf(const graphs::SuiteEntry& entry) const {
  const auto it = where_.find(Key(entry));
  return it == where_.end() ? std::string() : it->second;
}

void CheckNoLeak(const graphs::SuiteEntry& entry, const TestGraphIndex& index, const std::string& purpose) {
  if (entry.split != "train" && entry.split != "valid") return;
  const std::string source = index.TestSourceOf(entry);
  if (source.empty()) return;
  throw ConfigError(
      "graph '" + entry.name + "' of the " + entry.split + " split, used for " + purpose +
          ", is a test graph (" + source + ", same " +
          (entry.kind == graphs::SuiteEntry::Kind::kFile ? "file" : "generator and parameters") +
          "): the test set would leak",
      entry.where, "change the " + entry.split + " entry (another size or model), not the test one");
}

TestContentIndex TestContentIndex::FromSuites(const std::string& folder) {
  TestContentIndex index;
  for (const std::string& path : SuiteFiles(folder)) {
    try {
      const graphs::Suite suite = graphs::LoadSuite(path);
      for (const graphs::SuiteEntry* entry : suite.EntriesOf("test"))
        index.Add(*entry, "entry '" + entry->name + "' of the test split of " + suite.path);
    } catch (const Error& e) {
      GOSIM_LOG(Warn) << "test-split content check: skipping suite " << path << ": " << e.what();
    }
  }
  return index;
}

void TestContentIndex::Add(const graphs::SuiteEntry& entry, const std::string& where) {
  const graphs::GraphFingerprint fp = graphs::Fingerprint(graphs::MaterializeGraph(entry));
  Add(fp.exact, fp.family, where);
}

void TestContentIndex::Add(const std::string& exact, const std::string& family, const std::string& where) {
  exact_.emplace(exact, where);
  std::vector<std::string>& members = family_[family];
  if (std::find(members.begin(), members.end(), where) == members.end()) members.push_back(where);
}

std::string TestContentIndex::ExactOf(const std::string& exact) const {
  const auto it = exact_.find(exact);
  return it == exact_.end() ? std::string() : it->second;
}

std::vector<std::string> TestContentIndex::FamilyOf(const std::string& family) const {
  const auto it = family_.find(family);
  return it == family_.end() ? std::vector<std::string>() : it->second;
}

const TestContentIndex& ProjectTestContent() {
  static const TestContentIndex index = TestContentIndex::FromSuites();
  return index;
}

std::vector<std::string> CheckNoContentLeak(const graphs::SuiteEntry& entry, const TestContentIndex& index,
                                            const std::string& purpose) {
  if (entry.split != "train" && entry.split != "valid") return {};
  const graphs::GraphFingerprint fp = graphs::Fingerprint(graphs::MaterializeGraph(entry));
  const std::string exact = index.ExactOf(fp.exact);
  if (!exact.empty()) {
    throw ConfigError("graph '" + entry.name + "' of the " + entry.split + " split, used for " + purpose +
                          ", builds the same graph as a test graph (" + exact +
                          "; `gosim graphs fingerprint` " + fp.exact + "): the test set would leak",
                      entry.where, "change the " + entry.split + " entry (another model), not the test one");
  }
  const std::vector<std::string> tests = index.FamilyOf(fp.family);
  if (tests.empty()) return {};
  std::string line =
      "'" + entry.name + "' (" + entry.split + ") is the same model family as " + tests.front();
  if (tests.size() > 1)
    line +=
        " and " + std::to_string(tests.size() - 1) + " more test entr" + (tests.size() == 2 ? "y" : "ies");
  GOSIM_LOG(Warn) << "near-duplicate of a test graph: " << line
                  << " (another batch size or depth; `gosim graphs leaks` lists them)";
  return {line};
}

std::string ConfigDigest(const YAML::Node& resolved_config) {
  YAML::Emitter out;
  out << resolved_config;
  return HashHex(out.c_str());
}

int64_t CountFinalRuns(const std::string& folder) {
  const std::string path = folder + "/final_runs.jsonl";
  if (!FileExists(path)) return 0;
  int64_t count = 0;
  for (const std::string& line : Split(ReadFile(path), '\n')) count += line.empty() ? 0 : 1;
  return count;
}

int64_t AppendFinalRun(const std::string& folder, const YAML::Node& resolved_config,
                       const std::vector<std::string>& test_graphs, const std::string& command) {
  const int64_t count = CountFinalRuns(folder) + 1;
  const nlohmann::ordered_json line = {{"final_run", count},
                                       {"date", UtcNow()},
                                       {"command", command},
                                       {"config_digest", ConfigDigest(resolved_config)},
                                       {"code", BuildCodeVersion().ToString()},
                                       {"test_graphs", test_graphs}};
  AppendLine(folder + "/final_runs.jsonl", DumpJson(line));
  return count;
}

namespace {

// The lines of a final-run log as JSON objects (none without the file).
std::vector<nlohmann::ordered_json> ReadFinalRuns(const std::string& folder) {
  const std::string path = folder + "/final_runs.jsonl";
  std::vector<nlohmann::ordered_json> out;
  if (!FileExists(path)) return out;
  int64_t number = 0;
  for (const std::string& line : Split(ReadFile(path), '\n')) {
    ++number;
    if (line.empty()) continue;
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) {
      throw StateError("line " + std::to_string(number) + " is not a JSON object", Location{path},
                       "restore the file from a backup, or remove that line (the count then misses a run)");
    }
    out.push_back(std::move(json));
  }
  return out;
}

// What identifies one logged run wherever it is carried: the folder it was
// first logged in, and its line there.
std::string RunKey(const nlohmann::ordered_json& run, const std::string& folder) {
  const bool carried = run.contains("carried_from");
  const std::string origin = carried ? run["carried_from"].dump() : nlohmann::ordered_json(folder).dump();
  const nlohmann::ordered_json number =
      run.value(carried ? "carried_final_run" : "final_run", nlohmann::ordered_json());
  return origin + "|" + number.dump() + "|" + run.value("date", nlohmann::ordered_json()).dump();
}

}  // namespace

int64_t CarryFinalRuns(const std::string& from, const std::string& to) {
  const std::string from_name = fs::weakly_canonical(from).string();
  const std::vector<nlohmann::ordered_json> existing = ReadFinalRuns(to);
  std::set<std::string> present;
  const std::string to_name = fs::weakly_canonical(to).string();
  for (const nlohmann::ordered_json& run : existing) present.insert(RunKey(run, to_name));
  int64_t count = static_cast<int64_t>(existing.size()), carried = 0;
  for (nlohmann::ordered_json run : ReadFinalRuns(from)) {
    const std::string key = RunKey(run, from_name);
    if (!present.insert(key).second) continue;
    if (!run.contains("carried_from")) {
      run["carried_from"] = from_name;
      run["carried_final_run"] = run.value("final_run", nlohmann::ordered_json());
    }
    run["final_run"] = ++count;
    AppendLine(to + "/final_runs.jsonl", DumpJson(run));
    ++carried;
  }
  return carried;
}

}  // namespace gosim::experiments
