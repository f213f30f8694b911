#!/usr/bin/env bash
# LibTorch is loaded only by what needs it (core/plugin.h): the program does
# not link it; simulate, a constructive optimize and an experiment of
# baselines never map it nor restart for the allocator settings; a learned
# agent loads the plugin (once restarted); a missing or broken plugin is one
# error line. Also `gosim --version` and `gosim --help`.
#   torch_plugin_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
graph="gen:regal_random:nodes=40,seed=1"
cluster=tests/experiments/data/two_gpus.yaml

# The dynamic loader's list of the files a command opens, in $work/files.log.
loads() { LD_DEBUG=files "$@" > "$work/out.log" 2> "$work/files.log"; }
maps_torch() { grep -q "file=.*libtorch" "$work/files.log"; }
starts() { grep -c "initialize program" "$work/files.log" || true; }

if ldd "$gosim" | grep -q libtorch; then fail "gosim links LibTorch"; fi

version=$("$gosim" --version)
[[ $(wc -l <<< "$version") -eq 1 ]] || fail "--version is not one line: $version"
[[ $version =~ ^gosim\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ ([0-9a-f]{12}(-dirty)?|unknown),\ .+\ build\)\;\ LibTorch\ plugin:\ available ]] \
  || fail "unexpected --version line: $version"

loads "$gosim" --help
for command in train profile replay simulate optimize; do
  grep -q "^  $command " "$work/out.log" || fail "--help does not list $command"
done
if maps_torch; then fail "--help loads LibTorch"; fi

loads "$gosim" simulate --graph "$graph" --cluster "$cluster"
if maps_torch; then fail "simulate loads LibTorch"; fi
[[ $(starts) -eq 1 ]] || fail "simulate started $(starts) times"

loads "$gosim" optimize --graph "$graph" --cluster "$cluster" --agent m_etf --no-progress
if maps_torch; then fail "optimize --agent m_etf loads LibTorch"; fi
[[ $(starts) -eq 1 ]] || fail "optimize --agent m_etf started $(starts) times (no allocator restart expected)"

cat > "$work/exp.yaml" <<YAML
name: plugin_test
graphs: [{generator: regal_random, params: {nodes: 40, seed: 1}, name: g1}]
clusters: [$cluster]
objective: step_time
budget: {evaluations: 50}
seeds: 1
agents: [{name: single_device}, {name: m_etf}]
YAML
loads "$gosim" run "$work/exp.yaml" output="$work/run" --no-progress
if maps_torch; then fail "run of baselines loads LibTorch"; fi
[[ $(starts) -eq 1 ]] || fail "run of baselines started $(starts) times"

sed -e 's/name: plugin_test/name: plugin_test_go/' -e 's/budget: {evaluations: 50}/budget: {evaluations: 2}/' \
  -e 's/agents: .*/agents: [{name: go}]/' "$work/exp.yaml" > "$work/exp_go.yaml"
loads "$gosim" run "$work/exp_go.yaml" output="$work/run_go" --no-progress
maps_torch || fail "run of go did not load LibTorch"
[[ $(starts) -eq 2 ]] || fail "run of go started $(starts) times (one allocator restart expected)"

loads "$gosim" optimize --graph "$graph" --cluster "$cluster" --agent go --budget 2 --no-progress
maps_torch || fail "optimize --agent go did not load LibTorch"
[[ $(starts) -eq 2 ]] || fail "optimize --agent go started $(starts) times (one allocator restart expected)"
grep -q "agent go" "$work/out.log" || fail "optimize --agent go printed no result"

# One line, exit 1, for a missing plugin and for a file that is not one.
status=0
GOSIM_TORCH_PLUGIN="$work/none.so" "$gosim" optimize --graph "$graph" --cluster "$cluster" --agent go \
  > /dev/null 2> "$work/err.log" || status=$?
[[ $status -eq 1 ]] || fail "a missing plugin exits with $status"
[[ $(wc -l < "$work/err.log") -eq 1 ]] || fail "a missing plugin gives: $(cat "$work/err.log")"
grep -q "^gosim: i/o error: $work/none.so: the LibTorch plugin.*is not there" "$work/err.log" \
  || fail "unexpected message: $(cat "$work/err.log")"
status=0
GOSIM_TORCH_PLUGIN=README.md "$gosim" train configs/experiments/regal_train.yaml > /dev/null 2> "$work/err.log" \
  || status=$?
[[ $status -eq 1 ]] || fail "a broken plugin exits with $status"
[[ $(wc -l < "$work/err.log") -eq 1 ]] || fail "a broken plugin gives: $(cat "$work/err.log")"
grep -q "^gosim: i/o error: README.md: cannot load the LibTorch plugin" "$work/err.log" \
  || fail "unexpected message: $(cat "$work/err.log")"
echo "ok"
