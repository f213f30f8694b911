// Training curves: one CSV line per training step in the run folder,
//   step,reward,best_objective,wall_seconds,evaluations[,extra columns...]
// appended and fsync'd line by line (core/io.h AppendLine). On resume the
// lines past the checkpoint's step are dropped first (rewritten atomically),
// so the file always matches the resumed run. No torch here.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_CURVES_H_
#define GOSIM_AGENTS_LEARNED_COMMON_CURVES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gosim::agents::learned {

struct TrainingPoint {
  int64_t step = 0;
  double reward = 0.0;          // mean reward of the step
  double best_objective = 0.0;  // best objective seen so far (the trainer's own measure)
  double wall_seconds = 0.0;    // since the start of the run, resumes included
  int64_t evaluations = 0;      // simulator evaluations so far, resumes included
  std::vector<double> extra;    // one value per extra column
};

class TrainingCurves {
 public:
  // `path`: the CSV file (created with its header when missing). `resume_step`:
  // when >= 0, lines with step > resume_step are dropped (a resumed run);
  // when < 0 the file is started afresh.
  TrainingCurves(std::string path, std::vector<std::string> extra_columns, int64_t resume_step);

  void Append(const TrainingPoint& point);
  const std::string& path() const { return path_; }

  // Reads a curves file back (tests, reports). IoError / StateError on a
  // missing or malformed file.
  static std::vector<TrainingPoint> Read(const std::string& path);

 private:
  std::string path_;
  size_t extra_columns_;
};

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_CURVES_H_
