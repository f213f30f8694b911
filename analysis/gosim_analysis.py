"""Reading gosim's result files and writing tables, for the analysis scripts.

Depends only on the file formats (docs/EXPERIMENTS.md: a run folder's
results.jsonl and curves.csv; docs/FORMATS.md: graphs and decisions), never on
gosim's code. Every reader raises AnalysisError with the file and what is
wrong; the scripts print it as one line and exit 1.
"""
import gzip
import json
import math
import os
import sys

import pandas as pd


class AnalysisError(Exception):
    """An unreadable or inconsistent input file."""


def fail(error):
    """Prints `error` as one line on stderr and exits 1 (for the scripts' main)."""
    import sys
    print(f"{os.path.basename(sys.argv[0])}: {error}", file=sys.stderr)
    sys.exit(1)


def save_figure(fig, path, summary):
    """Writes `fig` as a PNG (atomically: a temporary file, then a rename) and
    prints 'wrote PATH: summary'."""
    fig.tight_layout()
    tmp = path + ".tmp.png"
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    except OSError as e:
        raise AnalysisError(f"{path}: cannot write: {e.strerror or e}") from e
    print(f"wrote {path}: {summary}")


def read_json(path):
    """A JSON file, plain or gzipped."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            return json.load(f)
    except OSError as e:
        raise AnalysisError(f"{path}: cannot read: {e.strerror or e}") from e
    except (ValueError, EOFError) as e:
        raise AnalysisError(f"{path}: not valid JSON: {e}") from e


def load_results(run_dir):
    """The finished cells of a run folder as a DataFrame, one row per cell.

    Columns: the results line's scalar fields (cell, graph, cluster, devices,
    agent, label, seed, objective, best_objective, feasible, step_time,
    peak_memory, evaluations, wall_seconds, decision, ...) plus
    budget_evaluations and the `extra` fields as extra_<key>. A cell that
    appears twice keeps its last line (as gosim does). So does a (graph,
    cluster, label, seed) finished under two identities, e.g. a run resumed
    after a checkpoint was trained again (the new cells are appended after
    the old ones), with a warning on stderr.
    """
    path = os.path.join(run_dir, "results.jsonl")
    rows = {}
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise AnalysisError(f"{path}:{number}: not a JSON line: {e}") from e
                if r.get("format") != "gosim.result":
                    raise AnalysisError(f"{path}:{number}: not a gosim result line (format {r.get('format')!r})")
                row = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
                row["budget_evaluations"] = r.get("budget", {}).get("evaluations", 0)
                for key, value in r.get("extra", {}).items():
                    row["extra_" + key] = value
                row["run"] = run_dir
                row["line"] = number
                rows[r["cell"]] = row
    except OSError as e:
        raise AnalysisError(f"{path}: cannot read: {e.strerror or e} (give a gosim run folder)") from e
    except KeyError as e:
        raise AnalysisError(f"{path}: a line lacks the field {e}") from e
    if not rows:
        raise AnalysisError(f"{path}: no finished cells yet")
    frame = pd.DataFrame(list(rows.values())).sort_values("line")
    key = [k for k in ("graph", "cluster", "label", "seed") if k in frame.columns]
    latest = frame.drop_duplicates(subset=key, keep="last")
    if len(latest) < len(frame):
        print(f"warning: {path}: {len(frame) - len(latest)} cell(s) superseded by a later line of the same "
              f"graph, cluster, label and seed under another identity; the later ones are used",
              file=sys.stderr)
    return latest.drop(columns="line").reset_index(drop=True)


def load_curves(run_dir):
    """curves.csv of a run folder (cell, graph, cluster, label, seed,
    evaluations, wall_seconds, best_objective)."""
    path = os.path.join(run_dir, "curves.csv")
    try:
        curves = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise AnalysisError(f"{path}: cannot read: {e}") from e
    expected = {"cell", "graph", "cluster", "label", "seed", "evaluations", "wall_seconds", "best_objective"}
    missing = expected - set(curves.columns)
    if missing:
        raise AnalysisError(f"{path}: missing columns {sorted(missing)}")
    return curves


def load_runs(run_dirs):
    """load_results over several run folders, concatenated."""
    return pd.concat([load_results(d) for d in run_dirs], ignore_index=True)


def load_graph(path):
    """A native gosim graph (`gosim graphs export`): (names, edges (src, dst)
    index pairs, per-node op types)."""
    g = read_json(path)
    try:
        nodes = g["nodes"]
        names = [n["name"] for n in nodes]
        index = {name: i for i, name in enumerate(names)}
        edges = []
        for i, n in enumerate(nodes):
            for spec in n.get("inputs", []):
                producer = spec.lstrip("^").split(":")[0]
                if producer in index:
                    edges.append((index[producer], i))
        ops = [n.get("op", "") for n in nodes]
    except (KeyError, TypeError) as e:
        raise AnalysisError(f"{path}: not a gosim graph (missing {e}); export one with gosim graphs export") from e
    return names, edges, ops


def load_placement(path, names):
    """The device index of every node from a decision file, in `names` order."""
    d = read_json(path)
    if d.get("format") != "gosim.decision":
        raise AnalysisError(f"{path}: not a gosim decision (format {d.get('format')!r})")
    placement = d.get("placement", {})
    devices = {}
    out = []
    for name in names:
        if name not in placement:
            raise AnalysisError(f"{path}: node '{name}' has no device; is it the decision of this graph?")
        device = placement[name]
        if isinstance(device, str):  # a device name: number them in order of appearance
            device = devices.setdefault(device, len(devices))
        out.append(int(device))
    return out


def fmt(value, digits=3):
    """A number for a table cell ('-' when missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, str):
        return value
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:.{digits}f}".rstrip("0").rstrip(".")


def markdown_table(header, rows, align=None):
    """A Markdown table; `align` per column: 'l' or 'r'."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def latex_escape(text):
    return (str(text).replace("\\", r"\textbackslash{}").replace("&", r"\&").replace("%", r"\%")
            .replace("_", r"\_").replace("#", r"\#").replace("$", r"\$"))


def latex_table(header, rows, caption, label, align=None):
    """A LaTeX table (booktabs) of the same cells."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    bold = lambda c: r"\textbf{" + latex_escape(c[2:-2]) + "}" if str(c).startswith("**") else latex_escape(c)
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "".join(align) + "}", r"\toprule",
             " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(bold(c) for c in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + latex_escape(caption) + "}",
              r"\label{" + label + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"
