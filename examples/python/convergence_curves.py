#!/usr/bin/env python3
"""BRKGA (and GO, when the learned agents are available) from Python, with
their best-so-far curves plotted to a PNG.

    export PYTHONPATH=$PWD/build/python
    /usr/bin/python3 examples/python/convergence_curves.py [--out curves.png]

Runs each agent on the same graph and cluster with the same budget and seeds
through gosim.optimize, and plots best step time against simulator
evaluations. GO is skipped with its one-line reason when the agent registry
cannot provide it in this build.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gosim  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", default="gen:nmt:layers=2,hidden=256,vocab=8000,seq_len=10,batch=16,training=true")
    parser.add_argument("--cluster", default="p100x4_pcie")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", default="convergence_curves.png")
    args = parser.parse_args()

    graph, cluster = gosim.load_graph(args.graph), gosim.load_cluster(args.cluster)
    sim = gosim.Simulator(graph, cluster)
    runs = [("brkga", "brkga", {}), ("random_search", "random_search", {}), ("go", "go", {"preset": "paper"})]  # GO as the paper runs it: a fresh network
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, agent, options in runs:
        for seed in range(args.seeds):
            try:
                r = gosim.optimize(None, None, agent, budget=args.budget, seed=seed, options=options,
                                   simulator=sim)
            except gosim.Error as e:
                print(f"{label}: skipped ({e})")
                break
            curve = r.curve
            ax.step(curve["evaluations"], curve["best_objective"] * 1e3, where="post",
                    label=f"{label} seed {seed}")
            print(f"{label} seed {seed}: best {r.step_time_s * 1e3:.3f} ms after {r.evaluations} evaluations "
                  f"({r.wall_seconds:.1f} s)")
    ax.set_xlabel("simulator evaluations")
    ax.set_ylabel("best step time (ms)")
    ax.set_title(f"{graph.name} on {cluster.name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"curves written to {args.out}")


if __name__ == "__main__":
    main()
