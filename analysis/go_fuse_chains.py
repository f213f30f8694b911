#!/usr/bin/env python3
"""A decision for an exported graph (gosim graphs export ... --out G.json): every op on gpu0
and every single-producer / single-consumer chain fused (the chains GO's fusion head may
fuse). Usage: analysis/go_fuse_chains.py G.json out.json; then
gosim simulate --graph G.json --cluster C --decision out.json"""
import json, sys, collections
g = json.load(open(sys.argv[1]))
nodes = [n['name'] for n in g['nodes']]
preds = collections.defaultdict(set); succs = collections.defaultdict(set)
for n in g['nodes']:
    for key in ('inputs', 'control_inputs'):
        for i in n.get(key, []):
            src = i.split(':')[0].lstrip('^')
            preds[n['name']].add(src); succs[src].add(n['name'])
group = {}
groups = []
for v in nodes:  # topological order
    if len(preds[v]) == 1:
        u = next(iter(preds[v]))
        if len(succs[u]) == 1:
            if u not in group:
                group[u] = len(groups); groups.append([u])
            group[v] = group[u]; groups[group[u]].append(v)
dec = {'format': 'gosim.decision', 'version': 1, 'placement': {v: 'gpu0' for v in nodes}, 'fusion': groups}
json.dump(dec, open(sys.argv[2], 'w'))
print(len(groups), 'groups,', sum(len(x) for x in groups), 'nodes fused')
