#!/usr/bin/env bash
# The analysis scripts on real gosim outputs: a small experiment, a simulated
# timeline, a graph and decision, calibration predictions of a real trace.
# Checks that each writes its files and that the table holds the run's cells.
#   analysis_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
gosim=$1
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/exp.yaml" <<YAML
name: analysis_test
graphs:
  - {generator: regal_random, params: {nodes: 60, seed: 1}, name: g1}
  - {generator: regal_random, params: {nodes: 70, seed: 2}, name: g2}
clusters: [tests/experiments/data/two_gpus.yaml]
budget: {evaluations: 200}
seeds: 2
agents:
  - {name: single_device, seeds: 1}
  - {name: random_search}
  - {name: brkga, options: {population: 20}}
reference: single_device
YAML
"$gosim" run "$work/exp.yaml" output="$work/run" --no-progress > /dev/null 2>&1
cat > "$work/layout.yaml" <<YAML
name: test_grid
kind: grid
title: test grid
metric: step_time
unit: ms
reference: single_device
rows:
  - {graph: g1, title: G1}
  - {graph: g2, title: G2}
columns:
  - {label: single_device, title: one device}
  - {label: random_search, title: random}
  - {label: brkga, title: BRKGA}
paper_columns: [BRKGA]
paper: {G1: {BRKGA: 1.5}}
mean_row: true
YAML
cat > "$work/regal.yaml" <<YAML
name: test_regal
kind: regal
title: test regal
metric: best_objective
reference: random_search
agents:
  - {label: random_search, title: random}
  - {label: brkga, title: BRKGA}
paper: {BRKGA: {improvement: 3.5, gap: 4.4}}
YAML
cat > "$work/convergence.yaml" <<YAML
name: test_convergence
kind: convergence
title: test convergence
target: {label: random_search, title: random}
agents:
  - {label: brkga, title: BRKGA}
paper_ratio: 15
rows:
  - {graph: g1, title: G1}
  - {graph: g2, title: G2}
YAML
$py analysis/tables.py "$work/layout.yaml" "$work/run" --out "$work/tables" > "$work/grid.md"
$py analysis/tables.py "$work/convergence.yaml" "$work/run" --out "$work/tables" > "$work/convergence.md"
$py analysis/tables.py "$work/regal.yaml" "$work/run" --out "$work/tables" > "$work/regal.md"
# paired.py: brkga against each other column, graph by graph; two seeds are
# too few pairs for a verdict, and its mean is the mean of the paired ratios.
$py analysis/paired.py "$work/run" --agent brkga > "$work/paired.txt"
for g in g1 g2; do
  grep -Eq "^$g \(.*\): random_search [+-][0-9.]+% \[[+-][0-9.]+, [+-][0-9.]+\]; single_device [+-][0-9.]+% \[" "$work/paired.txt" ||
    { echo "FAIL: paired.py line of $g"; cat "$work/paired.txt"; exit 1; }
done
! tail -n +2 "$work/paired.txt" | grep -Eq "better|worse|tie|equal" || { echo "FAIL: a verdict from two pairs"; cat "$work/paired.txt"; exit 1; }
expected=$($py - "$work/run" <<'PY'
import json, sys
cells = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
by = {(c["graph"], c["label"], c["seed"]): c["step_time"] for c in cells}
r = [by[("g1", "random_search", s)] / by[("g1", "brkga", s)] - 1 for s in (0, 1)]
print(f"{100 * sum(r) / len(r):+.1f}%")
PY
)
grep -q "^g1 (.*): random_search $expected " "$work/paired.txt" ||
  { echo "FAIL: paired.py mean, expected $expected"; cat "$work/paired.txt"; exit 1; }
# A run folder committed with its log gzip'd (results/README.md) reads the same.
mkdir -p "$work/gz"
cp "$work/run/cells.txt" "$work/gz/"
gzip -c "$work/run/results.jsonl" > "$work/gz/results.jsonl.gz"
$py analysis/paired.py "$work/gz" --agent brkga | tail -n +2 > "$work/paired_gz.txt"
tail -n +2 "$work/paired.txt" | cmp -s - "$work/paired_gz.txt" ||
  { echo "FAIL: paired.py on results.jsonl.gz"; cat "$work/paired_gz.txt"; exit 1; }
