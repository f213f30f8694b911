#!/usr/bin/env bash
# One paper reproduction end to end in quick mode, as a user runs it from a
# fresh clone: `experiments/paper/reproduce.sh go_multitask --quick`
# pre-trains GO, runs the grid, and writes the table (Markdown and LaTeX)
# and plots. Also: bad arguments are one error line and a non-zero exit.
#   reproduce_test.sh GOSIM_BINARY   (run from the repository root)
set -euo pipefail
export GOSIM=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
experiments/paper/reproduce.sh go_multitask --quick --out "$work" > "$work/log.txt" 2>&1 ||
  { echo "FAIL: reproduce.sh go_multitask --quick"; tail -20 "$work/log.txt"; exit 1; }
table=$work/go_multitask/go_multitask.md
test -s "$table" || { echo "FAIL: no table"; tail -20 "$work/log.txt"; exit 1; }
# Every model row has all four columns filled (a number, never '-').
for model in Inception-v3 Transformer-XL WaveNet GNMT-8 AmoebaNet BERT; do
  row=$(grep "^| $model | " "$table") || { echo "FAIL: no row $model"; cat "$table"; exit 1; }
  [ "$(awk -F' [|] ' '{print NF}' <<< "$row")" -eq 5 ] && ! grep -q ' | - ' <<< "$row" ||
    { echo "FAIL: row $model incomplete: $row"; exit 1; }
done
grep -Eq '^\| mean % \| \(ref\) \| [+-][0-9.]+% \| [+-][0-9.]+% \| [+-][0-9.]+% \|' "$table" ||
  { echo "FAIL: no mean row"; cat "$table"; exit 1; }
grep -q 'tabular' "$work/go_multitask/go_multitask.tex" || { echo "FAIL: no LaTeX table"; exit 1; }
for f in convergence bert_go_joint.placement bert_go_joint.timeline; do
  [ "$(head -c 4 "$work/go_multitask/$f.png" | od -An -c | tr -d ' ')" = "211PNG" ] ||
    { echo "FAIL: $f.png is not a PNG"; exit 1; }
done
# Re-running resumes: no cell and no training step is redone.
experiments/paper/reproduce.sh go_multitask --quick --out "$work" > "$work/again.txt" 2>&1
grep -q "24 already finished, 0 run now" "$work/again.txt" ||
  { echo "FAIL: the second run redid cells"; grep cells "$work/again.txt"; exit 1; }
# Bad arguments.
for args in "no_such_table" "go_multitask --np x" "go_multitask --bogus"; do
  # shellcheck disable=SC2086
  if experiments/paper/reproduce.sh $args > /dev/null 2> "$work/err.txt"; then
    echo "FAIL: reproduce.sh $args was accepted"; exit 1
  fi
  [ "$(wc -l < "$work/err.txt")" -eq 1 ] || { echo "FAIL: reproduce.sh $args: not one error line"; cat "$work/err.txt"; exit 1; }
done
echo "reproduce_test: go_multitask --quick reproduced, resumed, and bad arguments refused"
