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
    peak_memory, evaluations, pretrain_evaluations (-1: unknown), wall_seconds,
    decision, ...) plus budget_evaluations and the `extra` fields as
    extra_<key>. A cell that
    appears twice keeps its last line (as gosim does). So does a (graph,
    cluster, label, seed) finished under two identities, e.g. a run resumed
    after a checkpoint was trained again (the new cells are appended after
    the old ones), with a warning on stderr.

    A folder whose log is committed gzip'd (results.jsonl.gz, results/) is
    read the same way.

    When the folder has cells.txt (the ids of the grid `gosim run` last ran
    there), only those cells are kept: lines that another configuration or
    another build of gosim left in the folder never reach a table. Columns
    `mode` ("full" or "quick") and `code` (the git commit of the build, with
    "-dirty" when its tree had changes) come from the cell's identity.
    """
    path = run_file(run_dir, "results.jsonl")
    grid = None
    try:
        with open(os.path.join(run_dir, "cells.txt")) as f:
            grid = {line.strip() for line in f if line.strip()}
    except FileNotFoundError:
        pass
    except OSError as e:
        raise AnalysisError(f"{os.path.join(run_dir, 'cells.txt')}: cannot read: {e.strerror or e}") from e
    rows = {}
    left_out = 0
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise AnalysisError(f"{path}:{number}: not a JSON line: {e}") from e
                if r.get("format") != "gosim.result":
                    raise AnalysisError(f"{path}:{number}: not a gosim result line (format {r.get('format')!r})")
                if grid is not None and r.get("cell") not in grid:
                    left_out += 1
                    continue
                row = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
                identity = r.get("identity", {})
                row["mode"] = identity.get("mode", "full")
                row["code"] = identity.get("code", "unrecorded")
                model = identity.get("cost_model", {})
                row["cost_model"] = model.get("name", "unrecorded") if isinstance(model, dict) else str(model)
                # How the engine ran the host (docs/SIMULATOR.md, "The host");
                # lines written before it modelled one: none.
                row["execution"] = r.get("execution") or "none"
                row["budget_evaluations"] = r.get("budget", {}).get("evaluations", 0)
                # Lines written before the column existed: unknown (-1), never 0.
                row["pretrain_evaluations"] = r.get("pretrain_evaluations", -1)
                for key, value in r.get("extra", {}).items():
                    row["extra_" + key] = value
                row["run"] = run_dir
                row["line"] = number
                rows[r["cell"]] = row
    except OSError as e:
        raise AnalysisError(f"{path}: cannot read: {e.strerror or e} (give a gosim run folder)") from e
    except KeyError as e:
        raise AnalysisError(f"{path}: a line lacks the field {e}") from e
    if left_out:
        print(f"note: {path}: {left_out} line(s) of cells outside the folder's current grid (cells.txt) left out",
              file=sys.stderr)
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


def run_file(run_dir, name):
    """`name` in a run folder, or `name`.gz where results/ committed it gzip'd
    (results/README.md): both are read as they are."""
    path = os.path.join(run_dir, name)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    return path


def load_curves(run_dir):
    """curves.csv of a run folder (cell, graph, cluster, label, seed,
    evaluations, wall_seconds, best_objective); curves.csv.gz when that is
    how results/ committed it."""
    path = run_file(run_dir, "curves.csv")  # pandas reads a .gz by its suffix
    try:
        curves = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise AnalysisError(f"{path}: cannot read: {e}") from e
    expected = {"cell", "graph", "cluster", "label", "seed", "evaluations", "wall_seconds", "best_objective"}
    missing = expected - set(curves.columns)
    if missing:
        raise AnalysisError(f"{path}: missing columns {sorted(missing)}")
    return curves


QUICK_MODE_NOTE = "quick mode: pipeline check, not a result"


def load_runs(run_dirs):
    """load_results over several run folders, concatenated. Quick-mode and
    full-mode cells never go into one table: mixing them is an error."""
    frame = pd.concat([load_results(d) for d in run_dirs], ignore_index=True)
    modes = sorted(frame["mode"].unique())
    if len(modes) > 1:
        raise AnalysisError(f"the run folders mix quick-mode and full-mode cells ({', '.join(run_dirs)}); "
                            "make a table of one mode at a time")
    return frame


T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
MIN_PAIRS = 3
RESAMPLES = 10000


def t_half_width(values):
    """Half-width of the 95% t-interval of the mean of `values` (None for fewer than 2)."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return (T975[n - 2] if n - 1 <= 30 else 1.96) * sd / math.sqrt(n)


