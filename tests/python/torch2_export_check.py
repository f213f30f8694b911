#!/usr/bin/env python3
"""Checks gosim.torch's exporter on the PyTorch at hand, without gosim's compiled module.

    python3 tests/python/torch2_export_check.py OUT_DIR

Written for a machine with PyTorch 2.x and no gosim build (a GPU machine):
it imports the package from this checkout's python/ folder, where
gosim.torch.export_json needs only PyTorch. It runs on Debian's PyTorch 1.13
as well (tests/python/test_torch_export.py runs it there). torchvision is
optional: its checks are skipped without it; the CUDA checks run when a GPU
is visible. Each check prints one line (PASS / FAIL / SKIP and what it
measured); the last line is the summary, "torch2_export_check: PASS ..." or
"torch2_export_check: FAIL ...", and the exit status is 0 only on PASS.
OUT_DIR receives every exported graph (<check>.json.gz) and summary.json.
Takes well under a minute on a CPU.
"""

import json
import math
import os
import platform
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gosim  # noqa: E402
import gosim.torch as gt  # noqa: E402

F32 = 4


class Block(nn.Module):
    """A pre-norm GPT block; attention by explicit matmul + softmax, or by F.scaled_dot_product_attention."""

    def __init__(self, d, heads, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
            mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
            a = torch.matmul(torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1), v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=512, d=64, heads=4, layers=2, seq=32, sdpa=False):
        super().__init__()
        self.vocab = vocab
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([Block(d, heads, sdpa) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def gpt_loss(vocab):
    def loss(out, target):
        return F.cross_entropy(out.reshape(-1, vocab), target.reshape(-1))
    return loss


def gpt_matmul_flops(batch, seq, d, layers, vocab):
    """(2 * multiply-adds of every forward matrix product, the bias additions of the linear layers)."""
    tokens = batch * seq
    linear = [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)] * layers + [(d, vocab)]
    products = sum(2 * tokens * k * n for k, n in linear) + layers * 2 * (2 * batch * seq * seq * d)
    return products, sum(tokens * n for _, n in linear)


def update_ops(graph, parameter):
    return [n["op"] for n in graph["nodes"] if n.get("colocation") == parameter and n.get("phase") == "update"
            and n["op"].startswith("aten::")]


def persistent(graph, op):
    return sum(n.get("persistent_bytes", 0) for n in graph["nodes"] if n["op"] == op)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


# --- the checks: each returns a dict of what it measured, or raises ---------------------------------

def check_package(out):
    return {"gosim": os.path.dirname(gosim.__file__), "compiled_module": gosim._core is not None,
            "torch": torch.__version__}


def check_mlp_sgd_nesterov(out):
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    g = gt.export_json(model, torch.randn(8, 16), loss_fn=F.cross_entropy, targets=torch.randint(0, 4, (8,)),
                       optimizer=opt, progress=False)
    gt.save(g, os.path.join(out, "mlp_sgd_nesterov.json.gz"))
    meta = g["metadata"]
    expect(meta["optimizer"] == "sgd" and meta.get("nesterov") is True and meta["weight_decay"] == 1e-4,
           f"metadata {meta}")
    params = sum(p.numel() for p in model.parameters()) * F32
    expect(persistent(g, "Parameter") == params and persistent(g, "OptimizerState") == params,
           "parameter and momentum bytes")
    # weight decay, momentum buffer (mul_, add_), Nesterov's look-ahead, the step
    ops = update_ops(g, "0.weight")
    expect(ops == ["aten::add", "aten::mul_", "aten::add_", "aten::add", "aten::add_"], f"update ops {ops}")
    first = [n for n in g["nodes"] if n["op"] == "aten::addmm" and n.get("scope") == "0"]
    expect(len(first) == 1 and first[0]["flops"] == 2 * 8 * 16 * 32 + 8 * 32, f"first addmm {first}")
    expect(meta["ops_without_flop_rule"] == {}, f"ops without a FLOP rule {meta['ops_without_flop_rule']}")
    return {"nodes": len(g["nodes"]), "update_ops": ops}


def _gpt(out, name, device, sdpa, tf32):
    batch, seq, d, layers, vocab = 2, 32, 64, 2, 512
    torch.manual_seed(0)
    model = GPT(vocab, d, 4, layers, seq, sdpa).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    start = time.time()
    targets = torch.randint(0, vocab, (batch, seq), device=device)
    g = gt.export_json(model, ids, loss_fn=gpt_loss(vocab), targets=targets, optimizer=opt, tf32=tf32, progress=False,
                       name=name)
    seconds = time.time() - start
    gt.save(g, os.path.join(out, f"{name}.json.gz"))
    meta = g["metadata"]
    expect(meta["optimizer"] == "adamw" and meta["weight_decay"] == 0.1 and meta["lr"] == 3e-4, f"metadata {meta}")
    params = sum(p.numel() for p in model.parameters())
    n_params = len(list(model.parameters()))
    expect(persistent(g, "OptimizerState") == 2 * params * F32 + n_params * F32, "AdamW state bytes")
    ops = update_ops(g, "blocks.0.ff1.weight")
    expect(ops[:2] == ["aten::add_", "aten::mul_"] and ops[-1] == "aten::addcdiv_", f"AdamW update ops {ops}")
    products = [n for n in g["nodes"] if n["op"] in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")]
    dtypes = sorted({(n["outputs"][0].get("dtype") if n.get("outputs") else None) or "?" for n in products})
    if tf32:
        expect(dtypes == ["tfloat32"], f"matrix product dtypes {dtypes}")
        expect(meta["tf32"] is True and meta["tf32_nodes"] >= len(products), f"tf32 metadata {meta}")
    summary = gt.summarize(g)
    expected, bias = gpt_matmul_flops(batch, seq, d, layers, vocab)
    forward = summary["forward_conv_matmul_flops"]
    if not sdpa:
        expect(expected <= forward <= expected + bias, f"forward matmul FLOPs {forward}, expected {expected} (+{bias})")
    missing = meta["ops_without_flop_rule"]
    uncounted = [op for op in missing if any(k in op for k in ("mm", "attention", "conv", "linear", "matmul"))]
    expect(not uncounted, f"compute ops without a FLOP rule: {missing}")
    return {"nodes": len(g["nodes"]), "export_s": round(seconds, 2), "forward_matmul_flops": forward,
            "expected": expected, "product_dtypes": dtypes, "ops_without_flop_rule": missing,
            "torch_attention_ops": sorted({n["op"] for n in g["nodes"] if "attention" in n["op"]})}


def check_gpt_adamw_tf32(out):
    return _gpt(out, "gpt_adamw_tf32", "cpu", sdpa=False, tf32=True)


def check_gpt_sdpa_cpu(out):
    if not hasattr(F, "scaled_dot_product_attention"):
        return "SKIP: F.scaled_dot_product_attention needs PyTorch >= 2.0"
    return _gpt(out, "gpt_sdpa_cpu", "cpu", sdpa=True, tf32=False)


def check_gpt_cuda(out):
    if not torch.cuda.is_available():
        return "SKIP: no CUDA device"
    result = _gpt(out, "gpt_sdpa_cuda_tf32", "cuda", sdpa=hasattr(F, "scaled_dot_product_attention"), tf32=True)
    result["device"] = torch.cuda.get_device_name(0)
    return result


def check_autocast_bf16(out):
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        g = gt.export_json(model, torch.randn(8, 16), loss_fn=lambda o, y: F.cross_entropy(o.float(), y),
                           targets=torch.randint(0, 4, (8,)), optimizer="adamw", tf32=True, progress=False)
    gt.save(g, os.path.join(out, "mlp_autocast_bf16.json.gz"))
    forward = [n["outputs"][0].get("dtype") for n in g["nodes"]
               if n["op"] == "aten::addmm" and n.get("phase", "forward") == "forward"]
    expect(forward == ["bfloat16", "bfloat16"], f"forward addmm dtypes {forward}")  # tf32 leaves 16-bit alone
    return {"forward_addmm_dtypes": forward}


def check_data_dependent_control_flow(out):
    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            return h * 2 if h.sum() > 0 else h

    model = nn.Sequential(Gate(), nn.Linear(4, 2))
    try:
        gt.export_json(model, torch.randn(3, 4), progress=False)
    except gosim.ExportError as e:
        text = str(e)
        expect("\n" not in text, "a one-line message")
        expect("module '0' (Gate)" in text and "aten::_local_scalar_dense" in text
               and "torch2_export_check.py:" in text, f"message {text!r}")
        return {"message": text}
    raise AssertionError("no gosim.ExportError")


def check_data_dependent_shapes(out):
    class Sparse(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            return h[h > 0].sum() + torch.nonzero(h).float().sum()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = gt.export_json(Sparse(), torch.randn(3, 4), progress=False)
    gt.save(g, os.path.join(out, "data_dependent_shapes.json.gz"))
    ours = [str(w.message) for w in caught if issubclass(w.category, gosim.ExportWarning)]
    expect(len(ours) == 1 and "aten::nonzero x1" in ours[0] and "aten::index (boolean mask) x1" in ours[0],
           f"warnings {ours}")
    expect(g["metadata"]["data_dependent_shapes"] == {"aten::index (boolean mask)": 1, "aten::nonzero": 1},
           f"metadata {g['metadata'].get('data_dependent_shapes')}")
    return {"warning": ours[0]}


def check_progress(out):
    lines = []
    gt.export_json(GPT(layers=1), torch.randint(0, 512, (1, 8)), progress=lines.append)
    expect(any(": tracing the forward pass: " in line for line in lines) and "done: " in lines[-1], f"lines {lines}")
    return {"lines": len(lines), "last": lines[-1]}


def check_optimizer_errors(out):
    model = nn.Linear(2, 2)
    messages = []
    for bad, needle in (("adamww", "Did you mean 'adamw'?"), (torch.optim.RMSprop(model.parameters()), "RMSprop")):
        try:
            gt.export_json(model, torch.randn(1, 2), loss_fn=lambda o: o.sum(), optimizer=bad, progress=False)
        except gosim.ConfigError as e:
            expect(needle in str(e), f"message {e}")
            messages.append(str(e))
            continue
        raise AssertionError(f"no ConfigError for {bad!r}")
    return {"messages": messages}


def _torchvision():
    try:
        import torchvision
        return torchvision
    except ImportError:
        return None


def check_resnet18_sgd(out):
    torchvision = _torchvision()
    if torchvision is None:
        return "SKIP: torchvision is not installed"
    model = torchvision.models.resnet18()
    g = gt.export_json(model, torch.randn(2, 3, 64, 64), loss_fn=F.cross_entropy,
                       targets=torch.randint(0, 1000, (2,)), optimizer="sgd", progress=False)
    gt.save(g, os.path.join(out, "resnet18_sgd.json.gz"))
    missing = g["metadata"]["ops_without_flop_rule"]
    expect(missing == {}, f"ops without a FLOP rule {missing}")
    conv1 = [n for n in g["nodes"] if n["op"] == "aten::convolution" and n.get("scope") == "conv1"]
    expect(len(conv1) == 1 and conv1[0]["flops"] == 2.0 * 2 * 64 * 32 * 32 * 3 * 7 * 7, f"conv1 {conv1}")
    params = sum(p.numel() for p in model.parameters()) * F32
    expect(persistent(g, "Parameter") == params == persistent(g, "OptimizerState"), "parameter and momentum bytes")
    phases = sorted({n.get("phase", "forward") for n in g["nodes"]})
    expect(phases == ["backward", "forward", "update"], f"phases {phases}")
    back = [n for n in g["nodes"] if n["op"] == "aten::convolution_backward" and n.get("scope") == "layer1/0/conv1"]
    expect(len(back) == 1, "one backward convolution in layer1/0/conv1")
    return {"nodes": len(g["nodes"]), "torchvision": torchvision.__version__}


def check_mobilenet_v3_inference(out):
    torchvision = _torchvision()
    if torchvision is None:
        return "SKIP: torchvision is not installed"
    model = torchvision.models.mobilenet_v3_small()
    g = gt.export_json(model, torch.randn(1, 3, 64, 64), progress=False)
    gt.save(g, os.path.join(out, "mobilenet_v3_small_inference.json.gz"))
    expect({n.get("phase", "forward") for n in g["nodes"]} == {"forward"}, "forward only")
    norms = [n for n in g["nodes"] if "batch_norm" in n["op"]]
    expect(norms and all(n["flops"] == 2 * math.prod(n["outputs"][0]["shape"]) for n in norms),
           f"inference batch norms: {sorted({n['op'] for n in norms})}")
    missing = g["metadata"]["ops_without_flop_rule"]
    expect(missing == {}, f"ops without a FLOP rule {missing}")
    return {"nodes": len(g["nodes"]), "norm_ops": sorted({n["op"] for n in norms})}


CHECKS = [check_package, check_mlp_sgd_nesterov, check_gpt_adamw_tf32, check_gpt_sdpa_cpu, check_gpt_cuda,
          check_autocast_bf16, check_data_dependent_control_flow, check_data_dependent_shapes, check_progress,
          check_optimizer_errors, check_resnet18_sgd, check_mobilenet_v3_inference]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(min(4, torch.get_num_threads()))
    results, failed, passed, skipped = {}, [], 0, 0
    start = time.time()
    for check in CHECKS:
        name = check.__name__[len("check_"):]
        t0 = time.time()
        try:
            details = check(out)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the others still run
            status, details = "FAIL", {"error": f"{type(e).__name__}: {e}",
                                       "traceback": traceback.format_exc(limit=6)}
            failed.append(name)
        else:
            if isinstance(details, str) and details.startswith("SKIP"):
                status, details = "SKIP", {"reason": details[6:]}
                skipped += 1
            else:
                status = "PASS"
                passed += 1
        seconds = time.time() - t0
        results[name] = {"status": status, "seconds": round(seconds, 2), **details}
        shown = {k: v for k, v in details.items() if k != "traceback"}
        print(f"{status} {name} ({seconds:.1f} s): {json.dumps(shown, default=str)[:400]}", flush=True)
        if status == "FAIL":
            print(details["traceback"], file=sys.stderr)
    summary = {"torch": torch.__version__, "python": platform.python_version(), "cuda": torch.cuda.is_available(),
               "passed": passed, "skipped": skipped, "failed": failed, "seconds": round(time.time() - start, 1),
               "checks": results}
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, default=str)
    verdict = "FAIL" if failed else "PASS"
    print(f"torch2_export_check: {verdict} ({passed} passed, {skipped} skipped, {len(failed)} failed"
          f"{': ' + ', '.join(failed) if failed else ''}) on torch {torch.__version__} in "
          f"{summary['seconds']} s; graphs and summary.json in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
