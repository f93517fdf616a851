#!/usr/bin/env bash
# run_misread_rate.sh -- a calibration that misread one dimension's rate: does the run-time
# revision correct it, and what does the job get back? (issue #33: docs/usage.md "Calibration")
#
# Builds the emulated network (bench/netem/netem.py, hosts mode), lets one job measure it into
# a coll_themis_calibration_file, then replaces the bandwidths kept there by CACHED_BW (a bw=
# list, e.g. the network's with one rate wrong; latencies and fill curves stay as measured).
# Every later job starts from a fresh copy of that file (cached rates are revised like
# measured ones, and a revision rewrites the file), with dims=auto and the topology file as
# a user would run it, themis-bench validated; A with
# coll_themis_refine_calls 0 (the misread kept for the whole job), B with the defaults,
# alternated ROUNDS times. Prints per run the utilization of each cell and rank 0's `rates`
# events (the revisions: the new rates, the agreed factors, the call).
#
# Environment: SPEC [2x2x2:bw=50Mbps,100Mbps,200Mbps], CACHED_BW [SPEC's rates, the last one
# 153Mbps], ROUNDS [3], SIZES [16M:64M], ITERS [3],
# COLLS [allreduce,reduce_scatter_block,allgather], LOGS [none: a directory that keeps each
# run's output], OPTIONS [none: more mpirun options of every job, e.g.
# "--mca coll_themis_refine_threshold 0.1"], QUEUE_MS [20], MTU [9000], TIMEOUT [600] seconds
# per run.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
SPEC=${SPEC:-2x2x2:bw=50Mbps,100Mbps,200Mbps}
spec_bw=${SPEC#*bw=}
CACHED_BW=${CACHED_BW:-${spec_bw%,*},153Mbps}
ROUNDS=${ROUNDS:-3} SIZES=${SIZES:-16M:64M} ITERS=${ITERS:-3}
COLLS=${COLLS:-allreduce,reduce_scatter_block,allgather} LOGS=${LOGS:-} OPTIONS=${OPTIONS:-}
QUEUE_MS=${QUEUE_MS:-20} MTU=${MTU:-9000} TIMEOUT=${TIMEOUT:-600}
# shellcheck source=netem/hosts_network.sh
source bench/netem/hosts_network.sh
[ -z "$LOGS" ] || mkdir -p "$LOGS" || exit 1

# job FILE LOG [mpirun options...]: themis-bench with dims=auto, the topology file and FILE as
# the calibration file; its whole output in LOG.
job() {
  local file=$1 log=$2
  shift 2
  # shellcheck disable=SC2086  # OPTIONS is a list of options
  python3 "$NETEM" run --themis --timeout "$TIMEOUT" -- --mca coll_themis_dims auto \
    --mca coll_themis_topo_file "$work/topo" --mca coll_themis_calibration_file "$file" \
    --mca coll_themis_verbose 1 $OPTIONS "$@" \
    "$build/bench/themis-bench" -m "$SIZES" -i "$ITERS" -x 1 -c --collective "$COLLS" \
    --impl themis --dims "$SPEC" >"$log" 2>&1 </dev/null
}

# The file's line for this layout and hosts: KEY SPEC DATE; SPEC's bw= becomes CACHED_BW.
job "$work/measured.cal" "$work/measured.log" ||
  { echo "run_misread_rate: the measuring job failed ($work/measured.log)" >&2; exit 1; }
awk -v bw="bw=$CACHED_BW" 'NR == 1 { print; next } { sub(/bw=[^:]*/, bw, $2); print }' \
  "$work/measured.cal" >"$work/cached.cal"
[ "$(wc -l <"$work/cached.cal")" = 2 ] ||
  { echo "run_misread_rate: the measuring job kept no rates" >&2; exit 1; }
echo "# $SPEC, cached: $(awk 'NR == 2 { print $2 }' "$work/cached.cal"); $COLLS, $SIZES, $ITERS iterations; per cell util %"
echo "# A: coll_themis_refine_calls 0 (no revision), B: the defaults"
for round in $(seq 1 "$ROUNDS"); do
  for setting in A B; do
    refine=()
    [ "$setting" = B ] || refine=(--mca coll_themis_refine_calls 0)
    log=${LOGS:-$work}/round$round.$setting.log
    cp "$work/cached.cal" "$work/run.cal"
    job "$work/run.cal" "$log" "${refine[@]}"
    cells=$(awk '$2 == "themis" { printf "%s%% ", $8 } /validation: FAILED/ { printf "VALIDATION FAILED " }' "$log")
    revisions=$(grep -a 'coll:themis:rates' "$log" | grep -a ' rank=0 ' |
      grep -o 'dims=[^ ]*\|factors=[^ ]*\|calls=[^ ]*' | tr '\n' ' ')
    echo "round $round $setting: $cells ${revisions:-(no revision)}"
  done
done
