# gosim.torch.export: three torchvision models and a custom LSTM module,
# training steps and inference, checked against exact parameter, optimizer
# state and FLOP counts; the exported graphs simulate. The optimizers
# (SGD with Nesterov momentum, Adam, AdamW), TF32, progress lines, errors for
# data-dependent control flow and warnings for data-dependent shapes; the
# export without the compiled module and the PyTorch 2.x check script; the
# command line (python -m gosim.torch) reproduces a committed export.
import json
import os
import subprocess
import sys
import warnings

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
    # Views, in-place results and parameter reads are aliases: no memory of their own.
    aliased = {n["op"] for n in g["nodes"] if any(o.get("alias") for o in n.get("outputs", []))}
    assert {"Parameter", "Buffer", "OptimizerState", "aten::t", "aten::view", "aten::relu_", "aten::add_"} <= aliased
    assert not any(o.get("alias") for n in nodes_by(g, op=("aten::convolution", None)) for o in n["outputs"])
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
    # Gate matmuls: 4 gates of x W_ih^T + h W_hh^T per step and layer, and the head.
    matmul = 2 * b * t * 4 * hidden * ((emb + hidden) + (hidden + hidden)) + 2 * b * t * hidden * vocab
    for target in ("cpu", "cuda"):
        g = gosim.torch.export_json(model, x, loss_fn=loss_fn, targets=y, optimizer="adam", target=target)
        assert g["metadata"]["ops_without_flop_rule"] == {} and g["metadata"]["target"] == target
        lstm = [n for n in g["nodes"] if n.get("scope") == "lstm"]
        assert {n.get("phase", "forward") for n in lstm} == {"forward", "backward", "update"}
        forward = [n for n in g["nodes"] if n.get("phase", "forward") == "forward"]
        if target == "cpu":  # the LSTM as the CPU runs it: a matmul per gate block and step
            forward_mm = sum(n["flops"] for n in forward if n["op"] in ("aten::mm", "aten::addmm"))
            assert matmul <= forward_mm <= matmul * 1.02  # plus the bias adds of addmm
        else:  # one cuDNN call per direction: its gate matmuls plus the cell's element-wise work
            assert sum(n["op"] == "aten::_cudnn_rnn" for n in forward) == 1
            rnn = sum(n.get("flops", 0) for n in forward if n["op"] in ("aten::_cudnn_rnn", "aten::addmm"))
            assert matmul <= rnn <= matmul * 1.1
        assert persistent(g, "Parameter") == param_bytes(model)
        assert persistent(g, "OptimizerState") == 2 * param_bytes(model) + len(list(model.parameters())) * F32
        gosim.graph_from_json(json.dumps(g))  # a valid gosim graph


def test_bad_export_arguments():
    model = Tagger()
    with pytest.raises(gosim.ConfigError):
        gosim.torch.export(model, [1, 2, 3])
    with pytest.raises(gosim.ConfigError):
        gosim.torch.export(model, torch.zeros(1, 3, dtype=torch.long), optimizer="sgd")  # no loss_fn
    tokens = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(gosim.ConfigError, match=r"optimizer torch\.optim\.rmsprop\.RMSprop is not supported \(give"):
        gosim.torch.export(model, tokens, loss_fn=lambda o: o.sum(), optimizer=torch.optim.RMSprop(model.parameters()))
    with pytest.raises(gosim.ConfigError, match=r"optimizer 'adamww' is not supported\. Did you mean 'adamw'\?"):
        gosim.torch.export(model, tokens, loss_fn=lambda o: o.sum(), optimizer="adamww")
    with pytest.raises(gosim.ConfigError, match=r"optimizer 'lion' is not supported \(give None, 'sgd'"):
        gosim.torch.export(model, tokens, loss_fn=lambda o: o.sum(), optimizer="lion")
    with pytest.raises(gosim.ConfigError, match=r"nesterov=True needs momentum > 0"):
        gosim.torch.export(model, tokens, loss_fn=lambda o: o.sum(),
                           optimizer={"kind": "sgd", "nesterov": True, "momentum": 0})
    with pytest.raises(gosim.ConfigError, match=r"tf32='yes' must be True, False or None"):
        gosim.torch.export(model, tokens, tf32="yes")


