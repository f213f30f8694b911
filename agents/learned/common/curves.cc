#include "agents/learned/common/curves.h"

#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/io.h"

namespace gosim::agents::learned {

namespace {

std::string FormatLine(const TrainingPoint& p) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), "%lld,%.9g,%.9g,%.3f,%lld", static_cast<long long>(p.step), p.reward,
                p.best_objective, p.wall_seconds, static_cast<long long>(p.evaluations));
  std::string line = buffer;
  for (double x : p.extra) {
    std::snprintf(buffer, sizeof(buffer), ",%.9g", x);
    line += buffer;
  }
  return line;
}

}  // namespace

TrainingCurves::TrainingCurves(std::string path, std::vector<std::string> extra_columns, int64_t resume_step)
    : path_(std::move(path)), extra_columns_(extra_columns.size()) {
  std::string header = "step,reward,best_objective,wall_seconds,evaluations";
  for (const std::string& c : extra_columns) header += "," + c;
  std::string kept = header + "\n";
  if (resume_step >= 0 && FileExists(path_)) {
    std::istringstream in(ReadFile(path_));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const long long step = std::strtoll(line.c_str(), nullptr, 10);
      if (step <= resume_step) kept += line + "\n";
    }
  }
  WriteFileAtomic(path_, kept);
}

void TrainingCurves::Append(const TrainingPoint& point) {
  if (point.extra.size() != extra_columns_) {
    throw StateError("training curve point has " + std::to_string(point.extra.size()) +
                         " extra values, the file " + std::to_string(extra_columns_),
                     Location{path_}, "internal: pass one value per extra column");
  }
  AppendLine(path_, FormatLine(point));
}

std::vector<TrainingPoint> TrainingCurves::Read(const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::string line;
  std::vector<TrainingPoint> points;
  if (!std::getline(in, line) || line.rfind("step,reward,best_objective,wall_seconds,evaluations", 0) != 0) {
    throw StateError("not a training curves file (bad header)", Location{path, 1},
                     "give a curves.csv of a run");
  }
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string field;
    std::vector<double> values;
    while (std::getline(fields, field, ',')) {
      char* end = nullptr;
      values.push_back(std::strtod(field.c_str(), &end));
      if (end == field.c_str()) {
        throw StateError("not a number: '" + field + "'", Location{path, line_number}, "the file is corrupt");
      }
    }
    if (values.size() < 5) {
      throw StateError("expected at least 5 columns", Location{path, line_number}, "the file is corrupt");
    }
    TrainingPoint p;
    p.step = static_cast<int64_t>(values[0]);
    p.reward = values[1];
    p.best_objective = values[2];
    p.wall_seconds = values[3];
    p.evaluations = static_cast<int64_t>(values[4]);
    p.extra.assign(values.begin() + 5, values.end());
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace gosim::agents::learned
