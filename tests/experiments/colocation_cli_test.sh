#!/usr/bin/env bash
# Colocation and infeasibility at the command line (docs/SIMULATOR.md):
# `gosim simulate` reports a decision that splits a colocation group as
# INFEASIBLE with the group and nodes (and simulates it as it is with
# --option enforce_colocation=false); `gosim optimize` never reports an
# infeasible decision as a result: it says NO FEASIBLE DECISION, writes no
# decision and exits with status 3.
#   colocation_cli_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# w (a weight) -> f -> u (its update, same group); g beside them.
cat > "$work/g.json" <<'JSON'
{"format": "gosim.graph", "version": 1, "name": "coloc_cli", "nodes": [
  {"name": "w", "op": "Variable", "persistent_bytes": 1048576, "colocation": "w",
   "outputs": [{"bytes": 1048576, "shape": [262144], "dtype": "float32"}]},
  {"name": "f", "op": "MatMul", "flops": 1e9, "inputs": ["w"],
   "outputs": [{"bytes": 1048576, "shape": [262144], "dtype": "float32"}]},
  {"name": "u", "op": "ApplyAdam", "flops": 1e6, "colocation": "w", "inputs": ["f"]}]}
JSON
cat > "$work/split.json" <<'JSON'
{"format": "gosim.decision", "version": 1, "placement": {"w": "gpu0", "f": "gpu0", "u": "gpu1"}}
JSON

out=$("$gosim" simulate --graph "$work/g.json" --cluster tests/experiments/data/two_gpus.yaml \
      --decision "$work/split.json")
grep -q "INFEASIBLE (colocation group split)" <<< "$out" || fail "simulate did not mark the split: $out"
grep -q "colocation group 'w' is split: 'w' is on gpu0 but 'u' is on gpu1" <<< "$out" || fail "no split line: $out"
out=$("$gosim" simulate --graph "$work/g.json" --cluster tests/experiments/data/two_gpus.yaml \
      --decision "$work/split.json" --option enforce_colocation=false)
if grep -q INFEASIBLE <<< "$out"; then fail "enforce_colocation=false still infeasible: $out"; fi

# optimize keeps the group together.
"$gosim" optimize --graph "$work/g.json" --cluster tests/experiments/data/two_gpus.yaml --agent random_search \
  --budget 20 --no-progress --out "$work/best.json" > "$work/opt.log"
"$gosim" simulate --graph "$work/g.json" --cluster tests/experiments/data/two_gpus.yaml \
  --decision "$work/best.json" --check-colocation > /dev/null || fail "optimize returned a split decision"

# Nothing fits in 1 KiB: no feasible decision, status 3, nothing written.
sed 's/memory_capacity: 16 GiB/memory_capacity: 1 KiB/' tests/experiments/data/two_gpus.yaml > "$work/tiny.yaml"
set +e
"$gosim" optimize --graph "$work/g.json" --cluster "$work/tiny.yaml" --agent brkga --budget 30 \
  --no-progress --out "$work/none.json" > "$work/none.log" 2>&1
status=$?
set -e
[ "$status" -eq 3 ] || fail "optimize exited with $status, not 3: $(cat "$work/none.log")"
grep -q "NO FEASIBLE DECISION: brkga found none in 30 evaluations" "$work/none.log" || fail "$(cat "$work/none.log")"
[ ! -e "$work/none.json" ] || fail "an infeasible decision was written"
echo "colocation_cli_test: ok"
