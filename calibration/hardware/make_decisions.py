#!/usr/bin/env python3
"""Writes a family of placement/priority decisions for `gosim replay`.

Usage: make_decisions.py GRAPH.json[.gz] CLUSTER_NAME OUT_DIR

GRAPH is a native graph export (`gosim graphs export gen:... --out G.json`).
The decisions use the first two devices of the cluster (indices 0 and 1) and
span what an optimizer might produce: single device, pipeline splits by
topological order, forward/backward split by phase, a split of the encoder
layers, the parameter updates moved away, random placements (seeded), and
priority orders (latest node first, random). Deterministic.
"""
import gzip
import json
import os
import random
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    graph = load(sys.argv[1])
    cluster = sys.argv[2]
    out_dir = sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)
    nodes = [n["name"] for n in graph["nodes"]]
    phase = [n.get("phase", "forward") for n in graph["nodes"]]
    scope = [n.get("scope", "") for n in graph["nodes"]]
    count = len(nodes)

    def write(name, placement, priority=None):
        doc = {"format": "gosim.decision", "version": 1, "graph": graph["name"], "cluster": cluster,
               "placement": {nodes[i]: int(placement[i]) for i in range(count)},
               "metadata": {"generator": "calibration/hardware/make_decisions.py", "name": name}}
        if priority is not None:
            doc["priority"] = {nodes[i]: float(priority[i]) for i in range(count)}
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            json.dump(doc, f)

    write("single_dev0", [0] * count)
    write("single_dev1", [1] * count)
    write("single_dev0_latest_first", [0] * count, list(range(count)))
    write("pipeline_half", [0 if i < count // 2 else 1 for i in range(count)])
    write("pipeline_quarter", [0 if i < (3 * count) // 4 else 1 for i in range(count)])
    write("phase_split", [0 if p == "forward" else 1 for p in phase])
    write("updates_dev1", [1 if p == "update" else 0 for p in phase])
    # Layers: nodes whose scope names an odd layer go to device 1.
    def layer_of(s):
        for part in s.split("/"):
            for prefix in ("layer_", "layer"):
                if part.startswith(prefix) and part[len(prefix):].isdigit():
                    return int(part[len(prefix):])
        return 0
    write("layers_alternate", [layer_of(s) % 2 for s in scope])
    rng = random.Random(7)
    write("random_a", [rng.randint(0, 1) for _ in range(count)])
    rng = random.Random(11)
    write("random_b_priority", [rng.randint(0, 1) for _ in range(count)], [rng.random() for _ in range(count)])
    write("alternate", [i % 2 for i in range(count)])


if __name__ == "__main__":
    main()
