#!/usr/bin/env python3
"""Records PyTorch profiler (Kineto) traces of training steps on one CUDA GPU.

This is the only gosim script that runs where gosim is not built: a GPU
machine with PyTorch (and torchvision) and nothing of ours. It trains each
model of MODELS below for a few steps on random data, times the steady-state
step without the profiler, then records `--active` steps with
torch.profiler (CPU and CUDA activities, input shapes on, one
`ProfilerStep#N` annotation per step) and writes:

  OUT/<gpu>_<model>.json.gz    one trace per model (gzip'd Chrome trace)
  OUT/provenance.json          GPU, driver, versions, each model's settings,
                               parameter count, unprofiled step time, sha256

With --bundle, the traces are packed into at most 6 tar files of at most
15 MiB each (repacked after every model, so a run stopped by a time limit
keeps what it finished); the `device` tool brings back 8 files at most.

    python3 calibration/hardware/record_gpu_traces.py --out DIR [--models a,b] [--budget-s 300] [--bundle] [--amp bf16]

The traces are calibration data (calibration/data/gpu/README.md says where
each came from); `gosim calibrate --evaluate` reads them through
calibration/evaluation_gpu.yaml. Models are plain PyTorch or torchvision
constructors with random weights: nothing is downloaded.
"""
import argparse
import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

# --------------------------------------------------------------------------
# Models. Each builder returns (module, make_batch, loss_fn, optimizer_name,
# settings) where make_batch(device) gives the inputs of one step (created
# once, on the GPU: the step measures compute, not the input pipeline).


def classification(model, batch, image, classes=1000, aux=False):
    def make(device):
        x = torch.randn(batch, 3, image, image, device=device)
        y = torch.randint(0, classes, (batch,), device=device)
        return x, y

    def loss(m, inputs):
        x, y = inputs
        out = m(x)
        if aux:  # torchvision Inception-v3 in training mode: (logits, aux_logits)
            return F.cross_entropy(out[0], y) + 0.4 * F.cross_entropy(out[1], y)
        return F.cross_entropy(out, y)

    return model, make, loss


def torchvision_model(name, batch, image, **kwargs):
    import torchvision

    def build():
        ctor = getattr(torchvision.models, name)
        model = ctor(weights=None, **kwargs)
        aux = bool(kwargs.get("aux_logits", False))
        m, make, loss = classification(model, batch, image, aux=aux)
        return m, make, loss, "sgd", {"source": f"torchvision.models.{name}", "batch": batch, "image": image,
                                      **{k: v for k, v in kwargs.items()}}

    return build


class Block(nn.Module):
    """Pre-norm transformer block; attention by explicit matmul + softmax
    (`sdpa=False`) or by F.scaled_dot_product_attention (`sdpa=True`)."""

    def __init__(self, d, heads, ff, causal, sdpa):
        super().__init__()
        self.heads, self.causal, self.sdpa = heads, causal, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, dropout_p=0.1)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
            if self.causal:
                mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
                scores = scores.masked_fill(mask, float("-inf"))
            a = torch.matmul(self.drop(torch.softmax(scores, dim=-1)), v)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.ff2(F.gelu(self.ff1(self.ln2(x)))))


