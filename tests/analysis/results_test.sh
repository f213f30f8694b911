#!/usr/bin/env bash
# Every table committed under results/ comes out of its committed cells by
# the current analysis/tables.py, byte for byte (results/README.md): a
# change to the analysis that would move a published figure fails here
# until the table is regenerated and the docs that cite it are updated.
#   results_test.sh   (run from the repository root)
set -euo pipefail
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
# check TABLE_DIR LAYOUT [tables.py arguments...]: regenerate LAYOUT's table
# into a scratch folder and compare its .md and .tex with TABLE_DIR's.
check() {
  local dir=$1 layout=$2 name
  shift 2
  name=$(basename "$layout" .yaml)
  mkdir -p "$work/$name"
  if ! $py analysis/tables.py "$layout" "$@" --out "$work/$name" > /dev/null; then
    echo "FAIL: analysis/tables.py $layout $* exited non-zero"; failed=1; return
  fi
  for ext in md tex; do
    if ! cmp -s "$work/$name/$name.$ext" "$dir/$name.$ext"; then
      echo "FAIL: $dir/$name.$ext differs from what $layout gives on its cells now:"
      diff "$dir/$name.$ext" "$work/$name/$name.$ext" | head -n 8
      failed=1
    fi
  done
}
check results/go_placement analysis/layouts/go_placement.yaml results/go_placement/run
check results/go_placement analysis/layouts/go_convergence.yaml results/go_placement/run
check results/go_multitask analysis/layouts/go_multitask.yaml results/go_multitask/run
check results/regal_table1 analysis/layouts/regal_table1.yaml results/regal_table1/run --final-runs results/regal_table1/train
check results/regal_table2 analysis/layouts/regal_table2.yaml results/regal_table1/run --final-runs results/regal_table1/train
check results/bench analysis/layouts/bench.yaml results/bench/run results/bench/run_10k \
  results/bench/run_learned_go results/bench/run_learned_gdp results/bench/run_learned_regal \
  results/bench/run_learned_hrl
check results/mcm analysis/layouts/mcm.yaml results/mcm/run results/mcm/run_ft
check results/mcm analysis/layouts/mcm_convergence.yaml results/mcm/run results/mcm/run_ft
check results/mcm analysis/layouts/mcm_6x6.yaml results/mcm/run_6x6
check results/mcm analysis/layouts/mcm_6x6_convergence.yaml results/mcm/run_6x6
check results/go_valid_warm_start analysis/layouts/go_valid_warm_start.yaml results/go_valid_warm_start/run
check results/go_valid_warm_floor analysis/layouts/go_valid_warm_floor.yaml results/go_valid_warm_floor/run
check results/hrl_table1 analysis/layouts/hrl_table1.yaml results/hrl_table1/2gpu results/hrl_table1/4gpu \
  results/hrl_table1/8gpu --final-runs results/hrl_table1/pass1_final_runs/2gpu
check results/hrl_prior_search analysis/layouts/hrl_prior_search.yaml results/hrl_table1/2gpu \
  results/hrl_table1/4gpu results/hrl_table1/8gpu results/hrl_prior_search/2gpu results/hrl_prior_search/4gpu \
  results/hrl_prior_search/8gpu --final-runs results/hrl_table1/pass1_final_runs/2gpu
# msr-fiddle's table comes from its runs by experiments/paper/msr_table.py.
mkdir -p "$work/msr"
if ! $py experiments/paper/msr_table.py --out results/msr --budget 20000 --seeds 5 --ilp-seconds 60 \
    --table-only "$work/msr/table.md" > /dev/null; then
  echo "FAIL: experiments/paper/msr_table.py --table-only exited non-zero"; failed=1
elif ! cmp -s "$work/msr/table.md" results/msr/table.md; then
  echo "FAIL: results/msr/table.md differs from what msr_table.py gives on results/msr/runs.jsonl now:"
  diff results/msr/table.md "$work/msr/table.md" | head -n 8
  failed=1
fi
# The bench models' simulated-against-measured steps come from the measured
# steps by graphs/bench/compare_steps.py, with this build's engine and the
# committed H200 profile: an engine or profile change that moves them fails
# here until the table and docs/CALIBRATION.md are updated.
mkdir -p "$work/bench_steps"
if ! $py graphs/bench/compare_steps.py results/bench_steps/h200_steps.jsonl --cluster h200x8_nvswitch \
    --out "$work/bench_steps/h200.md" > /dev/null; then
  echo "FAIL: graphs/bench/compare_steps.py exited non-zero"; failed=1
elif ! cmp -s "$work/bench_steps/h200.md" results/bench_steps/h200.md; then
  echo "FAIL: results/bench_steps/h200.md differs from what compare_steps.py gives now:"
  diff results/bench_steps/h200.md "$work/bench_steps/h200.md" | head -n 8
  failed=1
fi
# A table under results/ that this list misses is a table nobody checks.
for md in results/*/*.md; do
  case $md in
    results/go_placement/go_placement.md | results/go_placement/go_convergence.md | \
    results/go_multitask/go_multitask.md | results/regal_table1/regal_table1.md | \
    results/regal_table2/regal_table2.md | results/go_valid_warm_start/go_valid_warm_start.md | \
    results/go_valid_warm_floor/go_valid_warm_floor.md | results/hrl_table1/hrl_table1.md | \
    results/hrl_prior_search/hrl_prior_search.md | results/msr/table.md | results/bench_steps/h200.md | \
    results/bench/bench.md | results/mcm/mcm.md | results/mcm/mcm_convergence.md | \
    results/mcm/mcm_6x6.md | results/mcm/mcm_6x6_convergence.md | \
    results/README.md) ;;
    *) echo "FAIL: $md is not regenerated by tests/analysis/results_test.sh"; failed=1 ;;
  esac
done
[ $failed = 0 ] && echo "results: every committed table regenerates from its cells"
exit $failed
