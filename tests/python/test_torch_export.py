# gosim.torch.export: three torchvision models and a custom LSTM module,
# training steps and inference, checked against exact parameter, optimizer
# state and FLOP counts; the exported graphs simulate; the command line
# exports a torchvision model by name.
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import gosim  # noqa: E402
import gosim.torch  # noqa: E402
from conftest import ROOT  # noqa: E402

torch.set_num_threads(1)
F32 = 4


def nodes_by(graph_json, **fields):
    return [n for n in graph_json["nodes"] if all(n.get(k, d) == v for k, (v, d) in fields.items())]


def persistent(graph_json, op):
    return sum(n.get("persistent_bytes", 0) for n in graph_json["nodes"] if n["op"] == op)


def param_bytes(model):
    return sum(p.numel() for p in model.parameters()) * F32


def test_resnet18_training_step_sgd():
    model = torchvision.models.resnet18()
    x, y = torch.randn(2, 3, 64, 64), torch.randint(0, 1000, (2,))
    g = gosim.torch.export_json(model, x, loss_fn=torch.nn.functional.cross_entropy, targets=y,
                                optimizer="sgd")
    assert g["metadata"]["ops_without_flop_rule"] == {}
    assert persistent(g, "Parameter") == param_bytes(model)
    assert persistent(g, "OptimizerState") == param_bytes(model)  # one momentum buffer each
    assert persistent(g, "Buffer") == sum(b.numel() * b.element_size() for b in model.buffers())
    # conv1: 64 filters of 3x7x7, stride 2 -> (2, 64, 32, 32) outputs, 2 FLOPs per multiply-add.
    (conv1,) = nodes_by(g, op=("aten::convolution", None), scope=("conv1", ""))
    assert conv1["flops"] == 2.0 * 2 * 64 * 32 * 32 * 3 * 7 * 7
    assert conv1["outputs"][0]["shape"] == [2, 64, 32, 32]
    back = nodes_by(g, op=("aten::convolution_backward", None), scope=("layer1/0/conv1", ""))
    assert len(back) == 1 and back[0]["phase"] == "backward"
    phases = {n.get("phase", "forward") for n in g["nodes"]}
    assert phases == {"forward", "backward", "update"}
    graph = gosim.graph_from_json(json.dumps(g))
    assert graph.num_nodes == len(g["nodes"])
    assert graph.stats()["persistent_bytes"] == persistent(g, "Parameter") + persistent(g, "Buffer") + \
        persistent(g, "OptimizerState") + persistent(g, "Constant")
    sim = gosim.Simulator(graph, gosim.load_cluster("p100x4_pcie"))
    r = sim.evaluate(np.zeros(graph.num_nodes, np.int32))
    assert r.feasible and r.step_time_s > 0


def test_mobilenet_v3_small_inference_leaves_the_model_alone():
    model = torchvision.models.mobilenet_v3_small()
    before = [p.detach().clone() for p in model.parameters()]
    assert model.training
    graph = gosim.torch.export(model, torch.randn(1, 3, 64, 64), name="mnv3")
    assert model.training  # mode restored
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert graph.name == "mnv3"
    assert set(graph.phase.tolist()) == {0}  # forward only
    assert "OptimizerState" not in graph.op_types
    stats = graph.stats()
    assert stats["backward_nodes"] == stats["update_nodes"] == 0
    # Inference batch norm is one multiply-add per element, not training statistics.
    bn = [graph.node(i) for i in range(graph.num_nodes) if graph.node(i)["op"] == "aten::native_batch_norm"]
    assert bn and all(n["flops"] == 2 * np.prod(n["outputs"][0]["shape"]) for n in bn)


def test_squeezenet_with_a_torch_adam_instance():
    model = torchvision.models.squeezenet1_1()
    adam = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.99))
    g = gosim.torch.export_json(model, torch.randn(1, 3, 64, 64), loss_fn=torch.nn.functional.cross_entropy,
                                targets=torch.randint(0, 1000, (1,)), optimizer=adam)
    n_params = len(list(model.parameters()))
    # exp_avg and exp_avg_sq per parameter, plus a float32 step count each.
    assert persistent(g, "OptimizerState") == 2 * param_bytes(model) + n_params * F32
    assert g["metadata"]["optimizer"] == "adam" and g["metadata"]["betas"] == [0.8, 0.99]
    assert len(nodes_by(g, op=("aten::addcdiv_", None))) == n_params


class Tagger(torch.nn.Module):
    """A custom module: embedding, two-layer LSTM, per-token classifier."""

    def __init__(self, vocab=100, emb=16, hidden=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, emb)
        self.lstm = torch.nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.head(out)


def test_custom_lstm_module():
    b, t, vocab, emb, hidden = 4, 7, 100, 16, 32
    model = Tagger(vocab, emb, hidden)
    x, y = torch.randint(0, vocab, (b, t)), torch.randint(0, vocab, (b, t))

    def loss_fn(out, target):
        return torch.nn.functional.cross_entropy(out.reshape(-1, vocab), target.reshape(-1))
    g = gosim.torch.export_json(model, x, loss_fn=loss_fn, targets=y, optimizer="adam")
    assert g["metadata"]["ops_without_flop_rule"] == {}
    lstm = [n for n in g["nodes"] if n.get("scope") == "lstm"]
    assert {n.get("phase", "forward") for n in lstm} == {"forward", "backward", "update"}
    # Gate matmuls: 4 gates of x W_ih^T + h W_hh^T per step and layer, and the head.
    matmul = 2 * b * t * 4 * hidden * ((emb + hidden) + (hidden + hidden)) + 2 * b * t * hidden * vocab
    forward_mm = sum(n["flops"] for n in g["nodes"] if n.get("phase", "forward") == "forward"
                     and n["op"] in ("aten::mm", "aten::addmm"))
    assert matmul <= forward_mm <= matmul * 1.02  # plus the bias adds of addmm
    assert persistent(g, "Parameter") == param_bytes(model)
    assert persistent(g, "OptimizerState") == 2 * param_bytes(model) + len(list(model.parameters())) * F32
    gosim.graph_from_json(json.dumps(g))  # a valid gosim graph


def test_bad_export_arguments():
    model = Tagger()
    with pytest.raises(gosim.ConfigError):
        gosim.torch.export(model, [1, 2, 3])
    with pytest.raises(gosim.ConfigError):
        gosim.torch.export(model, torch.zeros(1, 3, dtype=torch.long), optimizer="sgd")  # no loss_fn
    with pytest.raises(gosim.ConfigError):
        gosim.torch.export(model, torch.zeros(1, 3, dtype=torch.long), loss_fn=lambda o: o.sum(),
                           optimizer=torch.optim.RMSprop(model.parameters()))


def test_command_line_exports_any_torchvision_model(tmp_path):
    out = tmp_path / "resnet18.json.gz"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    script = str(ROOT / "graphs/export/export_torch.py")
    run = subprocess.run([sys.executable, script, "--model", "resnet18", "--batch", "1", "--image-size", "64",
                          "--threads", "1", "--out", str(out)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["parameters"] == sum(p.numel() for p in torchvision.models.resnet18().parameters())
    check = subprocess.run([sys.executable, script, "--check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0 and json.loads(check.stdout)["valid"]
    graph = gosim.load_graph(str(out))
    assert graph.stats()["backward_nodes"] > 0
    bad = subprocess.run([sys.executable, script, "--model", "no_such_net", "--out", str(tmp_path / "x.json")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "resnet18" in bad.stderr