# So does its curves.csv.gz, for the convergence table (the folder name in
# the header aside).
gzip -c "$work/run/curves.csv" > "$work/gz/curves.csv.gz"
$py analysis/tables.py "$work/convergence.yaml" "$work/gz" --out "$work/tables_gz" | grep "^| G" > "$work/convergence_gz.md"
grep "^| G" "$work/convergence.md" | cmp -s - "$work/convergence_gz.md" ||
  { echo "FAIL: convergence table from curves.csv.gz"; cat "$work/convergence_gz.md"; exit 1; }
if $py analysis/paired.py "$work/run" --agent nosuch > /dev/null 2> "$work/paired_err.txt"; then
  echo "FAIL: paired.py accepted an unknown label"; exit 1
fi
grep -q "no cells of 'nosuch'" "$work/paired_err.txt" || { echo "FAIL: paired.py error"; cat "$work/paired_err.txt"; exit 1; }
# cells.py: one row per brkga cell with its generations (an `extra` value),
# as the results lines have them; an unknown field is one error line.
$py analysis/cells.py "$work/run" --fields evaluations,extra_generations --labels brkga > "$work/cells.md"
expected=$($py - "$work/run" <<'PY'
import json, sys
cells = sorted((c["graph"], c["cluster"], c["seed"], c["evaluations"], c["extra"]["generations"])
               for c in map(json.loads, open(sys.argv[1] + "/results.jsonl")) if c["label"] == "brkga")
for g, cluster, seed, evals, gens in cells:
    print(f"| {g} | {cluster} | brkga | {seed} | {evals} | {gens:.4f}".rstrip("0").rstrip(".") + " |")
PY
)
[ "$(grep '^| g[0-9] ' "$work/cells.md")" = "$expected" ] ||
  { echo "FAIL: cells.py rows"; cat "$work/cells.md"; echo "expected:"; echo "$expected"; exit 1; }
if $py analysis/cells.py "$work/run" --fields extra_nosuch > /dev/null 2> "$work/cells_err.txt"; then
  echo "FAIL: cells.py accepted an unknown field"; exit 1
fi
grep -q "no cell has the field 'extra_nosuch' (extra fields there: .*extra_generations" "$work/cells_err.txt" ||
  { echo "FAIL: cells.py error"; cat "$work/cells_err.txt"; exit 1; }
grep -q "^| G1 | " "$work/grid.md" || { echo "FAIL: no G1 row"; cat "$work/grid.md"; exit 1; }
grep -q "^| G2 | " "$work/grid.md" || { echo "FAIL: no G2 row"; exit 1; }
grep -q "| 1.5 |" "$work/grid.md" || { echo "FAIL: no paper column"; exit 1; }
# The aggregate rows: the reference marked, every other column a geometric-mean
# speedup and its paired verdicts; two seeds are too few pairs for a verdict.
grep -Eq '^\| geo-mean speedup \| \(ref\) \| [0-9.]+x \| [0-9.]+x \|' "$work/grid.md" ||
  { echo "FAIL: no geo-mean row"; cat "$work/grid.md"; exit 1; }
grep -Eq '^\| better / worse / n.s. \|  \| 0 / 0 / 0 \| 0 / 0 / 0 \|' "$work/grid.md" ||
  { echo "FAIL: verdicts with two seeds"; cat "$work/grid.md"; exit 1; }
grep -Eq '^\| evaluations per cell \| 1 \| 200 \| 200 \|' "$work/grid.md" ||
  { echo "FAIL: no evaluations row"; cat "$work/grid.md"; exit 1; }
# Two seeds: a t-interval on the random search cells.
grep -Eq '^\| G1 \| [0-9.]+ \| [0-9.]+ ±[0-9.]+ \(' "$work/grid.md" ||
  { echo "FAIL: no interval"; cat "$work/grid.md"; exit 1; }
# Kernel time by input shape, from a committed H200 trace: ResNet-50's
# first batch norm backward, one row per shape; unknown names are one error
# line that suggests the trace's own.
$py analysis/kernels_by_shape.py calibration/data/gpu/h200_resnet50_b8.json.gz --op aten::cudnn_batch_norm_backward \
  --csv "$work/bn.csv" > "$work/bn.md"
grep -q "^aten::cudnn_batch_norm_backward in h200_resnet50_b8.json.gz: [0-9]* instances, 12 input shapes" "$work/bn.md" ||
  { echo "FAIL: kernels_by_shape header"; cat "$work/bn.md"; exit 1; }
