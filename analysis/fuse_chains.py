#!/usr/bin/python3
"""A decision that fuses every chain GO's fusion head may fuse, on one device.

Usage: fuse_chains.py GRAPH.json [--device D] --out DECISION.json

GRAPH is a native gosim graph (`gosim graphs export`). Every op goes on
device D (default gpu0, as TensorFlow's default placement) and every run of
ops where each op's only producer has that op as its only consumer becomes
one fusion group: the fusion legality of GO's fusion head (docs/AGENTS.md,
GO). Simulating the result (`gosim simulate --graph GRAPH --cluster C
--decision DECISION`) bounds what fusion alone can save in the simulator
(the history of docs/RESULTS.md, GO multi-task: `git log -p docs/RESULTS.md`).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gosim_analysis import AnalysisError, fail, load_graph  # noqa: E402


def chains(names, edges):
    """Fusion groups (lists of node names, topological order) of single-producer / single-consumer runs."""
    producers = [set() for _ in names]
    consumers = [set() for _ in names]
    for src, dst in edges:
        producers[dst].add(src)
        consumers[src].add(dst)
    group_of, groups = {}, []
    for v in range(len(names)):  # exported graphs list nodes in topological order
        if len(producers[v]) != 1:
            continue
        u = next(iter(producers[v]))
        if len(consumers[u]) != 1:
            continue
        if u not in group_of:
            group_of[u] = len(groups)
            groups.append([names[u]])
        group_of[v] = group_of[u]
        groups[group_of[u]].append(names[v])
    return groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph")
    parser.add_argument("--device", default="gpu0")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        names, edges, _ = load_graph(args.graph)
        groups = chains(names, edges)
        decision = {"format": "gosim.decision", "version": 1,
                    "placement": {name: args.device for name in names}, "fusion": groups}
        with open(args.out + ".tmp", "w") as f:
            json.dump(decision, f)
        os.replace(args.out + ".tmp", args.out)
        print(f"wrote {args.out}: {len(groups)} fusion groups over {sum(len(g) for g in groups)} of "
              f"{len(names)} ops, all on {args.device}")
    except AnalysisError as e:
        fail(e)
    except OSError as e:
        fail(AnalysisError(f"{args.out}: cannot write: {e.strerror or e}"))


if __name__ == "__main__":
    main()
