#include "experiments/results.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "core/log.h"
#include "core/strings.h"

namespace gosim::experiments {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// JSON has no infinity; nlohmann writes it as null, so null reads back as +inf.
double NumberOrInf(const nlohmann::json& value) {
  return value.is_null() ? kInf : value.get<double>();
}

nlohmann::ordered_json FiniteOrNull(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

std::string FormatDouble(double value) {
  if (!std::isfinite(value)) return value > 0 ? "inf" : "nan";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);  // shortest round-trip form
  return std::string(buffer, result.ptr);
}

}  // namespace

nlohmann::ordered_json CellRecord::ToJson() const {
  nlohmann::ordered_json curve_json = nlohmann::ordered_json::array();
  for (const agents::CurvePoint& point : curve) {
    curve_json.push_back(nlohmann::ordered_json::array(
        {point.evaluations, point.wall_seconds, FiniteOrNull(point.best_objective)}));
  }
  nlohmann::ordered_json extra_json = nlohmann::ordered_json::object();
  for (const auto& [key, value] : extra) extra_json[key] = FiniteOrNull(value);
  nlohmann::ordered_json out = {
      {"format", "gosim.result"},
      {"version", 1},
      {"cell", cell},
      {"experiment", experiment},
      {"graph", graph},
      {"nodes", nodes},
      {"edges", edges},
      {"cluster", cluster},
      {"devices", devices},
      {"agent", agent},
      {"label", label},
      {"seed", seed},
      {"budget", {{"evaluations", budget.evaluations}, {"wall_seconds", budget.wall_seconds}}},
      {"objective", objective},
      {"best_objective", FiniteOrNull(best_objective)},
      {"feasible", feasible},
      {"step_time", step_time},
      {"peak_memory", peak_memory},
      {"oom_device", oom_device},
      {"host_busy_s", host_busy},
      {"execution", execution},
      {"cost_model", cost_model},
      {"evaluations", evaluations},
      {"simulations", simulations},
      {"pretrain_evaluations", pretrain_evaluations},
      {"pretrain_source", pretrain_source},
      {"wall_seconds", wall_seconds},
      {"extra", extra_json},
      {"curve", curve_json},
      {"decision", decision},
      {"finished_at", finished_at},
  };
  // The identity keeps its canonical (sorted) key order.
  out["identity"] = nlohmann::ordered_json::parse(DumpJson(identity));
  if (!reused_from.empty()) out["reused_from"] = reused_from;
  return out;
}

CellRecord CellRecord::FromJson(const nlohmann::json& json, const std::string& where) {
  CellRecord r;
  try {
    if (json.value("format", "") != "gosim.result") {
      throw StateError("not a gosim.result line", Location{where}, "this file was not written by gosim run");
    }
    r.cell = json.at("cell").get<std::string>();
    r.experiment = json.at("experiment").get<std::string>();
    r.graph = json.at("graph").get<std::string>();
    r.nodes = json.at("nodes").get<int64_t>();
    r.edges = json.at("edges").get<int64_t>();
    r.cluster = json.at("cluster").get<std::string>();
    r.devices = json.at("devices").get<int32_t>();
    r.agent = json.at("agent").get<std::string>();
    r.label = json.at("label").get<std::string>();
    r.seed = json.at("seed").get<uint64_t>();
    r.budget.evaluations = json.at("budget").at("evaluations").get<int64_t>();
    r.budget.wall_seconds = json.at("budget").at("wall_seconds").get<double>();
    r.objective = json.at("objective").get<std::string>();
    r.best_objective = NumberOrInf(json.at("best_objective"));
    r.feasible = json.at("feasible").get<bool>();
    r.step_time = json.at("step_time").get<double>();
    r.peak_memory = json.at("peak_memory").get<double>();
    r.oom_device = json.at("oom_device").get<int32_t>();
    r.host_busy = json.value("host_busy_s", -1.0);  // lines written before the fields: not recorded
    r.execution = json.value("execution", "");
    r.cost_model = json.value("cost_model", "");
    r.evaluations = json.at("evaluations").get<int64_t>();
    r.simulations = json.at("simulations").get<int64_t>();
    // Lines written before the column existed: not recorded.
    r.pretrain_evaluations = json.value("pretrain_evaluations", int64_t{-1});
    r.pretrain_source = json.value("pretrain_source", "not recorded");
    r.wall_seconds = json.at("wall_seconds").get<double>();
    for (const auto& [key, value] : json.at("extra").items()) r.extra[key] = NumberOrInf(value);
    for (const auto& point : json.at("curve")) {
      r.curve.push_back({point.at(0).get<int64_t>(), point.at(1).get<double>(), NumberOrInf(point.at(2))});
    }
    r.decision = json.at("decision").get<std::string>();
    r.finished_at = json.at("finished_at").get<std::string>();
    r.identity = json.at("identity");
    r.reused_from = json.value("reused_from", "");
  } catch (const nlohmann::json::exception& e) {
    throw StateError(std::string("malformed result line: ") + e.what(), Location{where},
                     "remove the line to run that cell again");
  }
  return r;
}

