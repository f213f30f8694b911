#!/usr/bin/python3
"""A Gantt chart of a simulated step: one lane per device stream and per link.

Usage: plot_timeline.py TRACE.json [--out timeline.png] [--top 12]

TRACE is the Chrome trace of `gosim simulate ... --trace TRACE.json` (the
same file opens in Perfetto). Kernels are coloured by op type (the `top`
most time-consuming types get their own colour, the rest are grey);
transfers are drawn on the link lanes. The title gives the step time and
each lane's utilization.
"""
import argparse
import collections
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gosim_analysis import AnalysisError, fail, save_figure, read_json  # noqa: E402


def lanes_of(trace, path):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise AnalysisError(f"{path}: no traceEvents list; give the --trace output of gosim simulate")
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e.get("pid"), e.get("tid"))] = e.get("args", {}).get("name", str(e.get("tid")))
    spans = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X":
            continue
        try:
            key = (e["pid"], e["tid"])
            spans[key].append((float(e["ts"]), float(e["dur"]), e.get("args", {}).get("op", e.get("cat", "")),
                               e.get("cat", "")))
        except (KeyError, TypeError, ValueError) as err:
            raise AnalysisError(f"{path}: an event lacks {err}") from err
    if not spans:
        raise AnalysisError(f"{path}: no kernel or transfer spans")
    return names, spans


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--out", default="timeline.png")
    parser.add_argument("--top", type=int, default=12, help="op types with their own colour")
    args = parser.parse_args()
    try:
        names, spans = lanes_of(read_json(args.trace), args.trace)
        keys = sorted(spans)  # devices (pid 1) first, then links (pid 2), by lane id
        busy_by_op = collections.Counter()
        for key in keys:
            for _, dur, op, cat in spans[key]:
                if cat == "op":
                    busy_by_op[op] += dur
        palette = plt.get_cmap("tab20").colors
        colours = {op: palette[i % len(palette)] for i, (op, _) in enumerate(busy_by_op.most_common(args.top))}
        end = max(ts + dur for key in keys for ts, dur, _, _ in spans[key])
        fig, ax = plt.subplots(figsize=(13, 0.45 * len(keys) + 1.6))
        labels = []
        for row, key in enumerate(keys):
            bars, colors = [], []
            busy = 0.0
            for ts, dur, op, cat in spans[key]:
                bars.append((ts / 1e3, dur / 1e3))
                colors.append(colours.get(op, (0.6, 0.6, 0.6)) if cat == "op" else (0.15, 0.3, 0.75))
                busy += dur
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colors, linewidth=0)
            labels.append(f"{names.get(key, key[1])} ({100 * busy / end:.0f}%)")
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("time (ms)")
        ax.set_title(f"{os.path.basename(args.trace)}: step {end / 1e3:.3f} ms")
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
        handles.append(plt.Rectangle((0, 0), 1, 1, color=(0.15, 0.3, 0.75)))
        ax.legend(handles, list(colours) + ["transfer"], fontsize=7, ncol=4, loc="upper center",
                  bbox_to_anchor=(0.5, -0.18 if len(keys) > 4 else -0.35))
        save_figure(fig, args.out, f"{len(keys)} lanes, step {end / 1e3:.3f} ms")
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
