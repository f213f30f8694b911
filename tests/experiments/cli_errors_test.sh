#!/usr/bin/env bash
# Command-line errors are one line on stderr: usage errors exit 2, input errors
# exit 1, and no user text reaches the terminal unescaped.
#   cli_errors_test.sh GOSIM_BINARY   (run from the repository root)
set -uo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect CODE PATTERN ARGS...: exit status CODE, exactly one line on stderr
# matching PATTERN (grep -E), nothing on stdout, no escape byte.
expect() {
  local code=$1 pattern=$2
  shift 2
  "$gosim" "$@" > "$work/out" 2> "$work/err"
  local got=$?
  local lines
  lines=$(wc -l < "$work/err")
  if [[ $got -ne $code || $lines -ne 1 || -s $work/out ]] || ! grep -qE -- "$pattern" "$work/err" ||
     grep -q $'\x1b' "$work/err"; then
    echo "FAIL: gosim $* -> exit $got (want $code), $lines stderr lines:"
    cat "$work/err"
    failures=$((failures + 1))
  fi
}

graph=tests/data/fuzz/graph_json/tiny_branches.json
cluster=tests/data/fuzz/cluster/two_gpus.yaml
expect 2 '^gosim: usage error: The following argument was not expected: --no-such-option \(see gosim simulate --help\)$' \
  simulate --graph g.json --cluster c.yaml --no-such-option
expect 2 '^gosim: usage error: .*--graph is required \(see gosim simulate --help\)$' simulate --cluster x
expect 2 '^gosim: usage error: A subcommand is required \(see gosim --help\)$'
# An unknown command is named, with the valid ones.
valid='graphs, simulate, run, optimize, calibrate(, [a-z]+)*'
expect 2 "^gosim: usage error: unknown command 'bogus' \\(valid: $valid; see gosim --help\\)\$" bogus
expect 2 "^gosim: usage error: unknown command 'bogus' \\(valid: $valid; see gosim --help\\)\$" \
  --log-level debug bogus --graph x
expect 2 "^gosim: usage error: unknown command 'bo\\\\ngus\\\\x1b' " $'bo\ngus\x1b'
expect 2 '^gosim: usage error: .*' optimize --graph "$graph" --cluster "$cluster" --agent m_etf --seed=-x
# A budget above 2^63 is refused, not clamped to a run that never ends.
expect 1 '^gosim: config error: --budget: budget 99999999999999999999 is outside 0\.\.10000000000 evaluations' \
  optimize --graph "$graph" --cluster "$cluster" --agent random_search --budget 99999999999999999999 --no-progress
expect 1 "^gosim: config error: --budget: budget '1e9' is not a whole number" \
  optimize --graph "$graph" --cluster "$cluster" --agent random_search --budget 1e9 --no-progress
expect 1 '^gosim: config error: --wall-seconds: budget wall_seconds is above the limit' \
  optimize --graph "$graph" --cluster "$cluster" --agent random_search --wall-seconds 1e300 --no-progress
# A graph whose node names hold a newline and an ANSI escape: one line, escaped.
expect 1 '^gosim: graph error: .*no\\nsuch\\x1b\[2J' simulate --graph tests/data/fuzz/graph_json/control_characters.json \
  --cluster "$cluster" --decision x.json
# Node names that are not UTF-8 (a .pbtxt): errors print the bytes escaped; JSON
# a reader must match names in is refused; the trace and --json still print.
bad_names=tests/data/fuzz/costgraph/invalid_utf8.pbtxt
expect 1 "^gosim: graph error: $bad_names: node 1 \\('bad\\\\xff\\\\xfename'\\) contains text that is not valid UTF-8" \
  graphs export "$bad_names" --out "$work/bad.json"
expect 1 "^gosim: decision error: .*unknown node 'badname' .*Did you mean 'bad\\\\xff\\\\xfename'\\?" \
  simulate --graph "$bad_names" --cluster "$cluster" --decision tests/data/fuzz/decision/missing_node_utf8_graph.json
"$gosim" simulate --graph "$bad_names" --cluster "$cluster" --trace "$work/bad_trace.json" --json \
  > "$work/out" 2> "$work/err" && grep -q '"name": "bad' "$work/out" && grep -q 'bad' "$work/bad_trace.json" ||
  { echo "FAIL: simulate --trace --json of a graph with non-UTF-8 names"; cat "$work/err"; failures=$((failures + 1)); }
# An empty graph is refused at load.
expect 1 '^gosim: graph error: .*empty\.pbtxt: the graph has no nodes' \
  optimize --graph tests/data/fuzz/costgraph/empty.pbtxt --cluster "$cluster" --agent m_etf --no-progress
# A zip bomb stops at the decompression limit with the file named.
head -c 3000000 /dev/zero | gzip -c > "$work/bomb.json.gz"
GOSIM_MAX_INFLATED_BYTES=1000000 expect 1 "^gosim: i/o error: $work/bomb.json.gz: byte [0-9]+: gzip data inflates to more than 1000000 bytes" \
  optimize --graph "$work/bomb.json.gz" --cluster "$cluster" --agent m_etf --no-progress
# Several labels after one --only: the second is named, with the fix.
expect 1 "^gosim: config error: 'gdp' is neither the experiment nor an override \\(key\\.path=value\\).*--only go --only gdp" \
  run configs/experiments/quickstart.yaml --only go gdp
# Help and a valid run still print normally and exit 0.
"$gosim" --help > /dev/null 2>&1 || { echo "FAIL: gosim --help"; failures=$((failures + 1)); }
"$gosim" optimize --graph "$graph" --cluster "$cluster" --agent random_search --budget 20 --no-progress \
  > /dev/null 2>&1 || { echo "FAIL: a valid optimize"; failures=$((failures + 1)); }
exit $((failures > 0))