class TransformerLM(nn.Module):
    def __init__(self, vocab, d, heads, ff, layers, seq, causal, sdpa):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([Block(d, heads, ff, causal, sdpa) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def transformer(vocab, d, heads, ff, layers, seq, batch, causal, sdpa):
    def build():
        model = TransformerLM(vocab, d, heads, ff, layers, seq, causal, sdpa)

        def make(device):
            ids = torch.randint(0, vocab, (batch, seq), device=device)
            return ids, torch.randint(0, vocab, (batch, seq), device=device)

        def loss(m, inputs):
            ids, target = inputs
            return F.cross_entropy(m(ids).reshape(-1, vocab), target.reshape(-1))

        kind = "decoder (causal), scaled_dot_product_attention" if sdpa else "encoder, matmul + softmax attention"
        return model, make, loss, "adamw", {"source": f"plain PyTorch transformer {kind}", "vocab": vocab,
                                            "d_model": d, "heads": heads, "d_ff": ff, "layers": layers,
                                            "seq_len": seq, "batch": batch}

    return build


class LstmLM(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=False, dropout=0.2)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


def lstm_lm(vocab, hidden, layers, seq, batch):
    def build():
        model = LstmLM(vocab, hidden, layers)

        def make(device):
            return (torch.randint(0, vocab, (seq, batch), device=device),
                    torch.randint(0, vocab, (seq, batch), device=device))

        def loss(m, inputs):
            ids, target = inputs
            return F.cross_entropy(m(ids).reshape(-1, vocab), target.reshape(-1))

        return model, make, loss, "sgd", {"source": "plain PyTorch nn.LSTM language model (cuDNN RNN)",
                                          "vocab": vocab, "hidden": hidden, "layers": layers, "seq_len": seq,
                                          "batch": batch}

    return build


class Seq2Seq(nn.Module):
    """Attentional encoder-decoder: nn.LSTM encoder, an LSTMCell decoder
    unrolled step by step with dot-product attention (many small kernels)."""

    def __init__(self, vocab, hidden):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(vocab, hidden), nn.Embedding(vocab, hidden)
        self.encoder = nn.LSTM(hidden, hidden, 2, batch_first=True)
        self.cell = nn.LSTMCell(2 * hidden, hidden)
        self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        memory, (h, c) = self.encoder(self.src_emb(src))
        h, c = h[-1], c[-1]
        context = torch.zeros_like(h)
        outputs = []
        for t in range(tgt.shape[1]):
            h, c = self.cell(torch.cat([self.tgt_emb(tgt[:, t]), context], dim=1), (h, c))
            weights = torch.softmax(torch.bmm(memory, h.unsqueeze(2)).squeeze(2), dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            outputs.append(torch.tanh(self.combine(torch.cat([h, context], dim=1))))
        return self.out(torch.stack(outputs, dim=1))


def seq2seq(vocab, hidden, src_len, tgt_len, batch):
    def build():
        model = Seq2Seq(vocab, hidden)

        def make(device):
            return (torch.randint(0, vocab, (batch, src_len), device=device),
                    torch.randint(0, vocab, (batch, tgt_len), device=device))

        def loss(m, inputs):
            src, tgt = inputs
            return F.cross_entropy(m(src, tgt).reshape(-1, vocab), tgt.reshape(-1))

        return model, make, loss, "adamw", {"source": "plain PyTorch attentional LSTM encoder-decoder",
                                            "vocab": vocab, "hidden": hidden, "src_len": src_len,
                                            "tgt_len": tgt_len, "batch": batch}

    return build


class Dlrm(nn.Module):
    def __init__(self, dense, tables, rows, dim, bottom, top):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables)])
        layers, width = [], dense
        for w in bottom + [dim]:
            layers += [nn.Linear(width, w), nn.ReLU()]
            width = w
        self.bottom = nn.Sequential(*layers)
        pairs = (tables + 1) * tables // 2
        layers, width = [], dim + pairs
        for w in top:
            layers += [nn.Linear(width, w), nn.ReLU()]
            width = w
        layers.append(nn.Linear(width, 1))
        self.top = nn.Sequential(*layers)

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        features = torch.stack([x] + [e(indices[i], offsets) for i, e in enumerate(self.embeddings)], dim=1)
        inter = torch.bmm(features, features.transpose(1, 2))
        rows, cols = torch.tril_indices(features.shape[1], features.shape[1], -1, device=dense.device)
        return self.top(torch.cat([x, inter[:, rows, cols]], dim=1)).squeeze(1)


def dlrm(dense, tables, rows, dim, bottom, top, batch, pooling):
    def build():
        model = Dlrm(dense, tables, rows, dim, bottom, top)

        def make(device):
            return (torch.randn(batch, dense, device=device),
                    torch.randint(0, rows, (tables, batch * pooling), device=device),
                    torch.arange(0, batch * pooling, pooling, device=device),
                    torch.randint(0, 2, (batch,), device=device).float())

        def loss(m, inputs):
            x, idx, offsets, label = inputs
            return F.binary_cross_entropy_with_logits(m(x, idx, offsets), label)

        return model, make, loss, "sgd", {"source": "plain PyTorch DLRM-like recommender (EmbeddingBag + MLPs)",
                                          "dense": dense, "tables": tables, "rows": rows, "dim": dim,
                                          "bottom": bottom, "top": top, "batch": batch, "pooling": pooling}

    return build


