#!/usr/bin/python3
"""Tables in a paper's layout from gosim run folders, beside the paper's numbers.

Usage: tables.py LAYOUT.yaml RUN_DIR [RUN_DIR ...] [--out DIR] [--final-runs DIR ...]

LAYOUT (analysis/layouts/*.yaml) names the rows, columns, metric, reference
agent and the paper's published figures; the run folders (`gosim run`
output) hold the cells. Writes DIR/<name>.md and DIR/<name>.tex (DIR: the
first run folder) and prints the Markdown. Kinds:

  grid     rows = graphs (on a cluster), columns = agents, cell = the metric
           (mean over seeds) and its % against the reference agent; the
           paper's values in extra columns.
  regal    rows = agents: seeds, % improvement over the reference agent
           (1 - geometric mean of agent / reference over the graphs, with a
           95% t-interval over seeds) and % gap from the best any listed agent
           found (geometric mean), graphs won, mean seconds, evaluations per
           cell and pre-training evaluations (REGAL Table 1), and the paper's
           figures (which average percentages arithmetically).
  running_time
           rows = agents: mean wall seconds per cell, graphs, seeds,
           evaluations (REGAL Table 2).
  convergence
           rows = graphs (on a cluster): the target agent's final metric
           (mean over seeds ± 95%), the simulator evaluations and wall seconds
           it needed to first reach it, and the same for each listed agent,
           seed by seed, with the ratio of evaluations (GO's "x fewer
           evaluations"; reads curves.csv) and its 95% interval; the note
           lists each agent's pre-training evaluations.

Grid cells: the mean over seeds ± the half-width of its 95% t-interval, and
the % against the reference with "better" / "worse" only where a paired
bootstrap over the seeds says so (10,000 resamples; "n.s." where it does
not). A grid layout with `mean_row: true` ends with the geometric-mean
speedup against the reference per column (GO's "faster than experts on
average", without the arithmetic mean of percentages that a slow reference
inflates) and the count of better / worse / n.s. rows; a column without a
value on every row has no mean ('-'), unless the layout says
`partial_means: true` (a column run on some rows by design, said in its
title): its mean over the rows it has, with their count. A reference slower
than the one-device column is flagged, and a second mean row compares with
the faster of the two per row. Every grid ends with the mean
evaluations per cell of each column, the seeds per row (with `wall_row:
true`, the median wall seconds of its cells), and its pre-training
evaluations
("evals (pre-train)": the evaluations that produced the checkpoint the
column's agent starts from; '?' when unknown).

A layout's `leak_suites` (the table's test suite first, then the suites its
networks were pre-trained or tuned on) adds a header line naming, for each
of the table's graphs, the entries of those suites' train and valid splits
with the same family fingerprint (`gosim graphs leaks`: the same model at
another batch size or depth); `leak_suites: []` with `leak_note` says why
none can apply, and `leak_note` beside suites is added to the line. It
needs build/bin/gosim (or $GOSIM).

Missing cells print as '-'; a layout naming no cell of the runs is an error.
Every table starts with the code versions of its cells, the cost model(s)
they were simulated with, the count of final runs on the test graphs logged
in the run folders (final_runs.jsonl) and, for quick-mode runs, "quick mode:
pipeline check, not a result"; run folders of both modes are never mixed in
one table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import pandas as pd
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gosim_analysis import (AnalysisError, fail, fmt, fmt_pm, geometric_mean, latex_table, load_curves,  # noqa: E402
                            load_runs, markdown_table, paired_bootstrap, pairs, pretrain_text, provenance,
                            t_half_width)

KINDS = ("grid", "regal", "running_time", "convergence")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "GiB": 1.0 / 2**30, "MiB": 1.0 / 2**20, "GB": 1e-9, "MB": 1e-6}


def load_layout(path):
    try:
        with open(path) as f:
            layout = yaml.safe_load(f)
    except OSError as e:
        raise AnalysisError(f"{path}: cannot read: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise AnalysisError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(layout, dict):
        raise AnalysisError(f"{path}: a layout is a mapping (name, kind, ...)")
    for key in ("name", "kind", "title"):
        if key not in layout:
            raise AnalysisError(f"{path}: missing key '{key}'")
    if layout["kind"] not in KINDS:
        raise AnalysisError(f"{path}: kind must be one of {', '.join(KINDS)}, not {layout['kind']!r}")
    return layout


def metric_of(layout):
    metric = layout.get("metric", "step_time")
    unit = layout.get("unit", "s" if metric in ("step_time", "wall_seconds") else "GiB")
    if unit not in UNITS:
        raise AnalysisError(f"layout {layout['name']}: unknown unit {unit!r} (one of {', '.join(UNITS)})")
    return metric, unit, UNITS[unit]


def select(df, **where):
    for key, value in where.items():
        if value is not None:
            df = df[df[key] == value]
    return df


def value_of(df, metric):
    """Mean of `metric` over the feasible seeds of a cell group (None when none
    ran), the number of cells, and {seed: value} of the feasible ones."""
    if df.empty:
        return None, 0, {}
    feasible = df[df["feasible"]]
    if feasible.empty:
        return float("inf"), len(df), {}
    return float(feasible[metric].mean()), len(df), dict(zip(feasible["seed"], feasible[metric].astype(float)))


def seed_text(counts):
    """Seeds per row of a column: '5', or '3-5' when rows differ; '-' for none."""
    if not counts:
        return "-"
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}-{high}"


def grid(layout, df):
    metric, unit, scale = metric_of(layout)
    columns = layout["columns"]
    reference = layout.get("reference")
    paper = layout.get("paper", {}) or {}
    paper_columns = layout.get("paper_columns", [])
    header = [layout.get("row_header", "model")] + [c["title"] for c in columns] + \
        [f"paper: {p}" for p in paper_columns]
    rows, found = [], 0
    speedups = {c["label"]: [] for c in columns}  # per column, reference / agent per row
    # Per column, min(reference, one device) / agent per row: against the faster of the two.
    floor_speedups = {c["label"]: [] for c in columns}
    floor_rows = 0  # rows where both the reference and the single_device column have a value
    verdicts = {c["label"]: [] for c in columns}
    evaluations = {c["label"]: [] for c in columns}
    pretrain = {c["label"]: [] for c in columns}
    walls = {c["label"]: [] for c in columns}  # wall seconds of each cell (its optimization)
    seed_counts = {c["label"]: [] for c in columns}  # per row with cells, the seeds that ran
    reference_rows = 0  # rows where the reference has a feasible value
    slow_reference = []  # rows where the reference is slower than the single_device column
    single = next((c["label"] for c in columns if c["label"] in ("single_device", "gpu_only")), None)
    for row in layout["rows"]:
        cells = select(df, graph=row["graph"], cluster=row.get("cluster"))
        values, seeds = [], []
        for c in columns:
            group = select(cells, label=c["label"])
            v, n, by_seed = value_of(group, metric)
            found += n
            values.append(v)
            seeds.append(by_seed)
            if n:
                evaluations[c["label"]] += list(group["evaluations"])
                pretrain[c["label"]] += list(group["pretrain_evaluations"])
                walls[c["label"]] += list(group["wall_seconds"])
                seed_counts[c["label"]].append(int(group["seed"].nunique()))
        ref, ref_seeds = None, {}
        if reference is not None:
            ref_index = [c["label"] for c in columns].index(reference)
            ref, ref_seeds = values[ref_index], seeds[ref_index]
            if ref not in (None, float("inf")):
                reference_rows += 1
        finite = [v for v in values if v is not None and v != float("inf")]
        best = min(finite) if finite else None
        floor = None
        if single is not None and ref not in (None, float("inf")):
            one = values[[x["label"] for x in columns].index(single)]
            if one not in (None, float("inf")):
                floor = min(ref, one)
                floor_rows += 1
        out = [row["title"]]
        for c, v, by_seed in zip(columns, values, seeds):
            if v is None:
                out.append("-")
                continue
            if v == float("inf"):
                out.append("OOM")
                continue
            half = t_half_width(list(by_seed.values()))
            text = fmt_pm(v * scale, None if half is None else half * scale, layout.get("digits", 3))
            if ref not in (None, float("inf")) and c["label"] == reference and single is not None:
                one = values[[x["label"] for x in columns].index(single)]
                if one not in (None, float("inf")) and ref > one:
                    slow_reference.append(row["title"])
                    text += " (slower than one device)"
            if ref not in (None, float("inf")) and c["label"] != reference:
                percent = 100 * (v - ref) / ref
                speedups[c["label"]].append(ref / v)
                if floor is not None:
                    floor_speedups[c["label"]].append(floor / v)
                _, _, verdict = paired_bootstrap(*pairs(by_seed, ref_seeds))
                verdicts[c["label"]].append(verdict)
                text += f" ({percent:+.1f}%" + (f", {verdict}" if verdict else "") + ")"
            if best is not None and v == best and len(finite) > 1:
                text = f"**{text}**"
            out.append(text)
        for p in paper_columns:
            out.append(fmt(paper.get(row["title"], {}).get(p)))
        rows.append(out)
    if found == 0:
        raise AnalysisError(f"layout {layout['name']}: none of its cells is in the run folders "
                            "(check graph, cluster and agent labels)")
    if layout.get("mean_row") and reference:
        # A column's aggregate counts only when it has a value on every row
        # where the reference has one; otherwise '-' (a partial mean would mislead).
        mean = ["geo-mean speedup"]
        tally = ["better / worse / n.s."]
        for c in columns:
            s = speedups[c["label"]]
            if c["label"] == reference:
                mean.append("(ref)")
                tally.append("")
            else:
                g = geometric_mean(s) if s and len(s) == reference_rows else None
                if g is None and s and layout.get("partial_means"):
                    # A column run on some rows only (said in its title): its
                    # mean over those rows, with their count.
                    mean.append(f"{geometric_mean(s):.3f}x ({len(s)} of {reference_rows} rows)")
                else:
                    mean.append(f"{g:.3f}x" if g else "-")
                v = verdicts[c["label"]]
                tally.append(f"{v.count('better')} / {v.count('worse')} / {v.count('n.s.')}")
        rows.append(mean + ["" for _ in paper_columns])
        if slow_reference and floor_rows == reference_rows:
            # The reference is slower than one device somewhere: the same
            # mean against the faster of the two, per row.
            floor_mean = [f"geo-mean speedup vs the faster of {reference} and {single}"]
            for c in columns:
                f = floor_speedups[c["label"]]
                g = geometric_mean(f) if f and len(f) == floor_rows else None
                floor_mean.append("(ref)" if c["label"] == reference else (f"{g:.3f}x" if g else "-"))
            rows.append(floor_mean + ["" for _ in paper_columns])
        rows.append(tally + ["" for _ in paper_columns])
    rows.append(["evaluations per cell"] +
                [fmt(round(sum(evaluations[c["label"]]) / len(evaluations[c["label"]]))) if evaluations[c["label"]] else "-"
                 for c in columns] + ["" for _ in paper_columns])
    rows.append(["evals (pre-train)"] + [pretrain_text(pretrain[c["label"]]) for c in columns] +
                ["" for _ in paper_columns])
    if layout.get("wall_row"):
        rows.append(["wall s per cell (median)"] +
                    [f"{statistics.median(walls[c['label']]):.3g}" if walls[c["label"]] else "-" for c in columns] +
                    ["" for _ in paper_columns])
    rows.append(["seeds"] + [seed_text(seed_counts[c["label"]]) for c in columns] + ["" for _ in paper_columns])
    note = (f"{metric.replace('_', ' ')} in {unit}, mean over seeds ± half-width of the 95% t-interval "
            "(2 or more feasible seeds; rounded at the mean's last digit, so ±0 is a spread below it)")
    if reference:
        note += (f"; % against {reference}, negative is better; better / worse: the 95% paired-bootstrap "
                 "interval of the % (10,000 resamples, seeds paired, at least 3 pairs) excludes 0, n.s.: it "
                 f"does not, no mark: fewer pairs; speedup: {reference} / agent, geometric mean over the rows "
                 f"(above 1x: faster than {reference})")
    note += ("; bold: the best of the row. OOM: no feasible decision. evals (pre-train): simulator evaluations "
             "that produced the column's checkpoint (amortised, not in its budget; ?: unknown).")
    if slow_reference:
        note += (f" Note: {reference} is slower than one device on {', '.join(slow_reference)}; percentages "
                 "against it overstate every gain there.")
    return header, rows, note


def regal(layout, df, running_time=False):
    metric = layout.get("metric", "best_objective")
    agents = layout["agents"]
    reference = layout.get("reference", agents[0]["label"])
    paper = layout.get("paper", {}) or {}
    labels = [a["label"] for a in agents]
    df = df[df["label"].isin(labels)]
    if df.empty:
        raise AnalysisError(f"layout {layout['name']}: none of its agents is in the run folders")
    per = df.groupby(["graph", "cluster", "label"])[metric].mean().unstack("label")
    seconds = df.groupby("label")["wall_seconds"].mean()

    def budget_columns(label):
        cells = df[df["label"] == label]
        return [fmt(round(cells["evaluations"].mean())) if len(cells) else "-", pretrain_text(cells["pretrain_evaluations"])]

    header, rows = [], []
    if running_time:
        header = ["method", "mean seconds per graph", "graphs", "seeds", "evaluations per cell", "evals (pre-train)",
                  "paper: seconds"]
        for a in agents:
            cells = df[df["label"] == a["label"]]
            rows.append([a["title"], fmt(seconds.get(a["label"])), int(cells["graph"].nunique()),
                         int(cells["seed"].nunique())] + budget_columns(a["label"]) +
                        [fmt(paper.get(a["title"], {}).get("seconds"))])
        return header, rows, ("wall-clock seconds of one optimization, mean over the test graphs and seeds; "
                              "evals (pre-train): simulator evaluations that produced the method's checkpoint "
                              "(amortised, not in its budget; ?: unknown)")
    if reference not in per.columns:
        raise AnalysisError(f"layout {layout['name']}: the reference agent {reference} has no cells")
    complete = per.dropna()
    best = complete.min(axis=1)
    reference_title = layout.get("reference_title", reference)
    header = ["method", "seeds", f"% improvement over {reference_title} (geo-mean ±95%)",
              "% gap from best (geo-mean)", "best on graphs", "mean seconds", "evaluations per cell",
              "evals (pre-train)", "paper: % improvement", "paper: % gap"]

    def improvement(ratios):
        """% improvement of a geometric mean of agent / reference ratios."""
        g = geometric_mean(list(ratios))
        return None if g is None else 100 * (1 - g)

    for a in agents:
        paper_cells = [fmt(paper.get(a["title"], {}).get("improvement")), fmt(paper.get(a["title"], {}).get("gap"))]
        cells = df[df["label"] == a["label"]]
        if a["label"] not in complete.columns:
            rows.append([a["title"], int(cells["seed"].nunique()), "-", "-", "-", "-"] +
                        budget_columns(a["label"]) + paper_cells)
            continue
        col = complete[a["label"]]
        mean = improvement(col / complete[reference])
        # The same per seed (each seed's value on every graph against the
        # reference's mean over its seeds), for the 95% t-interval over seeds.
        by_seed = []
        for _, group in cells.groupby("seed"):
            mine = group.groupby(["graph", "cluster"])[metric].mean()
            mine = mine.reindex(complete.index)
            if mine.notna().all():
                by_seed.append(improvement(mine / complete[reference]))
        half = t_half_width([v for v in by_seed if v is not None])
        text = f"{mean:+.2f}" + (f" ±{half:.2f}" if half is not None else "") if mean is not None else "-"
        gap = geometric_mean(list(col / best))
        wins = int((col <= best * (1 + 1e-12)).sum())
        rows.append([a["title"], int(cells["seed"].nunique()), text,
                     f"{100 * (gap - 1):.2f}" if gap is not None else "-", f"{wins}/{len(complete)}",
                     fmt(seconds.get(a["label"]))] + budget_columns(a["label"]) + paper_cells)
    note = (f"{len(complete)} graphs on which every listed agent finished; {metric.replace('_', ' ')} averaged "
            f"over seeds per graph; improvement = 1 - geometric mean over the graphs of agent / reference, gap = "
            "geometric mean of agent / best - 1 (the paper averages percentages arithmetically); ±: half-width of "
            "the 95% t-interval of the same figure computed per seed (2 or more seeds); evals (pre-train): "
            "simulator evaluations that produced the method's checkpoint (amortised, not in its budget; ?: "
            "unknown).")
    return header, rows, note


def first_reaching(curve, value):
    """(evaluations, wall seconds) of the first point of a best-so-far curve at
    or below value, or None."""
    hit = curve[curve["best_objective"] <= value * (1 + 1e-12)]
    if hit.empty:
        return None
    first = hit.sort_values(["evaluations", "wall_seconds"]).iloc[0]
    return int(first["evaluations"]), float(first["wall_seconds"])


def convergence(layout, df, curves):
    metric, unit, scale = metric_of(layout)
    target = layout.get("target")
    agents = layout.get("agents", [])
    if not target or not agents:
        raise AnalysisError(f"layout {layout['name']}: a convergence layout names a target and agents")
    header = [layout.get("row_header", "model"), "seeds", f"{target['title']} final ({unit}, ±95%)",
              f"{target['title']}: evaluations / s to reach it"]
    for a in agents:
        header += [f"{a['title']}: evaluations / s (seeds reaching)", "ratio (±95%)"]
    paper = layout.get("paper_ratio")
    if paper is not None:
        header.append("paper: ratio")
    digits = layout.get("digits", 3)
    rows = []
    for row in layout["rows"]:
        where = dict(graph=row["graph"], cluster=row.get("cluster"))
        cells = select(df, **where)
        t = select(cells, label=target["label"])
        t = t[t["feasible"]] if not t.empty else t
        if t.empty:
            continue
        # Per seed of the target: its final objective and when it first got there.
        targets = []
        for _, cell in t.sort_values("seed").iterrows():
            final = float(cell["best_objective"])  # the objective the curves track
            targets.append((int(cell["seed"]), final, first_reaching(curves[curves["cell"] == cell["cell"]], final)))
        finals = [f for _, f, _ in targets]
        half = t_half_width(finals)
        reached = [r for _, _, r in targets if r]
        out = [row["title"], len(targets),
               fmt_pm(sum(finals) / len(finals) * scale, None if half is None else half * scale, digits),
               (f"{sum(r[0] for r in reached) / len(reached):.0f} / {sum(r[1] for r in reached) / len(reached):.1f}"
                if reached else "-")]
        for a in agents:
            c = select(cells, label=a["label"])
            if c.empty:
                out += ["-", "-"]
                continue
            by_seed = {int(x["seed"]): x for _, x in c.iterrows()}
            hits, ratios, tried, budget = [], [], 0, 0
            for seed, final, t_reach in targets:
                # The same seed, or the agent's only seed (a deterministic one).
                cell = by_seed.get(seed, next(iter(by_seed.values())) if len(by_seed) == 1 else None)
                if cell is None:
                    continue
                tried += 1
                budget = max(budget, int(cell["evaluations"]))
                reach = first_reaching(curves[curves["cell"] == cell["cell"]], final)
                if reach is None:
                    continue
                hits.append(reach)
                if t_reach:
                    ratios.append(t_reach[0] / reach[0])
            if not tried:
                out += ["-", "-"]
                continue
            if not hits:
                out += [f"not within {fmt(budget)} (0/{tried})", "-"]
                continue
            text = (f"{sum(h[0] for h in hits) / len(hits):.0f} / {sum(h[1] for h in hits) / len(hits):.1f} "
                    f"({len(hits)}/{tried})")
            ratio_half = t_half_width(ratios)
            ratio = (f"{sum(ratios) / len(ratios):.1f}x" + (f" ±{ratio_half:.1f}" if ratio_half is not None else "")
                     if ratios else "-")
            out += [text, ratio]
        if paper is not None:
            out.append(f"{paper}x")
        rows.append(out)
    if not rows:
        raise AnalysisError(f"layout {layout['name']}: the target agent {target['label']} has no feasible cell "
                            "on the layout's rows")
    pretrain = "; ".join(f"{x['title']} {pretrain_text(select(df, label=x['label'])['pretrain_evaluations'])}"
                         for x in [target] + agents)
    note = (f"simulator evaluations / wall seconds until the best {metric.replace('_', ' ')} first reaches "
            f"{target['title']}'s final one, seed by seed (each seed of an agent against the same seed of "
            f"{target['title']}), means over the seeds that reach it; ratio = {target['title']}'s evaluations / "
            "the agent's (higher is faster), mean ± half-width of the 95% t-interval over those seeds; "
            f"'not within N': no seed reached it in its N evaluations. Evaluations before the cells "
            f"(pre-training, not in these counts): {pretrain}.")
    return header, rows, note


def near_duplicates(layout, graphs):
    """The header line on near-duplicates of the table's `graphs` (names) in
    the layout's `leak_suites`, or None when the layout names none."""
    suites = layout.get("leak_suites")
    if suites is None:
        return None
    if not isinstance(suites, list) or not all(isinstance(x, str) for x in suites):
        raise AnalysisError(f"layout {layout['name']}: leak_suites is a list of suite files (the test suite first)")
    if not suites:
        return f"Near-duplicates of test graphs: none can apply ({layout.get('leak_note', 'no network is trained across graphs')})"
    program = os.environ.get("GOSIM", os.path.join(ROOT, "build", "bin", "gosim"))
    if not os.access(program, os.X_OK):
        raise AnalysisError(f"{program}: not found; layout {layout['name']} names leak_suites, which "
                            "`gosim graphs leaks` checks (make build, or set GOSIM)")
    done = subprocess.run([program, "graphs", "leaks", "--json", *suites], capture_output=True, text=True, cwd=ROOT)
    try:  # exit status 1 is both "pairs found" (JSON on stdout) and an error (a line on stderr)
        pairs = json.loads(done.stdout)["pairs"]
    except (ValueError, KeyError):
        error = done.stderr.strip().splitlines()
        raise AnalysisError(f"layout {layout['name']}: gosim graphs leaks failed: "
                            f"{error[-1] if error else 'no output'}") from None
    found = {}
    for pair in pairs:
        for test, other in ((pair["a"], pair["b"]), (pair["b"], pair["a"])):
            if test["split"] != "test" or test["suite"] != suites[0] or test["name"] not in graphs:
                continue
            if other["split"] == "test":
                continue
            suite = os.path.splitext(os.path.basename(other["suite"]))[0]
            mark = ", EXACT" if pair["kind"] == "exact" else ""
            found.setdefault(test["name"], []).append(f"{other['name']} ({suite} {other['split']}{mark})")
    command = "gosim graphs leaks " + " ".join(suites)
    note = f" ({layout['leak_note']})" if layout.get("leak_note") else ""
    if not found:
        return f"Near-duplicates of test graphs in the pre-training and tuning suites (`{command}`): none{note}"
    listed = "; ".join(f"{g} ~ {', '.join(sorted(set(v)))}" for g, v in sorted(found.items()))
    return ("Near-duplicates of test graphs in the pre-training and tuning suites (the same model family at "
            f"another batch size or depth; `{command}`): {listed}{note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("layout")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", help="folder for <name>.md and <name>.tex (default: the first run folder)")
    parser.add_argument("--final-runs", action="append", default=[], metavar="DIR",
                        help="another folder whose final_runs.jsonl counts in the header (e.g. a training run "
                             "that evaluated on the test split); repeatable")
    args = parser.parse_args()
    try:
        layout = load_layout(args.layout)
        df = load_runs(args.runs)
        if layout["kind"] == "grid":
            header, rows, note = grid(layout, df)
        elif layout["kind"] == "convergence":
            curves = pd.concat([load_curves(d) for d in args.runs], ignore_index=True)
            header, rows, note = convergence(layout, df, curves)
        else:
            header, rows, note = regal(layout, df, running_time=layout["kind"] == "running_time")
        for folder in args.final_runs:
            if not os.path.isdir(folder):
                raise AnalysisError(f"{folder}: --final-runs names no folder")
        head = provenance(df, args.runs + args.final_runs)
        leaks = near_duplicates(layout, set(df["graph"].unique()))
        if leaks:
            head.append(leaks)
        md = f"### {layout['title']}\n\n" + "\n\n".join(head) + "\n\n" + markdown_table(header, rows) + \
            f"\n{note}\n"
        if layout.get("paper_note"):
            md += f"Paper figures: {layout['paper_note']}\n"
        caption = layout["title"] + ". " + note + " " + " ".join(h.strip("*") + "." for h in head)
        tex = latex_table(header, rows, caption, "tab:" + layout["name"])
        out = args.out or args.runs[0]
        os.makedirs(out, exist_ok=True)
        for ext, text in (("md", md), ("tex", tex)):
            path = os.path.join(out, f"{layout['name']}.{ext}")
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        print(md)
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
