#!/usr/bin/env bash
# `mpirun -np 2 gosim train` spreads each step's simulator batches (HRL, GO)
# and search jobs (REGAL's BRKGA runs) over the processes and gives the
# single-process run: the same curves, step for step (wall times aside).
#   mpi_train_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cat > "$work/suite.yaml" <<YAML
name: tiny
graphs:
  - {name: g1, generator: regal_random, params: {nodes: 40, seed: 3}, split: train}
  - {name: g2, generator: regal_random, params: {nodes: 50, seed: 4}, split: train}
  - {name: g3, generator: regal_random, params: {nodes: 45, seed: 5}, split: valid}
  - {name: g4, generator: regal_random, params: {nodes: 45, seed: 6}, split: test}
YAML
run_both() {  # NAME CONFIG OVERRIDES...
  local name=$1 config=$2
  shift 2
  "$gosim" train "$config" "$@" --run-dir "$work/$name.single" --no-progress > "$work/$name.single.log" 2>&1
  mpirun -np 2 "$gosim" train "$config" "$@" --run-dir "$work/$name.mpi" --no-progress > "$work/$name.mpi.log" 2>&1
}
run_both hrl configs/experiments/hrl_train.yaml suite="$work/suite.yaml" graph=g1 steps=4 checkpoint_every=2 \
  options.samples_per_step=6
run_both regal configs/experiments/regal_train.yaml --final suite="$work/suite.yaml" train_graphs=2 valid_graphs=1 steps=3 \
  samples=3 brkga.evaluations=60 brkga.population=10 evaluate.graphs=1 evaluate.budget=60 valid_every=3 \
  checkpoint_every=2
python3 - "$work" <<'PY'
import csv, os, sys
work = sys.argv[1]
def rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in csv.DictReader(f)]
for name in ("hrl", "regal"):
    single = rows(os.path.join(work, name + ".single", "curves.csv"))
    mpi = rows(os.path.join(work, name + ".mpi", "curves.csv"))
    assert single, f"{name}: no steps"
    assert single == mpi, f"{name}: the curves differ under mpirun -np 2"
    assert os.path.isdir(os.path.join(work, name + ".mpi.rank1")), f"{name}: rank 1 wrote no copy"
print("mpi_train_test: hrl and regal train the same under mpirun -np 2")
PY