class WaveNet(nn.Module):
    def __init__(self, channels, skip, stacks, layers, classes):
        super().__init__()
        self.inp = nn.Conv1d(classes, channels, 1)
        self.dilated = nn.ModuleList()
        self.res, self.skip = nn.ModuleList(), nn.ModuleList()
        for _ in range(stacks):
            for i in range(layers):
                self.dilated.append(nn.Conv1d(channels, 2 * channels, 2, dilation=2 ** i))
                self.res.append(nn.Conv1d(channels, channels, 1))
                self.skip.append(nn.Conv1d(channels, skip, 1))
        self.post1, self.post2 = nn.Conv1d(skip, skip, 1), nn.Conv1d(skip, classes, 1)

    def forward(self, x):
        x = self.inp(x)
        total = 0
        for dil, res, skp in zip(self.dilated, self.res, self.skip):
            d = dil.dilation[0]
            h = dil(F.pad(x, (d, 0)))
            a, b = h.chunk(2, dim=1)
            z = torch.tanh(a) * torch.sigmoid(b)
            x = x + res(z)
            total = total + skp(z)
        return self.post2(F.relu(self.post1(F.relu(total))))


def wavenet(channels, skip, stacks, layers, samples, batch, classes=256):
    def build():
        model = WaveNet(channels, skip, stacks, layers, classes)

        def make(device):
            return (torch.randn(batch, classes, samples, device=device),
                    torch.randint(0, classes, (batch, samples), device=device))

        def loss(m, inputs):
            x, y = inputs
            return F.cross_entropy(m(x), y)

        return model, make, loss, "adamw", {"source": "plain PyTorch WaveNet (dilated causal Conv1d)",
                                            "channels": channels, "skip_channels": skip, "stacks": stacks,
                                            "layers_per_stack": layers, "samples": samples, "batch": batch}

    return build


# Order is priority: under a time budget the first ones are recorded first.
MODELS = {
    "resnet50": torchvision_model("resnet50", 32, 224),
    "bert": transformer(30522, 768, 12, 3072, 6, 128, 16, causal=False, sdpa=False),
    "lstm_lm": lstm_lm(10000, 1024, 2, 35, 64),
    "dlrm": dlrm(13, 8, 100000, 64, [512, 256], [512, 256], 2048, 4),
    "mobilenet_v2": torchvision_model("mobilenet_v2", 64, 224),
    "gpt": transformer(32000, 768, 12, 3072, 6, 512, 8, causal=True, sdpa=True),
    "seq2seq": seq2seq(8000, 512, 30, 20, 64),
    "wavenet": wavenet(64, 128, 2, 10, 8000, 4),
    "vgg16": torchvision_model("vgg16", 32, 224),
    "inception_v3": torchvision_model("inception_v3", 32, 299, aux_logits=True, init_weights=False),
    "alexnet": torchvision_model("alexnet", 128, 224),
    "resnet50_b8": torchvision_model("resnet50", 8, 224),
    # Grouped and depthwise convolutions, attention on patches: recorded
    # apart (--models), calibration/data/gpu/extra.
    "efficientnet_b0": torchvision_model("efficientnet_b0", 64, 224),
    "resnext50_32x4d": torchvision_model("resnext50_32x4d", 32, 224),
    "shufflenet_v2": torchvision_model("shufflenet_v2_x1_0", 64, 224),
    "densenet121": torchvision_model("densenet121", 32, 224),
    "convnext_tiny": torchvision_model("convnext_tiny", 32, 224),
    "vit_b_16": torchvision_model("vit_b_16", 32, 224),
}
# The set committed in calibration/data/gpu (the default).
DEFAULT_MODELS = list(MODELS)[:12]