def paired_bootstrap(agent, reference):
    """(mean %, (low, high) 95% percentile interval of the mean %, verdict) of
    paired values, (agent / reference - 1) x 100 per pair, 10,000 resamples
    with a fixed seed. verdict: 'better' / 'worse' when the interval excludes
    0 and there are at least 3 pairs, 'n.s.' when it does not, None with fewer
    pairs (the same rule as gosim's summary, experiments/stats.h)."""
    import random
    pct = [(a / r - 1.0) * 100.0 for a, r in zip(agent, reference)]
    if not pct:
        return None, None, None
    rng = random.Random(0x5eed)
    n = len(pct)
    means = sorted(sum(pct[rng.randrange(n)] for _ in range(n)) / n for _ in range(RESAMPLES))
    low, high = means[int(0.025 * (RESAMPLES - 1))], means[int(0.975 * (RESAMPLES - 1))]
    verdict = None
    if n >= MIN_PAIRS:
        verdict = "better" if high < 0 else "worse" if low > 0 else "n.s."
    return sum(pct) / n, (low, high), verdict


def pairs(mine, reference):
    """Paired values of two {seed: value} maps: the same seed, or every seed
    of `mine` against a reference that ran one seed (a deterministic
    baseline)."""
    if len(reference) == 1:
        (only,) = reference.values()
        return list(mine.values()), [only] * len(mine)
    common = sorted(set(mine) & set(reference))
    return [mine[s] for s in common], [reference[s] for s in common]


def geometric_mean(values):
    values = list(values)
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def final_runs(run_dirs):
    """Lines of final_runs.jsonl (runs on test graphs) over the run folders."""
    count = 0
    for d in run_dirs:
        try:
            with open(os.path.join(d, "final_runs.jsonl")) as f:
                count += sum(1 for line in f if line.strip())
        except FileNotFoundError:
            pass
    return count


def pretrain_text(values):
    """The pre-training evaluations of a group of cells for a table: the
    largest, with thousands separators; '?' when one is unknown (-1), '-' for
    no cells."""
    values = [int(v) for v in values]
    if not values:
        return "-"
    if min(values) < 0:
        return "?"
    return f"{max(values):,}"


def provenance(df, run_dirs=()):
    """Header lines of a table: the quick-mode note when it applies, the
    code versions that produced its cells (with their counts), the cost
    models they were simulated with, and the count of final runs on the test
    graphs logged in the run folders."""
    lines = []
    if (df["mode"] == "quick").any():
        lines.append(f"**{QUICK_MODE_NOTE}**")
    counts = df["code"].value_counts()
    versions = ", ".join(f"{code[:12] + ('-dirty' if code.endswith('-dirty') else '')} ({n} cells)"
                         for code, n in sorted(counts.items()))
    lines.append(f"Code: {versions}" + (" -- cells of several builds" if len(counts) > 1 else ""))
    models = df["cost_model"].value_counts()
    lines.append("Cost model: " + ", ".join(f"{m} ({n} cells)" for m, n in sorted(models.items())) +
                 (" -- cells of several cost models" if len(models) > 1 else ""))
    executions = df["execution"].value_counts() if "execution" in df else {}
    if len(executions) == 0 or set(executions.keys()) == {"none"}:
        lines.append("Host: not modelled (execution none: GPU-side step times; the presets of this table have "
                     "no calibrated host, docs/SIMULATOR.md \"The host\")")
    else:
        lines.append("Host: " + ", ".join(f"execution {e} ({n} cells)" for e, n in sorted(executions.items())))
    if run_dirs:
        lines.append(f"Final runs on the test graphs logged in these run folders: {final_runs(run_dirs)}")
    return lines


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


