#!/usr/bin/env python3
"""A REINFORCE placement policy in PyTorch trained against gosim.env.

    export PYTHONPATH=$PWD/build/python
    /usr/bin/python3 examples/python/reinforce_placement.py [--iterations 150]

The policy gives each node a distribution over devices: an MLP over the
env's node features plus a learned per-node bias (the graph is fixed, so the
policy may memorize it). It samples a batch of placements per iteration,
evaluates them together through VectorPlacementEnv (one evaluate_batch
call), and follows REINFORCE with a moving-average baseline (advantages
scaled by the batch's standard deviation, a small entropy bonus) and HRL's
reward -sqrt(step time) (infeasible: 100 s). It is compared with random placement
given the same number of simulator evaluations.
"""

import argparse

import numpy as np
import torch

import gosim
from gosim.env import VectorPlacementEnv


class Policy(torch.nn.Module):
    def __init__(self, features, nodes, devices, hidden=64):
        super().__init__()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden, devices))
        self.bias = torch.nn.Parameter(torch.zeros(nodes, devices))

    def forward(self, node_features):
        return self.mlp(node_features) + self.bias


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", default="gen:regal_random:nodes=60,seed=3")
    parser.add_argument("--cluster", default="p100x4_pcie")
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus weight")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    venv = VectorPlacementEnv(args.graph, args.cluster, args.batch)
    env = venv.env
    obs, _ = venv.reset(seed=args.seed)
    features = torch.as_tensor(np.asarray(obs["node_features"][0]))
    policy = Policy(features.shape[1], env.num_nodes, env.num_devices)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    baseline, best = None, (float("inf"), None)
    for it in range(args.iterations):
        dist = torch.distributions.Categorical(logits=policy(features))
        actions = dist.sample((args.batch,))  # (batch, nodes)
        _, rewards, _, _, infos = venv.step(actions.numpy())
        i = int(np.argmin(infos["step_time_s"]))
        if infos["step_time_s"][i] < best[0]:
            best = (float(infos["step_time_s"][i]), actions[i].numpy().copy())
        r = torch.as_tensor(rewards, dtype=torch.float32)
        baseline = r.mean() if baseline is None else 0.9 * baseline + 0.1 * r.mean()
        advantage = (r - baseline) / (r.std() + 1e-8)
        loss = (-(advantage * dist.log_prob(actions).sum(dim=1)).mean()
                - args.entropy * dist.entropy().sum())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if it % 25 == 0 or it == args.iterations - 1:
            print(f"iteration {it:4d}: mean step time {infos['step_time_s'].mean() * 1e3:8.3f} ms, "
                  f"best so far {best[0] * 1e3:8.3f} ms")
    with torch.no_grad():
        greedy = policy(features).argmax(dim=1).numpy()
    learned = env.simulator.evaluate(greedy).step_time_s

    evaluations = args.iterations * args.batch
    rng = np.random.default_rng(args.seed)
    random = env.simulator.evaluate_batch(rng.integers(0, env.num_devices, (evaluations, env.num_nodes)))
    single = env.simulator.evaluate(np.zeros(env.num_nodes, np.int32)).step_time_s
    print(f"\n{evaluations} evaluations each on {env.graph.name} / {env.cluster.name}:")
    print(f"  single device                    {single * 1e3:8.3f} ms")
    print(f"  random placement: mean           {random.step_time_s.mean() * 1e3:8.3f} ms")
    print(f"  random placement: best           {random.step_time_s.min() * 1e3:8.3f} ms")
    print(f"  REINFORCE: greedy final policy   {learned * 1e3:8.3f} ms")
    print(f"  REINFORCE: best sampled          {best[0] * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
