#!/usr/bin/python3
"""GPU kernel time of one profiled operator, grouped by its input shapes.

Usage: kernels_by_shape.py TRACE.json[.gz] --op NAME [--top 20] [--csv OUT.csv]

TRACE is a PyTorch profiler (Kineto) trace recorded with input shapes, such
as those of calibration/data/gpu. Every instance of operator NAME (exact,
e.g. aten::cudnn_batch_norm_backward) gets the kernels that the CUDA runtime
calls it made on its thread launched (joined by correlation id), nested
operators' included. One row per distinct input shape list: instances,
mean kernel microseconds, the first input's elements, and its elements per
channel (dimension 1) with the mean nanoseconds per such element, the
quantity a batch norm's kernels follow (docs/CALIBRATION.md, "Fitting").
For a convolution backward (inputs grad_output, input, weight, as
aten::convolution_backward has them) the rows also give the kernel size,
the stride and the picoseconds per multiply-accumulate of the forward
convolution (output elements x input channels per group x kernel
elements), the quantity to compare across kernel sizes ("GPU side").
Rows are sorted by total kernel time.
"""
import argparse
import bisect
import csv
import gzip
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gosim_analysis import AnalysisError, fail, fmt, markdown_table  # noqa: E402


def load_events(path):
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            trace = json.load(f)
    except (OSError, EOFError, ValueError) as e:
        raise AnalysisError(f"{path}: cannot read a JSON trace: {e}") from e
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise AnalysisError(f"{path}: no traceEvents list; expected a PyTorch profiler (Kineto) trace")
    return events


def kernel_times(path, events, op_name):
    """(input dims, kernel microseconds) per instance of `op_name`."""
    try:
        return _kernel_times(events, op_name)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise AnalysisError(f"{path}: a trace event lacks a field or has one of the wrong type ({e!r}); "
                            "expected a PyTorch profiler (Kineto) trace") from e


def _kernel_times(events, op_name):
    kernels = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memset") and "correlation" in e.get("args", {}):
            corr = e["args"]["correlation"]
            kernels[corr] = kernels.get(corr, 0.0) + float(e.get("dur", 0.0))
    runtime = defaultdict(list)  # thread -> [(start, correlation)]
    for e in events:
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            runtime[e.get("tid")].append((float(e["ts"]), e["args"]["correlation"]))
    for calls in runtime.values():
        calls.sort()
    starts = {tid: [c[0] for c in calls] for tid, calls in runtime.items()}
    out = []
    for e in events:
        if e.get("cat") != "cpu_op" or e.get("name") != op_name:
            continue
        dims = e.get("args", {}).get("Input Dims")
        if dims is None:
            continue
        tid, begin = e.get("tid"), float(e["ts"])
        end = begin + float(e.get("dur", 0.0))
        calls = runtime.get(tid, [])
        i = bisect.bisect_left(starts.get(tid, []), begin)
        total = 0.0
        while i < len(calls) and calls[i][0] < end:
            total += kernels.get(calls[i][1], 0.0)
            i += 1
        out.append((json.dumps(dims), total))
    return out


def conv_geometry(shapes):
    """(kernel 'HxW', stride, forward MACs) of a convolution backward's
    [grad_output, input, weight, ...] input shapes; None for anything else."""
    if len(shapes) < 3 or not all(isinstance(s, list) and len(s) == 4 and
                                  all(isinstance(d, int) and d > 0 for d in s) for s in shapes[:3]):
        return None
    grad_out, x, weight = shapes[:3]
    if weight[0] != grad_out[1] or grad_out[0] != x[0] or x[1] % weight[1] != 0:
        return None
    stride = x[2] // grad_out[2] if grad_out[2] <= x[2] else None
    macs = math.prod(grad_out) * weight[1] * weight[2] * weight[3]
    return f"{weight[2]}x{weight[3]}", stride, macs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--op", required=True, help="operator name as the trace has it, e.g. aten::cudnn_batch_norm")
    parser.add_argument("--top", type=int, default=20, help="rows to print (all go to --csv)")
    parser.add_argument("--csv", help="write every row here")
    args = parser.parse_args()
    try:
        if args.top < 1:
            raise AnalysisError(f"--top must be at least 1, not {args.top}")
        events = load_events(args.trace)
        instances = kernel_times(args.trace, events, args.op)
        if not instances:
            def key(name):
                return str(name).split("::")[-1].replace("_", "").lower()

            names = sorted({e.get("name") for e in events if e.get("cat") == "cpu_op" and
                            key(args.op) in key(e.get("name"))})
            hint = f" (similar: {', '.join(names[:6])})" if names else ""
            raise AnalysisError(f"{args.trace}: no instance of '{args.op}' with recorded input shapes{hint}; "
                                "record with record_shapes=True and give the operator's exact name")
        groups = defaultdict(list)
        for dims, us in instances:
            groups[dims].append(us)
        rows = []
        for dims, times in groups.items():
            shapes = json.loads(dims)
            first = shapes[0] if shapes and isinstance(shapes[0], list) else []
            if not all(isinstance(d, int) and d >= 0 for d in first):
                first = []  # a tensor list or a scalar: no element counts
            elements = math.prod(first) if first else None
            per_channel = elements / first[1] if first and len(first) >= 2 and first[1] > 0 else None
            mean = sum(times) / len(times)
            conv = conv_geometry(shapes)
            rows.append({"input_dims": dims, "instances": len(times), "mean_us": mean, "total_us": sum(times),
                         "elements": elements, "per_channel": per_channel,
                         "ns_per_channel_element": mean * 1000 / per_channel if per_channel else None,
                         "kernel": conv[0] if conv else None, "stride": conv[1] if conv else None,
                         "ps_per_mac": mean * 1e6 / conv[2] if conv else None})
        rows.sort(key=lambda r: -r["total_us"])
        if args.csv:
            with open(args.csv, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        print(f"{args.op} in {os.path.basename(args.trace)}: {len(instances)} instances, {len(rows)} input shapes, "
              f"{fmt(sum(r['total_us'] for r in rows) / 1000)} ms of kernels")
        header = ["input dims", "instances", "mean kernel us", "first input elements", "elements per channel",
                  "ns per channel element"]
        table = [[r["input_dims"], r["instances"], f"{r['mean_us']:,.1f}", fmt(r["elements"]), fmt(r["per_channel"]),
                  "-" if r["ns_per_channel_element"] is None else f"{r['ns_per_channel_element']:.2f}"]
                 for r in rows[:args.top]]
        if any(r["ps_per_mac"] is not None for r in rows):
            header += ["kernel", "stride", "ps per forward MAC"]
            for line, r in zip(table, rows):
                line += ["-", "-", "-"] if r["ps_per_mac"] is None else \
                    [r["kernel"], "-" if r["stride"] is None else r["stride"], f"{r['ps_per_mac']:.2f}"]
        print(markdown_table(header, table), end="")
    except AnalysisError as e:
        fail(e)


if __name__ == "__main__":
    main()
