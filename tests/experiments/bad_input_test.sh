#!/usr/bin/env bash
# Bad input and full disks at the command line (issue 36, item 7): each case
# a reproducer of what once went wrong, each now one line and a non-zero
# exit, or the right result.
#   bad_input_test.sh GOSIM_BINARY   (run from the repository root)
set -uo pipefail
gosim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect CODE PATTERN ARGS...: exit status CODE, exactly one line on stderr
# matching PATTERN (grep -E), nothing on stdout.
expect() {
  local code=$1 pattern=$2
  shift 2
  timeout 60 "$gosim" "$@" > "$work/out" 2> "$work/err"
  local got=$?
  local lines
  lines=$(wc -l < "$work/err")
  if [[ $got -ne $code || $lines -ne 1 || -s $work/out ]] || ! grep -qE -- "$pattern" "$work/err"; then
    fail "gosim $* -> exit $got (want $code), $lines stderr lines:"
    cat "$work/err" "$work/out" | head -20
  fi
}

# whole_lines FILE: every line of FILE is a JSON object ending in a newline.
whole_lines() {
  python3 - "$1" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"\n"), "the last line has no newline"
for line in data.decode().splitlines():
    assert isinstance(json.loads(line), dict)
PY
}

graph=tests/experiments/data/tiny_branches.json
cluster=tests/data/fuzz/cluster/two_gpus.yaml
# A 10-cell experiment (4 agents, 3 seeds for the two that take them).
experiment() {  # experiment OUTPUT
  cat <<EOF
name: bad_input
graphs:
  - file: $graph
clusters: [$cluster]
agents:
  - {name: single_device, seeds: 1}
  - {name: round_robin, seeds: 1}
  - {name: random_search}
  - {name: brkga}
budget: {evaluations: 30}
seeds: 4
objective: step_time
output: $1
EOF
}
cells=10

# (a) A full disk: the run stops at the first failed write with one line,
# and results.jsonl holds whole lines; the next run resumes. A file size
# limit (ulimit -f, SIGXFSZ ignored: writes past it fail with EFBIG) stands
# in for the disk, then a real full file system where one can be mounted.
experiment "$work/limited" > "$work/limited.yaml"
(trap '' XFSZ; ulimit -f 6; exec "$gosim" run "$work/limited.yaml") > "$work/out" 2> "$work/err"
code=$?
errors=$(grep -c -v '^\[info\]' "$work/err")
if [[ $code -ne 1 || $errors -ne 1 ]] ||
   ! grep -qE '^gosim: i/o error: .*: write failed: File too large; the run stopped \(cell [0-9a-f]+ is (not recorded|recorded; the summaries are not up to date)\) \(make room on the disk' "$work/err"; then
  fail "a failed write: exit $code, $errors lines that are not [info]:"
  grep -v '^\[info\]' "$work/err" | head -5
fi
done_before=$(wc -l < "$work/limited/results.jsonl")
whole_lines "$work/limited/results.jsonl" || fail "results.jsonl is not whole after a failed write"
[[ $done_before -ge 1 && $done_before -lt $cells ]] ||
  fail "the run did not stop early: $done_before of $cells cells recorded"
"$gosim" run "$work/limited.yaml" > /dev/null 2>&1 || fail "the run after the failed write"
[[ $(wc -l < "$work/limited/results.jsonl") -eq $cells ]] || fail "the next run did not finish the grid"
whole_lines "$work/limited/results.jsonl" || fail "results.jsonl is not whole after resuming"
if [[ $(id -u) -eq 0 ]] && unshare -m true 2> /dev/null; then
  mkdir -p "$work/tiny"
  experiment "$work/tiny/run" > "$work/tiny.yaml"
  unshare -m bash -c "mount -t tmpfs -o size=48k gosim_full '$work/tiny' &&
    '$gosim' run '$work/tiny.yaml' > '$work/out' 2> '$work/err'; echo \$? > '$work/code';
    cp '$work/tiny/run/results.jsonl' '$work/tiny_results.jsonl' 2> /dev/null || true"
  if [[ $(cat "$work/code") -ne 1 || $(grep -c -v '^\[info\]' "$work/err") -ne 1 ]] ||
     ! grep -qE 'No space left on device; the run stopped \(cell [0-9a-f]+ is (not recorded|recorded; the summaries are not up to date)\)' "$work/err"; then
    fail "a full file system: exit $(cat "$work/code")"
    grep -v '^\[info\]' "$work/err" | head -5
  fi
  [[ ! -e $work/tiny_results.jsonl ]] || whole_lines "$work/tiny_results.jsonl" ||
    fail "results.jsonl on the full file system is not whole"
fi

# (b) results.jsonl linked to an endless file: refused at once.
for device in /dev/full /dev/zero; do
  mkdir -p "$work/linked"
  ln -sf "$device" "$work/linked/results.jsonl"
  experiment "$work/linked" > "$work/linked.yaml"
  expect 1 "^gosim: state error: $work/linked/results.jsonl: the results log is not a regular file \\(a symbolic link to $device\\) \\(remove it" \
    run "$work/linked.yaml"
done
# Any input that is a device: refused, not read forever.
expect 1 "^gosim: config error: --graph: '/dev/zero' is not a graph file: it is not a regular file" \
  simulate --graph /dev/zero --cluster "$cluster"
expect 1 '^gosim: i/o error: /dev/zero: cannot read it as a file: it is a device' \
  simulate --graph "$graph" --cluster /dev/zero
expect 1 "^gosim: i/o error: $work/endless.yaml: cannot read it as a file: it is a device \(through a symbolic link\)" \
  simulate --graph "$graph" --cluster "$(ln -s /dev/zero "$work/endless.yaml"; echo "$work/endless.yaml")"
