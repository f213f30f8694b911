// The summary of `gosim calibrate --validate`: median and worst error, and
// the attribution of each model that misses the median target to the GPU
// side, the host side or neither (calibration/validate.h).
#include "calibration/validate.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace gosim::calibration {
namespace {

// A row of a step measured at 10 ms: predicted step, GPU busy predicted /
// measured, host busy predicted / measured (ms).
ValidationRow Row(const std::string& model, double step, double gpu_pred, double gpu_meas, double host_pred,
                  double host_meas) {
  ValidationRow r;
  r.model = model;
  r.gpu = "h200";
  r.measured_step_s = 10e-3;
  r.predicted_step_s = step * 1e-3;
  r.predicted_gpu_busy_s = gpu_pred * 1e-3;
  r.measured_gpu_busy_s = gpu_meas * 1e-3;
  r.predicted_host_busy_s = host_pred * 1e-3;
  r.measured_host_s = host_meas * 1e-3;
  return r;
}

TEST_CASE("SummarizeValidation attributes each miss to the side whose correction explains it") {
  const std::vector<ValidationRow> rows{
      Row("exact", 10.2, 10.2, 10.0, 5.0, 5.0),    // +2%: within the target, not counted
      Row("gpu", 13.0, 13.0, 10.0, 6.0, 6.0),      // GPU priced 30% high; the host is right
      Row("host", 14.0, 8.0, 8.0, 14.0, 9.9),      // host-bound, host priced 41% high
      Row("neither", 7.0, 7.0, 7.0, 3.0, 3.0),     // both sides as measured, still 30% short
      Row("worst", 20.0, 20.0, 9.8, 20.0, 10.0)};  // both sides off: correcting either alone is not enough
  const ValidationSummary s = SummarizeValidation("h200", rows);
  CHECK(s.models == 5);
  CHECK(s.worst_model == "worst");
  CHECK(s.worst_abs_error == doctest::Approx(1.0));
  CHECK(s.median_abs_error == doctest::Approx(0.30));
  CHECK(s.missed == 4);
  // "worst": fixing the GPU leaves the host's 20 ms (+100%), fixing the host
  // leaves the GPU's 20 ms (+100%): a tie goes to the GPU side.
  CHECK(s.gpu_side == 2);
  CHECK(s.host_side == 1);
  CHECK(s.neither == 1);
  const std::string why = ValidationWhy(s);
  CHECK(why.find("4 of 5 models are off by more than 8%") != std::string::npos);
  CHECK(why.find("docs/CALIBRATION.md") != std::string::npos);
}

TEST_CASE("ValidationWhy is empty when every model meets the median target") {
  const ValidationSummary s = SummarizeValidation("h100", {Row("a", 10.5, 10.5, 10.0, 4.0, 4.0)});
  CHECK(s.missed == 0);
  CHECK(ValidationWhy(s).empty());
}

TEST_CASE("ValidationJson ends with one summary object per GPU: targets, by how much they are missed, why") {
  Validation v;
  v.rows = {Row("a", 13.0, 13.0, 10.0, 6.0, 6.0), Row("b", 10.1, 10.1, 10.0, 5.0, 5.0)};
  v.summaries.push_back(SummarizeValidation("h200", v.rows));
  std::istringstream lines(ValidationJson(v));
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) objects.push_back(nlohmann::json::parse(line));
  REQUIRE(objects.size() == 3);
  CHECK(objects[0].at("model") == "a");
  CHECK(objects[0].contains("measured_profiled_step_s"));
  const nlohmann::json& s = objects[2].at("summary");
  CHECK(objects[2].at("gpu") == "h200");
  CHECK(s.at("median_abs_error").get<double>() == doctest::Approx(0.155));
  CHECK(s.at("median_missed_by").get<double>() == doctest::Approx(0.075));
  CHECK(s.at("worst_missed_by").get<double>() == doctest::Approx(0.05));
  CHECK(s.at("missed_gpu_side") == 1);
  CHECK(s.at("why").get<std::string>().rfind("why: 1 of 2", 0) == 0);
}

}  // namespace
}  // namespace gosim::calibration
