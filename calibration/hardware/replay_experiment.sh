#!/bin/sh
# Reproduces the `local` calibration and the replay measurements of
# docs/CALIBRATION.md ("Replay on this machine"). Run from the repository root
# of a LibTorch build:
#   GOSIM_HW=build-hw/bin/gosim_hw GOSIM=build/bin/gosim calibration/hardware/replay_experiment.sh
# gosim_hw (calibration/hardware/hw_tool.cc) makes the same library calls as
# `gosim profile`, `gosim calibrate --out` and `gosim replay`; GOSIM is any
# gosim build (it only exports the graphs). A few minutes on the 2-core
# machine. Writes under ${OUT:-runs/replay_local} and configs/calibrated/local.yaml.
set -eu
GOSIM=${GOSIM:-build/bin/gosim}
GOSIM_HW=${GOSIM_HW:-build/bin/gosim_hw}
OUT=${OUT:-runs/replay_local}
REPEATS=${REPEATS:-7}
WARMUP=${WARMUP:-2}
# The graphs (overridable): steps of about 0.1-0.2 s, so that the kernels and
# not the per-op dispatch dominate. The profile is fitted on two graphs, one
# per architecture, neither of them replayed (other widths, batches, lengths).
PROFILE_GRAPH=${PROFILE_GRAPH:-'bert:layers=1,hidden=256,heads=4,intermediate=1024,seq_len=64,vocab=2000,batch=4,training=true'}
PROFILE_GRAPH2=${PROFILE_GRAPH2:-'rnnlm:layers=1,hidden=384,vocab=3000,seq_len=12,batch=24,training=true'}
BERT=${BERT:-'bert:layers=2,hidden=384,heads=4,intermediate=1536,seq_len=64,vocab=2000,batch=4,training=true'}
RNNLM=${RNNLM:-'rnnlm:layers=2,hidden=512,vocab=2000,seq_len=16,batch=16,training=true'}
mkdir -p "$OUT"

# 1. Profile the calibration graphs (none of the replayed ones) and fit the profile.
"$GOSIM_HW" profile "$PROFILE_GRAPH" configs/clusters/local.yaml "$OUT/local_profile_trace.json.gz" 12 3
traces="$OUT/local_profile_trace.json.gz"
if [ -n "$PROFILE_GRAPH2" ]; then
  "$GOSIM_HW" profile "$PROFILE_GRAPH2" configs/clusters/local.yaml "$OUT/local_profile_trace2.json.gz" 12 3
  traces="$traces $OUT/local_profile_trace2.json.gz"
fi
# shellcheck disable=SC2086
"$GOSIM_HW" fit $traces configs/calibrated/local.yaml

# 2. Decisions for the two replayed graphs; 3. replay each, measured vs simulated.
for g in bert rnnlm; do
  if [ $g = bert ]; then spec=$BERT; else spec=$RNNLM; fi
  "$GOSIM" graphs export "gen:$spec" --out "$OUT/$g.json"
  python3 calibration/hardware/make_decisions.py "$OUT/$g.json" local "$OUT/decisions_$g"
  # shellcheck disable=SC2046
  "$GOSIM_HW" replay "$spec" configs/clusters/local.yaml configs/calibrated/local.yaml "$OUT/replay_$g.json" \
    "$REPEATS" "$WARMUP" $(ls "$OUT/decisions_$g"/*.json)
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
sim, meas = [], []
for g in ("bert", "rnnlm"):
    r = json.load(open(f"{out}/replay_{g}.json"))
    for d in r["decisions"]:
        sim.append(d["simulated_s"]); meas.append(d["measured_s"])
errs = sorted(abs(s - m) / m for s, m in zip(sim, meas))
n = len(errs)
med = errs[n // 2] if n % 2 else 0.5 * (errs[n // 2 - 1] + errs[n // 2])
c = d = tx = ty = 0
for i in range(n):
    for j in range(i + 1, n):
        a, b = sim[i] - sim[j], meas[i] - meas[j]
        if a == 0 and b == 0: continue
        if a == 0: tx += 1
        elif b == 0: ty += 1
        elif (a > 0) == (b > 0): c += 1
        else: d += 1
tau = (c - d) / (((c + d + tx) * (c + d + ty)) ** 0.5)
print(f"both graphs: {n} decisions, median |error| {100 * med:.1f}%, Kendall tau {tau:.3f}")
PY
