#!/usr/bin/python3
"""The graph coloured by device: where a decision puts every op.

Usage: plot_placement.py GRAPH.json[.gz] DECISION.json [--out placement.png]
                         [--cluster NAME|FILE] [--max-nodes 300]

GRAPH is a native gosim graph (`gosim graphs export`), DECISION a decision
for it (`gosim optimize --out`, a run folder's decisions/). Devices carry the
cluster's names (gpu2 is drawn as gpu2): the cluster is --cluster, else the
decision's `cluster` field, looked up as a preset in configs/clusters/.

Up to --max-nodes ops: a layered layout, x = the op's depth (longest path
from a source), y = its order within the layer; edges between devices are
drawn darker than edges within one. Larger graphs are aggregated by scope
(the op name up to its last '/', cut to the depth that gives at most 60
scopes): one horizontal bar per scope, in topological order of its first op,
split by device into the number of ops it puts there.
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


def scopes_of(names, limit=60):
    """(scope of each op, depth used): the op name's first k '/'-separated
    components, with the largest k whose scopes number at most `limit`
    (at least 1)."""
    parts = [n.split("/")[:-1] or [n] for n in names]
    deepest = max(len(p) for p in parts)
    chosen = 1
    for k in range(1, deepest + 1):
        if len({"/".join(p[:k]) for p in parts}) > limit:
            break
        chosen = k
    return ["/".join(p[:chosen]) for p in parts], chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph")
    parser.add_argument("decision")
    parser.add_argument("--out", default="placement.png")
    parser.add_argument("--cluster", help="preset name or cluster YAML (default: the decision's cluster field)")
    parser.add_argument("--max-nodes", type=int, default=300,
                        help="above this many ops, aggregate by scope (default 300)")
    args = parser.parse_args()
    try:
        names, edges, _ = load_graph(args.graph)
        placement, device_names = load_placement(args.decision, names, args.cluster)
        devices = len(device_names)
        cmap = plt.get_cmap("tab10" if devices <= 10 else "tab20")
        colour = [cmap(d % cmap.N) for d in placement]
        crossing = sum(1 for s, d in edges if placement[s] != placement[d])
        counts = collections.Counter(placement)
        title = (f"{os.path.basename(args.graph)}: {len(names)} ops on {len(counts)} of {devices} devices "
                 f"({', '.join(f'{device_names[d]}: {counts[d]}' for d in sorted(counts))}); "
                 f"{crossing} of {len(edges)} edges cross devices")
        handles = [plt.Line2D([], [], marker="s", linestyle="", color=cmap(d % cmap.N)) for d in range(devices)]
        if len(names) > args.max_nodes:
            scope, depth = scopes_of(names)
            order = list(dict.fromkeys(scope))  # first appearance = topological order
            per = {s: [0] * devices for s in order}
            for s, d in zip(scope, placement):
                per[s][d] += 1
            fig, ax = plt.subplots(figsize=(12, 1.5 + 0.22 * len(order)))
            left = [0] * len(order)
            for d in range(devices):
                widths = [per[s][d] for s in order]
                ax.barh(range(len(order)), widths, left=left, color=cmap(d % cmap.N), height=0.8)
                left = [a + b for a, b in zip(left, widths)]
            ax.set_yticks(range(len(order)))
            ax.set_yticklabels(order, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel(f"ops per scope (scopes: the first {depth} name component(s)), by device")
            ax.legend(handles, device_names, fontsize=8, loc="lower right")
            title += f"; {len(order)} scopes"
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
            ax.legend(handles, device_names, fontsize=8, loc="upper right")
        ax.set_title(title, fontsize=9)
        save_figure(fig, args.out, f"{title}")
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
