# The bench suite's in-repo model code (graphs/bench/models.py) at tiny
# sizes: each builder's training step exports with gosim.torch.export (the
# suite's exporter, which also provides scaled_dot_product_attention on
# PyTorch 1.13) and simulates; the committed suite lists every family in
# one split and its graph files exist.
import importlib.util
import os

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch")

import gosim  # noqa: E402
import gosim.torch  # noqa: E402
from conftest import ROOT  # noqa: E402

torch.set_num_threads(1)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


models = load("bench_models", "graphs/bench/models.py")

TINY = {
    "llama": models.llama(100, 32, 4, 2, 64, 2, 8, 2),
    "moe": models.moe(100, 32, 4, 64, 4, 2, 8, 2),
    "gnmt_lstm": models.gnmt(100, 16, 3, 4, 2),
    "gnmt_gru": models.gnmt(100, 16, 3, 4, 2, cell="gru"),
    "gcn": models.gnn(50, 200, 8, 16, 3, 2, sage=False),
    "sage": models.gnn(50, 200, 8, 16, 3, 2, sage=True),
    "unet": models.unet(16, (1, 2), 16, 2),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_bench_model_exports_and_simulates(name):
    torch.manual_seed(0)
    model, make, loss, optimizer, settings = TINY[name]()
    inputs = make(torch.device("cpu"))

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return loss(self.model, args)

    graph = gosim.torch.export(Step(), inputs, loss_fn=lambda out: out, optimizer=optimizer, name=name,
                               progress=False)
    phases = {graph.node(v)["phase"] for v in range(graph.num_nodes)}
    assert {"forward", "backward", "update"} <= phases
    sim = gosim.Simulator(graph, gosim.load_cluster("h100x8_nvswitch"))
    result = sim.evaluate(np.zeros(graph.num_nodes, np.int32))
    assert result.feasible and result.step_time_s > 0
    assert settings["source"].startswith("graphs/bench/models.py")


def test_bench_suite_splits_by_family():
    suite = yaml.safe_load(open(os.path.join(ROOT, "configs", "suites", "bench.yaml")))
    entries = suite["graphs"]
    assert len(entries) >= 40
    for entry in entries:
        assert os.path.exists(os.path.join(ROOT, entry["file"])), entry["file"]
    exporter = load("export_bench", "graphs/bench/export_bench.py")
    split_of = {}
    for family, (split, names) in exporter.FAMILIES.items():
        for name in names:
            split_of[name] = split
    for entry in entries:
        assert entry["split"] == split_of[entry["name"]], entry["name"]
    assert {e["split"] for e in entries} == {"train", "valid", "test"}
