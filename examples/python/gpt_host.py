"""A GPT-style decoder on an 8-GPU H100 node: where the host bounds the step.

A 6-layer decoder (d_model 512, 8 heads, sequence 256, batch 8, Adam), the
model of docs/SIMULATOR.md ("The host"), exported with gosim.torch.export
and simulated on h100x8_nvswitch: on one GPU, and as the placement BRKGA
finds over eight GPUs driven by one process, under the default execution
(eager: the calibrated H100 host) and under execution none (the GPU side
only, the engine before the host). Run after `make build`:

    PYTHONPATH=build/python /usr/bin/python3 examples/python/gpt_host.py [--budget 2000] [--out DIR]
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import gosim
import gosim.torch


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
        a = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(a)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab=32000, d=512, heads=8, layers=6, seq=256):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--out", default=None, help="write the graph and the decision here")
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab, seq, batch = 32000, 256, 8
    ids, targets = torch.randint(0, vocab, (batch, seq)), torch.randint(0, vocab, (batch, seq))
    graph = gosim.torch.export(Gpt(vocab=vocab, seq=seq), ids,
                               loss_fn=lambda out, t: F.cross_entropy(out.reshape(-1, vocab), t.reshape(-1)),
                               targets=targets, optimizer="adam", name="gpt6_d512")
    print(f"exported {graph.num_nodes} nodes")
    cluster = gosim.load_cluster("h100x8_nvswitch")
    found, sims = {}, {}
    for execution in ("eager", "none"):
        sim = sims[execution] = gosim.Simulator(graph, cluster, options={"execution": execution})
        one = sim.simulate(np.zeros(graph.num_nodes, np.int32))
        best = gosim.optimize(graph, cluster, "brkga", budget=args.budget, seed=0,
                              sim_options={"execution": execution})
        found[execution] = best
        placed = sim.simulate(best.devices, priority=best.priority)
        used = len(set(int(d) for d in best.devices))
        print(f"execution {execution}: one GPU {one['step_time'] * 1e3:.2f} ms (host busy "
              f"{one['host_busy_s'] * 1e3:.2f} ms); BRKGA over 8 GPUs ({args.budget} evaluations) "
              f"{placed['step_time'] * 1e3:.2f} ms on {used} GPUs, {placed['transfers']} transfers, host busy "
              f"{placed['host_busy_s'] * 1e3:.2f} ms")
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            gosim.save_decision(os.path.join(args.out, f"brkga_{execution}.json"), best)
    # The placement found on the GPU side alone, driven by one process with its host.
    best = found["none"]
    rescored = sims["eager"].simulate(best.devices, priority=best.priority)
    print(f"execution eager, the placement found under none: {rescored['step_time'] * 1e3:.2f} ms on "
          f"{len(set(int(d) for d in best.devices))} GPUs, {rescored['transfers']} transfers, host busy "
          f"{rescored['host_busy_s'] * 1e3:.2f} ms")

if __name__ == "__main__":
    main()
