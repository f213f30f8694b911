#!/usr/bin/env bash
# One paper reproduction end to end in quick mode, as a user runs it from a
# fresh clone: `experiments/paper/reproduce.sh go_multitask --quick --seeds 1`
# (one seed to stay quick) pre-trains GO, runs the grid, and writes the
# table (Markdown and LaTeX) and plots. Every cell's step time is checked
# against the committed values of tests/experiments/data/
# reproduce_go_multitask_quick.json within the tolerances stated there.
# Also: bad arguments are one error line and a non-zero exit.
#   reproduce_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
export GOSIM=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
experiments/paper/reproduce.sh go_multitask --quick --seeds 1 --out "$work" > "$work/log.txt" 2>&1 ||
  { echo "FAIL: reproduce.sh go_multitask --quick"; tail -20 "$work/log.txt"; exit 1; }
table=$work/go_multitask/go_multitask.md
test -s "$table" || { echo "FAIL: no table"; tail -20 "$work/log.txt"; exit 1; }
# Every model row has all ten columns filled (a number, never '-'): the four
# of the paper's table, the two equal-budget search controls and the four
# ablation and control rows of GO.
for model in Inception-v3 Transformer-XL WaveNet GNMT-8 AmoebaNet BERT; do
  row=$(grep "^| $model | " "$table") || { echo "FAIL: no row $model"; cat "$table"; exit 1; }
  [ "$(awk -F' [|] ' '{print NF}' <<< "$row")" -eq 11 ] && ! grep -q ' | - ' <<< "$row" ||
    { echo "FAIL: row $model incomplete: $row"; exit 1; }
done
grep -Eq '^\| geo-mean speedup \| \(ref\)( \| [0-9.]+x){9} \|' "$table" ||
  { echo "FAIL: no geo-mean row"; cat "$table"; exit 1; }
grep -q '^\*\*quick mode: pipeline check, not a result\*\*' "$table" || { echo "FAIL: no quick-mode header"; exit 1; }
grep -q 'Final runs on the test graphs logged in these run folders: 1' "$table" ||
  { echo "FAIL: the final run is not counted"; cat "$table"; exit 1; }
grep -q '^Cost model: roofline (60 cells)' "$table" || { echo "FAIL: no cost model line"; cat "$table"; exit 1; }
# Evaluations: the constructive baselines one, GO and the controls the quick
# budget; pre-training only behind the GO columns (the joint checkpoint's run).
grep -Eq '^\| evaluations per cell \| 1 \| 1( \| 160){8} \|' "$table" ||
  { echo "FAIL: evaluations row"; cat "$table"; exit 1; }
grep -Eq '^\| evals \(pre-train\) \| 0 \| 0 \| [1-9][0-9,]* \| [1-9][0-9,]* \| 0 \| 0 \| [1-9][0-9,]* \| 0 \| 0 \| 0 \|' "$table" ||
  { echo "FAIL: pre-training row"; cat "$table"; exit 1; }
# The numbers: every cell against the committed values.
/usr/bin/python3 - "$work/go_multitask/run/results.jsonl" tests/experiments/data/reproduce_go_multitask_quick.json <<'PY'
import json, sys
expected = json.load(open(sys.argv[2]))
seen, bad = 0, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    want = expected["step_time_ms"][r["label"]][r["graph"]]
    got = r["step_time"] * 1e3
    tolerance = expected["tolerance"][r["label"]]
    seen += 1
    if abs(got - want) > tolerance * want:
        bad.append(f"{r['label']} on {r['graph']}: {got:.3f} ms, committed {want:.3f} ms (tolerance {tolerance:.1%})")
if seen != 60 or bad:
    sys.exit(f"FAIL: {seen} cells; " + "; ".join(bad))
PY
grep -q 'tabular' "$work/go_multitask/go_multitask.tex" || { echo "FAIL: no LaTeX table"; exit 1; }
for f in convergence bert_go_joint.placement bert_go_joint.timeline; do
  [ "$(head -c 4 "$work/go_multitask/$f.png" | od -An -c | tr -d ' ')" = "211PNG" ] ||
    { echo "FAIL: $f.png is not a PNG"; exit 1; }
