#!/usr/bin/python3
"""Best-so-far objective against simulator evaluations and wall time, per agent.

Usage: plot_convergence.py RUN_DIR [RUN_DIR ...] [--graph G] [--cluster C]
                           [--labels A,B,...] [--out convergence.png]

Reads curves.csv and results.jsonl of the run folders. One row of two panels
per (graph, cluster): left, the best objective found so far against the
evaluations spent (log scale); right, against wall-clock seconds. One line
per agent label: the median over its seeds of the best-so-far, the range
over seeds shaded. Infeasible-so-far points are left out. Agents that
evaluate once (constructive baselines) are drawn as a horizontal line.
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gosim_analysis import AnalysisError, fail, save_figure, load_curves, load_results  # noqa: E402

INFEASIBLE = 1e29  # agents::Objective::kInfeasibleBase and above: no feasible decision yet


def step_curve(points, x, grid):
    """The best-so-far value at each grid point (NaN before the first point)."""
    xs = points[x].to_numpy()
    ys = np.minimum.accumulate(points["best_objective"].to_numpy())
    index = np.searchsorted(xs, grid, side="right") - 1
    out = np.where(index >= 0, ys[np.clip(index, 0, None)], np.nan)
    return np.where(out >= INFEASIBLE, np.nan, out)


def panel(ax, cells, curves, x, log_x, objective, colours):
    for label, group in cells.groupby("label", sort=False):
        colour = colours[label]
        series = [curves[curves["cell"] == c].sort_values([x, "best_objective"]) for c in group["cell"]]
        series = [s for s in series if not s.empty]
        if not series:
            continue
        top = max(s[x].max() for s in series)
        low = min(s[x][s[x] > 0].min() if (s[x] > 0).any() else top for s in series)
        if group["evaluations"].max() <= 1 or top <= low:
            level = np.nanmedian([step_curve(s, x, np.array([s[x].max()]))[0] for s in series])
            ax.axhline(level, linestyle="--", linewidth=1, label=f"{label} (one-shot)", color=colour)
            continue
        grid = np.geomspace(max(low, 1e-9), top, 200) if log_x else np.linspace(0, top, 200)
        values = np.array([step_curve(s, x, grid) for s in series])
        with np.errstate(all="ignore"):
            median = np.nanmedian(values, axis=0)
        ax.plot(grid, median, label=label, color=colour)
        if len(series) > 1:
            ax.fill_between(grid, np.nanmin(values, axis=0), np.nanmax(values, axis=0), alpha=0.15,
                            color=colour)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("simulator evaluations" if x == "evaluations" else "wall-clock seconds")
    ax.set_ylabel(f"best {objective.replace('_', ' ')} so far")
    ax.grid(True, alpha=0.3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--graph")
    parser.add_argument("--cluster")
    parser.add_argument("--labels", help="comma-separated agent labels (default: all)")
    parser.add_argument("--out", default="convergence.png")
    args = parser.parse_args()
    try:
        results = pd.concat([load_results(r) for r in args.runs], ignore_index=True)
        curves = pd.concat([load_curves(r) for r in args.runs], ignore_index=True)
        if args.graph:
            results = results[results["graph"] == args.graph]
        if args.cluster:
            results = results[results["cluster"] == args.cluster]
        if args.labels:
            results = results[results["label"].isin(args.labels.split(","))]
        if results.empty:
            raise AnalysisError("no cell matches --graph / --cluster / --labels")
        problems = list(results.groupby(["graph", "cluster"], sort=False))
        palette = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
        colours = {label: palette[i % len(palette)] for i, label in enumerate(results["label"].unique())}
        fig, axes = plt.subplots(len(problems), 2, figsize=(12, 3.6 * len(problems)), squeeze=False)
        for row, ((graph, cluster), cells) in enumerate(problems):
            objective = cells["objective"].iloc[0]
            panel(axes[row][0], cells, curves, "evaluations", True, objective, colours)
            panel(axes[row][1], cells, curves, "wall_seconds", True, objective, colours)
            axes[row][0].set_title(f"{graph} on {cluster}")
            axes[row][1].set_title(f"{graph} on {cluster}")
            axes[row][1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        save_figure(fig, args.out, f"{len(problems)} problems, {results['label'].nunique()} agents")
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
