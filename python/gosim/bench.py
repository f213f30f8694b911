"""Your agent on gosim's benchmark, under the budget accounting gosim's own agents get.

    import gosim.bench

    def my_agent(graph, cluster, evaluate, seed):
        rng = np.random.default_rng(seed)
        best = None
        for _ in range(100):
            devices = rng.integers(0, cluster.num_devices, graph.num_nodes, dtype=np.int32)
            evaluate(devices)                      # every call counts toward the budget
        return None                                # the best evaluated decision is the result

    rows = gosim.bench.evaluate(my_agent, split="valid", budget=1000, seeds=3, output="runs/my_agent")
    print(gosim.bench.table(["runs/bench", "runs/my_agent"]))

`evaluate(agent, ...)` runs `agent` on every graph of a split of the bench
suite (configs/suites/bench.yaml) on a cluster (h100x8_nvswitch), once per
seed, with the simulator of `gosim run` (cost model `auto`: the calibrated,
host-aware profile). The agent is a callable

  - agent(graph, cluster, evaluate, seed): `evaluate` is a budgeted
    gosim.Simulator.evaluate (devices, priority=None, fusion=None,
    transfer_priority=None, *, data_parallel=0) -> gosim.Evaluation
    (data_parallel=N instead of a placement: DDP over N GPUs); or
  - with env=True, agent(env, seed): env is a gosim.env.PlacementEnv whose
    simulator is budgeted the same way.

Every simulation counts (evaluate, evaluate_batch, simulate); past the
budget a call raises BudgetExhausted, which ends the run as a normal stop.
The result of a run is the best decision it evaluated (feasible first, then
by step time); a decision the agent returns that it never evaluated is
evaluated then, if the budget allows (an array of devices, or a dict of
evaluate's keyword arguments, e.g. {"data_parallel": 8}). Rows are written, one JSON line per
(graph, seed), to OUTPUT/results.jsonl in the format of `gosim run`'s
results (docs/EXPERIMENTS.md), so that table() sets them beside gosim's own
agents (a run folder of `gosim run configs/experiments/bench.yaml`).

The test split is sealed: split="test" needs final=True, and each run is
then logged in OUTPUT/final_runs.jsonl (count them: a method designed while
looking at test results is not evaluated by them).
"""

import inspect
import json
import math
import os
import statistics
import time

import numpy as np

from . import _errors

__all__ = ["BudgetExhausted", "evaluate", "table"]

DEFAULT_SUITE = "configs/suites/bench.yaml"
DEFAULT_CLUSTER = "h100x8_nvswitch"


class BudgetExhausted(_errors.StateError):
    """The agent asked for more simulations than its budget."""


class _Budgeted:
    """A gosim.Simulator whose simulations are counted and capped."""

    def __init__(self, simulator, budget):
        self._sim = simulator
        self.budget = budget
        self.used = 0
        self.best = None          # (key, devices, priority, fusion, transfer_priority, evaluation)
        self.curve = []           # [evaluations, seconds, best step time]
        self.started = time.perf_counter()

    def __getattr__(self, name):  # graph, cluster, cost_model, num_nodes, ...
        return getattr(self._sim, name)

    @property
    def evaluations(self):
        return self.used

    def _charge(self, count):
        if self.used + count > self.budget:
            raise BudgetExhausted(f"the budget of {self.budget} simulations is spent ({self.used} used)")
        self.used += count

    def _record(self, key, decision, result):
        if self.best is None or key < self.best[0]:
            self.best = (key,) + decision + (result,)
            self.curve.append([self.used, time.perf_counter() - self.started, float(result.step_time_s)])

    def evaluate(self, devices=None, priority=None, fusion=None, transfer_priority=None, *, data_parallel=0):
        self._charge(1)
        result = self._sim.evaluate(devices, priority=priority, fusion=fusion, transfer_priority=transfer_priority,
                                    data_parallel=data_parallel)
        key = (not result.feasible, float(result.step_time_s))
        kept = None if devices is None else np.array(devices, copy=True)
        self._record(key, (kept, priority, fusion, transfer_priority, data_parallel), result)
        return result

    def evaluate_batch(self, decisions, priorities=None, fusions=None, transfer_priorities=None):
        decisions = np.asarray(decisions) if not isinstance(decisions, (list, tuple)) else decisions
        self._charge(len(decisions))
        batch = self._sim.evaluate_batch(decisions, priorities=priorities, fusions=fusions,
                                         transfer_priorities=transfer_priorities)
        for i in range(len(decisions)):
            key = (not bool(batch.feasible[i]), float(batch.step_time_s[i]))
            if self.best is None or key < self.best[0]:
                # Re-evaluation would cost a simulation: keep what the batch said.
                part = lambda seq: None if seq is None else seq[i]  # noqa: E731
                decision = (np.array(decisions[i], copy=True), part(priorities), part(fusions),
                            part(transfer_priorities))
                self.best = (key,) + decision + (_BatchRow(batch, i),)
                self.curve.append([self.used, time.perf_counter() - self.started, key[1]])
        return batch

    def simulate(self, *args, **kwargs):
        self._charge(1)
        return self._sim.simulate(*args, **kwargs)