# --------------------------------------------------------------------------


AMP_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def optimizer(name, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4)
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gpu_facts():
    facts = {"torch": torch.__version__, "cuda": torch.version.cuda,
             "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
             "python": sys.version.split()[0]}
    try:
        import torchvision
        facts["torchvision"] = torchvision.__version__
    except ImportError:
        facts["torchvision"] = None
    p = torch.cuda.get_device_properties(0)
    facts.update({"gpu": p.name, "multiprocessors": p.multi_processor_count,
                  "memory_bytes": p.total_memory, "capability": f"{p.major}.{p.minor}"})
    try:
        query = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu"
        facts["nvidia_smi"] = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv"],
                                             capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        facts["nvidia_smi"] = f"unavailable: {e}"
    try:
        facts["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
        facts["tf32_cudnn"] = torch.backends.cudnn.allow_tf32
        facts["cudnn_benchmark"] = torch.backends.cudnn.benchmark
    except Exception as e:  # settings API moves between releases
        facts["tf32"] = f"unavailable: {e}"
    return facts


def record(name, build, out_dir, prefix, args, log):
    device = torch.device("cuda")
    torch.manual_seed(0)
    model, make, loss_fn, opt_name, settings = build()
    model = model.to(device).train()
    opt = optimizer(opt_name, model.parameters())
    inputs = make(device)

    def step():
        opt.zero_grad(set_to_none=True)
        if args.amp:  # mixed precision: matmuls and convolutions in bf16 / fp16, as torch.autocast picks
            with torch.autocast("cuda", dtype=getattr(torch, AMP_DTYPES[args.amp])):
                loss = loss_fn(model, inputs)
        else:
            loss = loss_fn(model, inputs)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    # Steady state: the CPU runs ahead of the GPU until the launch queue is
    # full (GPU-bound) or the GPU waits for the CPU (launch-bound). After
    # `settle` unsynchronised steps, the host clock between step starts is
    # the steady-state period either way; nothing synchronises from here to
    # the end of the trace, so the profiled steps are steady-state steps too.
    for _ in range(args.settle):
        step()
    # Timed from an idle GPU to an idle GPU: without the synchronizations the
    # host clock misses the kernels queued before the start (the settle
    # steps') or after the end, by up to the launch queue's depth (a
    # GPU-bound step with few kernels, AlexNet's, came out 21% short).
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.timed):
        step()
    torch.cuda.synchronize()
    unprofiled = (time.perf_counter() - start) / args.timed

    suffix = f"_{args.amp}" if args.amp else ""
    raw = os.path.join(out_dir, f"{prefix}_{name}{suffix}.json")
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    schedule = torch.profiler.schedule(wait=1, warmup=args.settle, active=args.active, repeat=1)
    with torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
        for _ in range(1 + args.settle + args.active):
            step()
            prof.step()
    torch.cuda.synchronize()
    if not os.path.exists(raw):
        raise RuntimeError("the profiler wrote no trace")
    path = raw + ".gz"
    with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    params = sum(p.numel() for p in model.parameters())
    entry = {"model": name, "file": os.path.basename(path), "bytes": os.path.getsize(path), "sha256": sha256(path),
             "optimizer": opt_name, "parameters": params, "warmup_steps": args.warmup,
             "settle_steps": args.settle, "unprofiled_steps": args.timed, "unprofiled_step_s": unprofiled,
             "unprofiled_timing": "synchronized before and after", "profiled_steps": args.active,
             "peak_memory_bytes": torch.cuda.max_memory_allocated(), "autocast": args.amp or None,
             "settings": settings}
    log(f"{name}: {params / 1e6:.1f} M parameters, unprofiled step {unprofiled * 1e3:.2f} ms, "
        f"trace {entry['bytes'] / 2**20:.2f} MiB")
    del model, opt, inputs
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return entry


