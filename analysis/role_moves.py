#!/usr/bin/env python3
"""Single role moves from the one-GPU placement, each simulated with `gosim simulate`.

A role is an op's direction ("b:" under `gradients/`, else "f:") plus its
scope with every digit removed: one kind of op in every repeated layer (the
grouping of GO's `role_moves`, agents/learned/go/go_graph.h; here only roles
whose members lie under two or more top-level scopes count, an approximation
of "two or more scope groups"). For each role and each other device, the
graph runs on device 0 except the role's members, and the step time is
printed against one GPU's, best first. With `--by name` the key is the
op's whole name with every digit removed instead: one op of each layer
rather than a whole sub-scope of it (finer than GO's roles).

    analysis/role_moves.py configs/suites/go_broad.yaml --entry bert8 --cluster p100x4_pcie
    analysis/role_moves.py gen:wavenet:stacks=5,layers_per_stack=10 --cluster p100x4_pcie --top 5
    analysis/role_moves.py configs/suites/paper_small.yaml --entry transformer_xl --cluster p100x4_pcie --by name

Needs build/bin/gosim (or --gosim PATH). Exits 1 with one line on a bad
graph, cluster or gosim.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict


def fail(message):
    print(f"role_moves.py: {message}", file=sys.stderr)
    sys.exit(1)


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        fail(f"{' '.join(args[:3])} failed: {last}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("graph", help="graph file, suite YAML (with --entry) or gen:NAME[:k=v,...]")
    parser.add_argument("--entry", help="the suite entry")
    parser.add_argument("--cluster", required=True, help="cluster preset or YAML file")
    parser.add_argument("--top", type=int, default=8, help="moves to print (default 8)")
    parser.add_argument("--by", choices=["scope", "name"], default="scope",
                        help="role key: the op's scope without digits (GO's roles, default) or its whole "
                             "name without digits (one op kind of a layer, finer)")
    parser.add_argument("--all-devices", action="store_true",
                        help="try every other device (default: device 1 only; devices of a preset are alike)")
    parser.add_argument("--gosim", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "gosim"))
    args = parser.parse_args()
    if not os.path.exists(args.gosim):
        fail(f"{args.gosim} does not exist (build gosim first: make build, or pass --gosim)")

    with tempfile.TemporaryDirectory() as tmp:
        graph_file = os.path.join(tmp, "graph.json")
        export = [args.gosim, "graphs", "export", args.graph, "--out", graph_file]
        if args.entry:
            export += ["--entry", args.entry]
        run(export)
        with open(graph_file) as f:
            graph = json.load(f)
        roles = defaultdict(list)
        tops = defaultdict(set)
        for node in graph["nodes"]:
            scope = node.get("scope", "")
            if not scope:
                continue
            backward = node["name"].startswith("gradients/")
            key = ("b:" if backward else "f:") + re.sub(r"\d", "", scope if args.by == "scope" else node["name"])
            roles[key].append(node["name"])
            tops[key].add("/".join(re.sub(r"^gradients/", "", scope).split("/")[:2]))
        candidates = sorted(r for r in roles if len(tops[r]) >= 2)

        def simulate(placement):
            path = os.path.join(tmp, "decision.json")
            with open(path, "w") as f:
                json.dump({"format": "gosim.decision", "version": 1, "placement": placement}, f)
            out = run([args.gosim, "--log-level", "error", "simulate", "--graph", graph_file,
                       "--cluster", args.cluster, "--decision", path, "--json"])
            return json.loads(out)["step_time"] * 1000.0

        one_gpu = {node["name"]: "gpu0" for node in graph["nodes"]}
        base = simulate(one_gpu)
        devices = json.loads(run([args.gosim, "--log-level", "error", "simulate", "--graph", graph_file,
                                  "--cluster", args.cluster, "--json"])).get("devices", [])
        count = len(devices) if isinstance(devices, list) and devices else 2
        targets = range(1, count) if args.all_devices else [1]
        results = []
        for role in candidates:
            for device in targets:
                placement = dict(one_gpu)
                for name in roles[role]:
                    placement[name] = f"gpu{device}"
                results.append((simulate(placement), role, len(roles[role]), device))
        results.sort()
        print(f"{graph['name']} on {args.cluster}: one GPU {base:.3f} ms; {len(candidates)} roles")
        for time, role, size, device in results[:args.top]:
            print(f"  {time:10.3f} ms ({100.0 * (time / base - 1.0):+6.1f}%)  {role} ({size} ops) -> gpu{device}")


if __name__ == "__main__":
    main()