MLP = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def mlp_step(optimizer, **kwargs):
    return gosim.torch.export_json(MLP, torch.randn(8, 16), loss_fn=torch.nn.functional.cross_entropy,
                                   targets=torch.randint(0, 4, (8,)), optimizer=optimizer, progress=False, **kwargs)


def update_ops(g, parameter="0.weight"):
    return [n["op"] for n in g["nodes"] if n.get("colocation") == parameter and n.get("phase") == "update"
            and n["op"].startswith("aten::")]


def test_optimizers_by_name_instance_and_dict():
    params = param_bytes(MLP)
    n_params = len(list(MLP.parameters()))
    adamw = mlp_step("adamw")
    assert adamw["metadata"]["optimizer"] == "adamw"
    assert (adamw["metadata"]["lr"], adamw["metadata"]["weight_decay"]) == (1e-3, 1e-2)  # PyTorch's defaults
    # step count, decoupled decay of the parameter, the two moments, the step.
    assert update_ops(adamw) == ["aten::add_", "aten::mul_", "aten::mul_", "aten::add_", "aten::mul_",
                                 "aten::addcmul_", "aten::sqrt", "aten::div", "aten::add_", "aten::addcdiv_"]
    assert persistent(adamw, "OptimizerState") == 2 * params + n_params * F32
    decay = [n for n in adamw["nodes"] if n.get("colocation") == "0.weight" and n["op"] == "aten::mul_"][0]
    assert decay["flops"] == 16 * 32 and decay["bytes_read"] == decay["bytes_written"] == 16 * 32 * F32
    instance = mlp_step(torch.optim.AdamW(MLP.parameters(), lr=3e-4, weight_decay=0.1, amsgrad=True))
    assert instance["metadata"]["lr"] == 3e-4 and instance["metadata"]["amsgrad"] is True
    assert "aten::maximum" in update_ops(instance)
    assert persistent(instance, "OptimizerState") == 3 * params + n_params * F32  # + max_exp_avg_sq
    # Adam folds weight decay into the gradient instead (one add).
    adam = mlp_step({"kind": "adam", "weight_decay": 0.01})
    assert update_ops(adam)[:2] == ["aten::add_", "aten::add"] and adam["metadata"]["weight_decay"] == 0.01
    nesterov = mlp_step(torch.optim.SGD(MLP.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4))
    assert nesterov["metadata"]["nesterov"] is True and nesterov["metadata"]["weight_decay"] == 5e-4
    assert update_ops(nesterov) == ["aten::add", "aten::mul_", "aten::add_", "aten::add", "aten::add_"]
    assert update_ops(mlp_step("sgd_nesterov")) == update_ops(nesterov)
    plain = mlp_step(gosim.torch.Optimizer("sgd", lr=0.1))  # no momentum, no decay: one op
    assert update_ops(plain) == ["aten::add_"] and persistent(plain, "OptimizerState") == 0


GPT_SIZES = dict(vocab=512, d=64, heads=4, layers=2, seq=32)


def gpt_step(tf32, optimizer="adamw"):
    from torch2_export_check import GPT, gpt_loss
    torch.manual_seed(0)
    model = GPT(**GPT_SIZES)
    ids = torch.randint(0, 512, (2, 32))
    return gosim.torch.export(model, ids, loss_fn=gpt_loss(512), targets=torch.randint(0, 512, (2, 32)),
                              optimizer=optimizer, tf32=tf32, progress=False, name=f"gpt_tf32_{tf32}")


