#!/usr/bin/env bash
# Reproduces one of the papers' tables end to end: training where the table
# needs it, the experiment grid, the table in the paper's layout beside the
# paper's numbers (Markdown and LaTeX), and plots.
#
#   experiments/paper/reproduce.sh TABLE [--quick] [--out DIR] [--np N] [--seeds N] [--only LABELS] [--status]
#
# TABLE: hrl_table1, go_placement, go_multitask, regal_table1, regal_table2
# (list them with --help). --quick: small model sizes and
# budgets that finish on 2 cores in minutes (the numbers are then a smoke
# test of the pipeline, not the paper's setting); the default is the full
# setting of the configs in configs/experiments/paper/ (hours on 2 cores;
# meant for a real machine or a cluster). --seeds N: seeds per stochastic
# cell (default: the configs' 5, or 3 in quick mode; deterministic
# baselines run one). --only LABELS (comma-separated agent labels, as the
# table's columns name them in the configs) runs only those rows' cells of
# the grids now (`gosim run --only`) and makes a partial table without
# plots; the same command without --only finishes the grid. --status runs
# and trains nothing: it prints, per grid and agent, how many cells are done
# and pending for this build (and how many another build ran), with the
# table's own overrides, as `gosim run --list` alone cannot (the GO grids
# point at their pre-trained checkpoints). --np N runs the grids and training
# under `mpirun -np N` (docs/EXPERIMENTS.md). Results go to DIR/<TABLE>/
# (default runs/paper or runs/paper_quick); re-running resumes: finished
# cells and training steps are not redone. docs/REPRODUCTION.md has our
# numbers beside the papers'.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
  sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  echo "Tables:"
  echo "  hrl_table1    HRL Table 1: models on 2/4/8 K80s + CPU against CPU only, GPU only, Scotch, MinCut, expert"
  echo "  go_placement  GO placement: six models on 4 and 8 GPUs against expert, HRL, GDP-style GO; convergence (pre-trains GO)"
  echo "  go_multitask  GO multi-task: joint placement + scheduling + fusion against TF defaults (pre-trains GO)"
  echo "  regal_table1  REGAL Table 1: peak memory, % over BRKGA 5K (geometric mean) and % gap from best, every baseline (trains REGAL)"
  echo "  regal_table2  REGAL Table 2: running times of every method (shares regal_table1's training and grid;"
  echo "                its table goes to its own folder, DIR/regal_table2)"
}

table="" quick=0 out="" np=1 seeds="" only="" status=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --np) np=${2:?--np needs a process count}; shift ;;
    --seeds) seeds=${2:?--seeds needs a count}; shift ;;
    --only) only=${2:?--only needs agent labels, comma-separated}; shift ;;
    --status) status=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "reproduce.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$table" ] || { echo "reproduce.sh: one table at a time ('$table' and '$1')" >&2; exit 2; }
       table=$1 ;;
  esac
  shift
done
[ -n "$table" ] || { usage >&2; exit 2; }
case "$np" in ''|*[!0-9]*|0) echo "reproduce.sh: --np needs a positive integer, not '$np'" >&2; exit 2 ;; esac
[ -n "$seeds" ] || { [ $quick = 0 ] || seeds=3; }
case "$seeds" in ''|[1-9]|[1-9][0-9]) ;; *) echo "reproduce.sh: --seeds needs a count in 1-99, not '$seeds'" >&2; exit 2 ;; esac
case "$table" in
  hrl_table1|go_placement|go_multitask|regal_table1|regal_table2) ;;
  *) echo "reproduce.sh: unknown table '$table' (see --help)" >&2; exit 2 ;;
esac

GOSIM=${GOSIM:-build/bin/gosim}
PY=/usr/bin/python3
if [ ! -x "$GOSIM" ]; then
  echo "reproduce.sh: $GOSIM is not built; building it (make build)" >&2
  make build
fi
[ -n "$out" ] || { if [ $quick = 1 ]; then out=runs/paper_quick; else out=runs/paper; fi; }
dir=$out/$table
[ $status = 1 ] || mkdir -p "$dir"

