// Sealed test sets: which graphs are test graphs, refusing runs that would
// leak one into training or tuning, and the log of final runs.
//
// A test graph is an entry of a `test` split of any suite in
// configs/suites/ (or of the experiment's own suite), identified by what
// builds it: the same generator and parameters (SuiteEntry::Spec), or the
// same graph file (its canonical path). `gosim run` and `gosim train` touch
// test graphs only when called with `--final`, and every such run appends a
// line to `final_runs.jsonl` in its run folder (date, config digest, code
// version, test graphs), so a reader sees how often the test set was used.
// An entry of a `train` or `valid` split that is a test graph is a leak, and
// a run that would train or tune on it is refused, with or without --final.
#ifndef GOSIM_EXPERIMENTS_SPLITS_H_
#define GOSIM_EXPERIMENTS_SPLITS_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "graphs/suite.h"

namespace gosim::experiments {

class TestGraphIndex {
 public:
  // The test entries of every suite file in `folder` (default: the
  // project's configs/suites, found as ResolveDataPath finds data; empty
  // when there is no such folder). A suite that fails to load is skipped
  // with a warning (it is checked where it is used).
  static TestGraphIndex FromSuites(const std::string& folder = "configs/suites");

  // Adds the test entries of `suite`; one entry, described as `where`.
  void Add(const graphs::Suite& suite);
  void Add(const graphs::SuiteEntry& entry, const std::string& where);

  // "entry NAME of the test split of SUITE" when `entry` is a test graph;
  // empty otherwise.
  std::string TestSourceOf(const graphs::SuiteEntry& entry) const;

  // What identifies an entry's graph: Spec() for generators, "file:" and
  // the canonical path for files.
  static std::string Key(const graphs::SuiteEntry& entry);

 private:
  std::map<std::string, std::string> where_;  // key -> description of the first test entry
};

// TestGraphIndex::FromSuites() of the project's configs/suites, read once
// per process.
const TestGraphIndex& ProjectTestGraphs();

// Test graphs by content (graphs/fingerprint.h): what a train or valid
// entry's graph *is*, whatever text built it. Exact: the same built graph;
// family: the same model at another batch size or depth.
class TestContentIndex {
 public:
  // The test entries of every suite in `folder` (built once each; a suite
  // or entry that fails is skipped with a warning).
  static TestContentIndex FromSuites(const std::string& folder = "configs/suites");
  // Builds `entry`'s graph and adds it, described as `where`.
  void Add(const graphs::SuiteEntry& entry, const std::string& where);
  void Add(const std::string& exact, const std::string& family, const std::string& where);
  // The description of a test graph with this exact fingerprint, or "".
  std::string ExactOf(const std::string& exact) const;
  // The test graphs of this family (descriptions, in the order added).
  std::vector<std::string> FamilyOf(const std::string& family) const;
  bool empty() const { return exact_.empty(); }

 private:
  std::map<std::string, std::string> exact_;
  std::map<std::string, std::vector<std::string>> family_;
};

// TestContentIndex::FromSuites() of the project's configs/suites, built
// once per process, when first asked for.
const TestContentIndex& ProjectTestContent();

// The content check of a train or valid entry (others pass): a ConfigError
// at `entry.where` when its graph is exactly a test graph of `index`; else
// the test graphs of its family, one warning line each (returned, for the
// run's records).
std::vector<std::string> CheckNoContentLeak(const graphs::SuiteEntry& entry, const TestContentIndex& index,
                                            const std::string& purpose);

// Throws ConfigError at `entry.where` when a train or valid entry is a test
// graph (`purpose` says what the run does with it, e.g. "pre-training").
void CheckNoLeak(const graphs::SuiteEntry& entry, const TestGraphIndex& index, const std::string& purpose);

// The final-run log of a run folder (`final_runs.jsonl`, one JSON line per
// run that touched test graphs). Append returns the number of lines after
// appending; Count reads it (0 without the file).
int64_t AppendFinalRun(const std::string& folder, const YAML::Node& resolved_config,
                       const std::vector<std::string>& test_graphs, const std::string& command);
int64_t CountFinalRuns(const std::string& folder);
// `gosim run --reuse FROM` copied cells of test graphs into `to`: the final
// runs logged in FROM (which produced them) are appended to `to`'s log,
// numbered on from its count, with `carried_from` naming where they were
// logged, so that `to`'s count says how often the test set was used for
// the cells it holds. A run carried before is not carried again. Returns
// how many were carried. A line of FROM that is not a JSON object is a
// StateError naming the file and line.
int64_t CarryFinalRuns(const std::string& from, const std::string& to);

// The digest of a resolved configuration as written to the logs.
std::string ConfigDigest(const YAML::Node& resolved_config);

}  // namespace gosim::experiments

#endif  // GOSIM_EXPERIMENTS_SPLITS_H_
