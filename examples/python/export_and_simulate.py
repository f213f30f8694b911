#!/usr/bin/env python3
"""Export a torchvision model's training step and simulate it on two machines.

    export PYTHONPATH=$PWD/build/python
    /usr/bin/python3 examples/python/export_and_simulate.py [--model resnet18] [--batch 8]

Traces one SGD training step of the model (gosim.torch.export), then, on a
4x P100 PCIe machine and an 8x V100 DGX-1, simulates everything on one GPU
and the placement BRKGA (warm-started from the single-device and m-ETF
decisions) finds in a small budget.
"""

import argparse

import numpy as np
import torch
import torchvision

import gosim
import gosim.torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet18", help="a torchvision classification model")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--budget", type=int, default=1000, help="BRKGA's simulator evaluations")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torchvision.models.get_model(args.model, weights=None)
    x = torch.randn(args.batch, 3, args.image_size, args.image_size)
    y = torch.randint(0, 1000, (args.batch,))
    graph = gosim.torch.export(model, x, loss_fn=torch.nn.functional.cross_entropy, targets=y,
                               optimizer="sgd", name=f"{args.model}_train_b{args.batch}")
    stats = graph.stats()
    print(f"{graph.name}: {graph.num_nodes} nodes, {stats['flops'] / 1e9:.1f} GFLOP, "
          f"{stats['persistent_bytes'] / 2**20:.1f} MiB persistent")
    for preset in ("p100x4_pcie", "dgx1_v100"):
        cluster = gosim.load_cluster(preset)
        sim = gosim.Simulator(graph, cluster)
        single = sim.evaluate(np.zeros(graph.num_nodes, np.int32))
        # BRKGA's first generation seeded with two baselines' decisions, as in
        # configs/experiments/quickstart.yaml: cold, 1,000 evaluations are too
        # few to beat one GPU on a 600-node graph.
        best = gosim.optimize(graph, cluster, "brkga", budget=args.budget, seed=0, simulator=sim,
                              options={"warm_start": ["single_device", "m_etf"]})
        print(f"{preset:12s} one GPU {single.step_time_s * 1e3:8.2f} ms   "
              f"BRKGA ({best.evaluations} evaluations) {best.step_time_s * 1e3:8.2f} ms   "
              f"peak memory per GPU {np.round(best.peak_memory_bytes / 2**30, 2).tolist()} GiB")


if __name__ == "__main__":
    main()
