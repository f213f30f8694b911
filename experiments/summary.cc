#include "experiments/summary.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "core/strings.h"
#include "experiments/pretrain.h"
#include "experiments/splits.h"

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
                      : objective == "throughput"  ? "time per micro-batch"
                      : objective == "max_load"    ? "max-load"
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
  summary.mode = config.mode;
  summary.test_graphs = static_cast<int>(config.test_graphs.size());
  summary.final_runs = CountFinalRuns(config.output);
  summary.near_duplicates = config.near_duplicates;
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
    ++summary.code_versions[IdentityCode(record->identity)];
    ++summary.executions[record->execution];
    entry.mean_evaluations += static_cast<double>(record->evaluations);
    if (entry.pretrain_evaluations >= 0) {
      entry.pretrain_evaluations = record->pretrain_evaluations < 0
                                       ? -1
                                       : std::max(entry.pretrain_evaluations, record->pretrain_evaluations);
    }
    entry.mean_wall_seconds += record->wall_seconds;
    if (!record->feasible) continue;
    ++entry.feasible;
    values[i].push_back(
        ObjectiveDisplay(config.objective, record->step_time, record->peak_memory, record->best_objective)
            .value);
    entry.seed_values.push_back(values[i].back());
    entry.seed_ids.push_back(cell.seed);
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
    entry.interval = MeanInterval95(values[i]);
  }

  // Percent against the reference agent of the same cluster and graph.
  int32_t reference = -1;
  for (size_t a = 0; a < config.agents.size(); ++a) {
    if (config.agents[a].label == config.reference) reference = static_cast<int32_t>(a);
  }
  int32_t single_device = -1;
  // The single_device agent on its default device (the first GPU), not one
  // pinned elsewhere (e.g. HRL's "CPU only" column).
  for (size_t a = 0; a < config.agents.size(); ++a) {
    const AgentSpec& agent = config.agents[a];
    if (agent.name != "single_device") continue;
    if (!(agent.options && agent.options.IsMap() && agent.options["device"])) {
      single_device = static_cast<int32_t>(a);
      break;
    }
  }
  if (reference >= 0) {
    for (size_t c = 0; c < config.clusters.size(); ++c) {
      for (size_t g = 0; g < config.graphs.size(); ++g) {
        SummaryEntry& ref =
            summary.entries[index.at({static_cast<int32_t>(c), static_cast<int32_t>(g), reference})];
        if (ref.feasible == 0 || ref.value <= 0.0) continue;
        if (single_device >= 0 && single_device != reference) {
          const SummaryEntry& one =
              summary.entries[index.at({static_cast<int32_t>(c), static_cast<int32_t>(g), single_device})];
          ref.reference_slower_than_single_device = one.feasible > 0 && ref.value > one.value * (1.0 + 1e-9);
        }
        for (size_t a = 0; a < config.agents.size(); ++a) {
          SummaryEntry& entry = summary.entries[index.at(
              {static_cast<int32_t>(c), static_cast<int32_t>(g), static_cast<int32_t>(a)})];
          if (entry.feasible == 0) continue;
          entry.vs_reference_pct = (entry.value / ref.value - 1.0) * 100.0;
          if (static_cast<int32_t>(a) == reference) continue;
          // Pairs: the same seed on both sides, or every seed of the agent
          // against a reference that ran one seed (a deterministic baseline).
          std::vector<double> mine, theirs;
          for (size_t k = 0; k < entry.seed_values.size(); ++k) {
            if (ref.seed_values.size() == 1) {
              mine.push_back(entry.seed_values[k]);
              theirs.push_back(ref.seed_values[0]);
              continue;
            }
            for (size_t r = 0; r < ref.seed_ids.size(); ++r) {
              if (ref.seed_ids[r] == entry.seed_ids[k]) {
                mine.push_back(entry.seed_values[k]);
                theirs.push_back(ref.seed_values[r]);
              }
            }
          }
          if (!mine.empty()) entry.paired = PairedBootstrap(mine, theirs);
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
  if (mode == "quick") out << "**" << kQuickModeNote << "**\n\n";
  if (!code_versions.empty()) {
    out << "Code: ";
    bool first = true;
    for (const auto& [version, count] : code_versions) {
      out << (first ? "" : ", ") << version << " (" << count << (count == 1 ? " cell)" : " cells)");
      first = false;
    }
    out << (code_versions.size() > 1 ? " -- cells of several builds (--reuse-other-code)" : "") << "\n\n";
  }
  if (!executions.empty()) {
    if (executions.size() == 1 && executions.begin()->first == "none") {
      out << "Host: not modelled (execution none: GPU-side step times; docs/SIMULATOR.md, \"The host\")\n\n";
    } else {
      out << "Host: ";
      bool first = true;
      for (const auto& [execution, count] : executions) {
        out << (first ? "" : ", ")
            << (execution.empty() ? std::string("not recorded") : "execution " + execution) << " (" << count
            << (count == 1 ? " cell)" : " cells)");
        first = false;
      }
      out << "\n\n";
    }
  }
  if (test_graphs > 0) {
    out << "Test split: " << test_graphs << " test graph(s), used in " << final_runs
        << " final run(s) of this folder (final_runs.jsonl)\n\n";
  }
  if (!near_duplicates.empty()) {
    out << "Near-duplicates of test graphs (same model family at another batch size or depth; `gosim graphs "
           "leaks`):";
    for (const std::string& line : near_duplicates) out << "\n- " << line;
    out << "\n\n";
  }
  size_t i = 0;
  for (const std::string& cluster : clusters) {
    out << "## " << experiment << " on " << cluster << ": " << ObjectiveTitle(objective, unit)
        << " (mean over seeds +- 95% t-interval; % vs " << reference << ", negative is better; cost model "
        << cost_model << ")\n\n";
    // Per agent over this cluster's graphs: speedups against the reference
    // (geometric mean), paired verdicts, mean evaluations per finished cell.
    struct Totals {
      int graphs = 0, infeasible = 0, better = 0, worse = 0, unclear = 0;
      std::vector<double> speedups;
      double evaluations = 0.0;
      int64_t pretrain = 0;               // -1: unknown on some graph
      int seeds_low = 0, seeds_high = 0;  // seeds per graph in the grid
    };
    std::vector<Totals> totals(labels.size());
    std::vector<std::string> slower;  // graphs where the reference is slower than single_device
    std::vector<std::vector<std::string>> table(labels.size(), std::vector<std::string>(graphs.size()));
    for (size_t g = 0; g < graphs.size(); ++g) {
      for (size_t a = 0; a < labels.size(); ++a, ++i) {
        const SummaryEntry& e = entries[i];
        Totals& t = totals[a];
        if (e.reference_slower_than_single_device) slower.push_back(graphs[g]);
        t.seeds_low = g == 0 ? e.seeds : std::min(t.seeds_low, e.seeds);
        t.seeds_high = std::max(t.seeds_high, e.seeds);
        std::string text;
        if (e.finished == 0) {
          table[a][g] = "-";
          continue;
        }
        ++t.graphs;
        t.evaluations += e.mean_evaluations * e.finished;
        if (t.pretrain >= 0)
          t.pretrain = e.pretrain_evaluations < 0 ? -1 : std::max(t.pretrain, e.pretrain_evaluations);
        if (e.feasible == 0) {
          ++t.infeasible;
          text = "infeasible";
        } else {
          text = FormatValue(e.value, e.unit);
          if (e.interval) text += " +-" + FormatValue((e.interval->high - e.interval->low) / 2.0, e.unit);
          if (e.label == reference) {
            text += e.reference_slower_than_single_device ? " (ref; slower than single_device)" : " (ref)";
          } else if (e.vs_reference_pct) {
            t.speedups.push_back(1.0 / (1.0 + *e.vs_reference_pct / 100.0));
            std::string verdict;
            if (e.paired && e.paired->pairs >= kMinPairs) {
              verdict = e.paired->verdict < 0 ? ", better" : e.paired->verdict > 0 ? ", worse" : ", n.s.";
              (e.paired->verdict < 0 ? t.better : e.paired->verdict > 0 ? t.worse : t.unclear) += 1;
            }
            text += " (" + Format("%+.1f", *e.vs_reference_pct) + "%" + verdict + ")";
          }
          if (e.feasible < e.finished) {
            text += " [" + std::to_string(e.feasible) + "/" + std::to_string(e.finished) + " feasible]";
          }
        }
        if (e.finished < e.seeds) {
          text += " {" + std::to_string(e.finished) + "/" + std::to_string(e.seeds) + " seeds}";
        }
        table[a][g] = text;
      }
    }
    std::vector<int> finished_cells(labels.size(), 0);
    for (const SummaryEntry& e : entries) {
      if (e.cluster != cluster) continue;
      for (size_t a = 0; a < labels.size(); ++a) {
        if (labels[a] == e.label) finished_cells[a] += e.finished;
      }
    }
    auto speedup_text = [&](size_t a) {
      if (labels[a] == reference) return std::string("(ref)");
      const std::optional<double> mean = GeometricMean(totals[a].speedups);
      return mean ? Format("%.3fx", *mean) + " (" + std::to_string(totals[a].speedups.size()) + ")"
                  : std::string("-");
    };
    auto evaluations_text = [&](size_t a) {
      return finished_cells[a] > 0 ? Format("%.0f", totals[a].evaluations / finished_cells[a])
                                   : std::string("-");
    };
    auto seeds_text = [&](size_t a) {
      const Totals& t = totals[a];
      return t.seeds_low == t.seeds_high ? std::to_string(t.seeds_high)
                                         : std::to_string(t.seeds_low) + "-" + std::to_string(t.seeds_high);
    };
    auto pretrain_text = [&](size_t a) {
      return finished_cells[a] > 0 ? FormatPretrain(totals[a].pretrain) : std::string("-");
    };
    if (graphs.size() > kMaxGraphColumns) {
      // Too many graphs for a column each: one row per agent over them all.
      out << "| agent | graphs finished | infeasible | geo-mean speedup vs " << reference
          << " (graphs) | better / worse / n.s. | evaluations per cell | evals (pre-train) | seeds |\n"
          << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
      for (size_t a = 0; a < labels.size(); ++a) {
        const Totals& t = totals[a];
        out << "| " << labels[a] << " | " << t.graphs << "/" << graphs.size() << " | " << t.infeasible
            << " | " << speedup_text(a) << " | "
            << (labels[a] == reference ? std::string("-")
                                       : std::to_string(t.better) + " / " + std::to_string(t.worse) + " / " +
                                             std::to_string(t.unclear))
            << " | " << evaluations_text(a) << " | " << pretrain_text(a) << " | " << seeds_text(a) << " |\n";
      }
      out << "\n(" << graphs.size() << " graphs: one row per agent; summary.csv has every graph.)\n";
    } else {
      out << "| agent |";
      for (const std::string& g : graphs) out << ' ' << g << " |";
      out << " geo-mean speedup vs " << reference
          << " (graphs) | evaluations per cell | evals (pre-train) | seeds |\n|---|";
      for (size_t g = 0; g < graphs.size(); ++g) out << "---:|";
      out << "---:|---:|---:|---:|\n";
      for (size_t a = 0; a < labels.size(); ++a) {
        out << "| " << labels[a] << " |";
        for (size_t g = 0; g < graphs.size(); ++g) out << ' ' << table[a][g] << " |";
        out << ' ' << speedup_text(a) << " | " << evaluations_text(a) << " | " << pretrain_text(a) << " | "
            << seeds_text(a) << " |\n";
      }
    }
    out << "\n+-: half-width of the 95% t-interval over the feasible seeds (2 or more). better / worse: the "
           "95% paired-bootstrap interval ("
        << kBootstrapResamples << " resamples, seeds paired, at least " << kMinPairs
        << " pairs) of the % against " << reference
        << " excludes 0; n.s.: it does not; no mark: fewer pairs. Speedup: " << reference
        << " / agent, geometric mean over the graphs where both have a value. evals (pre-train): the "
           "simulator evaluations that produced the agent's checkpoint (amortised cost, not in its budget; "
           "0: none; ?: unknown).\n";
    if (!slower.empty()) {
      out << "Note: " << reference << " is slower than single_device on " << Join(slower, ", ")
          << ": percentages against it overstate every gain there.\n";
    }
    out << '\n';
  }
  return out.str();
}

std::string Summary::ToCsv() const {
  std::ostringstream out;
  out << "cluster,graph,label,agent,seeds,finished,feasible,value,value_stddev,unit,vs_reference_pct,"
         "mean_evaluations,mean_wall_seconds,ci_low,ci_high,paired_seeds,vs_reference_pct_low,"
         "vs_reference_pct_high,verdict,reference_slower_than_single_device,pretrain_evaluations\n";
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
    out << ',' << Format("%.6g", e.mean_evaluations) << ',' << Format("%.6g", e.mean_wall_seconds) << ',';
    if (e.interval)
      out << Shortest(e.interval->low) << ',' << Shortest(e.interval->high);
    else
      out << ',';
    out << ',';
    if (e.paired) {
      out << e.paired->pairs << ',' << Format("%.6g", e.paired->pct_interval.low) << ','
          << Format("%.6g", e.paired->pct_interval.high) << ','
          << (e.paired->pairs < kMinPairs ? "too_few_pairs"
              : e.paired->verdict < 0     ? "better"
              : e.paired->verdict > 0     ? "worse"
                                          : "not_significant");
    } else {
      out << ",,,";
    }
    out << ',' << (e.reference_slower_than_single_device ? "true" : "false") << ',' << e.pretrain_evaluations
        << '\n';
  }
  return out.str();
}

}  // namespace gosim::experiments