def test_tf32_is_recorded_and_priced_at_the_tf32_peak():
    plain, tf32 = gpt_step(False), gpt_step(True)
    products = [i for i in range(tf32.num_nodes) if tf32.node(i)["op"] in ("aten::mm", "aten::addmm", "aten::bmm")]
    assert len(products) == 39  # 2 layers x (4 linear + 2 attention) forward, their gradients, the head
    assert {tf32.node(i)["outputs"][0]["dtype"] for i in products} == {"tfloat32"}
    assert {plain.node(i)["outputs"][0]["dtype"] for i in products} == {"float32"}
    assert plain.stats()["flops"] == tf32.stats()["flops"]  # the same work, on other units
    # H100: its profile has no TF32 fits, so roofline prices them at the preset's TF32 peak.
    h100 = gosim.load_cluster("h100x8_nvswitch")
    assert h100.devices[0]["peak_flops_tf32"] == 494e12
    # GPU side only: under eager execution this small step is bound by its host, which TF32 does not change.
    gpu_side = {"execution": "none"}
    slow, fast = gosim.Simulator(plain, h100, options=gpu_side), gosim.Simulator(tf32, h100, options=gpu_side)
    assert f"roofline at the TF32 peak for {len(products)} tf32 nodes it has no fit for" in fast.cost_model_used
    assert "tf32" not in slow.cost_model_used
    devices = np.zeros(tf32.num_nodes, np.int32)
    assert fast.evaluate(devices).step_time_s < slow.evaluate(devices).step_time_s
    # (tests/sim/cost_model_test.cc checks the times of single products exactly.)


def test_progress_lines_on_long_exports(monkeypatch, capsys):
    monkeypatch.setattr(gosim.torch, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(gosim.torch, "PROGRESS_INTERVAL_S", 0.0)
    gosim.torch.export_json(Tagger(), torch.randint(0, 100, (2, 5)))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("gosim.torch.export tagger: tracing the forward pass: ")
    assert any(" ops, " in line and "(in lstm)" in line for line in lines)
    assert any(line.startswith("gosim.torch.export tagger: costing: 0 of ") for line in lines)
    assert lines[-1].startswith("gosim.torch.export tagger: done: ") and " nodes in " in lines[-1]
    # Short exports print nothing by default; progress=False never does.
    monkeypatch.setattr(gosim.torch, "PROGRESS_AFTER_S", 60.0)
    gosim.torch.export_json(Tagger(), torch.randint(0, 100, (2, 5)))
    monkeypatch.setattr(gosim.torch, "PROGRESS_AFTER_S", 0.0)
    gosim.torch.export_json(Tagger(), torch.randint(0, 100, (2, 5)), progress=False)
    assert capsys.readouterr().err == ""


class Routed(torch.nn.Module):
    """Data-dependent control flow in a submodule."""

    def __init__(self):
        super().__init__()
        self.router = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.router(x)
        if h.mean() > 0:
            return h.relu()
        return h


def test_data_dependent_control_flow_is_one_export_error():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Routed())
    with pytest.raises(gosim.ExportError) as caught:
        gosim.torch.export(model, torch.randn(2, 4), progress=False)
    text = str(caught.value)
    assert "\n" not in text and caught.value.__cause__ is None
    assert text.startswith("gosim.torch.export: data-dependent control flow in module '1' (Routed) at "
                           "test_torch_export.py:")
    assert "(if h.mean() > 0:): aten::_local_scalar_dense reads a traced tensor's value" in text
    assert isinstance(caught.value, gosim.Error)
    # In the loss function it says so.
    with pytest.raises(gosim.ExportError, match=r"in the loss function at test_torch_export\.py:\d+ \(loss_fn="):
        gosim.torch.export(torch.nn.Linear(4, 4), torch.randn(2, 4),
                           loss_fn=lambda o: o.sum() if o.max() > 0 else o.mean(), progress=False)


