#!/usr/bin/env python3
"""msr-fiddle's layer graphs under their max-load objective (results/msr/).

For each layer graph of ../shared/data/msr-fiddle (6 accelerators and a CPU
core, `--cluster from-graph`): everything on one accelerator, the human
experts' split (the inference split applied to the training graph through
colorClass, as their tools do), pipeline_dp (the optimal contiguous split),
the integer program `ilp` on CBC (any split, not only contiguous ones)
with a time limit and its gap, the search agents optimizing max_load at
one budget of simulator evaluations, over several seeds, and BRKGA and
simulated annealing optimizing the engine's pipeline time (`throughput`)
at the same budget. Every decision is then simulated once more
(`gosim simulate --objective max_load --json`) for its max-load, its
feasibility and the engine's single-sample step time.

    experiments/paper/msr_table.py [--budget 20000] [--seeds 5] [--ilp-seconds 60] [--out results/msr] [--graphs a,b]

Runs are appended to OUT/runs.jsonl as they finish (a re-run resumes: runs
already there are not redone); OUT/table.md is rewritten atomically from
them at the end. Needs build/bin/gosim (make build) and ../shared (or
GOSIM_SHARED_DATA); without the data it says so and exits 0.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPHS = ["bert24_inference", "bert24_training", "gnmt_inference", "gnmt_training", "resnet50_inference",
          "resnet50_training", "inceptionv3_inference", "inceptionv3_training"]
SEARCH = ["brkga", "local_search", "simulated_annealing", "random_search"]
# The same search optimizing the engine's pipeline time itself (the
# throughput objective at MICRO_BATCHES micro-batches) instead of max-load.
THROUGHPUT = ["brkga@throughput", "simulated_annealing@throughput"]


def shared_dir():
    given = os.environ.get("GOSIM_SHARED_DATA")
    if given == "none":
        return None
    path = os.path.join(given, "msr-fiddle") if given else os.path.join(ROOT, "..", "shared", "data", "msr-fiddle")
    return path if os.path.isdir(path) else None


def gosim(*args, timeout=None):
    program = os.environ.get("GOSIM", os.path.join(ROOT, "build", "bin", "gosim"))
    done = subprocess.run([program, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode not in (0, 3):  # 3: no feasible decision (reported as such)
        raise RuntimeError(f"gosim {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


MICRO_BATCHES = 16


def measure(graph, decision):
    args = ["simulate", "--graph", graph, "--cluster", "from-graph", "--json"]
    if decision:
        args += ["--decision", decision]
    out = json.loads(gosim(*args, "--objective", "max_load").stdout)
    run = {"max_load_s": out["objective_value"], "step_time_s": out["step_time"], "feasible": out["feasible"]}
    # The engine's pipeline: MICRO_BATCHES micro-batches in flight, GPipe for
    # training graphs, streaming for inference (sim/pipeline.h).
    schedule = "gpipe" if graph.endswith("_training.json") else "streaming"
    piped = json.loads(gosim(*args, "--objective", "throughput", "--option", f"micro_batches={MICRO_BATCHES}",
                             "--option", f"schedule={schedule}").stdout)
    run["pipeline_s"] = piped["objective_value"]
    run["pipeline_feasible"] = piped["feasible"]
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=20000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "msr"))
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--ilp-seconds", type=float, default=60.0, help="CBC's time limit per graph")
    parser.add_argument("--table-only", metavar="FILE",
                        help="run nothing: write the table of OUT/runs.jsonl to FILE (tests/analysis/results_test.sh)")
    parser.add_argument("--dp-timeout", type=float, default=1800.0, help="seconds pipeline_dp may take per graph")
    args = parser.parse_args()
    if args.table_only:
        runs = {}
        with open(os.path.join(args.out, "runs.jsonl")) as f:
            for line in f:
                if line.strip():
                    run = json.loads(line)
                    runs[(run["graph"], run["method"], run["seed"], run["budget"])] = run
        write_table(args, [g for g in args.graphs.split(",") if g], runs, args.table_only)
        return 0
    data = shared_dir()
    if data is None:
        print("msr_table: skipped, no msr-fiddle data (../shared/data/msr-fiddle or GOSIM_SHARED_DATA)")
        return 0
    os.makedirs(args.out, exist_ok=True)
    runs_path = os.path.join(args.out, "runs.jsonl")
    done = {}
    if os.path.exists(runs_path):
        with open(runs_path) as f:
            for line in f:
                if line.strip():
                    run = json.loads(line)
                    done[(run["graph"], run["method"], run["seed"], run["budget"])] = run

    def record(run):
        done[(run["graph"], run["method"], run["seed"], run["budget"])] = run
        with open(runs_path, "a") as f:
            f.write(json.dumps(run) + "\n")
            f.flush()
            os.fsync(f.fileno())

    graphs = [g for g in args.graphs.split(",") if g]
    for name in graphs:
        if name not in GRAPHS:
            sys.exit(f"msr_table: unknown graph '{name}' (known: {', '.join(GRAPHS)})")
        graph = os.path.join(data, "LayerGraphs", name + ".json")
        model = name.rsplit("_", 1)[0]
        expert = os.path.join(data, "human-experts", model + "_" + name.rsplit("_", 1)[1] + "_expert.json")
        if not os.path.exists(expert):
            expert = os.path.join(data, "human-experts", model + "_inference_expert.json")
        plans = [("single_accelerator", 0, None), ("expert", 0, None), ("pipeline_dp", 0, None), ("ilp", 0, None)]
        plans += [(agent, seed, None) for agent in SEARCH + THROUGHPUT for seed in range(1, args.seeds + 1)]
        for method, seed, _ in plans:
            budget = args.budget if method in SEARCH + THROUGHPUT else int(args.ilp_seconds) if method == "ilp" else 0
            if (name, method, seed, budget) in done:
                continue
            print(f"msr_table: {name} {method} seed {seed}", flush=True)
            start = time.time()
            run = {"graph": name, "method": method, "seed": seed, "budget": budget}
            if method == "single_accelerator":
                run.update(measure(graph, None))
            elif method == "expert":
                run.update(measure(graph, expert))
                run["split"] = os.path.basename(expert)
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    decision = os.path.join(tmp, "d.json")
                    try:
                        extra = ["--agent-option", f"time_limit={args.ilp_seconds:g}"] if method == "ilp" else []
                        agent, objective = method, "max_load"
                        if method in THROUGHPUT:
                            agent, objective = method.split("@")
                            extra = ["--option", f"micro_batches={MICRO_BATCHES}", "--option",
                                     "schedule=" + ("gpipe" if name.endswith("_training") else "streaming")]
                        out = gosim("optimize", "--graph", graph, "--cluster", "from-graph", "--agent", agent,
                                    "--objective", objective,
                                    "--budget", str(max(budget, 1) if method in SEARCH + THROUGHPUT else 1),
                                    "--seed", str(seed), "--no-progress", "--out", decision, *extra,
                                    timeout=args.dp_timeout if method == "pipeline_dp" else None)
                    except subprocess.TimeoutExpired:
                        run["refused"] = f"over {args.dp_timeout:.0f} s"
                    except RuntimeError as e:
                        run["refused"] = str(e).split(": ", 2)[-1][:200]
                    else:
                        for line in out.stdout.splitlines():
                            if " evaluations in " in line:
                                run["evaluations"] = int(line.split()[0])
                            if line.startswith("agent figures: "):
                                run["figures"] = {k: float(v) for k, v in
                                                  (item.split(" ") for item in line[15:].split(", "))}
                        if os.path.exists(decision):
                            run.update(measure(graph, decision))
                        else:
                            run["feasible"] = False
            run["wall_s"] = round(time.time() - start, 3)
            record(run)
    write_table(args, graphs, done)
    return 0


def write_table(args, graphs, done, path=None):
    methods = ["single_accelerator", "expert", "pipeline_dp", "ilp"] + SEARCH + THROUGHPUT
    lines = [
        "# msr-fiddle layer graphs: max-load (ms per sample), 6 accelerators + 1 CPU core",
        "",
        "Host: not modelled (execution none: the file's machine has no host table; its layers' latencies were "
        "measured per layer, docs/FORMATS.md).",
        "",
        "Generated by `experiments/paper/msr_table.py --budget %d --seeds %d --ilp-seconds %g` (docs/REPRODUCTION.md, "
        "\"msr-fiddle\"). `ilp` ran CBC for at most %g s (its gap to the bound after it). Max-load is msr-fiddle's objective (time per sample of a pipeline in steady state; "
        "docs/FORMATS.md); search agents optimize it at %d simulator evaluations, median over seeds "
        "[min, max]; `step` is the engine's single-sample step time of the same decision and `pipe` the "
        "engine's time per micro-batch with %d micro-batches in flight (GPipe for training, streaming for "
        "inference; sim/pipeline.h), in ms. The `@throughput` columns are BRKGA and simulated annealing "
        "optimizing that pipe time itself (`--objective throughput`, the same budget and seeds). "
        "`oom` marks a decision over an accelerator's memory; `-` a method that refused (reason below)."
        % (args.budget, args.seeds, args.ilp_seconds, args.ilp_seconds, args.budget, MICRO_BATCHES),
        "",
        "| graph | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    notes = []
    for name in graphs:
        cells = []
        for method in methods:
            budget = args.budget if method in SEARCH + THROUGHPUT else int(args.ilp_seconds) if method == "ilp" else 0
            runs = [r for (g, m, s, b), r in sorted(done.items()) if g == name and m == method and b == budget]
            if not runs:
                cells.append("")
                continue
            refused = [r for r in runs if "refused" in r]
            if refused:
                notes.append(f"- {name}, {method}: {refused[0]['refused']}")
                cells.append("-")
                continue
            measured = [r for r in runs if "max_load_s" in r]
            if not measured:
                cells.append("no feasible decision")
                continue
            loads = [r["max_load_s"] * 1e3 for r in measured]
            steps = [r["step_time_s"] * 1e3 for r in measured]
            pipes = [r["pipeline_s"] * 1e3 for r in measured if r.get("pipeline_feasible")]
            oom = sum(1 for r in runs if not r.get("feasible", False))
            text = "%.2f" % statistics.median(loads)
            if len(runs) > 1:
                text += " [%.2f, %.2f]" % (min(loads), max(loads))
            text += " (step %.1f" % statistics.median(steps)
            text += ", pipe %.1f)" % statistics.median(pipes) if pipes else ", pipe oom)"
            if oom:
                text += " oom %d/%d" % (oom, len(runs)) if len(runs) > 1 else " oom"
            if method == "ilp" and "figures" in runs[0]:
                text += " gap %.0f%%" % (100 * runs[0]["figures"].get("gap", 1.0))
            cells.append(text)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Refusals:", ""] + notes
    lines.append("")
    path = path or os.path.join(args.out, "table.md")
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(path)), delete=False) as f:
        f.write("\n".join(lines))
        tmp = f.name
    os.replace(tmp, path)
    print(f"msr_table: {path}")


if __name__ == "__main__":
    sys.exit(main())