def natural_key(text):
    """Sort key that orders gpu2 before gpu10."""
    import re
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def cluster_device_names(cluster):
    """The device names of a cluster, in the cluster's device order: from a
    cluster YAML file, or a preset name looked up in the repository's
    configs/clusters/ (a `name:key=value` parameter suffix is ignored). None
    when neither exists. A device entry with `count: N` names N devices
    NAME0 .. NAME{N-1}, as gosim does (docs/FORMATS.md)."""
    import yaml
    if not cluster:
        return None
    candidates = [cluster]
    if not cluster.endswith((".yaml", ".yml")):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        candidates = [os.path.join(root, "configs", "clusters", cluster.split(":")[0] + ".yaml")]
    for path in candidates:
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                spec = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise AnalysisError(f"{path}: cannot read the cluster: {e}") from e
        names = []
        for device in (spec or {}).get("devices", []) or []:
            name, count = device.get("name"), device.get("count")
            if name is None:
                continue
            names += [f"{name}{i}" for i in range(int(count))] if count else [str(name)]
        return names or None
    return None


def load_placement(path, names, cluster=None):
    """(device index of every node in `names` order, device names).

    Device names come from the cluster (`cluster`, else the decision's
    `cluster` field, read with cluster_device_names), so that a decision on
    gpu2 and gpu3 is drawn as gpu2 and gpu3; without the cluster's file, the
    names the decision uses in natural order (gpu2 < gpu10). Integer entries
    of the decision are device indices of that list."""
    d = read_json(path)
    if d.get("format") != "gosim.decision":
        raise AnalysisError(f"{path}: not a gosim decision (format {d.get('format')!r})")
    placement = d.get("placement", {})
    devices = cluster_device_names(cluster or d.get("cluster"))
    if devices is None:
        used = {v for v in placement.values() if isinstance(v, str)}
        top = max([v for v in placement.values() if isinstance(v, int)] + [-1])
        devices = sorted(used, key=natural_key)
        devices += [f"device {i}" for i in range(len(devices), top + 1)]
    index = {name: i for i, name in enumerate(devices)}
    out = []
    for name in names:
        if name not in placement:
            raise AnalysisError(f"{path}: node '{name}' has no device; is it the decision of this graph?")
        device = placement[name]
        if isinstance(device, str):
            if device not in index:
                raise AnalysisError(f"{path}: node '{name}' is on '{device}', which the cluster does not have "
                                    f"(its devices: {', '.join(devices)})")
            device = index[device]
        if not 0 <= int(device) < len(devices):
            raise AnalysisError(f"{path}: node '{name}' is on device {device}; the cluster has {len(devices)}")
        out.append(int(device))
    return out, devices


def fmt(value, digits=3):
    """A number for a table cell ('-' when missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, str):
        return value
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:.{digits}f}".rstrip("0").rstrip(".")


def shown_decimals(value, digits=3):
    """How many decimals fmt(value, digits) rounds to (before trailing zeros go)."""
    if abs(value) >= 1000:
        return 0
    if abs(value) >= 1 or value == 0:
        return digits
    return max(0, digits - 1 - math.floor(math.log10(abs(value))))


def fmt_pm(value, half, digits=3):
    """'mean ±half' for a grid cell: the mean at a fixed precision (digits
    decimals from 1 to 1,000, fmt's rule elsewhere) and its half-width rounded
    at the same place, so that a spread below the mean's last digit reads ±0
    (not ±1.5e-13)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    decimals = shown_decimals(value, digits)
    text = f"{value:,.{decimals}f}" if 1 <= abs(value) < 1000 else fmt(value, digits)
    if half is None:
        return text
    width = f"{half:,.{decimals}f}"
    return f"{text} ±{'0' if float(width.replace(',', '')) == 0 else width}"


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
