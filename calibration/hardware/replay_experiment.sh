#!/bin/sh
# The hardware replay ranking of docs/CALIBRATION.md ("Profiling and
# replaying this machine"): a `local` profile fitted on the models of
# calibration/evaluation_cpu.yaml other than the replayed ones, then the
# decisions of make_decisions.py replayed for real and simulated on each
# replayed graph, and Kendall's tau between measured and simulated step
# times. Run from the repository root of a LibTorch build, on a quiet
# machine:
#   nice -n 10 sh calibration/hardware/replay_experiment.sh
# About 5 minutes on the 2-core machine (3 graphs x 11 decisions x 3 rounds x
# (2 + 7) steps). Writes under ${OUT:-runs/replay_local}, the profile to
# ${PROFILE:-$OUT/local_heldout.yaml}; traces are cached in
# ${CACHE:-runs/cpu_traces} (shared with calibration/evaluate_cpu.py).
#
# Measure on a quiet machine: any other process on the cores (even a niced
# build) delays the worker threads of multi-device decisions and inflates
# their step times by 10-40% (docs/CALIBRATION.md shows by how much).
set -eu
GOSIM=${GOSIM:-build/bin/gosim}
OUT=${OUT:-runs/replay_local}
PROFILE=${PROFILE:-$OUT/local_heldout.yaml}
CACHE=${CACHE:-runs/cpu_traces}
MANIFEST=${MANIFEST:-calibration/evaluation_cpu.yaml}
REPEATS=${REPEATS:-7}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-3}
FIT=${FIT:-huber}  # gosim calibrate --fit: huber (the default) or nnls
PRESERVE_TOTAL=${PRESERVE_TOTAL:-0}  # 1: gosim calibrate --preserve-total
# Models of the manifest that are replayed, and therefore left out of the
# fit (a transformer, an LSTM, a CNN); the profile is fitted on the others.
REPLAYED=${REPLAYED:-"bert rnnlm resnet50"}
# The model whose node-by-node two-device run gives the copy samples of the
# cpu0 <-> cpu1 link fit (memcpy_ptop); it must not be a replayed one.
LINK_MODEL=${LINK_MODEL:-nmt}
mkdir -p "$OUT"

manifest() {  # manifest graph NAME | manifest fitted: the fitted models' trace files
  python3 - "$MANIFEST" "$@" <<'PY'
import sys, yaml
manifest, what = yaml.safe_load(open(sys.argv[1])), sys.argv[2]
entries = manifest["traces"]
if what == "graph":
    found = [t["graph"] for t in entries if t["name"] == sys.argv[3]]
    if not found:
        sys.exit(f"replay_experiment.sh: {sys.argv[3]} is not a model of {sys.argv[1]}")
    print(found[0])
else:
    replayed = sys.argv[3].split()
    print(" ".join(t["name"] + "=" + t["file"] for t in entries if t["name"] not in replayed))
PY
}
case " $REPLAYED " in *" $LINK_MODEL "*) echo "replay_experiment.sh: LINK_MODEL $LINK_MODEL is replayed" >&2; exit 1;; esac

# 1. Trace every model that is not replayed (cached), and the link model on
#    two devices.
python3 calibration/evaluate_cpu.py --manifest "$MANIFEST" --cache "$CACHE" --gosim "$GOSIM" --profile-only \
  --exclude "$REPLAYED"
link_graph=$(manifest graph "$LINK_MODEL")
"$GOSIM" graphs export "$link_graph" --out "$OUT/link_graph.json"
python3 calibration/hardware/make_decisions.py "$OUT/link_graph.json" local "$OUT/decisions_link"
"$GOSIM" profile --graph "$link_graph" --cluster local --decision "$OUT/decisions_link/alternate.json" \
  --steps 12 --warmup 3 --out "$OUT/link.json.gz" | grep -v '^aten ops'

# 2. Fit one profile: kernels from the one-device traces of the models not
#    replayed, the link from the two-device trace's copies.
first=""
also=""
names=""
for pair in $(manifest fitted "$REPLAYED"); do
  file="$CACHE/${pair#*=}"
  names="$names ${pair%%=*}"
  if [ -z "$first" ]; then first=$file; else also="$also --also $file"; fi
done
echo "fitting on:$names (replayed, not fitted on: $REPLAYED)"
if [ "$PRESERVE_TOTAL" = 1 ]; then also="$also --preserve-total"; fi
# shellcheck disable=SC2086
"$GOSIM" calibrate --trace "$first" $also --transfers-from "$OUT/link.json.gz" --fit "$FIT" --out "$PROFILE"

# 3. Decisions for each replayed graph; 4. replay each, measured vs simulated.
results=""
for g in $REPLAYED; do
  "$GOSIM" graphs export "$(manifest graph "$g")" --out "$OUT/$g.json"
  python3 calibration/hardware/make_decisions.py "$OUT/$g.json" local "$OUT/decisions_$g"
  decisions=""
  for d in "$OUT/decisions_$g"/*.json; do decisions="$decisions --decision $d"; done
  # shellcheck disable=SC2086
  "$GOSIM" replay --graph "$OUT/$g.json" --cluster local --profile "$PROFILE" --repeats "$REPEATS" \
    --warmup "$WARMUP" --rounds "$ROUNDS" --out "$OUT/replay_$g.json" $decisions
  results="$results $OUT/replay_$g.json"
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average at the end: $load"
# shellcheck disable=SC2086
python3 calibration/hardware/replay_summary.py $results