std::vector<agents::CurvePoint> CompressCurve(const std::vector<agents::CurvePoint>& curve) {
  std::vector<agents::CurvePoint> out;
  for (size_t i = 0; i < curve.size(); ++i) {
    const bool first = out.empty();
    const bool last = i + 1 == curve.size();
    if (first || last || curve[i].best_objective != out.back().best_objective) out.push_back(curve[i]);
  }
  return out;
}

ResultsLog::ResultsLog(std::string path, bool repair) : path_(std::move(path)) {
  if (!FileExists(path_)) return;
  // A link to a device would be read forever (/dev/zero) or take every line
  // and keep none (/dev/full, /dev/null).
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw StateError(
        std::string("the results log is not a regular file") +
            (std::filesystem::is_symlink(path_, ec)
                 ? " (a symbolic link to " + std::filesystem::read_symlink(path_, ec).string() + ")"
                 : ""),
        Location{path_}, "remove it (or set output: to another folder); gosim creates it");
  }
  const std::string text = ReadFile(path_);
  size_t start = 0;
  int line_number = 0;
  size_t good_end = 0;  // bytes of complete, parsed lines
  while (start < text.size()) {
    ++line_number;
    const size_t newline = text.find('\n', start);
    const bool terminated = newline != std::string::npos;
    const size_t end = terminated ? newline : text.size();
    const std::string line = text.substr(start, end - start);
    const size_t next = terminated ? newline + 1 : text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      start = next;
      if (terminated) good_end = next;
      continue;
    }
    nlohmann::json json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      if (!terminated) {
        GOSIM_LOG(Warn) << path_ << ":" << line_number
                        << ": ignoring a torn last line (an interrupted write); that cell runs again";
        repaired_torn_line_ = true;
        break;
      }
      throw StateError("unreadable line in results file", Location{path_, line_number},
                       "remove or fix the line; its cell then runs again");
    }
    Index(CellRecord::FromJson(json, path_ + ":" + std::to_string(line_number)));
    start = next;
    // An unterminated last line that parses was complete: keep it, add the newline.
    good_end = terminated ? next : text.size();
    if (!terminated) repaired_torn_line_ = true;
  }
  if (repaired_torn_line_ && repair) {
    std::string kept = text.substr(0, good_end);
    if (!kept.empty() && kept.back() != '\n') kept += '\n';
    WriteFileAtomic(path_, kept);
  }
}

const CellRecord* ResultsLog::Find(const std::string& cell_id) const {
  const auto it = index_.find(cell_id);
  return it == index_.end() ? nullptr : &records_[it->second];
}

void ResultsLog::Index(CellRecord record) {
  const auto it = index_.find(record.cell);
  if (it != index_.end()) {
    records_[it->second] = std::move(record);
    return;
  }
  index_[record.cell] = records_.size();
  records_.push_back(std::move(record));
}

void ResultsLog::Append(const CellRecord& record) {
  AppendLine(path_, DumpJson(record.ToJson()));
  Index(record);
}

std::string CurvesCsv(const std::vector<CellRecord>& records) {
  std::ostringstream out;
  out << "cell,graph,cluster,label,seed,evaluations,wall_seconds,best_objective\n";
  for (const CellRecord& r : records) {
    for (const agents::CurvePoint& p : r.curve) {
      out << r.cell << ',' << CsvField(r.graph) << ',' << CsvField(r.cluster) << ',' << CsvField(r.label)
          << ',' << r.seed << ',' << p.evaluations << ',' << FormatDouble(p.wall_seconds) << ','
          << FormatDouble(p.best_objective) << '\n';
    }
  }
  return out.str();
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace gosim::experiments
