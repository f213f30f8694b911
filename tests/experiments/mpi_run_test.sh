#!/usr/bin/env bash
# `mpirun -np 2 gosim run` gives the same results as a single process, and a
# distributed run interrupted after a few cells resumes (under mpirun or
# not) without running them again.
#   mpi_run_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Open MPI refuses to run as root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cat > "$work/exp.yaml" <<YAML
name: mpi_test
graphs:
  - {generator: regal_random, params: {nodes: 60, seed: 1}, name: g1}
  - {generator: regal_random, params: {nodes: 80, seed: 2}, name: g2}
clusters: [tests/experiments/data/two_gpus.yaml]
objective: step_time
budget: {evaluations: 300}
seeds: 2
agents:
  - {name: single_device, seeds: 1}
  - {name: round_robin, seeds: 1}
  - {name: random_search}
  - {name: brkga, options: {population: 20}}
reference: single_device
YAML
"$gosim" run "$work/exp.yaml" output="$work/single" --no-progress > "$work/single.log" 2>&1
mpirun -np 2 "$gosim" run "$work/exp.yaml" output="$work/mpi" --no-progress > "$work/mpi.log" 2>&1
mpirun -np 2 "$gosim" run "$work/exp.yaml" output="$work/resumed" --no-progress --max-cells 5 \
  > "$work/part1.log" 2>&1
"$gosim" run "$work/exp.yaml" output="$work/resumed" --no-progress --max-cells 4 > "$work/part2.log" 2>&1
mpirun -np 2 "$gosim" run "$work/exp.yaml" output="$work/resumed" --no-progress > "$work/part3.log" 2>&1
grep -q "5 already finished" "$work/part2.log" || { echo "FAIL: the second slice did not resume"; exit 1; }
grep -q "9 already finished" "$work/part3.log" || { echo "FAIL: the third slice did not resume"; exit 1; }
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(folder):
    out = {}
    for line in open(os.path.join(work, folder, "results.jsonl")):
        r = json.loads(line)
        for volatile in ("wall_seconds", "finished_at"):
            r.pop(volatile)
        r["curve"] = [(p[0], p[2]) if isinstance(p, list) else (p["evaluations"], p["best_objective"])
                      for p in r["curve"]]
        decision = open(os.path.join(work, folder, r["decision"])).read()
        out[r["cell"]] = (r, decision)
    return out
single, mpi, resumed = load("single"), load("mpi"), load("resumed")
assert len(single) == 12, len(single)
for name, other in (("mpirun -np 2", mpi), ("interrupted and resumed", resumed)):
    assert other.keys() == single.keys(), (name, sorted(single.keys() ^ other.keys()))
    for cell in single:
        assert other[cell] == single[cell], (name, cell)
lines = sum(1 for _ in open(os.path.join(work, "resumed", "results.jsonl")))
assert lines == 12, f"a cell ran twice: {lines} lines"
print("mpi_run_test: 12 cells identical under mpirun -np 2 and after resuming")
PY