grep -Eq '^\| \[\[8, 64, 112, 112\], .* \| 6,422,528 \| 100,352 \| [0-9.]+ \|$' "$work/bn.md" ||
  { echo "FAIL: kernels_by_shape row"; cat "$work/bn.md"; exit 1; }
[ "$(wc -l < "$work/bn.csv")" = 13 ] || { echo "FAIL: kernels_by_shape csv"; exit 1; }
if $py analysis/kernels_by_shape.py calibration/data/gpu/h200_resnet50_b8.json.gz --op aten::batchnorm \
  > /dev/null 2> "$work/bn_err.txt"; then
  echo "FAIL: kernels_by_shape accepted an unknown op"; exit 1
fi
grep -q "similar: .*aten::batch_norm" "$work/bn_err.txt" || { echo "FAIL: kernels_by_shape error"; cat "$work/bn_err.txt"; exit 1; }
# A convolution backward's rows add kernel size, stride and time per forward
# multiply-accumulate: ResNet-50's 7x7 stride-2 stem, 8 x 64 x 112 x 112
# outputs x 3 input channels x 49 taps.
$py analysis/kernels_by_shape.py calibration/data/gpu/h200_resnet50_b8.json.gz --op aten::convolution_backward \
  --top 40 --csv "$work/conv.csv" > "$work/conv.md"
grep -Eq '^\| \[\[8, 64, 112, 112\], \[8, 3, 224, 224\], \[64, 3, 7, 7\].* \| 7x7 \| 2 \| [0-9.]+ \|$' "$work/conv.md" ||
  { echo "FAIL: kernels_by_shape convolution row"; cat "$work/conv.md"; exit 1; }
$py - "$work/conv.csv" <<'PY' || { echo "FAIL: kernels_by_shape ps per MAC"; exit 1; }
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["input_dims"].startswith("[[8, 64, 112, 112], [8, 3, 224, 224]")]
assert len(rows) == 1, rows
r = rows[0]
assert abs(float(r["ps_per_mac"]) - float(r["mean_us"]) * 1e6 / (8 * 64 * 112 * 112 * 3 * 49)) < 1e-9, r
PY
echo '{"traceEvents": [{"cat": "cpu_op", "name": "x", "args": {"Input Dims": [[1, 2]]}}]}' > "$work/bad_trace.json"
if $py analysis/kernels_by_shape.py "$work/bad_trace.json" --op x > /dev/null 2> "$work/bn_err2.txt"; then
  echo "FAIL: kernels_by_shape accepted an event without ts"; exit 1
fi
[ "$(wc -l < "$work/bn_err2.txt")" = 1 ] && grep -q "lacks a field" "$work/bn_err2.txt" ||
  { echo "FAIL: kernels_by_shape malformed trace"; cat "$work/bn_err2.txt"; exit 1; }
