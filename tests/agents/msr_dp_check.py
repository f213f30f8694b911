#!/usr/bin/env python3
"""pipeline_dp against an independent implementation of the contiguous max-load DP.

    msr_dp_check.py GOSIM DATA_DIR [GRAPH ...]

The DP here is written straight from its definition (Tarnawski et al. 2020,
Sec. 4: the best split of each ideal of the forward graph into contiguous
sets, each set's load its nodes' time plus the costs of the outputs that
cross its border, backward nodes with their forward colorClass), in the
files' own units and without any of pipeline_dp's pruning or contraction.
It is slow, so it checks the graphs with few ideals; exit 1 on a mismatch.
"""
import json
import os
import re
import subprocess
import sys
def solve(path):
    g = json.load(open(path)); A = g['maxFPGAs']; C = g['maxCPUs']; cap = g['maxSizePerFPGA']
    nodes = {n['id']: n for n in g['nodes']}
    cost = {}
    succ = {i: set() for i in nodes}; pred = {i: set() for i in nodes}
    for e in g['edges']:
        cost[e['sourceId']] = e['cost']; succ[e['sourceId']].add(e['destId']); pred[e['destId']].add(e['sourceId'])
    fwd = [i for i in nodes if not nodes[i]['isBackwardNode']]
    color_fwd = {}
    for i in fwd: color_fwd.setdefault(nodes[i].get('colorClass', -i), []).append(i)
    mates = {i: [] for i in fwd}
    for i in nodes:
        if nodes[i]['isBackwardNode']: mates[color_fwd[nodes[i]['colorClass']][0]].append(i)
    idx = {i: k for k, i in enumerate(fwd)}
    P = [0] * len(fwd)
    for i in fwd:
        for p in pred[i]:
            if p in idx: P[idx[i]] |= 1 << idx[p]
    ideals = [0]; seen = {0}
    for I in ideals:
        for k in range(len(fwd)):
            if not (I >> k) & 1 and (P[k] & ~I) == 0 and (I | 1 << k) not in seen:
                seen.add(I | 1 << k); ideals.append(I | 1 << k)
    ideals.sort(key=lambda x: bin(x).count('1'))
    def load(S):  # S: set of original ids
        acc = sum(nodes[v]['fpgaLatency'] for v in S); cpu = sum(nodes[v]['cpuLatency'] for v in S)
        size = sum(nodes[v].get('size', 0) for v in S)
        comm = 0.0
        for u in nodes:
            if u not in cost: continue
            if u in S and any(w not in S for w in succ[u]): comm += cost[u]
            if u not in S and any(w in S for w in succ[u]): comm += cost[u]
        return (acc + comm if size <= cap else float('inf')), cpu
    best = {0: {(a, c): 0.0 for a in range(A + 1) for c in range(C + 1)}}
    for I in ideals[1:]:
        out = {(a, c): float('inf') for a in range(A + 1) for c in range(C + 1)}
        for J in ideals:
            if J == I or (J & ~I) or J not in best: continue
            S = set()
            for k in range(len(fwd)):
                if (I >> k) & 1 and not (J >> k) & 1: S.add(fwd[k]); S.update(mates[fwd[k]])
            al, cl = load(S)
            for a in range(A + 1):
                for c in range(C + 1):
                    if a: out[a, c] = min(out[a, c], max(best[J][a - 1, c], al))
                    if c: out[a, c] = min(out[a, c], max(best[J][a, c - 1], cl))
        best[I] = out
    return best[ideals[-1]][A, C]


def main():
    gosim, data = sys.argv[1], sys.argv[2]
    graphs = sys.argv[3:] or ["bert24_inference", "bert24_training", "resnet50_inference"]
    failed = False
    for name in graphs:
        path = os.path.join(data, "msr-fiddle", "LayerGraphs", name + ".json")
        expected = solve(path)
        out = subprocess.run([gosim, "optimize", "--graph", path, "--cluster", "from-graph", "--agent", "pipeline_dp",
                              "--objective", "max_load", "--no-progress"], capture_output=True, text=True, check=True)
        got = float(re.search(r"dp_max_load_s ([0-9.e+-]+)", out.stdout).group(1)) * 1e3
        ok = abs(got - expected) <= 1e-5 * max(1.0, expected)  # optimize prints 6 significant digits
        failed = failed or not ok
        print(f"{name}: pipeline_dp {got:.6f} ms, the definition {expected:.6f} ms {'ok' if ok else 'MISMATCH'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
