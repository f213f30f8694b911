#!/usr/bin/env python3
"""Exports dlrm_small_train.json.gz: one Adam training step of a small
DLRM-like recommender (a bottom MLP on 13 dense features, four embedding
tables of 2,000 x 32, concatenation, a top MLP to one logit, binary
cross-entropy; batch 2048) as a gosim graph, for the leave-one-model-out
evaluation on this machine's CPU (calibration/evaluation_cpu.yaml).

Run from the repository root after `make build` (it imports gosim from
build/python), with Debian's python3-torch:
    /usr/bin/python3 calibration/data/export_dlrm_small.py calibration/data/dlrm_small_train.json.gz
The output is deterministic (seeded; gosim.torch.save writes gzip without a
time stamp).
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "python"))
import gosim.torch as gosim_torch  # noqa: E402

DENSE, TABLES, ROWS, DIM, BATCH = 13, 4, 2000, 32, 2048


class DlrmSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(DENSE, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                    nn.Linear(128, DIM), nn.ReLU())
        self.tables = nn.ModuleList([nn.Embedding(ROWS, DIM) for _ in range(TABLES)])
        self.top = nn.Sequential(nn.Linear(DIM * (TABLES + 1), 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))

    def forward(self, dense, index):
        features = [self.bottom(dense)] + [t(index[:, i]) for i, t in enumerate(self.tables)]
        return self.top(torch.cat(features, dim=1)).squeeze(1)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_dlrm_small.py OUT.json.gz")
    torch.manual_seed(0)
    model = DlrmSmall()
    dense = torch.randn(BATCH, DENSE)
    index = torch.randint(0, ROWS, (BATCH, TABLES))
    clicks = torch.rand(BATCH)
    data = gosim_torch.export_json(model, (dense, index), loss_fn=F.binary_cross_entropy_with_logits,
                                   targets=clicks, optimizer="adam", name="dlrm_small_train")
    gosim_torch.save(data, sys.argv[1])


if __name__ == "__main__":
    main()