# A cell's spread is rounded where its mean is: float noise reads ±0.
fmt_out=$(cd analysis && $py -c 'from gosim_analysis import fmt_pm as f
print(f(812.0283, 1.5e-13, 1), f(223.6181, 1.81, 1), f(1236.4, 19.44, 1), f(0.0242, 0.0017, 3), f(5.0, None, 2))')
[ "$fmt_out" = "812.0 ±0 223.6 ±1.8 1,236 ±19 0.0242 ±0.0017 5.00" ] || { echo "FAIL: fmt_pm gave '$fmt_out'"; exit 1; }
grep -q "Final runs on the test graphs logged in these run folders: 0" "$work/grid.md" ||
  { echo "FAIL: no final-run count"; exit 1; }
# Final runs of another folder (a training run that evaluated on the test split) count too.
mkdir -p "$work/train"
printf '{"count": 1}\n{"count": 2}\n' > "$work/train/final_runs.jsonl"
$py analysis/tables.py "$work/regal.yaml" "$work/run" --out "$work/tables5" --final-runs "$work/train" > "$work/regal5.md"
grep -q "Final runs on the test graphs logged in these run folders: 2" "$work/regal5.md" ||
  { echo "FAIL: --final-runs not counted"; cat "$work/regal5.md"; exit 1; }
# Convergence: random search reaches its own final at some evaluation; BRKGA
# either reaches it (a ratio) or says it did not.
# Seed by seed: two seeds of each, the reaching ones counted.
grep -Eq '^\| G1 \| 2 \| [0-9.]+ ±[0-9.]+ \| [0-9]+ / [0-9.]+ \| ([0-9]+ / [0-9.]+ \([12]/2\) \| [0-9.]+x( ±[0-9.]+)?|not within [0-9]+ \(0/2\) \| -) \| 15x \|' \
  "$work/convergence.md" || { echo "FAIL: convergence row"; cat "$work/convergence.md"; exit 1; }
grep -q "(pre-training, not in these counts): random 0; BRKGA 0." "$work/convergence.md" ||
  { echo "FAIL: no pre-training figures in the convergence table"; exit 1; }
# Every table names its cost model and its seeds.
for t in grid convergence regal; do
  grep -q "^Cost model: auto (10 cells)" "$work/$t.md" || { echo "FAIL: no cost model in $t"; cat "$work/$t.md"; exit 1; }
done
grep -Eq '^\| seeds \| 1 \| 2 \| 2 \|' "$work/grid.md" || { echo "FAIL: no seeds row"; cat "$work/grid.md"; exit 1; }
grep -q "^| BRKGA | " "$work/regal.md" || { echo "FAIL: no BRKGA row"; cat "$work/regal.md"; exit 1; }
grep -q "2 graphs" "$work/regal.md" || { echo "FAIL: regal table not over 2 graphs"; exit 1; }
test -s "$work/tables/test_grid.tex" && grep -q 'tabular' "$work/tables/test_grid.tex"
# The random search row of the regal table: 0 improvement over itself.
grep -Eq "^\| random \| 2 \| \+0\.00 ±[0-9.]+ \|" "$work/regal.md" || { echo "FAIL: reference row"; cat "$work/regal.md"; exit 1; }
grep -q "geometric mean over the graphs of agent / reference" "$work/regal.md" ||
  { echo "FAIL: the regal table does not say it uses a geometric mean"; exit 1; }
# Pre-training evaluations: none behind these agents, in every table kind.
grep -Eq '^\| evals \(pre-train\) \| 0 \| 0 \| 0 \|' "$work/grid.md" ||
  { echo "FAIL: no pre-training row"; cat "$work/grid.md"; exit 1; }
grep -Eq '^\| BRKGA \| 2 \| .* \| 200 \| 0 \| 3\.5 \| 4\.4 \|$' "$work/regal.md" ||
  { echo "FAIL: no pre-training column"; cat "$work/regal.md"; exit 1; }

grep -q "^Code: [0-9a-f]\{12\}" "$work/grid.md" || { echo "FAIL: no code version line"; cat "$work/grid.md"; exit 1; }
if grep -q "quick mode" "$work/grid.md"; then echo "FAIL: a full run labelled quick"; exit 1; fi
# A line outside the folder's grid (cells.txt: another configuration or
# build) never reaches the table.
cp -r "$work/run" "$work/other"
grep '"label":"random_search"' "$work/run/results.jsonl" | grep '"graph":"g1"' | grep '"seed":0' |
  sed -e 's/"cell":"[0-9a-f]*"/"cell":"00000000000000ee"/' -e 's/"step_time":[0-9.e+-]*/"step_time":9.25/' \
  >> "$work/other/results.jsonl"
$py analysis/tables.py "$work/layout.yaml" "$work/other" --out "$work/tables3" > "$work/grid3.md" 2> "$work/note.txt"
grep -q "1 line(s) of cells outside the folder's current grid" "$work/note.txt" ||
  { echo "FAIL: no note for a line outside the grid"; cat "$work/note.txt"; exit 1; }
cmp -s <(grep '^| G1 ' "$work/grid.md") <(grep '^| G1 ' "$work/grid3.md") ||
  { echo "FAIL: a line outside the grid changed the table"; exit 1; }
# Quick mode: the table says so, and quick and full cells never share a table.
"$gosim" run "$work/exp.yaml" output="$work/quick" mode=quick --no-progress > /dev/null 2>&1
$py analysis/tables.py "$work/layout.yaml" "$work/quick" --out "$work/tables4" > "$work/grid4.md"
grep -q '^\*\*quick mode: pipeline check, not a result\*\*' "$work/grid4.md" ||
  { echo "FAIL: no quick-mode header"; cat "$work/grid4.md"; exit 1; }
grep -q '^\*\*quick mode: pipeline check, not a result\*\*' "$work/quick/summary.md" ||
  { echo "FAIL: no quick-mode header in summary.md"; exit 1; }
if $py analysis/tables.py "$work/layout.yaml" "$work/run" "$work/quick" 2> "$work/err_mix.txt" > /dev/null; then
  echo "FAIL: quick and full cells mixed in one table"; exit 1
fi
grep -q "mix quick-mode and full-mode" "$work/err_mix.txt" || { echo "FAIL: mixing error"; exit 1; }

# Without cells.txt (folders of older gosim), a cell of the same graph,
# cluster, label and seed under a new identity (e.g. after its checkpoint
# was trained again) supersedes the earlier line.
cp -r "$work/run" "$work/rerun"
rm "$work/rerun/cells.txt"
grep '"label":"random_search"' "$work/run/results.jsonl" | grep '"graph":"g1"' | grep '"seed":0' |
  sed -e 's/"cell":"[0-9a-f]*"/"cell":"00000000000000ff"/' -e 's/"step_time":[0-9.e+-]*/"step_time":9.25/' \
  >> "$work/rerun/results.jsonl"
$py analysis/tables.py "$work/layout.yaml" "$work/rerun" --out "$work/tables2" > "$work/grid2.md" 2> "$work/warn.txt"
grep -q "superseded" "$work/warn.txt" || { echo "FAIL: no warning for a superseded cell"; exit 1; }
grep -q "^| G1 | [0-9.]* | 4,6[0-9][0-9] ±" "$work/grid2.md" ||
  { echo "FAIL: the later line of a cell is not the one used"; cat "$work/grid2.md"; exit 1; }
$py analysis/plot_convergence.py "$work/run" --out "$work/conv.png" > /dev/null
"$gosim" graphs export gen:regal_random:nodes=60,seed=1 --out "$work/g1.json" > /dev/null
decision=$(ls "$work"/run/decisions/g1.*brkga.s0.*.json)
"$gosim" simulate --graph "$work/g1.json" --cluster tests/experiments/data/two_gpus.yaml \
  --decision "$decision" --trace "$work/trace.json" > /dev/null
$py analysis/plot_timeline.py "$work/trace.json" --out "$work/timeline.png" > /dev/null
$py analysis/fuse_chains.py "$work/g1.json" --out "$work/fused.json" > /dev/null
"$gosim" simulate --graph "$work/g1.json" --cluster tests/experiments/data/two_gpus.yaml \
  --decision "$work/fused.json" > /dev/null || { echo "FAIL: fuse_chains.py's decision does not simulate"; exit 1; }
$py analysis/role_moves.py gen:wavenet:stacks=1,layers_per_stack=3,samples=1000,batch=1,training=true \
  --cluster tests/experiments/data/two_gpus.yaml --gosim "$gosim" --top 3 > "$work/roles.txt"
grep -q "one GPU .* ms; [0-9]* roles" "$work/roles.txt" || { echo "FAIL: role_moves.py printed no header"; exit 1; }
[ "$(grep -c ' ms (' "$work/roles.txt")" -eq 3 ] || { echo "FAIL: role_moves.py printed no moves"; cat "$work/roles.txt"; exit 1; }
$py analysis/role_moves.py gen:wavenet:stacks=1,layers_per_stack=3,samples=1000,batch=1,training=true \
  --cluster tests/experiments/data/two_gpus.yaml --gosim "$gosim" --top 2 --by name > "$work/roles_name.txt"
grep -q "ConvDBackprop" "$work/roles_name.txt" || { echo "FAIL: role_moves.py --by name"; cat "$work/roles_name.txt"; exit 1; }
if $py analysis/role_moves.py gen:nope --cluster tests/experiments/data/two_gpus.yaml --gosim "$gosim" \
  2> "$work/err_roles.txt"; then
  echo "FAIL: role_moves.py accepted an unknown generator"; exit 1
fi
[ "$(wc -l < "$work/err_roles.txt")" -eq 1 ] || { echo "FAIL: role_moves.py's error is not one line"; exit 1; }
$py analysis/plot_placement.py "$work/g1.json" "$decision" --out "$work/placement.png" \
  --cluster tests/experiments/data/two_gpus.yaml > "$work/placement.txt"
$py analysis/plot_placement.py "$work/g1.json" "$decision" --out "$work/strip.png" --max-nodes 10 \
  --cluster tests/experiments/data/two_gpus.yaml > "$work/strip.txt"
# Devices by the cluster's names; above --max-nodes, one bar per scope.
grep -q "on [0-9] of 2 devices (gpu[01]: " "$work/placement.txt" ||
  { echo "FAIL: placement plot without device names"; cat "$work/placement.txt"; exit 1; }
grep -q "; [0-9]* scopes$" "$work/strip.txt" || { echo "FAIL: no scope aggregation"; cat "$work/strip.txt"; exit 1; }
# A decision only on the second device is drawn on gpu1, not renumbered to device 0.
$py - "$decision" "$work/on_gpu1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["placement"] = {k: "gpu1" for k in d["placement"]}
json.dump(d, open(sys.argv[2], "w"))
PY
$py analysis/plot_placement.py "$work/g1.json" "$work/on_gpu1.json" --out "$work/gpu1.png" \
  --cluster tests/experiments/data/two_gpus.yaml > "$work/gpu1.txt"
grep -q "on 1 of 2 devices (gpu1: 60)" "$work/gpu1.txt" || { echo "FAIL: gpu1 renumbered"; cat "$work/gpu1.txt"; exit 1; }
# The committed real trace (a public clone has no ../shared/data).
"$gosim" calibrate --trace calibration/data/hta_a100_alexnet.json.gz --step-pattern '\|forward\]$' \
  --predictions "$work/pred.csv" > /dev/null
$py analysis/plot_calibration.py "$work/pred.csv" --out "$work/calibration.png" > /dev/null
for f in conv timeline placement strip calibration; do
  [ "$(head -c 4 "$work/$f.png" | od -An -c | tr -d ' ')" = "211PNG" ] || { echo "FAIL: $f.png is not a PNG"; exit 1; }
done
# Near-duplicates in the header (leak_suites): the table's graph g1 is the
# test entry of one suite, and a train entry of another is BERT at another
# depth and batch (the same family fingerprint).
cat > "$work/suite_test.yaml" <<YAML
name: leak_test
graphs:
  - {name: g1, generator: bert, params: {layers: 2, hidden: 64, heads: 2, seq_len: 8, batch: 2}, split: test}
YAML
cat > "$work/suite_train.yaml" <<YAML
name: leak_train
graphs:
  - {name: bert3, generator: bert, params: {layers: 3, hidden: 64, heads: 2, seq_len: 8, batch: 4}, split: train}
  - {name: other, generator: regal_random, params: {nodes: 50, seed: 3}, split: train}
YAML
{ cat "$work/layout.yaml"; echo "leak_suites: [$work/suite_test.yaml, $work/suite_train.yaml]"; } > "$work/layout_leaks.yaml"
GOSIM="$gosim" $py analysis/tables.py "$work/layout_leaks.yaml" "$work/run" --out "$work/tables6" > "$work/grid6.md"
grep -q "^Near-duplicates of test graphs .*: g1 ~ bert3 (suite_train train)$" "$work/grid6.md" ||
  { echo "FAIL: the near-duplicate is not in the header"; cat "$work/grid6.md"; exit 1; }
{ cat "$work/layout.yaml"; echo "leak_suites: [$work/suite_test.yaml]"; } > "$work/layout_noleak.yaml"
GOSIM="$gosim" $py analysis/tables.py "$work/layout_noleak.yaml" "$work/run" --out "$work/tables7" > "$work/grid7.md"
grep -q "^Near-duplicates of test graphs .*: none$" "$work/grid7.md" ||
  { echo "FAIL: no near-duplicate should read none"; cat "$work/grid7.md"; exit 1; }
{ cat "$work/layout.yaml"; echo "leak_suites: [$work/no_such_suite.yaml]"; } > "$work/layout_badleak.yaml"
if GOSIM="$gosim" $py analysis/tables.py "$work/layout_badleak.yaml" "$work/run" --out "$work/tables8" \
    > /dev/null 2> "$work/err_leak.txt"; then
  echo "FAIL: a missing leak suite was accepted"; exit 1
fi
[ "$(wc -l < "$work/err_leak.txt")" -eq 1 ] || { echo "FAIL: the leak error is not one line"; cat "$work/err_leak.txt"; exit 1; }
# Bad input: one line, non-zero exit.
if $py analysis/tables.py "$work/layout.yaml" "$work/nowhere" 2> "$work/err.txt"; then
  echo "FAIL: a missing run folder was accepted"; exit 1
fi
[ "$(wc -l < "$work/err.txt")" -eq 1 ] || { echo "FAIL: the error is not one line"; cat "$work/err.txt"; exit 1; }
echo "analysis_test: tables and plots written"
