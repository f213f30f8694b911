#include "experiments/summary.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "core/strings.h"

namespace gosim::experiments {

namespace {

// A table with more graphs than this gets one aggregated row per agent.
constexpr size_t kMaxGraphColumns = 12;

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

// The shortest text that reads back as the same double.
std::string Shortest(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string FormatValue(double value, const std::string& unit) {
  if (unit == "ms") return Format("%.3f", value);
  if (unit == "GiB") return Format("%.3f", value);
  return Format("%.4f", value);
}

std::string ObjectiveTitle(const std::string& objective, const char* unit) {
  std::string title = objective == "step_time"     ? "step time"
                      : objective == "peak_memory" ? "peak memory"
                                                   : "weighted score";
  if (unit[0] != '\0') title += std::string(" in ") + unit;
  return title;
}

}  // namespace

Summary Summarize(const ExperimentConfig& config, const std::vector<Cell>& cells, const ResultsLog& results) {
  Summary summary;
  summary.experiment = config.name;
  summary.reference = config.reference;
  summary.objective = ObjectiveKindName(config.objective.kind);
  summary.cost_model = config.cost_model;
  const DisplayMetric probe = ObjectiveDisplay(config.objective, 0.0, 0.0, 0.0);

  // (cluster, graph, agent) -> entry index
  std::map<std::tuple<int32_t, int32_t, int32_t>, size_t> index;
  for (size_t c = 0; c < config.clusters.size(); ++c) {
    for (size_t g = 0; g < config.graphs.size(); ++g) {
      for (size_t a = 0; a < config.agents.size(); ++a) {
        SummaryEntry entry;
        entry.cluster = config.clusters[c];
        entry.graph = config.graphs[g].name;
        entry.label = config.agents[a].label;
        entry.agent = config.agents[a].name;
        entry.unit = probe.unit;
        index[{static_cast<int32_t>(c), static_cast<int32_t>(g), static_cast<int32_t>(a)}] =
            summary.entries.size();
        summary.entries.push_back(std::move(entry));
      }
    }
  }

  std::vector<std::vector<double>> values(summary.entries.size());
  for (const Cell& cell : cells) {
    const size_t i = index.at({cell.cluster, cell.graph, cell.agent});
    SummaryEntry& entry = summary.entries[i];
    ++entry.seeds;
    const CellRecord* record = results.Find(cell.id);
    if (!record) continue;
    ++entry.finished;
    entry.mean_evaluations += static_cast<double>(record->evaluations);
    entry.mean_wall_seconds += record->wall_seconds;
    if (!record->feasible) continue;
    ++entry.feasible;
    values[i].push_back(
        ObjectiveDisplay(config.objective, record->step_time, record->peak_memory, record->best_objective)
            .value);
  }
  for (size_t i = 0; i < summary.entries.size(); ++i) {
    SummaryEntry& entry = summary.entries[i];
    if (entry.finished > 0) {
      entry.mean_evaluations /= entry.finished;
      entry.mean_wall_seconds /= entry.finished;
    }
    if (values[i].empty()) continue;
    double sum = 0.0;
    for (const double v : values[i]) sum += v;
    entry.value = sum / static_cast<double>(values[i].size());
    double squares = 0.0;
    for (const double v : values[i]) squares += (v - entry.value) * (v - entry.value);
    entry.value_stddev = std::sqrt(squares / static_cast<double>(values[i].size()));
  }

  // Percent against the reference agent of the same cluster and graph.
  int32_t reference = -1;
  for (size_t a = 0; a < config.agents.size(); ++a) {
    if (config.agents[a].label == config.reference) reference = static_cast<int32_t>(a);
  }
  if (reference >= 0) {
    for (size_t c = 0; c < config.clusters.size(); ++c) {
      for (size_t g = 0; g < config.graphs.size(); ++g) {
        const SummaryEntry& ref =
            summary.entries[index.at({static_cast<int32_t>(c), static_cast<int32_t>(g), reference})];
        if (ref.feasible == 0 || ref.value <= 0.0) continue;
        for (size_t a = 0; a < config.agents.size(); ++a) {
          SummaryEntry& entry = summary.entries[index.at(
              {static_cast<int32_t>(c), static_cast<int32_t>(g), static_cast<int32_t>(a)})];
          if (entry.feasible > 0) entry.vs_reference_pct = (entry.value / ref.value - 1.0) * 100.0;
        }
      }
    }
  }
  return summary;
}

std::string Summary::ToMarkdown() const {
  std::ostringstream out;
  // Entries are cluster-major, graph, agent: recover the axes in order.
  std::vector<std::string> clusters, graphs, labels;
  auto add_unique = [](std::vector<std::string>& list, const std::string& value) {
    for (const std::string& v : list) {
      if (v == value) return;
    }
    list.push_back(value);
  };
  for (const SummaryEntry& e : entries) {
    add_unique(clusters, e.cluster);
    add_unique(graphs, e.graph);
    add_unique(labels, e.label);
  }
  const char* unit = entries.empty() ? "" : entries.front().unit;
  size_t i = 0;
  for (const std::string& cluster : clusters) {
    out << "## " << experiment << " on " << cluster << ": " << ObjectiveTitle(objective, unit)
        << " (mean over seeds; % vs " << reference << ", negative is better; cost model " << cost_model
        << ")\n\n";
    // Rows are agents, columns graphs; entries for this cluster are graph-major.
    if (graphs.size() > kMaxGraphColumns) {
      // Too many graphs for a column each: one row per agent over them all.
      struct Totals {
        int graphs = 0, infeasible = 0, better = 0, worse = 0, compared = 0;
        double pct_sum = 0.0;
      };
      std::vector<Totals> totals(labels.size());
      for (size_t g = 0; g < graphs.size(); ++g) {
        for (size_t a = 0; a < labels.size(); ++a, ++i) {
          const SummaryEntry& e = entries[i];
          Totals& t = totals[a];
          if (e.finished == 0) continue;
          ++t.graphs;
          if (e.feasible == 0) ++t.infeasible;
          if (e.vs_reference_pct && e.label != reference) {
            ++t.compared;
            t.pct_sum += *e.vs_reference_pct;
            t.better += *e.vs_reference_pct < 0.0 ? 1 : 0;
            t.worse += *e.vs_reference_pct > 0.0 ? 1 : 0;
          }
        }
      }
      out << "| agent | graphs finished | infeasible | mean % vs " << reference << " | better / worse |\n"
          << "|---|---:|---:|---:|---:|\n";
      for (size_t a = 0; a < labels.size(); ++a) {
        const Totals& t = totals[a];
        out << "| " << labels[a] << " | " << t.graphs << "/" << graphs.size() << " | " << t.infeasible
            << " | "
            << (labels[a] == reference ? std::string("(ref)")
                : t.compared > 0       ? Format("%+.2f", t.pct_sum / t.compared) + "%"
                                       : std::string("-"))
            << " | "
            << (labels[a] == reference ? std::string("-")
                                       : std::to_string(t.better) + " / " + std::to_string(t.worse))
            << " |\n";
      }
      out << "\n(" << graphs.size() << " graphs: one row per agent; summary.csv has every graph.)\n\n";
      continue;
    }
    std::vector<std::vector<std::string>> table(labels.size(), std::vector<std::string>(graphs.size()));
    for (size_t g = 0; g < graphs.size(); ++g) {
      for (size_t a = 0; a < labels.size(); ++a, ++i) {
        const SummaryEntry& e = entries[i];
        std::string text;
        if (e.finished == 0) {
          text = "-";
        } else if (e.feasible == 0) {
          text = "infeasible";
        } else {
          text = FormatValue(e.value, e.unit);
          if (e.label == reference) {
            text += " (ref)";
          } else if (e.vs_reference_pct) {
            text += " (" + Format("%+.1f", *e.vs_reference_pct) + "%)";
          }
          if (e.feasible < e.finished) {
            text += " [" + std::to_string(e.feasible) + "/" + std::to_string(e.finished) + " feasible]";
          }
        }
        if (e.finished > 0 && e.finished < e.seeds) {
          text += " {" + std::to_string(e.finished) + "/" + std::to_string(e.seeds) + " seeds}";
        }
        table[a][g] = text;
      }
    }
    out << "| agent |";
    for (const std::string& g : graphs) out << ' ' << g << " |";
    out << "\n|---|";
    for (size_t g = 0; g < graphs.size(); ++g) out << "---:|";
    out << '\n';
    for (size_t a = 0; a < labels.size(); ++a) {
      out << "| " << labels[a] << " |";
      for (size_t g = 0; g < graphs.size(); ++g) out << ' ' << table[a][g] << " |";
      out << '\n';
    }
    out << '\n';
  }
  return out.str();
}

std::string Summary::ToCsv() const {
  std::ostringstream out;
  out << "cluster,graph,label,agent,seeds,finished,feasible,value,value_stddev,unit,vs_reference_pct,"
         "mean_evaluations,mean_wall_seconds\n";
  for (const SummaryEntry& e : entries) {
    out << CsvField(e.cluster) << ',' << CsvField(e.graph) << ',' << CsvField(e.label) << ','
        << CsvField(e.agent) << ',' << e.seeds << ',' << e.finished << ',' << e.feasible << ',';
    if (e.feasible > 0) {
      out << Shortest(e.value) << ',' << Shortest(e.value_stddev);
    } else {
      out << ',';
    }
    out << ',' << e.unit << ',';
    if (e.vs_reference_pct) out << Format("%.6g", *e.vs_reference_pct);
    out << ',' << Format("%.6g", e.mean_evaluations) << ',' << Format("%.6g", e.mean_wall_seconds) << '\n';
  }
  return out.str();
}

}  // namespace gosim::experiments