done
# Re-running resumes: no cell and no training step is redone.
experiments/paper/reproduce.sh go_multitask --quick --seeds 1 --out "$work" > "$work/again.txt" 2>&1
grep -q "60 already finished, 0 run now" "$work/again.txt" ||
  { echo "FAIL: the second run redid cells"; grep cells "$work/again.txt"; exit 1; }
# Bad arguments.
for args in "no_such_table" "go_multitask --np x" "go_multitask --bogus" "go_multitask --seeds 0"; do
  # shellcheck disable=SC2086
  if experiments/paper/reproduce.sh $args > /dev/null 2> "$work/err.txt"; then
    echo "FAIL: reproduce.sh $args was accepted"; exit 1
  fi
  [ "$(wc -l < "$work/err.txt")" -eq 1 ] || { echo "FAIL: reproduce.sh $args: not one error line"; cat "$work/err.txt"; exit 1; }
done
# --only: two rows of HRL Table 1 now (every grid, no other cell), a partial
# table without plots; a misspelt label is refused before any cell runs.
experiments/paper/reproduce.sh hrl_table1 --quick --only human_expert,gpu_only --out "$work/only" > "$work/only.txt" 2>&1 ||
  { echo "FAIL: reproduce.sh hrl_table1 --quick --only"; tail -20 "$work/only.txt"; exit 1; }
[ "$(cat "$work"/only/hrl_table1/{2,4,8}gpu/results.jsonl | wc -l)" -eq 12 ] ||
  { echo "FAIL: --only ran other cells"; cat "$work"/only/hrl_table1/*/results.jsonl | cut -c1-200; exit 1; }
grep -q "pending cells of the other agents are left" "$work/only.txt" || { echo "FAIL: no count of the cells left"; exit 1; }
grep -q -- "--only human_expert,gpu_only" "$work/only/hrl_table1/provenance.txt" || { echo "FAIL: provenance"; exit 1; }
grep -Eq '^\| NMT, 2 layers \(2\) \| - \| [0-9.]+ \(\+[0-9.]+%\) \| - \| - \| \*\*[0-9.]+\*\* \| - \|' \
  "$work/only/hrl_table1/hrl_table1.md" ||
  { echo "FAIL: partial table"; cat "$work/only/hrl_table1/hrl_table1.md"; exit 1; }
! ls "$work"/only/hrl_table1/*.png > /dev/null 2>&1 || { echo "FAIL: plots of a partial table"; exit 1; }
# --status: per grid and agent, the cells done and pending; runs nothing.
experiments/paper/reproduce.sh hrl_table1 --quick --status --out "$work/only" > "$work/status.txt" 2>&1 ||
  { echo "FAIL: --status"; cat "$work/status.txt"; exit 1; }
grep -Eq '^human_expert +4 +0 +0$' "$work/status.txt" && grep -Eq '^hrl +0 +12 +0$' "$work/status.txt" ||
  { echo "FAIL: --status counts"; cat "$work/status.txt"; exit 1; }
[ "$(cat "$work"/only/hrl_table1/{2,4,8}gpu/results.jsonl | wc -l)" -eq 12 ] || { echo "FAIL: --status ran cells"; exit 1; }
experiments/paper/reproduce.sh go_multitask --quick --status --out "$work/none" > "$work/status2.txt" 2>&1 ||
  { echo "FAIL: --status of a table not started"; cat "$work/status2.txt"; exit 1; }
grep -q "0 of 156 cells finished" "$work/status2.txt" && [ ! -e "$work/none" ] ||
  { echo "FAIL: --status of a table not started"; cat "$work/status2.txt"; ls -R "$work/none"; exit 1; }
if experiments/paper/reproduce.sh hrl_table1 --quick --only gpu_onyl --out "$work/typo" > /dev/null 2> "$work/typo.txt"; then
  echo "FAIL: --only gpu_onyl was accepted"; exit 1
fi
grep -q "Did you mean 'gpu_only'" "$work/typo.txt" || { echo "FAIL: --only typo"; cat "$work/typo.txt"; exit 1; }
[ ! -e "$work/typo/hrl_table1/2gpu/results.jsonl" ] || { echo "FAIL: cells ran despite the typo"; exit 1; }
echo "reproduce_test: go_multitask --quick reproduced, resumed, and bad arguments refused; --only ran a partial table, --status counted it"
