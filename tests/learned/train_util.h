// Helpers for tests of `gosim train` trainers (tests/learned/): a training
// request in a fresh folder, and a run killed after some steps then resumed.
#ifndef GOSIM_TESTS_LEARNED_TRAIN_UTIL_H_
#define GOSIM_TESTS_LEARNED_TRAIN_UTIL_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "agents/learned/common/curves.h"
#include "agents/learned/common/train.h"
#include "core/io.h"
#include "core/yaml.h"

namespace gosim::agents::testing {

// A request for the training config `config` (YAML text without the `suite`
// key) over the suite `suite` (YAML text), written to `dir`/suite.yaml;
// the run folder is `dir`/run. `dir` is emptied first.
inline learned::TrainRequest MakeTrainRequest(const std::string& dir, const std::string& suite,
                                              const std::string& config, const std::string& config_name) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/run");
  WriteFileAtomic(dir + "/suite.yaml", suite);
  learned::TrainRequest r;
  r.config = LoadYamlString("suite: " + dir + "/suite.yaml\n" + config, config_name);
  r.config_file = config_name;
  r.run_dir = dir + "/run";
  r.progress = false;
  return r;
}

// Runs `request` for `steps` steps (as if killed there), then resumes it to
// the end; returns the resumed request. `on_killed` runs in between.
template <typename Fn>
learned::TrainRequest KillAndResume(learned::TrainRequest request, int64_t steps, const Fn& on_killed) {
  request.max_steps = steps;
  learned::RunTraining(request);
  on_killed(request);
  request.max_steps = -1;
  request.resume = true;
  learned::RunTraining(request);
  return request;
}

// "" when the curves of the run folders of `a` and `b` have `rows` rows each
// and agree step for step (step, reward, best objective, evaluations; wall
// times aside), else what differs first.
inline std::string CompareCurves(const learned::TrainRequest& a, const learned::TrainRequest& b,
                                 size_t rows) {
  const std::vector<learned::TrainingPoint> ca = learned::TrainingCurves::Read(a.run_dir + "/curves.csv");
  const std::vector<learned::TrainingPoint> cb = learned::TrainingCurves::Read(b.run_dir + "/curves.csv");
  if (ca.size() != rows || cb.size() != rows) {
    return "rows: " + std::to_string(ca.size()) + " and " + std::to_string(cb.size()) + ", expected " +
           std::to_string(rows);
  }
  for (size_t i = 0; i < rows; ++i) {
    if (ca[i].step != static_cast<int64_t>(i) + 1 || cb[i].step != ca[i].step)
      return "step of row " + std::to_string(i);
    if (cb[i].reward != ca[i].reward) return "reward at step " + std::to_string(i + 1);
    if (cb[i].best_objective != ca[i].best_objective)
      return "best objective at step " + std::to_string(i + 1);
    if (cb[i].evaluations != ca[i].evaluations) return "evaluations at step " + std::to_string(i + 1);
  }
  return "";
}

}  // namespace gosim::agents::testing

#endif  // GOSIM_TESTS_LEARNED_TRAIN_UTIL_H_
