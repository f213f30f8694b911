#!/bin/sh
# Reproduces the `local` calibration and the replay measurements of
# docs/CALIBRATION.md ("Replaying decisions on this machine"). Run from the
# repository root of a LibTorch build:
#   sh calibration/hardware/replay_experiment.sh
# Takes about 3 minutes on the 2-core machine. Writes under
# ${OUT:-runs/replay_local} and ${PROFILE:-configs/calibrated/local.yaml}.
#
# Measure on a quiet machine: any other process on the cores (even a niced
# build) delays the worker threads of multi-device decisions and inflates
# their step times by 10-40% (docs/CALIBRATION.md shows by how much).
set -eu
GOSIM=${GOSIM:-build/bin/gosim}
OUT=${OUT:-runs/replay_local}
PROFILE=${PROFILE:-configs/calibrated/local.yaml}
REPEATS=${REPEATS:-7}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-3}
# Calibration graphs: BERTs and LSTM language models of several widths,
# lengths and batches, so that every op type is seen at several sizes; none of
# them is a replayed graph. Overridable (space-separated generator specs).
CALIBRATION_GRAPHS=${CALIBRATION_GRAPHS:-"\
bert:layers=1,hidden=128,heads=2,intermediate=512,seq_len=32,vocab=1000,batch=8,training=true \
bert:layers=1,hidden=256,heads=4,intermediate=1024,seq_len=64,vocab=2000,batch=4,training=true \
bert:layers=1,hidden=512,heads=8,intermediate=2048,seq_len=128,vocab=3000,batch=2,training=true \
rnnlm:layers=1,hidden=256,vocab=1500,seq_len=8,batch=32,training=true \
rnnlm:layers=1,hidden=384,vocab=3000,seq_len=12,batch=24,training=true \
rnnlm:layers=1,hidden=768,vocab=2500,seq_len=10,batch=8,training=true"}
# The graph whose node-by-node two-device run gives the copy samples of the
# cpu0 <-> cpu1 link fit (memcpy_ptop).
LINK_GRAPH=${LINK_GRAPH:-'rnnlm:layers=2,hidden=256,vocab=1500,seq_len=8,batch=32,training=true'}
# The replayed graphs (steps of about 0.05-0.15 s).
BERT=${BERT:-'bert:layers=2,hidden=384,heads=4,intermediate=1536,seq_len=64,vocab=2000,batch=4,training=true'}
RNNLM=${RNNLM:-'rnnlm:layers=2,hidden=512,vocab=2000,seq_len=16,batch=16,training=true'}
mkdir -p "$OUT"

# 1. Profile the calibration graphs on one device, and the link graph on two.
traces=""
i=0
for spec in $CALIBRATION_GRAPHS; do
  "$GOSIM" profile --graph "gen:$spec" --cluster local --steps 12 --warmup 3 --out "$OUT/calib_$i.json.gz" |
    grep -v '^aten ops'
  traces="$traces $OUT/calib_$i.json.gz"
  i=$((i + 1))
done
"$GOSIM" graphs export "gen:$LINK_GRAPH" --out "$OUT/link_graph.json"
python3 calibration/hardware/make_decisions.py "$OUT/link_graph.json" local "$OUT/decisions_link"
"$GOSIM" profile --graph "gen:$LINK_GRAPH" --cluster local --decision "$OUT/decisions_link/alternate.json" \
  --steps 12 --warmup 3 --out "$OUT/link.json.gz" | grep -v '^aten ops'

# 2. Fit one profile: kernels from the one-device traces, the link from the
#    two-device trace's copies.
traces=${traces# }
first=${traces%% *}
rest=${traces#"$first"}
also=""
for t in $rest; do also="$also --also $t"; done
# shellcheck disable=SC2086
"$GOSIM" calibrate --trace "$first" $also --transfers-from "$OUT/link.json.gz" --out "$PROFILE"

# 3. Decisions for the two replayed graphs; 4. replay each, measured vs simulated.
for g in bert rnnlm; do
  if [ $g = bert ]; then spec=$BERT; else spec=$RNNLM; fi
  "$GOSIM" graphs export "gen:$spec" --out "$OUT/$g.json"
  python3 calibration/hardware/make_decisions.py "$OUT/$g.json" local "$OUT/decisions_$g"
  decisions=""
  for d in "$OUT/decisions_$g"/*.json; do decisions="$decisions --decision $d"; done
  # shellcheck disable=SC2086
  "$GOSIM" replay --graph "$OUT/$g.json" --cluster local --profile "$PROFILE" --repeats "$REPEATS" \
    --warmup "$WARMUP" --rounds "$ROUNDS" --out "$OUT/replay_$g.json" $decisions
done
python3 calibration/hardware/replay_summary.py "$OUT/replay_bert.json" "$OUT/replay_rnnlm.json"
