#!/usr/bin/python3
"""One agent against others, graph by graph, paired by seed.

Usage: paired.py RUN_DIR [RUN_DIR ...] --agent LABEL [--against LABEL ...] [--metric FIELD]

For every graph (and cluster) where both ran, prints the mean over paired
seeds of (other / agent - 1) x 100, its 95% bootstrap interval (10,000
resamples, analysis/gosim_analysis.py's paired_bootstrap) and the verdict
for the agent: "agent better" when the interval lies above 0 (the other is
worse), "agent worse" when below, "tie" when it holds 0, nothing with
fewer than 3 pairs. A deterministic column that ran one seed is paired
with every seed of the other. Without --against: every other label of
the run folders. A paper table's reference column answers "better than
the reference"; this answers "better than each control". The metric is
`best_objective` (the objective the cells optimized, lower is better) unless
--metric names another field of the results lines (e.g. step_time).
"""
import argparse
import sys

from gosim_analysis import AnalysisError, load_runs, paired_bootstrap, pairs


def seeds_of(frame, label, metric):
    return {int(r.seed): float(r[metric]) for _, r in frame[frame.label == label].iterrows() if r.feasible}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--agent", required=True, help="the label compared against the others")
    parser.add_argument("--against", action="append", default=[], help="a label to compare with; repeatable")
    parser.add_argument("--metric", default="best_objective",
                        help="a numeric field of the results lines, lower is better (default: best_objective)")
    args = parser.parse_args()
    try:
        frame = load_runs(args.runs)
    except AnalysisError as e:
        sys.exit(f"paired.py: {e}")
    labels = sorted(frame.label.unique())
    for label in [args.agent] + args.against:
        if label not in labels:
            sys.exit(f"paired.py: no cells of '{label}' in {', '.join(args.runs)} (labels there: {', '.join(labels)})")
    if args.metric not in frame.columns:
        sys.exit(f"paired.py: the results lines have no field '{args.metric}'")
    against = args.against or [label for label in labels if label != args.agent]
    metric = args.metric
    if metric == "best_objective":
        metric += " (" + ", ".join(sorted(str(o) for o in frame.objective.unique())) + ")"
    print(f"{args.agent} against each column, {metric}: mean of (column / {args.agent} - 1) x 100 over "
          "paired seeds [95% bootstrap interval]; positive: the column is worse")
    for (graph, cluster), cells in frame.groupby(["graph", "cluster"], sort=True):
        mine = seeds_of(cells, args.agent, args.metric)
        if not mine:
            continue
        parts = []
        for label in against:
            other = seeds_of(cells, label, args.metric)
            if not other:
                continue
            agent, column = pairs(mine, other)
            mean, (low, high), verdict = paired_bootstrap(column, agent)
            # paired_bootstrap's verdict is for its first argument, the column;
            # values equal but for rounding are "equal", not a win.
            word = {"better": f"{args.agent} worse", "worse": f"{args.agent} better", "n.s.": "tie"}.get(verdict, "")
            if verdict and all(abs(c / a - 1.0) < 1e-9 for c, a in zip(column, agent)):
                word = "equal"
            parts.append(f"{label} {mean:+.1f}% [{low:+.1f}, {high:+.1f}] {word}".rstrip())
        print(f"{graph} ({cluster}): " + "; ".join(parts))


if __name__ == "__main__":
    main()
