#!/usr/bin/env python3
"""GO's tables from gosim run folders (reads results.jsonl only).

  analysis/go_results.py placement runs/go_placement
      step time per model and cluster, % against the expert, and the mean %
      per agent and cluster (GO's "better than experts / prior art on average");
      with several seeds the mean over seeds, and one row per seed with --per-seed
  analysis/go_results.py convergence runs/go_transfer_small [--target hrl] [--agent go_finetune]
      per graph: the target agent's final step time, the evaluations and wall
      seconds it needed to first reach it, and those the agent needed to reach
      the same step time (GO's "x fewer evaluations to reach HRL's final")
"""
import argparse
import collections
import json
import os
import sys


def load(run_dir):
    rows = []
    with open(os.path.join(run_dir, "results.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def first_reaching(curve, value):
    """(evaluations, wall seconds) of the first curve point at or below value."""
    for evaluations, wall, best in curve:
        if best <= value * (1 + 1e-12):
            return evaluations, wall
    return None


def placement(run_dir, reference, per_seed=False):
    rows = load(run_dir)
    values = collections.defaultdict(list)
    graphs, agents, clusters = [], [], []
    seeds = collections.defaultdict(set)
    for r in rows:
        label = r["label"]
        seeds[label].add(r["seed"])
        if per_seed:
            label = f"{label} (seed {r['seed']})"
        key = (r["cluster"], r["graph"], label)
        values[key].append(r["best_objective"] if r["feasible"] else float("inf"))
        for lst, v in ((graphs, r["graph"]), (agents, label), (clusters, r["cluster"])):
            if v not in lst:
                lst.append(v)
    # The mean over seeds; a reference run with several seeds is deterministic.
    cell = {k: sum(v) / len(v) for k, v in values.items()}
    if per_seed:
        for k in list(cell):
            base = (k[0], k[1], reference)
            if k[2].startswith(reference + " (seed"):
                cell.setdefault(base, cell[k])
    else:
        for a in agents:
            if len(seeds[a]) > 1:
                print(f"{a}: mean of {len(seeds[a])} seeds")
    for cluster in clusters:
        print(f"\n### {cluster}: step time in ms (% vs {reference})\n")
        print("| agent | " + " | ".join(graphs) + " | mean % |")
        print("|---|" + "---:|" * (len(graphs) + 1))
        for agent in agents:
            cells, pcts = [], []
            for g in graphs:
                v = cell.get((cluster, g, agent))
                ref = cell.get((cluster, g, reference))
                if v is None:
                    cells.append("-")
                    continue
                if v == float("inf"):
                    cells.append("OOM")
                    continue
                pct = 100.0 * (v - ref) / ref
                pcts.append(pct)
                cells.append(f"{1000 * v:.1f} ({pct:+.1f}%)")
            mean = f"{sum(pcts) / len(pcts):+.1f}%" if len(pcts) == len(graphs) else "-"
            print(f"| {agent} | " + " | ".join(cells) + f" | {mean} |")


def convergence(run_dir, target, agent):
    rows = load(run_dir)
    by = collections.defaultdict(dict)
    for r in rows:
        by[(r["cluster"], r["graph"])][r["label"]] = r
    print(f"| graph | {target} final (ms) | {target}: evaluations / s to reach it | {agent}: evaluations / s to reach it | ratio (evaluations) |")
    print("|---|---:|---:|---:|---:|")
    for (cluster, graph), cells in by.items():
        if target not in cells or agent not in cells:
            continue
        t = cells[target]
        final = t["best_objective"]
        t_reach = first_reaching(t["curve"], final)
        a_reach = first_reaching(cells[agent]["curve"], final)
        a_text = f"{a_reach[0]} / {a_reach[1]:.1f}" if a_reach else f"not within {cells[agent]['evaluations']}"
        ratio = f"{t_reach[0] / a_reach[0]:.1f}x" if a_reach else "-"
        print(f"| {graph} ({cluster}) | {1000 * final:.1f} | {t_reach[0]} / {t_reach[1]:.1f} | {a_text} | {ratio} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("placement")
    a.add_argument("run_dir")
    a.add_argument("--reference", default="human_expert")
    a.add_argument("--per-seed", action="store_true")
    b = sub.add_parser("convergence")
    b.add_argument("run_dir")
    b.add_argument("--target", default="hrl")
    b.add_argument("--agent", default="go_finetune")
    args = p.parse_args()
    if args.cmd == "placement":
        placement(args.run_dir, args.reference, args.per_seed)
    else:
        convergence(args.run_dir, args.target, args.agent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
