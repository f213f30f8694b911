#!/usr/bin/env python3
"""Python-side benchmarks of the gosim module (figures: docs/BENCHMARKS.md).

  PYTHONPATH=build/python nice -n 10 /usr/bin/python3 tests/bench/python_bench.py [--rounds 7]

1. evaluate overhead: Simulator.evaluate called from Python against the same
   Evaluator::Evaluate timed inside C++ (Simulator._time_evaluate), on a
   1,000-node REGAL-style random graph (gen:regal_random:nodes=1000,seed=1)
   on the dgx1_v100 preset, for two decisions: the topological order cut
   into 8 contiguous blocks (few transfers, the cheap case where a fixed
   per-call cost shows most) and a random 8-way placement. The two sides
   are interleaved round by round; the medians and their ratio are printed.
   The same on a 10-node graph gives the fixed cost of a call from Python
   (argument conversion, result object) in microseconds.
2. evaluate_batch scaling: 256 random placements per call with gosim's
   thread pool capped at 1 and at 2 threads (gosim.set_num_threads),
   interleaved; median wall time per call and the speed-up.
3. import time: `import gosim` in a fresh interpreter (and `import numpy`
   alone, which it includes), median over the rounds.
"""

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

import gosim

GRAPH = "gen:regal_random:nodes=1000,seed=1"
CLUSTER = "dgx1_v100"


def python_evaluate(sim, devices, repeats):
    start = time.perf_counter()
    for _ in range(repeats):
        sim.evaluate(devices)
    return (time.perf_counter() - start) / repeats


def batch_time(sim, batch, threads, repeats):
    gosim.set_num_threads(threads)
    start = time.perf_counter()
    for _ in range(repeats):
        sim.evaluate_batch(batch)
    gosim.set_num_threads(0)
    return (time.perf_counter() - start) / repeats


def import_time(module):
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=2000, help="evaluations per round and side")
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()

    graph, cluster = gosim.load_graph(GRAPH), gosim.load_cluster(CLUSTER)
    sim = gosim.Simulator(graph, cluster)
    rng = np.random.default_rng(0)
    print(f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges on {cluster.name}")
    blocks = (np.arange(graph.num_nodes) * cluster.num_devices // graph.num_nodes).astype(np.int32)
    random = rng.integers(0, cluster.num_devices, graph.num_nodes).astype(np.int32)
    for label, devices in (("blocks", blocks), ("random", random)):
        r = sim.evaluate(devices)
        for _ in range(200):  # warm the workspaces and caches
            sim.evaluate(devices)
        cpp, py = [], []
        for _ in range(args.rounds):
            cpp.append(sim._time_evaluate(devices, args.repeats))
            py.append(python_evaluate(sim, devices, args.repeats))
        ratios = [p / c for p, c in zip(py, cpp)]
        print(f"{label}: feasible={r.feasible}, step time {r.step_time_s * 1e3:.3f} ms")
        print(f"  evaluate, C++ loop:    median {statistics.median(cpp) * 1e6:8.2f} us "
              f"(min {min(cpp) * 1e6:.2f}, max {max(cpp) * 1e6:.2f})")
        print(f"  evaluate, from Python: median {statistics.median(py) * 1e6:8.2f} us "
              f"(min {min(py) * 1e6:.2f}, max {max(py) * 1e6:.2f})")
        print(f"  Python / C++: median of per-round ratios {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")

    tiny = gosim.Simulator(gosim.load_graph("gen:regal_random:nodes=10,seed=1"), cluster)
    zeros = np.zeros(tiny.num_nodes, np.int32)
    cpp = [tiny._time_evaluate(zeros, args.repeats) for _ in range(args.rounds)]
    py = [python_evaluate(tiny, zeros, args.repeats) for _ in range(args.rounds)]
    print(f"10 nodes: C++ loop median {statistics.median(cpp) * 1e6:.2f} us, from Python median "
          f"{statistics.median(py) * 1e6:.2f} us: {(statistics.median(py) - statistics.median(cpp)) * 1e6:.2f} us "
          f"per call from Python")

    batch = rng.integers(0, cluster.num_devices, (args.batch, graph.num_nodes)).astype(np.int32)
    one, two = [], []
    for _ in range(args.rounds):
        one.append(batch_time(sim, batch, 1, 3))
        two.append(batch_time(sim, batch, 2, 3))
    speedups = [a / b for a, b in zip(one, two)]
    print(f"evaluate_batch({args.batch}): 1 thread median {statistics.median(one) * 1e3:.2f} ms, "
          f"2 threads median {statistics.median(two) * 1e3:.2f} ms, speed-up median "
          f"{statistics.median(speedups):.2f}x (min {min(speedups):.2f}, max {max(speedups):.2f})")

    gos = [import_time("gosim") for _ in range(args.rounds)]
    nps = [import_time("numpy") for _ in range(args.rounds)]
    print(f"import gosim: median {statistics.median(gos) * 1e3:.0f} ms (max {max(gos) * 1e3:.0f}); "
          f"import numpy alone: median {statistics.median(nps) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
