#!/usr/bin/env python3
"""Leave-one-model-out on this machine's CPU, in one command.

Profiles every model of the manifest (calibration/evaluation_cpu.yaml) that
the cache folder lacks, with `gosim profile` (a LibTorch build), then runs
`gosim calibrate --evaluate` on the cached traces: each model is predicted by
a profile fitted on the others, and the table (model, measured period,
predicted, error; median and worst) is printed. From the repository root:

    nice -n 10 python3 calibration/evaluate_cpu.py [--cache runs/cpu_traces] [--refresh] [--fit nnls]
                                                   [--preserve-total]

The load average is printed before and after: step times taken while other
processes share the cores are not this machine's (docs/CALIBRATION.md).
--refresh re-profiles every model (the cache otherwise keeps earlier traces,
whose timings are those of the machine state when they were recorded).
"""
import argparse
import os
import subprocess
import sys
import time

import yaml


def fail(message):
    sys.exit(f"evaluate_cpu.py: {message}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", default="calibration/evaluation_cpu.yaml")
    parser.add_argument("--cache", default="runs/cpu_traces", help="folder of the recorded traces")
    parser.add_argument("--gosim", default="build/bin/gosim")
    parser.add_argument("--refresh", action="store_true", help="re-profile every model")
    parser.add_argument("--max-median-error", type=float, help="passed to gosim calibrate --evaluate")
    parser.add_argument("--fit", choices=["huber", "nnls"], help="passed to gosim calibrate --evaluate")
    parser.add_argument("--preserve-total", action="store_true", help="passed to gosim calibrate --evaluate")
    parser.add_argument("--profile-only", action="store_true",
                        help="record the missing traces, evaluate nothing (calibration/hardware/replay_experiment.sh)")
    parser.add_argument("--exclude", default="", help="space- or comma-separated model names not to record")
    args = parser.parse_args()

    if not os.access(args.gosim, os.X_OK):
        fail(f"{args.gosim}: no gosim program here; build it (make build) or give --gosim PATH")
    try:
        with open(args.manifest) as f:
            manifest = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        fail(f"{args.manifest}: {e}")
    entries = manifest.get("traces") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not entries:
        fail(f"{args.manifest}: expected a non-empty list `traces` of {{name, file, graph}}")
    steps = int(manifest.get("profile_steps", 10))
    warmup = int(manifest.get("profile_warmup", 3))

    load = os.getloadavg()
    print(f"cores: {os.cpu_count()}; load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    os.makedirs(args.cache, exist_ok=True)
    started = time.time()
    excluded = set(args.exclude.replace(",", " ").split())
    names = {entry.get("name") for entry in entries if isinstance(entry, dict)}
    for name in sorted(excluded - names):
        fail(f"--exclude {name}: no such model in {args.manifest} (its models: {', '.join(sorted(names))})")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "file" not in entry or "graph" not in entry:
            fail(f"{args.manifest}: traces[{i}] needs `file` and `graph` (a model profiled on this machine)")
        if entry.get("name") in excluded:
            continue
        out = os.path.join(args.cache, entry["file"])
        if os.path.exists(out) and not args.refresh:
            print(f"{entry.get('name', out)}: cached {out}")
            continue
        command = [args.gosim, "profile", "--graph", str(entry["graph"]), "--cluster", "local", "--steps",
                   str(steps), "--warmup", str(warmup), "--out", out]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            last = (run.stderr.strip() or run.stdout.strip()).splitlines()
            fail(f"profiling {entry.get('name')} failed: {last[-1] if last else run.returncode} "
                 f"(command: {' '.join(command)})")
        summary = [line for line in run.stdout.splitlines() if "steps after" in line]
        print(f"{entry.get('name', out)}: {summary[0] if summary else 'profiled'} -> {out}")
    print(f"profiling took {time.time() - started:.0f} s")
    if args.profile_only:
        return 0

    command = [args.gosim, "calibrate", "--evaluate", "--manifest", args.manifest, "--traces-dir", args.cache]
    if args.fit is not None:
        command += ["--fit", args.fit]
    if args.preserve_total:
        command += ["--preserve-total"]
    if args.max_median_error is not None:
        command += ["--max-median-error", str(args.max_median_error)]
    sys.stdout.flush()
    rc = subprocess.run(command).returncode
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{time.time() - started:.0f} s in all")
    return rc


if __name__ == "__main__":
    sys.exit(main())
