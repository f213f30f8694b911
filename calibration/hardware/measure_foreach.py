#!/usr/bin/env python3
"""Times PyTorch's SGD update with and without multi-tensor (foreach) kernels.

gosim prices an exported graph's per-parameter update ops as shares of one
`_foreach_*` call per op (CalibratedOptions::multi_tensor_updates, default
true) or, with `multi_tensor_updates: false`, as one kernel each
(docs/CALIBRATION.md, "Fitting"). This measures what
the choice is worth on a real GPU: for each model, the training step and
`optimizer.step()` alone under SGD (lr 0.01, momentum 0.9, no weight decay:
record_gpu_traces.py's settings) with foreach=True (PyTorch's default on
CUDA) and foreach=False, and with `--weight-decay W` also foreach=True with
that weight decay (gosim's exporter adds 1e-4 by default: PyTorch then
runs `_foreach_add`, which no trace has). Times are medians of CUDA-event intervals (the
GPU's elapsed time, idle gaps while the CPU launches included) over
`--steps` steps after `--warmup`. Runs where PyTorch and torchvision are;
nothing of gosim's is needed.

    python3 calibration/hardware/measure_foreach.py --out results.json [--steps 30] [--weight-decay 1e-4]
"""
import argparse
import json
import statistics

import torch
import torch.nn as nn
import torchvision

MODELS = {  # name: (constructor, batch), as record_gpu_traces.py records them
    "resnet50": (torchvision.models.resnet50, 32),
    "mobilenet_v2": (torchvision.models.mobilenet_v2, 64),
}


def measure(name, foreach, args, weight_decay=0.0):
    build, batch = MODELS[name]
    torch.manual_seed(0)
    model = build().cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=foreach,
                          weight_decay=weight_decay)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(args.steps)]
    for i in range(args.warmup + args.steps):
        if i >= args.warmup:
            begin, before_step, end = events[i - args.warmup]
            begin.record()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        if i >= args.warmup:
            before_step.record()
        opt.step()
        if i >= args.warmup:
            end.record()
    torch.cuda.synchronize()
    steps = [b.elapsed_time(e) for b, _, e in events]
    updates = [s.elapsed_time(e) for _, s, e in events]
    return {"model": name, "batch": batch, "foreach": foreach, "weight_decay": weight_decay,
            "parameters": sum(1 for _ in model.parameters()),
            "step_ms_median": statistics.median(steps), "update_ms_median": statistics.median(updates),
            "step_ms": steps, "update_ms": updates}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="JSON file for the results")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--weight-decay", type=float, default=0.0,
                        help="also time foreach=True with this weight decay (0: not)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("measure_foreach.py: no CUDA GPU (this script times GPU kernels)")
    runs = []
    for name in MODELS:
        for foreach in (True, False, True):  # foreach=True twice: the spread between repeats
            r = measure(name, foreach, args)
            print(f"{name} foreach={foreach}: step {r['step_ms_median']:.3f} ms, "
                  f"update {r['update_ms_median']:.3f} ms", flush=True)
            runs.append(r)
        if args.weight_decay > 0:
            r = measure(name, True, args, args.weight_decay)
            print(f"{name} foreach=True weight_decay={args.weight_decay}: step {r['step_ms_median']:.3f} ms, "
                  f"update {r['update_ms_median']:.3f} ms", flush=True)
            runs.append(r)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "torchvision": torchvision.__version__, "steps": args.steps, "warmup": args.warmup,
           "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
           "runs": runs}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