def test_data_dependent_shapes_export_with_a_warning():
    class Sparse(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.proj(x)
            return h[h > 0].sum() + torch.nonzero(h).float().sum()

    with pytest.warns(gosim.ExportWarning, match=r"ops with data-dependent output shapes \(aten::index "
                      r"\(boolean mask\) x1, aten::nonzero x1\): the graph holds the shapes of the example "):
        g = gosim.torch.export_json(Sparse(), torch.randn(3, 4), progress=False)
    assert g["metadata"]["data_dependent_shapes"] == {"aten::index (boolean mask)": 1, "aten::nonzero": 1}
    with warnings.catch_warnings(record=True) as caught:  # a model without such ops warns nothing
        warnings.simplefilter("always")
        gosim.torch.export_json(MLP, torch.randn(2, 16), progress=False)
    assert not [w for w in caught if issubclass(w.category, gosim.ExportWarning)]


def test_export_json_needs_no_compiled_module(tmp_path):
    # The source package (python/gosim) has no _core: export_json still works.
    code = ("import gosim, gosim.torch, torch\n"
            "assert gosim._core is None\n"
            "g = gosim.torch.export_json(torch.nn.Linear(3, 2), torch.randn(4, 3), progress=False)\n"
            "print(len(g['nodes']), g['metadata']['mode'])\n"
            "try:\n    gosim.Simulator\nexcept ImportError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == "5 inference"
    assert second.startswith("gosim.Simulator needs gosim's compiled module gosim._core, which did not import "
                             "(there is none in ")


def test_torch2_check_script_passes_here(tmp_path):
    # The script the GPU machine runs under PyTorch 2.x runs here (1.13) too.
    env = dict(os.environ, PYTHONPATH="", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(ROOT / "tests/python/torch2_export_check.py"), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    last = out.stdout.splitlines()[-1]
    assert last.startswith("torch2_export_check: PASS (") and f"on torch {torch.__version__}" in last
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed"] == [] and summary["checks"]["gpt_adamw_tf32"]["product_dtypes"] == ["tfloat32"]
    assert (tmp_path / "gpt_adamw_tf32.json.gz").stat().st_size > 0


def cli(*args, cwd=None):
    path = os.pathsep.join(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "gosim.torch", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


def test_command_line_reproduces_a_committed_export(tmp_path):
    # calibration/data/mobilenet_v2_train_b4_64px.json.gz was written by the
    # exporter's command line; the package's command line writes the same bytes.
    out = tmp_path / "mobilenet_v2_train_b4_64px.json.gz"
    # The committed file holds the ops of the CPU it was traced on (it calibrates this machine's CPU).
    run = cli("--model", "mobilenet_v2", "--batch", "4", "--image-size", "64", "--threads", "1", "--target", "cpu",
              "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["nodes"] == 1516
    assert out.read_bytes() == (ROOT / "calibration/data/mobilenet_v2_train_b4_64px.json.gz").read_bytes()
    check = cli("--check", str(out))
    assert check.returncode == 0 and json.loads(check.stdout)["valid"]
    bad = cli("--model", "no_such_net", "--out", str(tmp_path / "x.json"))
    assert bad.returncode != 0 and "resnet18" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_command_line_exports_a_model_file(tmp_path):
    (tmp_path / "my_model.py").write_text(
        "import torch\n"
        "def build():\n"
        "    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))\n"
        "    return {'model': model, 'inputs': torch.randn(4, 8), 'targets': torch.randint(0, 2, (4,)),\n"
        "            'loss_fn': torch.nn.functional.cross_entropy, 'optimizer': 'sgd', 'name': 'tiny',\n"
        "            'metadata': {'about': 'a test model'}}\n")
    out = tmp_path / "tiny.json"
    run = cli("--model", "my_model.py:build", "--optimizer", "adamw", "--tf32", "--out", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    g = json.loads(out.read_text())
    assert g["name"] == "tiny" and g["metadata"]["about"] == "a test model"
    products = [n for n in g["nodes"] if n["op"] in ("aten::addmm", "aten::mm")]
    assert g["metadata"]["optimizer"] == "adamw" and g["metadata"]["tf32_nodes"] == len(products) == 5
    assert {n["outputs"][0]["dtype"] for n in products} == {"tfloat32"}  # 2 forward, 3 backward
    graph = gosim.load_graph(str(out))
    assert graph.stats()["update_nodes"] > 0
    missing = cli("--model", "my_model.py:nope", "--out", str(out), cwd=tmp_path)
    assert missing.returncode != 0 and "has no function 'nope'" in missing.stderr
