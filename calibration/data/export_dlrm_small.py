#!/usr/bin/env python3
"""Exports dlrm_small_train.json.gz: one Adam training step of a small
DLRM-like recommender (a bottom MLP on 13 dense features, four embedding
tables of 2,000 x 32, concatenation, a top MLP to one logit, binary
cross-entropy; batch 2048) as a gosim graph, for the leave-one-model-out
evaluation on this machine's CPU (calibration/evaluation_cpu.yaml).

The model only: the package's exporter runs it (from the repository root,
with Debian's python3-torch; `--target cpu` since the graph is simulated on
this machine's CPU):
    PYTHONPATH=python /usr/bin/python3 -m gosim.torch --model calibration/data/export_dlrm_small.py:gosim_export \
        --target cpu --out calibration/data/dlrm_small_train.json.gz
The output is deterministic (seeded; gosim.torch.save writes gzip without a
time stamp).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

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


def gosim_export():
    torch.manual_seed(0)
    model = DlrmSmall()
    dense = torch.randn(BATCH, DENSE)
    index = torch.randint(0, ROWS, (BATCH, TABLES))
    return {"model": model, "inputs": (dense, index), "targets": torch.rand(BATCH),
            "loss_fn": F.binary_cross_entropy_with_logits, "optimizer": "adam", "name": "dlrm_small_train"}
