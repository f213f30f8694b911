// Helpers shared by the experiments tests: a temporary folder and a tiny
// experiment over the test data in tests/experiments/data/.
#ifndef GOSIM_TESTS_EXPERIMENTS_TEST_UTIL_H_
#define GOSIM_TESTS_EXPERIMENTS_TEST_UTIL_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "core/io.h"

namespace gosim::experiments::testing {

// A fresh folder under the system temp folder, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gosim_exp_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline constexpr const char* kTinyGraph = "tests/experiments/data/tiny_branches.json";
inline constexpr const char* kTwoGpus = "tests/experiments/data/two_gpus.yaml";

// An experiment over the tiny graph on two GPUs: single_device (the
// reference) and random_search, `seeds` seeds, 40 evaluations, output in
// `output`. `extra` is appended verbatim (more keys).
inline std::string TinyExperimentYaml(const std::string& output, int seeds = 2,
                                      const std::string& extra = "") {
  return "name: tiny\n"
         "graphs:\n"
         "  - file: " +
         std::string(kTinyGraph) +
         "\n"
         "clusters: [" +
         std::string(kTwoGpus) +
         "]\n"
         "agents:\n"
         "  - name: single_device\n"
         "  - name: random_search\n"
         "seeds: " +
         std::to_string(seeds) +
         "\n"
         "budget: {evaluations: 40}\n"
         "output: " +
         output + "\n" + extra;
}

// Writes `text` to `folder`/`name` and returns the path.
inline std::string WriteText(const TempDir& folder, const std::string& name, const std::string& text) {
  const std::string path = folder / name;
  WriteFileAtomic(path, text);
  return path;
}

}  // namespace gosim::experiments::testing

#endif  // GOSIM_TESTS_EXPERIMENTS_TEST_UTIL_H_