def bundle(out_dir, files, limit=15 * 2**20, max_tars=6):
    """Packs `files` (in order) into bundle_1.tar, ... of at most `limit` bytes."""
    groups, size = [[]], 0
    for f in files:
        s = os.path.getsize(os.path.join(out_dir, f))
        if groups[-1] and size + s > limit:
            groups.append([])
            size = 0
        groups[-1].append(f)
        size += s
    if len(groups) > max_tars:
        raise RuntimeError(f"{len(groups)} bundles needed, {max_tars} allowed")
    for i, group in enumerate(groups, 1):
        tmp = os.path.join(out_dir, f"bundle_{i}.tar.tmp")
        with tarfile.open(tmp, "w") as tar:
            for f in group:
                tar.add(os.path.join(out_dir, f), arcname=f)
        os.replace(tmp, os.path.join(out_dir, f"bundle_{i}.tar"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the traces and provenance.json")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated, of: {', '.join(MODELS)} (default: the first 12)")
    parser.add_argument("--warmup", type=int, default=5, help="untraced steps before timing")
    parser.add_argument("--settle", type=int, default=8,
                        help="unsynchronised steps before timing, and profiler warm-up steps (queue fills)")
    parser.add_argument("--timed", type=int, default=20, help="unprofiled steps timed for the steady-state period")
    parser.add_argument("--active", type=int, default=6, help="profiled steps in each trace")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no model after this many seconds")
    parser.add_argument("--bundle", action="store_true", help="pack the traces into tar files (device tool)")
    parser.add_argument("--amp", choices=sorted(AMP_DTYPES), help="run forward passes under torch.autocast "
                        "with this dtype (traces named <gpu>_<model>_<dtype>.json.gz)")
    parser.add_argument("--stage", help="folder for the traces themselves when --bundle (default: a temporary folder)")
    args = parser.parse_args()

    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"record_gpu_traces.py: unknown model {unknown[0]} (known: {', '.join(MODELS)})")
    if not torch.cuda.is_available():
        sys.exit("record_gpu_traces.py: no CUDA device visible to PyTorch; run this on a GPU machine")
    os.makedirs(args.out, exist_ok=True)
    stage = args.stage or (os.path.join(tempfile.gettempdir(), "gosim_gpu_traces") if args.bundle else args.out)
    os.makedirs(stage, exist_ok=True)
    log_path = os.path.join(args.out, "record.log")

    def log(line):
        print(line, flush=True)
        with open(log_path, "a") as f:
            f.write(line + "\n")

    facts = gpu_facts()
    kind = facts["gpu"].replace("NVIDIA ", "").split()[0].lower()
    prefix = "".join(c if c.isalnum() else "_" for c in kind)
    log(f"{facts['gpu']}, torch {facts['torch']}, CUDA {facts['cuda']}, cuDNN {facts['cudnn']}")
    provenance = {"format": "gosim.gpu_traces", "version": 1, "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                  time.gmtime()), "script": "calibration/hardware/record_gpu_traces.py",
                  "command": " ".join(sys.argv), "environment": facts, "traces": [], "failed": []}
    started = time.time()

    def save():
        tmp = os.path.join(args.out, "provenance.json.tmp")
        with open(tmp, "w") as f:
            json.dump(provenance, f, indent=1)
        os.replace(tmp, os.path.join(args.out, "provenance.json"))
        if args.bundle:
            bundle(stage, [t["file"] for t in provenance["traces"]])
            for f in os.listdir(stage):
                if f.startswith("bundle_") and f.endswith(".tar"):
                    shutil.copy(os.path.join(stage, f), os.path.join(args.out, f))

    for name in names:
        if time.time() - started > args.budget_s:
            log(f"{name}: skipped, past --budget-s {args.budget_s:.0f}")
            provenance["failed"].append({"model": name, "error": "skipped: time budget"})
            continue
        try:
            provenance["traces"].append(record(name, MODELS[name], stage, prefix, args, log))
        except Exception as e:  # one model's failure must not lose the others
            log(f"{name}: FAILED {type(e).__name__}: {e}")
            log(traceback.format_exc(limit=4))
            provenance["failed"].append({"model": name, "error": f"{type(e).__name__}: {e}"})
            torch.cuda.empty_cache()
        save()
    log(f"done: {len(provenance['traces'])} traces, {len(provenance['failed'])} failed, "
        f"{time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
