#!/bin/bash
# The rescue order decided on the bench suite's valid split (docs/AGENTS.md, GO): each valid model on
# dgx1_v100 with 30% of its one-GPU peak per device; pipeline, metis and scotch with repair, 67 evaluations.
# Run from the repository root after make build: bash results/xl_feasible/valid_rescue_order.sh
tight=$(mktemp --suffix=.yaml)
for pair in $(python3 -c "
import yaml
s=yaml.safe_load(open('configs/suites/bench.yaml'))
print(' '.join(g['name']+'='+g['file'] for g in s['graphs'] if g.get('split')=='valid'))"); do
  n=${pair%%=*}; f=${pair#*=}
  peak=$(build/bin/gosim simulate --graph $f --cluster dgx1_v100 --cost-model roofline --json 2>/dev/null | python3 -c "import json,sys;print(json.load(sys.stdin)['peak_memory'])")
  cap=$(python3 -c "print(int($peak*0.3))")
  sed "s/    memory_capacity: 16 GiB .*/    memory_capacity: $cap/" configs/clusters/dgx1_v100.yaml > "$tight"
  line="$n peak=$(python3 -c "print(round($peak/2**30,2))")GiB"
  for a in pipeline metis scotch; do
    out=$(build/bin/gosim optimize --graph $f --cluster "$tight" --cost-model roofline --agent $a --agent-option repair=true --budget 67 2>&1)
    if echo "$out" | grep -q "NO FEASIBLE"; then r=oom; elif echo "$out" | grep -q "^step time"; then r="ok($(echo "$out" | grep -o '^[0-9]* evaluations' | head -1))"; else r="err: $(echo "$out" | tail -1 | cut -c1-80)"; fi
    line="$line | $a: $r"
  done
  echo "$line"
done
