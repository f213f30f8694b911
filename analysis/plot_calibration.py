#!/usr/bin/python3
"""Calibration scatter: predicted against measured kernel times, per op type.

Usage: plot_calibration.py PREDICTIONS.csv [--out calibration.png] [--top 8]

PREDICTIONS is written by `gosim calibrate --trace T --predictions P.csv`
(the held-out ops: type, flops, bytes, measured_s, predicted_s, step). Log-log
axes with the y = x line and +-25% bands; the `top` op types by measured
time get their own colour. The title gives the MAPE, the time-weighted error
and the error of the total, as `gosim calibrate --report` defines them.
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
from gosim_analysis import AnalysisError, fail, save_figure  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions")
    parser.add_argument("--out", default="calibration.png")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    try:
        try:
            df = pd.read_csv(args.predictions)
        except (OSError, ValueError) as e:
            raise AnalysisError(f"{args.predictions}: cannot read: {e}") from e
        missing = {"type", "measured_s", "predicted_s"} - set(df.columns)
        if missing:
            raise AnalysisError(f"{args.predictions}: missing columns {sorted(missing)}; "
                                "write it with gosim calibrate --predictions")
        df = df[(df["measured_s"] > 0) & (df["predicted_s"] > 0)]
        if df.empty:
            raise AnalysisError(f"{args.predictions}: no op with positive measured and predicted times")
        m, p = df["measured_s"].to_numpy() * 1e6, df["predicted_s"].to_numpy() * 1e6
        mape = np.mean(np.abs(p - m) / m)
        weighted = np.sum(np.abs(p - m)) / np.sum(m)
        total = (np.sum(p) - np.sum(m)) / np.sum(m)
        top = df.groupby("type")["measured_s"].sum().sort_values(ascending=False).index[: args.top]
        fig, ax = plt.subplots(figsize=(7.5, 6.5))
        cmap = plt.get_cmap("tab10")
        for i, op in enumerate(top):
            part = df[df["type"] == op]
            ax.scatter(part["measured_s"] * 1e6, part["predicted_s"] * 1e6, s=8, alpha=0.6, color=cmap(i % 10),
                       label=op)
        rest = df[~df["type"].isin(top)]
        if not rest.empty:
            ax.scatter(rest["measured_s"] * 1e6, rest["predicted_s"] * 1e6, s=6, alpha=0.4, color="0.6",
                       label="other")
        lo, hi = min(m.min(), p.min()) * 0.8, max(m.max(), p.max()) * 1.25
        line = np.geomspace(lo, hi, 50)
        ax.plot(line, line, color="black", linewidth=1)
        ax.fill_between(line, line * 0.75, line * 1.25, color="0.85", zorder=0, label="+-25%")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("measured kernel time (us)")
        ax.set_ylabel("predicted kernel time (us)")
        ax.set_title(f"{os.path.basename(args.predictions)}: {len(df)} ops (both times > 0); MAPE {100 * mape:.1f}%, "
                     f"weighted {100 * weighted:.1f}%, total {100 * total:+.1f}%", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(True, alpha=0.3, which="both")
        save_figure(fig, args.out, f"{len(df)} ops, MAPE {100 * mape:.1f}%")
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
