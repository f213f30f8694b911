#!/usr/bin/env bash
# Runs a test command that needs the project's shared data (../shared/data
# beside the repository: real traces, msr-fiddle workloads), or skips it with
# one line saying what is missing and exit status 77 (CTest's
# SKIP_RETURN_CODE): a public clone has no ../shared.
#
#   tests/with_shared_data.sh SUBPATH COMMAND [ARGS...]
#
# SUBPATH (e.g. traces) must exist in the data folder; `@SHARED_DATA@` in
# ARGS becomes the data folder. The folder is $GOSIM_SHARED_DATA, else
# ../shared/data beside the repository; GOSIM_SHARED_DATA=none hides it (as in
# a public clone; .ci/run checks both ways). tests/shared_data.h does the same
# for doctest cases.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SUBPATH COMMAND [ARGS...]" >&2; exit 2; }
sub=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
data=${GOSIM_SHARED_DATA:-$root/../shared/data}
if [ "$data" = none ]; then
  echo "SKIPPED: shared data $sub is missing (GOSIM_SHARED_DATA=none hides it; a public clone has no ../shared/data)"
  exit 77
fi
if [ ! -e "$data/$sub" ]; then
  echo "SKIPPED: shared data $sub is missing (no $data/$sub; a public clone has no ../shared/data)"
  exit 77
fi
args=()
for a in "$@"; do args+=("${a//@SHARED_DATA@/$data}"); done
exec "${args[@]}"
