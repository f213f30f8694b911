#!/usr/bin/env python3
"""Times the bench suite's training steps on a real GPU, unprofiled: the
measured side of "simulated vs measured" for models the calibration never
saw (docs/CALIBRATION.md, "Out of sample: the bench suite").

    python3 graphs/bench/time_steps.py --models llama_160m,moe_8x --out steps.jsonl [--device cuda]

Needs only PyTorch 2.x (and torchvision for torchvision models). Each model
is export_bench.py's builder, optimizer and autocast, run as
calibration/hardware/record_gpu_traces.py runs its recordings (the same
optimizer function; `warmup` steps, `settle` unsynchronized steps, then
`timed` steps between two synchronizations: the steady-state period, the
same definition as the recordings' unprofiled step). One JSON line per
model; a model that fails is a line with "error" and the others go on.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import export_bench  # noqa: E402  (the builders; imports gosim only in its main)


def time_one(name, device, warmup, settle, timed):
    build, _, amp = export_bench.MODELS[name]
    torch.manual_seed(0)
    model, make, loss_fn, opt_name, settings = build()
    model = model.to(device).train()
    opt = export_bench.recorder.optimizer(opt_name, model.parameters())
    inputs = make(device)
    kind = "cuda" if device.type == "cuda" else "cpu"

    def step():
        opt.zero_grad(set_to_none=True)
        if amp:
            with torch.autocast(kind, dtype=torch.bfloat16):
                loss = loss_fn(model, inputs)
        else:
            loss = loss_fn(model, inputs)
        loss.backward()
        opt.step()

    sync = torch.cuda.synchronize if kind == "cuda" else (lambda: None)
    for _ in range(warmup + settle):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(timed):
        step()
    sync()
    out = {"model": name, "step_s": (time.perf_counter() - start) / timed, "timed_steps": timed,
           "warmup_steps": warmup, "settle_steps": settle, "timing": "synchronized before and after",
           "optimizer": opt_name, "autocast": amp, "settings": settings, "torch": torch.__version__}
    if kind == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
        out["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
        del model, opt, inputs
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", required=True, help=f"comma-separated, of: {', '.join(export_bench.MODELS)}")
    parser.add_argument("--out", required=True, help="JSON lines, appended")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--settle", type=int, default=5)
    parser.add_argument("--timed", type=int, default=20)
    args = parser.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in export_bench.MODELS]
    if unknown:
        sys.exit(f"time_steps.py: unknown model {unknown[0]} (known: {', '.join(export_bench.MODELS)})")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("time_steps.py: no CUDA device (use --device cpu for a smoke test)")
    device = torch.device(args.device)
    for name in names:
        try:
            row = time_one(name, device, args.warmup, args.settle, args.timed)
            print(f"{name}: {row['step_s'] * 1e3:.2f} ms per step", flush=True)
        except Exception as e:  # one model's failure must not lose the others
            row = {"model": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
            print(f"{name}: FAILED {row['error']}", flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
