// The project's real data beside the repository (`../shared/data`: Kineto
// traces, msr-fiddle workloads; DESIGN.md, "Real data"), which a public
// clone does not have. Test cases that read it belong to the doctest suite
// `shared_data` (`* doctest::test_suite("shared_data")`): gosim_test(...
// SHARED_DATA) runs them as a CTest test of their own, `<module>_shared_data`,
// which is reported as skipped (exit 77) when the data is absent. Every
// user-facing path is also tested on data in the repository.
//
// GOSIM_SHARED_DATA=DIR reads the data from DIR instead; GOSIM_SHARED_DATA=none
// hides it, as a public clone has it (.ci/run checks both ways).
#ifndef GOSIM_TESTS_SHARED_DATA_H_
#define GOSIM_TESTS_SHARED_DATA_H_

#include <string>
#include <vector>

namespace gosim::testing {

// The shared data folder: $GOSIM_SHARED_DATA, else <source>/../shared/data;
// "" when GOSIM_SHARED_DATA is `none`.
std::string SharedDataDir();

// The path of `relative` (e.g. "traces/kineto_v100_resnet50.json.gz") in
// SharedDataDir() when that file exists. Otherwise "": it prints one line
// saying what is missing and marks the run as skipped, and the caller
// returns from the test case:
//   const std::string path = SharedDataFile("traces/x.json.gz");
//   if (path.empty()) return;
std::string SharedDataFile(const std::string& relative);

// SharedDataFile for several files: all their paths, or none (and one line
// naming the missing ones).
std::vector<std::string> SharedDataFiles(const std::vector<std::string>& relative);

// Whether SharedDataFile skipped anything in this process (the test main
// then exits 77, CTest's "skipped", when nothing failed).
bool SharedDataSkipped();

}  // namespace gosim::testing

#endif  // GOSIM_TESTS_SHARED_DATA_H_
