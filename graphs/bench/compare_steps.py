#!/usr/bin/env python3
"""Simulated against measured training steps of the bench suite's models on
one GPU: for each line of time_steps.py's output, `gosim simulate` of the
model's committed graph on a calibrated preset (one device, the engine the
agents search, default options) beside the measured step, with the error.

    graphs/bench/compare_steps.py results/bench_steps/h200_steps.jsonl --cluster h200x8_nvswitch \\
        --out results/bench_steps/h200.md

Needs build/bin/gosim (or $GOSIM). The graphs were traced by PyTorch 1.13 on
a CPU (graphs/bench/README.md); the measured steps ran the same model code
with the PyTorch of the GPU machine (the line's `torch`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CALIBRATION = os.path.join(ROOT, "calibration", "data", "gpu", "graphs")


def graph_file(model):
    for folder in (HERE, CALIBRATION):
        path = os.path.join(folder, f"{model}.gosimgraph.gz")
        if os.path.exists(path):
            return path
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("steps", help="time_steps.py's JSON lines")
    parser.add_argument("--cluster", required=True, help="a calibrated preset of the GPU that measured them")
    parser.add_argument("--out", help="markdown table (default: stdout only)")
    args = parser.parse_args()
    program = os.environ.get("GOSIM", os.path.join(ROOT, "build", "bin", "gosim"))
    if not os.access(program, os.X_OK):
        sys.exit(f"compare_steps.py: {program} not found (make build, or set GOSIM)")
    rows, errors, gpus, torches, memory_errors = [], [], set(), set(), []
    with open(args.steps) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    for m in lines:
        if "error" in m:
            rows.append(f"| {m['model']} | - | - | - | - | - | - | not measured: {m['error']} |")
            continue
        gpus.add(m.get("gpu", "?"))
        torches.add(m.get("torch", "?"))
        path = graph_file(m["model"])
        if path is None:
            sys.exit(f"compare_steps.py: no committed graph for {m['model']}")
        done = subprocess.run([program, "simulate", "--graph", path, "--cluster", args.cluster, "--json"],
                              capture_output=True, text=True, cwd=ROOT)
        if done.returncode not in (0, 3):
            sys.exit(f"compare_steps.py: gosim simulate {path}: {done.stderr.strip()}")
        sim = json.loads(done.stdout)
        measured_peak = m.get("peak_memory_bytes", 0) / 2**30
        peaks = f"{measured_peak:.2f} | {sim['peak_memory'] / 2**30:.2f}" if measured_peak else \
            f"- | {sim['peak_memory'] / 2**30:.2f}"
        if measured_peak:
            memory_errors.append(abs(sim["peak_memory"] / 2**30 / measured_peak - 1.0))
        if not sim["feasible"] or not sim["completed"]:
            rows.append(f"| {m['model']} | {sim['kernels']:,} | {m['step_s'] * 1e3:.2f} | - | - | {peaks} | simulated "
                        "out of memory |")
            continue
        error = sim["step_time"] / m["step_s"] - 1.0
        errors.append(abs(error))
        rows.append(f"| {m['model']} | {sim['kernels']:,} | {m['step_s'] * 1e3:.2f} | {sim['step_time'] * 1e3:.2f} | "
                    f"{error * 100:+.1f}% | {peaks} | host {sim['host_busy_s'] * 1e3:.1f} ms |")
    head = [f"Simulated ({args.cluster}, one device, `gosim simulate`) against measured steps "
            f"({', '.join(sorted(gpus))}, PyTorch {', '.join(sorted(torches))}; `time_steps.py`, unprofiled, "
            "synchronized before and after 20 steps); peak memory: measured `torch.cuda.max_memory_allocated` "
            "against the simulated peak (GiB)", "",
            "| model | ops | measured ms | simulated ms | error | measured peak | simulated peak | simulated host busy |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]
    summary = (f"\n{len(errors)} models simulated to the end: median |error| {statistics.median(errors) * 100:.1f}%, "
               f"worst {max(errors) * 100:.1f}%\n") if errors else "\nno model measured\n"
    if memory_errors:
        summary += (f"peak memory of {len(memory_errors)} models: median |error| "
                    f"{statistics.median(memory_errors) * 100:.1f}%, worst {max(memory_errors) * 100:.1f}%\n")
    text = "\n".join(head + rows) + "\n" + summary
    print(text)
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            f.write(text)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
