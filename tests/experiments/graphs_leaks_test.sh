#!/usr/bin/env bash
# Sealing by content (docs/EXPERIMENTS.md, "Sealed test sets"): `gosim
# graphs fingerprint` prints an exact and a family fingerprint; `gosim
# graphs leaks` lists entries of different splits that are the same graph
# (under other text) or the same model at another batch or depth, and exits
# 1; with none it exits 0.
#   graphs_leaks_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The config-text seal passes this: batch 32 is the generator's default.
cat > "$work/leaky.yaml" <<'YAML'
name: leaky
graphs:
  - {name: incep_test, generator: inception_v3, split: test, params: {training: true}}
  - {name: incep_train, generator: inception_v3, split: train, params: {training: true, batch: 32}}
  - {name: incep_b16, generator: inception_v3, split: valid, params: {training: true, batch: 16}}
  - {name: resnet, generator: resnet, split: train, params: {depth: 50}}
YAML
cat > "$work/clean.yaml" <<'YAML'
name: clean
graphs:
  - {name: incep_test, generator: inception_v3, split: test, params: {training: true}}
  - {name: resnet, generator: resnet, split: train, params: {depth: 50}}
  - {name: bert, generator: bert, split: valid, params: {layers: 4}}
YAML

status=0
out=$("$gosim" graphs leaks "$work/leaky.yaml" 2>/dev/null) || status=$?
[ "$status" = 1 ] || fail "leaks exited $status on a leaky suite: $out"
grep -q "same graph: incep_test (test of .*leaky.yaml) and incep_train (train of" <<< "$out" || fail "no exact pair: $out"
grep -q "same family: incep_test (test of .*) and incep_b16 (valid of" <<< "$out" || fail "no family pair: $out"
if grep -q "resnet" <<< "$out"; then fail "resnet reported: $out"; fi
grep -q "3 pair(s) across splits among 4 entries" <<< "$out" || fail "wrong count: $out"

out=$("$gosim" graphs leaks "$work/clean.yaml" 2>/dev/null) || fail "leaks failed on a clean suite: $out"
grep -q "no leaks: 3 entries" <<< "$out" || fail "clean suite: $out"
# Across suites: the clean suite's test graph is leaky's train graph.
status=0
"$gosim" graphs leaks "$work/clean.yaml" "$work/leaky.yaml" --json > "$work/both.json" 2>/dev/null || status=$?
[ "$status" = 1 ] || fail "leaks across suites exited $status"
python3 - "$work/both.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["entries"] == 7, d["entries"]
kinds = sorted(p["kind"] for p in d["pairs"])
assert "exact" in kinds and "family" in kinds, kinds
assert all({"exact", "family", "split", "suite", "name"} <= set(p["a"]) for p in d["pairs"])
PY

# fingerprint: the same exact fingerprint for the same graph under two specs.
a=$("$gosim" graphs fingerprint gen:inception_v3:training=true --json | python3 -c "import json,sys; print(json.load(sys.stdin)['exact'])")
b=$("$gosim" graphs fingerprint gen:inception_v3:training=true,batch=32 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['exact'])")
[ "$a" = "$b" ] || fail "exact fingerprints differ: $a $b"
# gosim run refuses a train graph that builds a test graph under other
# text: the test generator's graph, exported to a file.
"$gosim" graphs export gen:rnnlm:layers=3,hidden=96 --out "$work/lm.gosimgraph" > /dev/null
cat > "$work/file_leak.yaml" <<YAML
name: file_leak
graphs:
  - {name: lm_test, generator: rnnlm, split: test, params: {layers: 3, hidden: 96}}
  - {name: lm_file, file: $work/lm.gosimgraph, split: train}
YAML
cat > "$work/exp.yaml" <<YAML
name: leaky_exp
suite: $work/file_leak.yaml
clusters: [k80x2]
agents: [{name: single_device}]
budget: 10
seeds: 1
YAML
status=0
out=$("$gosim" run "$work/exp.yaml" --list 2>&1) || status=$?
[ "$status" != 0 ] || fail "gosim run accepted a leaky experiment: $out"
grep -q "graph 'lm_file' of the train split, used for experiment leaky_exp, builds the same graph as a test graph (entry 'lm_test'" <<< "$out" || fail "no refusal line: $out"
[ "$(wc -l <<< "$out")" -le 2 ] || fail "more than one error line: $out"
# The bench suite of real exported models: no pair across its splits.
out=$("$gosim" graphs leaks configs/suites/bench.yaml 2>/dev/null) || fail "bench suite leaks: $out"
grep -q "no leaks: " <<< "$out" || fail "bench suite: $out"
echo "graphs leaks: ok"
