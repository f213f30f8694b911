#!/usr/bin/python3
"""Chosen fields of every cell of run folders, one row per cell.

Usage: cells.py RUN_DIR [RUN_DIR ...] --fields F1,F2,... [--labels L1,L2,...] [--digits N]

Prints a markdown table with the columns graph, cluster, label, seed and
the fields asked for: any scalar field of the results lines
(best_objective, step_time, evaluations, ...) or an agent's `extra`
value as extra_<key> (e.g. extra_first_entropy, extra_imitation_steps;
docs/AGENTS.md lists each agent's). Rows are sorted by graph, cluster,
label (in --labels order when given) and seed. A cell without a field
shows "-". What it is for: the diagnostics an agent reports per cell,
which the paper tables (tables.py) do not show.
"""
import argparse
import math
import sys

from gosim_analysis import AnalysisError, load_runs, markdown_table


def cell_text(value, digits):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e-3 and value != 0.0 else f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return str(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--fields", required=True, help="comma-separated fields, e.g. best_objective,extra_ppo_steps")
    parser.add_argument("--labels", default="", help="comma-separated agent labels to show, in this order (default: all)")
    parser.add_argument("--digits", type=int, default=4, help="decimals shown (default 4)")
    args = parser.parse_args()
    fields = [f for f in args.fields.split(",") if f]
    labels = [label for label in args.labels.split(",") if label]
    if args.digits < 0 or args.digits > 17:
        sys.exit("cells.py: --digits must be between 0 and 17")
    try:
        frame = load_runs(args.runs)
    except AnalysisError as e:
        sys.exit(f"cells.py: {e}")
    missing = [f for f in fields if f not in frame.columns]
    if missing:
        extras = sorted(c for c in frame.columns if c.startswith("extra_"))
        sys.exit(f"cells.py: no cell has the field {', '.join(repr(m) for m in missing)} "
                 f"(extra fields there: {', '.join(extras) or 'none'})")
    present = sorted(frame.label.unique())
    for label in labels:
        if label not in present:
            sys.exit(f"cells.py: no cells of '{label}' in {', '.join(args.runs)} (labels there: {', '.join(present)})")
    if labels:
        frame = frame[frame.label.isin(labels)].copy()
        order = {label: i for i, label in enumerate(labels)}
    else:
        order = {label: i for i, label in enumerate(present)}
    frame["order"] = frame.label.map(order)
    frame = frame.sort_values(["graph", "cluster", "order", "seed"])
    rows = []
    for _, r in frame.iterrows():
        rows.append([r.graph, r.cluster, r.label, str(int(r.seed))] +
                    [cell_text(r[f] if f in r else None, args.digits) for f in fields])
    print(markdown_table(["graph", "cluster", "label", "seed"] + fields, rows,
                         align=["l", "l", "l", "r"] + ["r"] * len(fields)))


if __name__ == "__main__":
    main()
