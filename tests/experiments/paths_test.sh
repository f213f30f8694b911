#!/usr/bin/env bash
# Every command finds the files it reads from any working directory: each
# runs in an empty temporary folder, with paths written from the repository
# root, found through the source tree (core/data_path.h; $GOSIM_HOME comes
# before it, tests/core/data_path_test.cc). Outputs go to the working folder.
#   paths_test.sh GOSIM_BINARY WITH_TORCH(0|1)
set -euo pipefail
gosim=$(realpath "$1")
with_torch=${2:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
unset GOSIM_HOME
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
run() {  # NAME COMMAND...: runs it, keeps its output in NAME.log
  local name=$1
  shift
  "$gosim" "$@" > "$name.log" 2>&1 || { cat "$name.log"; fail "$name: gosim $*"; }
}

run list graphs list configs/suites/quickstart.yaml
grep -q "suite quickstart" list.log || fail "graphs list printed no suite"
run stats graphs stats graphs/data/vgg16_train_b32.json.gz
run stats_onnx graphs stats tests/data/onnx/symbolic_batch.onnx --dim batch=2 --json
grep -q '"flops": 38932' stats_onnx.log || fail "graphs stats --dim batch=2: $(grep flops stats_onnx.log)"
run export graphs export graphs/data/vgg16_train_b32.json.gz --out vgg.json
[ -s vgg.json ] || fail "graphs export wrote nothing to the working folder"
run simulate simulate --graph tests/experiments/data/tiny_branches.json \
  --cluster tests/experiments/data/two_gpus.yaml --decision tests/experiments/data/tiny_branches.split.json --cost-model roofline
grep -q "decision .*tests/experiments/data/tiny_branches.split.json" simulate.log ||
  fail "simulate did not read the decision"
grep -q "step time 7.010 ms" simulate.log || fail "simulate: $(grep 'step time' simulate.log)"
run optimize optimize --graph graphs/data/vgg16_train_b32.json.gz --cluster p100x4_pcie:gpus=6 \
  --agent round_robin --out best.json --no-progress
grep -q '"graph_digest"' best.json || fail "optimize --out wrote no graph digest"
run simulate_own simulate --graph graphs/data/vgg16_train_b32.json.gz --cluster p100x4_pcie:gpus=6 \
  --decision best.json
run experiment run tests/experiments/data/paths_run.yaml output=runs --no-progress
[ "$(wc -l < runs/results.jsonl)" -eq 2 ] || fail "run: expected 2 cells in runs/results.jsonl"
run room graphs room tests/experiments/data/paths_suite.yaml --out room.yaml --keep train=1,valid=1 \
  --low 10 --high 20 --min-improvement 0
[ -s room.yaml ] || fail "graphs room wrote no suite"
run calibrate calibrate --trace calibration/data/hta_a100_alexnet.json.gz --step-pattern '\|forward\]$' --out profile.yaml
[ -s profile.yaml ] || fail "calibrate wrote no profile"
if [ "$with_torch" = 1 ]; then
  run train train configs/experiments/hrl_train.yaml --run-dir train --max-steps 1 --no-progress \
    suite=tests/experiments/data/paths_suite.yaml graph=g1 options.samples_per_step=2 steps=1
  [ -f train/curves.csv ] || fail "train wrote no curves.csv"
  run profile profile --graph tests/data/onnx/tiny_cnn.onnx --steps 1 --warmup 0 --out trace.json.gz --cpu
  [ -s trace.json.gz ] || fail "profile wrote no trace"
  run local_decision optimize --graph tests/data/onnx/tiny_cnn.onnx --cluster local --agent single_device \
    --out local.json --no-progress
  run replay replay --graph tests/data/onnx/tiny_cnn.onnx --cluster local --decision local.json --repeats 1 \
    --warmup 0 --rounds 1
  grep -q "local.json" replay.log || fail "replay printed no row for the decision"
fi
# A file that exists nowhere is still reported under the name given.
if "$gosim" simulate --graph graphs/data/no_such.json --cluster k80x2 > missing.log 2>&1; then
  fail "a missing graph file was accepted"
fi
grep -q "no graph file 'graphs/data/no_such.json'" missing.log || { cat missing.log; fail "missing-file message"; }
echo "paths_test: every command found its files from $work"