class _BatchRow:
    """One decision of a gosim.BatchEvaluation, shaped like a gosim.Evaluation."""

    def __init__(self, batch, i):
        self.step_time_s = float(batch.step_time_s[i])
        self.feasible = bool(batch.feasible[i])
        self.max_peak_memory_bytes = float(np.max(batch.peak_memory_bytes[i]))
        self.host_busy_s = float("nan")


def _call_agent(agent, args, seed):
    try:
        params = inspect.signature(agent).parameters
    except (TypeError, ValueError):
        params = {}
    takes_seed = "seed" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()) or \
        len([p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) > len(args)
    return agent(*args, seed) if takes_seed else agent(*args)


def _write_line(path, record):
    # One whole line per write, flushed: an interrupted run leaves whole lines.
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def evaluate(agent, split="valid", budget=1000, seeds=3, *, label=None, suite=DEFAULT_SUITE,
             cluster=DEFAULT_CLUSTER, cost_model="auto", graphs=None, env=False, final=False, output=None,
             progress=True):
    """Runs `agent` on the graphs of one split of `suite` (see the module's doc).

    budget: simulations per (graph, seed); seeds: a count (0, 1, ...) or a
    list; graphs: names of the split to run (default all); label: the agent's
    name in rows and tables (default its __name__); output: a folder for
    results.jsonl (and final_runs.jsonl), where finished (graph, seed) rows
    are kept and not run again. Returns the rows (dicts).
    """
    import gosim
    if not callable(agent):
        raise _errors.ConfigError("gosim.bench.evaluate: agent must be a callable (see help(gosim.bench))")
    if split == "test" and not final:
        raise _errors.ConfigError("gosim.bench.evaluate: the test split is sealed; pass final=True for a final "
                                  "evaluation (logged in final_runs.jsonl), and design on split='valid'")
    if not isinstance(budget, int) or budget < 1:
        raise _errors.ConfigError(f"gosim.bench.evaluate: budget={budget!r} must be an int >= 1")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list:
        raise _errors.ConfigError("gosim.bench.evaluate: seeds must name at least one seed")
    label = label or getattr(agent, "__name__", type(agent).__name__)
    the_suite = gosim.load_suite(suite)
    names = the_suite.names_of(split)
    if not names:
        raise _errors.ConfigError(f"gosim.bench.evaluate: suite {the_suite.name} has no graph in split {split!r}")
    if graphs is not None:
        unknown = [g for g in graphs if g not in names]
        if unknown:
            raise _errors.ConfigError(f"gosim.bench.evaluate: {unknown} not in the {split} split of "
                                      f"{the_suite.name} (it has {', '.join(names)})")
        names = list(graphs)
    machine = gosim.load_cluster(cluster)
    done = {}
    results_path = None
    if output is not None:
        os.makedirs(output, exist_ok=True)
        results_path = os.path.join(output, "results.jsonl")
        if os.path.exists(results_path):
            for row in gosim.read_results(output):
                done[(row["graph"], row["label"], row["seed"], row["budget"]["evaluations"])] = row
    rows = []
    for name in names:
        graph = the_suite.graph(name)
        for seed in seed_list:
            key = (name, label, seed, budget)
            if key in done:
                rows.append(done[key])
                continue
            simulator = gosim.Simulator(graph, machine, cost_model=cost_model)
            budgeted = _Budgeted(simulator, budget)
            started = time.perf_counter()
            returned = None
            try:
                if env:
                    returned = _call_agent(agent, (gosim.env.PlacementEnv(graph, machine, simulator=budgeted),), seed)
                else:
                    returned = _call_agent(agent, (graph, machine, budgeted.evaluate), seed)
            except BudgetExhausted:
                pass
            if returned is not None and budgeted.used < budget:
                if isinstance(returned, dict):  # decision parts: {"devices": ..., ...} or {"data_parallel": N}
                    budgeted.evaluate(**returned)
                else:
                    budgeted.evaluate(np.asarray(returned, dtype=np.int32))
            if budgeted.best is None:
                raise _errors.StateError(f"gosim.bench.evaluate: agent {label} evaluated nothing on {name} (seed "
                                         f"{seed}); call evaluate() at least once")
            best = budgeted.best[-1]
            row = {"format": "gosim.result", "version": 1, "experiment": "bench", "graph": name,
                   "nodes": graph.num_nodes, "cluster": cluster, "devices": machine.num_devices, "agent": label,
                   "label": label, "seed": seed, "budget": {"evaluations": budget, "wall_seconds": 0.0},
                   "objective": "step_time", "best_objective": float(best.step_time_s),
                   "feasible": bool(best.feasible), "step_time": float(best.step_time_s),
                   "peak_memory": float(best.max_peak_memory_bytes), "cost_model": simulator.cost_model_used,
                   "evaluations": budgeted.used, "simulations": budgeted.used,
                   "wall_seconds": time.perf_counter() - started, "curve": budgeted.curve,
                   "source": "gosim.bench.evaluate (Python)", "split": split,
                   "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            rows.append(row)
            if results_path is not None:
                _write_line(results_path, row)
                if split == "test":
                    _write_line(os.path.join(output, "final_runs.jsonl"),
                                {"graph": name, "label": label, "seed": seed, "at": row["finished_at"]})
            if progress:
                print(f"[gosim.bench] {label} on {name}, seed {seed}: {row['step_time'] * 1e3:.3f} ms "
                      f"({'feasible' if row['feasible'] else 'infeasible'}) after {row['evaluations']} "
                      f"simulations", flush=True)
    return rows


def table(folders, reference="single_device"):
    """A Markdown table of the rows in run folders (gosim run's or evaluate()'s):
    per agent label and graph, the mean step time over seeds (ms; infeasible
    runs left out and counted), and the geometric-mean speedup over
    `reference` on the graphs both have."""
    import gosim
    rows = []
    for folder in ([folders] if isinstance(folders, (str, os.PathLike)) else folders):
        rows += gosim.read_results(folder)
    if not rows:
        raise _errors.ConfigError("gosim.bench.table: no rows in the given folders")
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    labels = list(dict.fromkeys(r["label"] for r in rows))
    means = {}
    for lab in labels:
        for g in graphs:
            times = [r["step_time"] for r in rows if r["label"] == lab and r["graph"] == g and r["feasible"]]
            runs = sum(1 for r in rows if r["label"] == lab and r["graph"] == g)
            if runs:
                means[lab, g] = (statistics.fmean(times) if times else None, runs - len(times))
    lines = ["| agent | " + " | ".join(graphs) + f" | geo-mean speedup vs {reference} (graphs) |",
             "|---|" + "---:|" * (len(graphs) + 1)]
    for lab in labels:
        cells, ratios = [], []
        for g in graphs:
            mean, infeasible = means.get((lab, g), (None, 0))
            text = "" if (lab, g) not in means else ("OOM" if mean is None else f"{mean * 1e3:.3f}")
            if infeasible and mean is not None:
                text += f" ({infeasible} OOM)"
            cells.append(text)
            ref = means.get((reference, g), (None, 0))[0]
            if mean is not None and ref is not None:
                ratios.append(ref / mean)
        speedup = f"{math.exp(statistics.fmean(math.log(x) for x in ratios)):.3f}x ({len(ratios)})" if ratios else ""
        lines.append(f"| {lab} | " + " | ".join(cells) + f" | {speedup} |")
    return "\n".join(lines) + "\n"
