#!/usr/bin/env python3
"""Exports the training step of every model recorded on a GPU as a gosim graph.

`record_gpu_traces.py` recorded training steps of the models of its MODELS
table on an H100 and an H200 (calibration/data/gpu). This script exports the
same steps with gosim's exporter: the same model code (it imports
record_gpu_traces.py), batch, loss, optimizer and settings, and, for the
`--amp bf16` recordings, the same torch.autocast precision. The graphs are
what `gosim calibrate --validate` simulates with the engine the agents use
and compares with the measured steps (docs/CALIBRATION.md, "Validation").

    PYTHONPATH=build/python python3 calibration/hardware/export_recorded.py --out calibration/data/gpu/graphs [--models a,b] [--amp bf16]

It runs on this machine's CPU (the step is traced with the CPU tensors of
the recording's shapes; nothing runs on a GPU), needs the gosim Python
package (`import gosim.torch`: pip-installed, or PYTHONPATH=build/python)
and writes OUT/<model>[_bf16].json.gz plus OUT/provenance.json (model code,
torch version, batch, dtype, optimizer, node count, sha256). The binary
`.gosimgraph` files that the repository commits are made from these by
`gosim graphs export` (calibration/data/gpu/graphs/README.md).

Differences from the recorded run, each said in the graph's metadata:
- the optimizer update is PyTorch's single-tensor code (per parameter); the
  recording ran the default multi-tensor (foreach) kernels, which the
  calibrated cost model prices as shares (multi_tensor_updates);
- the CPU's op decomposition: `aten::native_batch_norm` instead of cuDNN's
  batch norm, `aten::convolution` instead of the cuDNN call chain; the cost
  model prices such ops by their class where the profile has no type fit;
- the exporter records the ops the GPU ran where PyTorch decomposes by
  device (target="cuda", gosim._gpu_ops): fused dropout and attention,
  cuDNN's LSTM, Adam's step reads; nn.MultiheadAttention (ViT) still
  exports PyTorch 1.13's matmul-softmax chain, where PyTorch 2.x on the GPU
  ran a fused attention kernel.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import sys
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


def load_recorder():
    spec = importlib.util.spec_from_file_location("record_gpu_traces", os.path.join(HERE, "record_gpu_traces.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Step(nn.Module):
    """The recorded step's forward and loss as one module: forward(*inputs) -> loss."""

    def __init__(self, model, loss, amp):
        super().__init__()
        self.model = model
        self.loss = loss
        self.amp = amp

    def forward(self, *inputs):
        if self.amp:
            with torch.autocast("cpu", dtype=getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[self.amp])):
                return self.loss(self.model, inputs)
        return self.loss(self.model, inputs)


def optimizer_for(name, model):
    """The recording's optimizer (record_gpu_traces.optimizer), as the exporter takes it."""
    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-4)
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the graphs and provenance.json")
    parser.add_argument("--models", help="comma-separated model names (default: all of record_gpu_traces.MODELS)")
    parser.add_argument("--amp", choices=["bf16", "fp16"], help="export under torch.autocast of this dtype")
    args = parser.parse_args()

    import gosim.torch as gosim_torch  # the package, installed or on PYTHONPATH

    recorder = load_recorder()
    names = args.models.split(",") if args.models else list(recorder.MODELS)
    unknown = [n for n in names if n not in recorder.MODELS]
    if unknown:
        sys.exit(f"export_recorded.py: unknown model {unknown[0]} (known: {', '.join(recorder.MODELS)})")
    os.makedirs(args.out, exist_ok=True)
    prov_path = os.path.join(args.out, "provenance.json")
    provenance = json.load(open(prov_path)) if os.path.exists(prov_path) else {
        "format": "gosim.exported_graphs", "version": 1, "script": "calibration/hardware/export_recorded.py",
        "graphs": []}
    provenance["torch"] = torch.__version__
    done = {g["file"]: g for g in provenance["graphs"]}
    failed = []
    for name in names:
        try:
            export_one(name, recorder, args, gosim_torch, provenance, done, prov_path)
        except Exception as e:  # one model's failure must not lose the others
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
            failed.append(name)
    if failed:
        sys.exit(f"export_recorded.py: {len(failed)} failed: {', '.join(failed)}")


def export_one(name, recorder, args, gosim_torch, provenance, done, prov_path):
    started = time.time()
    torch.manual_seed(0)
    model, make, loss, opt_name, settings = recorder.MODELS[name]()
    inputs = make(torch.device("cpu"))
    step = Step(model, loss, args.amp)
    suffix = f"_{args.amp}" if args.amp else ""
    graph_name = f"{name}{suffix}_train"
    # target="cuda" (the default): the ops the GPU ran (gosim._gpu_ops).
    data = gosim_torch.export_json(step, inputs, loss_fn=lambda out: out, optimizer=optimizer_for(opt_name, model),
                                   name=graph_name, log=lambda line: print(f"  {name}: {line}", flush=True),
                                   progress=False)
    data["metadata"].update({"model": name, "settings": settings, "recorded_optimizer": opt_name,
                             "recorded_with": "calibration/hardware/record_gpu_traces.py",
                             "autocast": args.amp, "multi_tensor_recorded": True})
    path = os.path.join(args.out, f"{name}{suffix}.json.gz")
    gosim_torch.save(data, path)
    compute = sum(1 for n in data["nodes"] if n["op"] not in ("Input", "Parameter", "Buffer", "OptimizerState"))
    entry = {"model": name, "file": os.path.basename(path), "nodes": len(data["nodes"]), "ops": compute,
             "optimizer": opt_name, "autocast": args.amp, "settings": settings,
             "torch": torch.__version__, "sha256": sha256(path),
             "export_s": round(time.time() - started, 1)}
    done[entry["file"]] = entry
    provenance["graphs"] = sorted(done.values(), key=lambda g: g["file"])
    tmp = prov_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(provenance, f, indent=1)
    os.replace(tmp, prov_path)
    print(f"{name}{suffix}: {len(data['nodes'])} nodes ({compute} ops) in {entry['export_s']} s -> {path}",
          flush=True)


if __name__ == "__main__":
    main()