launch=()
if [ "$np" -gt 1 ]; then
  launch=(mpirun -np "$np")
  [ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

say() { echo "== reproduce.sh $table: $*"; }
# True when the run makes no plots: a partial grid (--only) or --status.
no_plots() { [ -n "$only" ] || [ $status = 1 ]; }
# A table's grid is its test rows: it runs with --final, and every run is
# logged in the run folder's final_runs.jsonl (the tables print the count).
# Quick mode marks every cell (`mode: quick`, part of its identity) so that
# tables of it say "quick mode: pipeline check, not a result".
run_grid() {
  local mode=()
  [ $quick = 0 ] || mode=(mode=quick)
  [ -z "$seeds" ] || mode+=(seeds="$seeds")
  if [ $status = 1 ]; then
    echo "-- $1"
    "$GOSIM" run --list "$@" "${mode[@]}" | sed -n '/^agent /,$p'
    return
  fi
  local label select=()
  if [ -n "$only" ]; then
    for label in ${only//,/ }; do select+=(--only "$label"); done
  fi
  "${launch[@]}" "$GOSIM" run --final "${select[@]}" "$@" "${mode[@]}"
}

# agent CONFIG LABEL: the index of the agent labelled LABEL (its name when it
# has no label) in CONFIG's agents list, for overrides such as
# agents[N].budget.evaluations; rows added to a config never shift them.
agent() {
  $PY - "$@" <<'PY'
import sys, yaml
config, label = sys.argv[1:3]
labels = [a.get("label", a["name"]) for a in yaml.safe_load(open(config))["agents"]]
if label not in labels:
    sys.exit(f"reproduce.sh: {config} has no agent labelled {label}")
print(labels.index(label))
PY
}

# decision_of RUN_DIR GRAPH LABEL: "graph_spec cluster decision_path" of that cell.
decision_of() {
  $PY - "$@" <<'PY'
import json, os, sys
run, graph, label = sys.argv[1:4]
for line in open(os.path.join(run, "results.jsonl")):
    r = json.loads(line)
    if r["graph"] == graph and r["label"] == label:
        print(r["identity"]["graph"], r["identity"]["cluster"], os.path.join(run, r["decision"]))
        break
else:
    sys.exit(f"reproduce.sh: no cell of {label} on {graph} in {run}")
PY
}

# plots_for RUN_DIR GRAPH LABEL NAME: the decision's placement and timeline.
plots_for() {
  local spec cluster decision
  read -r spec cluster decision < <(decision_of "$1" "$2" "$3")
  "$GOSIM" graphs export "$spec" --out "$dir/$4.graph.json.gz" > /dev/null
  $PY analysis/plot_placement.py "$dir/$4.graph.json.gz" "$decision" --out "$dir/$4.placement.png"
  "$GOSIM" simulate --graph "$dir/$4.graph.json.gz" --cluster "$cluster" --decision "$decision" \
    --trace "$dir/$4.trace.json" > "$dir/$4.simulate.txt"
  $PY analysis/plot_timeline.py "$dir/$4.trace.json" --out "$dir/$4.timeline.png"
}

hrl_table1() {
  local quick_2=() quick_n=() config=configs/experiments/paper/hrl_table1_2gpu.yaml
  if [ $quick = 1 ]; then
    # Smaller models (shorter sequences, narrower LSTMs, smaller batches);
    # 1,600 evaluations (50 policy steps of 32) for each learned agent (HRL,
    # HRL without the locality prior, ColocRL) and the equal-budget search
    # controls. (The three configs list their agents in the same order.)
    local learned=("agents[$(agent $config hrl)].budget.evaluations=1600"
      "agents[$(agent $config hrl_no_prior)].budget.evaluations=1600"
      "agents[$(agent $config colocrl)].budget.evaluations=1600"
      "agents[$(agent $config brkga_warm)].budget.evaluations=1600"
      "agents[$(agent $config local_search_warm)].budget.evaluations=1600")
    quick_2=("${learned[@]}" 'graphs[0].params.batch=8' 'graphs[1].params.batch=8'
      'graphs[2].params={layers: 2, hidden: 512, vocab: 4000, seq_len: 8, batch: 32, training: true}'
      'graphs[3].params={layers: 2, hidden: 512, seq_len: 8, batch: 32, training: true}')
    quick_n=("${learned[@]}" 'graphs[0].params.seq_len=8' 'graphs[0].params.hidden=512' 'graphs[0].params.batch=32')
  fi
  say "grids on 2, 4 and 8 GPUs"
  run_grid configs/experiments/paper/hrl_table1_2gpu.yaml output="$dir/2gpu" "${quick_2[@]}"
  run_grid configs/experiments/paper/hrl_table1_4gpu.yaml output="$dir/4gpu" "${quick_n[@]}"
  run_grid configs/experiments/paper/hrl_table1_8gpu.yaml output="$dir/8gpu" "${quick_n[@]}"
  [ $status = 1 ] || say "table and plots"
  [ $status = 1 ] || $PY analysis/tables.py analysis/layouts/hrl_table1.yaml "$dir/2gpu" "$dir/4gpu" "$dir/8gpu" --out "$dir"
  no_plots || $PY analysis/plot_convergence.py "$dir/2gpu" "$dir/4gpu" --labels hrl,colocrl,human_expert,gpu_only \
    --out "$dir/convergence.png"
  no_plots || plots_for "$dir/2gpu" nmt2 hrl nmt2_hrl
  no_plots || plots_for "$dir/4gpu" nmt4 human_expert nmt4_expert
}

# GO: the pre-trained network a GO table fine-tunes, trained once.
# Placement head (go_placement): $out/go_pretrain_broad with
# configs/experiments/go_pretrain_broad.yaml, the 18 training graphs of
# configs/suites/go_broad.yaml on 4 and 8 GPUs (chosen over the paper_small
# train split on go_broad's valid split, docs/RESULTS.md). Placement,
# priority and fusion heads (go_multitask): $out/go_pretrain_joint with
# configs/experiments/go_pretrain_groups.yaml, the training split of
# configs/suites/paper_small.yaml. Quick mode, both: the paper_small models
# at toy sizes, configs/suites/paper_quick.yaml, two PPO steps of 8
# decisions per graph, in $out/go_pretrain (placement) or
# $out/go_pretrain_joint. go_pretrain placement|joint prints the
# checkpoint's path.
go_pretrain() {
  local run=$out/go_pretrain config=configs/experiments/go_pretrain_groups.yaml train=()
  if [ "$1" = joint ]; then
    run=$out/go_pretrain_joint
    train=('heads=[placement, priority, fusion]')
  elif [ $quick = 0 ]; then
    run=$out/go_pretrain_broad
    config=configs/experiments/go_pretrain_broad.yaml
  fi
  [ $quick = 0 ] || train+=(suite=configs/suites/paper_quick.yaml steps=14 checkpoint_every=7 ppo.samples=8)
  if [ $status = 1 ]; then
    [ -f "$run/checkpoint.pt" ] || say "GO pre-training ($1) not started: $run" >&2
    echo "$run/checkpoint.pt"
    return
  fi
  local resume=()
  [ ! -f "$run/checkpoint.pt" ] || resume=(--resume)
  say "pre-training GO, $1 (resumes a finished or killed run)" >&2
  "${launch[@]}" "$GOSIM" train "$config" --run-dir "$run" "${resume[@]}" \
    "${train[@]}" >&2
  echo "$run/checkpoint.pt"
}

# quick-mode overrides of a GO grid: the six models at toy sizes
# (configs/suites/go_placement_quick.yaml, test graphs that the quick
# pre-training suite paper_quick.yaml does not contain) and 160 evaluations
# (10 PPO steps of 16) per learned cell.
go_quick=('budget.evaluations=160' 'suite=configs/suites/go_placement_quick.yaml')

# go_grid CONFIG placement|joint LABEL...: the grid of a GO table
# (quick-mode sizes in quick mode), its GO agents with those labels pointed at
# the checkpoint pre-trained with those heads.
go_grid() {
  local config=$1 heads=$2 checkpoint grid=()
  shift 2
  checkpoint=$(go_pretrain "$heads")
  [ $quick = 0 ] || grid=("${go_quick[@]}")
  for label in "$@"; do grid+=("agents[$(agent "$config" "$label")].options.checkpoint=$checkpoint"); done
  run_grid "$config" output="$dir/run" "${grid[@]}"
  [ $status = 1 ] || say "tables and plots"
}

go_placement() {
  go_grid configs/experiments/paper/go_placement.yaml placement go_zero_shot go go_no_sweep
  [ $status = 1 ] || $PY analysis/tables.py analysis/layouts/go_placement.yaml "$dir/run" --out "$dir"
  [ $status = 1 ] || $PY analysis/tables.py analysis/layouts/go_convergence.yaml "$dir/run" --out "$dir"
  no_plots || $PY analysis/plot_convergence.py "$dir/run" --graph gnmt8 --labels go,gdp,hrl,human_expert,single_device \
    --out "$dir/convergence.png"
  no_plots || plots_for "$dir/run" gnmt8 go gnmt8_go
  no_plots || plots_for "$dir/run" gnmt8 human_expert gnmt8_expert
}

go_multitask() {
  go_grid configs/experiments/paper/go_multitask.yaml joint go_placement go_joint go_joint_sweep
  [ $status = 1 ] || $PY analysis/tables.py analysis/layouts/go_multitask.yaml "$dir/run" --out "$dir"
  no_plots || $PY analysis/plot_convergence.py "$dir/run" --graph bert_base --labels go_joint,go_placement,single_device \
    --out "$dir/convergence.png"
  no_plots || plots_for "$dir/run" bert_base go_joint bert_go_joint
}

# REGAL: train the policy (training split), then every method on the test
# split with BRKGA 5K's budget. Tables 1 and 2 share that training run and
# grid, in $out/regal_table1/ (train/, train_gas/, train_no_priority/, run/);
# `reproduce.sh regal_table2` runs or resumes them there (finished cells are
# not redone) and writes its own table, plots and provenance into
# $out/regal_table2/. The controls GAS and REGAL without the memory-priority
# feature are trained the same way (their configs differ from REGAL's only in
# the policy).
regal_tables() {
  local dir_run=$out/regal_table1 train=() grid=() control=() config=configs/experiments/paper/regal_table1.yaml
  [ $status = 1 ] || mkdir -p "$dir_run"
  if [ $quick = 1 ]; then
    # 300 steps of 8 samples (the full run: 1,500), validation on 20 graphs,
    # 5 graphs for the trainer's own check; the controls likewise (without
    # the check); then the first 84 cells of the test grid (graph by graph:
    # 3 graphs of 28 cells, 3 seeds per method, gp_dfs 1).
    control=(steps=300 valid_graphs=20 valid_every=100 checkpoint_every=100)
    train=("${control[@]}" evaluate.graphs=5 evaluate.seeds=1)
    grid=(--max-cells 84)
  fi
  [ "$table" = regal_table1 ] || say "the training run and the grid are regal_table1's, in $dir_run"
  say "training REGAL (resumes a finished or killed run)"
  local resume=()
  [ ! -f "$dir_run/train/checkpoint.pt" ] || resume=(--resume)
  # --final: the training run ends with REGAL Table 1's check on the test split (evaluate:).
  [ $status = 1 ] || "${launch[@]}" "$GOSIM" train configs/experiments/regal_train.yaml --final --run-dir "$dir_run/train" "${resume[@]}" \
    "${train[@]}"
  local name
  for name in gas no_priority; do
    say "training the control regal_train_$name (resumes a finished or killed run)"
    resume=()
    [ ! -f "$dir_run/train_$name/checkpoint.pt" ] || resume=(--resume)
    [ $status = 1 ] || "${launch[@]}" "$GOSIM" train "configs/experiments/regal_train_$name.yaml" --run-dir "$dir_run/train_$name" \
      "${resume[@]}" "${control[@]}"
  done
  say "every method on the test graphs"
  run_grid "$config" output="$dir_run/run" \
    "agents[$(agent $config regal)].options.checkpoint=$dir_run/train/best.pt" \
    "agents[$(agent $config gas)].options.checkpoint=$dir_run/train_gas/best.pt" \
    "agents[$(agent $config regal_no_priority)].options.checkpoint=$dir_run/train_no_priority/best.pt" "${grid[@]}"
  [ $status = 1 ] || say "table and plots"
  # The count of final runs includes the training run's (its evaluate: check ran on the test split).
  [ $status = 1 ] || $PY analysis/tables.py "analysis/layouts/$table.yaml" "$dir_run/run" --out "$dir" --final-runs "$dir_run/train"
  no_plots && return
  local first
  first=$($PY -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['graph'])" "$dir_run/run/results.jsonl")
  no_plots || $PY analysis/plot_convergence.py "$dir_run/run" --graph "$first" --out "$dir/convergence.png"
  no_plots || plots_for "$dir_run/run" "$first" regal "${first}_regal"
}

case "$table" in
  hrl_table1) hrl_table1 ;;
  go_placement) go_placement ;;
  go_multitask) go_multitask ;;
  regal_table1|regal_table2) regal_tables ;;
esac
[ $status = 0 ] || exit 0
# What produced these files (results/README.md).
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: experiments/paper/reproduce.sh $table$([ $quick = 0 ] || echo ' --quick')${seeds:+ --seeds $seeds}${only:+ --only $only} --np $np"
  if commit=$(git rev-parse HEAD 2> /dev/null); then
    git diff --quiet HEAD 2> /dev/null || commit="$commit-dirty"
    echo "commit: $commit"
  fi
} > "$dir/provenance.txt"
if [ -n "$only" ]; then
  say "done: a partial table (only $only run; no plots) in $dir/; run again without --only to finish the grid"
else
  say "done: the tables (.md, .tex) and plots in $dir/"
fi