# A pipe still reads (process substitution).
"$gosim" simulate --graph "$graph" --cluster <(cat "$cluster") > /dev/null 2>&1 || fail "a cluster from a pipe"

# (c) gzip'd experiment and cluster files.
experiment "$work/zipped" | gzip -c > "$work/zipped.yaml.gz"
"$gosim" run "$work/zipped.yaml.gz" > "$work/out" 2> "$work/err" && [[ $(wc -l < "$work/zipped/results.jsonl") -eq $cells ]] ||
  { fail "a gzip'd experiment"; cat "$work/err" | tail -3; }
gzip -c "$cluster" > "$work/two_gpus.yaml.gz"
"$gosim" simulate --graph "$graph" --cluster "$work/two_gpus.yaml.gz" > /dev/null 2> "$work/err" ||
  { fail "a gzip'd cluster file"; cat "$work/err"; }

# (d) Truncated files that end in a bare key: one ConfigError naming the file.
experiment "$work/truncated" | sed -n '1,9p' > "$work/truncated.yaml"   # name .. agents, then
printf 'budget:' >> "$work/truncated.yaml"                                # a file cut after a key
expect 1 "^gosim: config error: $work/truncated.yaml:10:1: \\[budget\\]: the file ends in key 'budget' without a value \\(is it truncated\\?\\)" \
  run "$work/truncated.yaml"
printf 'name: t\ngraphs:\n  - file: %s\nclusters: [%s]\nagents:\n  - name: brkga\n    label:' "$graph" "$cluster" \
  > "$work/label.yaml"
expect 1 "^gosim: config error: $work/label.yaml:7:5: \\[agents\\[0\\]\\.label\\]: the file ends in key 'label' without a value" \
  run "$work/label.yaml"
head -n 11 "$cluster" > "$work/cut_cluster.yaml"   # ... "    launch_overhead: 5 us" of gpu, then "links:"
printf 'links:\n  - src: [gpu0, gpu1]\n    latency:' >> "$work/cut_cluster.yaml"
expect 1 "^gosim: config error: $work/cut_cluster.yaml:14:5: \\[links\\[0\\]\\.latency\\]: the file ends in key 'latency'" \
  simulate --graph "$graph" --cluster "$work/cut_cluster.yaml"
: > "$work/empty_cluster.yaml"
expect 1 "^gosim: config error: $work/empty_cluster.yaml" simulate --graph "$graph" --cluster "$work/empty_cluster.yaml"

# (e) A key given twice in a graph: refused at the second.
sed 's/"flops": \([0-9.e+]*\)/"flops": -5, "flops": \1/' "$graph" > "$work/twice.json"
grep -q '"flops": -5, "flops"' "$work/twice.json" || fail "the test graph has no flops to repeat"
expect 1 "^gosim: graph error: $work/twice.json:[0-9]+:[0-9]+: key \"flops\" appears twice in one object" \
  simulate --graph "$work/twice.json" --cluster "$cluster"

# (f) A binary graph whose reserved header bytes are not 0.
"$gosim" graphs export "$graph" --out "$work/g.gosimgraph" > /dev/null || fail "graphs export .gosimgraph"
python3 -c "import sys; d = bytearray(open(sys.argv[1], 'rb').read()); d[12] = 7; open(sys.argv[2], 'wb').write(d)" \
  "$work/g.gosimgraph" "$work/reserved.gosimgraph"
expect 1 "^gosim: graph error: $work/reserved.gosimgraph: byte 12: corrupt header: the reserved bytes at offset 12 are not 0" \
  simulate --graph "$work/reserved.gosimgraph" --cluster "$cluster"

# (g) A gzip bomb (1.5 GiB of zeros in 1.5 MB) stops early, well before the
# 1 GiB limit would be reached.
python3 - "$work/bomb.json.gz" <<'PY'
import sys, zlib
c = zlib.compressobj(9, zlib.DEFLATED, 31)
zeros = bytes(1 << 20)
first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
repeat = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
with open(sys.argv[1], "wb") as f:
    f.write(first + repeat * 1499 + bytes(4) + (1500 << 20).to_bytes(4, "little"))
PY
start=$(date +%s%N)
expect 1 "^gosim: i/o error: $work/bomb.json.gz: byte [0-9]+: gzip data would inflate to more than 1073741824 bytes \\(1.00 GiB, the decompression limit\\): 32\\.[0-9]+ MiB from its first" \
  simulate --graph "$work/bomb.json.gz" --cluster "$cluster"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "gzip bomb refused in $elapsed_ms ms"

# (h) optimize --out into a folder that cannot take it: refused before the search.
touch "$work/a_file"
expect 1 "^gosim: i/o error: --out $work/a_file/best.json: '$work/a_file' is not a folder" \
  optimize --graph "$graph" --cluster "$cluster" --agent random_search --budget 100000 --no-progress \
  --out "$work/a_file/best.json"
expect 1 "^gosim: i/o error: --trace /proc/gosim_nowhere/t.json: cannot write in folder '/proc'" \
  optimize --graph "$graph" --cluster "$cluster" --agent random_search --budget 100000 --no-progress \
  --trace /proc/gosim_nowhere/t.json
expect 1 "^gosim: i/o error: --out /proc/p.yaml: cannot write in folder '/proc'" \
  calibrate --trace calibration/data/hta_a100_alexnet.json.gz --out /proc/p.yaml
# A writable --out into folders still to be made works.
"$gosim" optimize --graph "$graph" --cluster "$cluster" --agent m_etf --no-progress --out "$work/new/deeper/best.json" \
  > /dev/null 2>&1 && [[ -s $work/new/deeper/best.json ]] || fail "optimize --out into new folders"

exit $((failures > 0))
