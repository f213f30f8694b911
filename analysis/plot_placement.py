#!/usr/bin/python3
"""The graph coloured by device: where a decision puts every op.

Usage: plot_placement.py GRAPH.json[.gz] DECISION.json [--out placement.png]
                         [--max-nodes 4000]

GRAPH is a native gosim graph (`gosim graphs export`), DECISION a decision
for it (`gosim optimize --out`, a run folder's decisions/). Layered layout:
x = the op's depth (longest path from a source), y = its order within the
layer; edges between devices are drawn darker than edges within one. Graphs
larger than --max-nodes are drawn as a strip instead: ops in topological
order (x) against their device (y), which shows pipeline cuts and
alternation at any size.
"""
import argparse
import collections
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gosim_analysis import AnalysisError, fail, save_figure, load_graph, load_placement  # noqa: E402


def depths(count, edges):
    """Longest-path depth of every node (the nodes are in topological order in
    gosim's format); a source (weights, inputs) sits just before its first
    consumer rather than at 0, so that its edges stay short."""
    preds = collections.defaultdict(list)
    succs = collections.defaultdict(list)
    for s, d in edges:
        preds[d].append(s)
        succs[s].append(d)
    depth = [0] * count
    for v in range(count):
        for p in preds[v]:
            if p >= v:
                raise AnalysisError(f"edge {p} -> {v} goes backwards: the graph is not in topological order")
            depth[v] = max(depth[v], depth[p] + 1)
    for v in range(count):
        if not preds[v] and succs[v]:
            depth[v] = max(0, min(depth[c] for c in succs[v]) - 1)
    return depth


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph")
    parser.add_argument("decision")
    parser.add_argument("--out", default="placement.png")
    parser.add_argument("--max-nodes", type=int, default=4000)
    args = parser.parse_args()
    try:
        names, edges, _ = load_graph(args.graph)
        placement = load_placement(args.decision, names)
        devices = max(placement) + 1
        cmap = plt.get_cmap("tab10" if devices <= 10 else "tab20")
        colour = [cmap(d % cmap.N) for d in placement]
        crossing = sum(1 for s, d in edges if placement[s] != placement[d])
        counts = collections.Counter(placement)
        title = (f"{os.path.basename(args.graph)}: {len(names)} ops on {devices} devices "
                 f"({', '.join(f'd{d}: {counts[d]}' for d in sorted(counts))}); "
                 f"{crossing} of {len(edges)} edges cross devices")
        if len(names) > args.max_nodes:
            fig, ax = plt.subplots(figsize=(14, 1.2 + 0.5 * devices))
            ax.scatter(range(len(names)), placement, c=colour, s=4, marker="|")
            ax.set_yticks(range(devices))
            ax.set_yticklabels([f"device {d}" for d in range(devices)])
            ax.set_xlabel("op (topological order)")
        else:
            depth = depths(len(names), edges)
            slot = collections.Counter()
            y = []
            for v in range(len(names)):
                y.append(slot[depth[v]])
                slot[depth[v]] += 1
            width = max(slot.values())
            fig, ax = plt.subplots(figsize=(min(18, 6 + 0.05 * (max(depth) + 1)), min(12, 3 + 0.1 * width)))
            inside = [((depth[s], y[s]), (depth[d], y[d])) for s, d in edges if placement[s] == placement[d]]
            across = [((depth[s], y[s]), (depth[d], y[d])) for s, d in edges if placement[s] != placement[d]]
            ax.add_collection(LineCollection(inside, colors=(0.7, 0.7, 0.7), linewidths=0.3))
            ax.add_collection(LineCollection(across, colors=(0.1, 0.1, 0.1), linewidths=0.6))
            ax.scatter(depth, y, c=colour, s=max(2, 12 - len(names) // 300), zorder=3, edgecolors="none")
            ax.set_xlabel("depth (longest path from a source)")
            ax.set_yticks([])
            handles = [plt.Line2D([], [], marker="o", linestyle="", color=cmap(d % cmap.N)) for d in range(devices)]
            ax.legend(handles, [f"device {d}" for d in range(devices)], fontsize=8, loc="upper right")
        ax.set_title(title, fontsize=9)
        save_figure(fig, args.out, f"{title}")
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
