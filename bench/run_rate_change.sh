#!/usr/bin/env bash
# run_rate_change.sh -- a link's rate changes while a job runs: does themis notice, and does its
# utilization recover? (issue #33, the run-time rate revision: docs/usage.md "Calibration")
#
# Builds the emulated network (bench/netem/netem.py, hosts mode), runs themis-timeline
# (CALLS All-Reduces of BYTES, every call timed and checked) with themis's defaults (dims=auto:
# the rates measured at set-up) and coll_themis_verbose 1, and AFTER seconds into the job
# changes dimension DIM's links to RATE Mbit/s (`netem.py rate`). Prints the timeline: per call
# when it started, its time, its utilization of the ideal bound of the rates in force then,
# and the `rates` events (the revisions, rank 0's) where they happened; then the mean
# utilization of the calls before the change, of the first WINDOW after it, and of the rest.
# With REFINE_CALLS=0 (coll_themis_refine_calls) the same without revisions, for comparison.
#
# Environment: SPEC [2x4:bw=100Mbps,200Mbps], DIM [1], RATE [50], AFTER [12] seconds, BYTES
# [16777216], CALLS [60], REFINE_CALLS [] (the parameter's default), WINDOW [16], MPI_ARGS [],
# QUEUE_MS [20], MTU [9000], TIMEOUT [900].
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
SPEC=${SPEC:-2x4:bw=100Mbps,200Mbps} DIM=${DIM:-1} RATE=${RATE:-50} AFTER=${AFTER:-12}
BYTES=${BYTES:-16777216} CALLS=${CALLS:-60} REFINE_CALLS=${REFINE_CALLS:-} WINDOW=${WINDOW:-16}
MPI_ARGS=${MPI_ARGS:-} QUEUE_MS=${QUEUE_MS:-20} MTU=${MTU:-9000} TIMEOUT=${TIMEOUT:-900}
NETEM=bench/netem/netem.py
build=$(python3 "$NETEM" ompi build) || exit 1
[ -x "$build/bench/themis-timeline" ] || { echo "run_rate_change: build $build/bench/themis-timeline first" >&2; exit 1; }
refine=()
[ -z "$REFINE_CALLS" ] || refine=(--mca coll_themis_refine_calls "$REFINE_CALLS")

trap 'python3 "$NETEM" down >/dev/null 2>&1 || true' EXIT
python3 "$NETEM" check >/dev/null || exit 77
python3 "$NETEM" up --dims "$SPEC" --mode hosts --queue-ms "$QUEUE_MS" --mtu "$MTU" >/dev/null || exit 1
log=$(mktemp)
# shellcheck disable=SC2086  # MPI_ARGS is a list of options
python3 "$NETEM" run --themis --timeout "$TIMEOUT" -- --mca coll_themis_dims auto \
  --mca coll_themis_calibration_file none \
  --mca coll_themis_verbose 1 "${refine[@]}" $MPI_ARGS \
  "$build/bench/themis-timeline" --bytes "$BYTES" --calls "$CALLS" >"$log" 2>&1 &
job=$!
sleep "$AFTER"
python3 "$NETEM" rate --dim "$DIM" --rate "$RATE"
wait "$job" || echo "run_rate_change: the job failed (rc $?)"

# The ideal bound of an All-Reduce over the rates: 2 S (1 - 1/N) / sum of the rates.
echo "# $SPEC, dimension $DIM to $RATE Mbit/s after ${AFTER} s, All-Reduce of $BYTES B x $CALLS, refine_calls ${REFINE_CALLS:-default}"
grep -h 'coll:themis:selected comm=MPI_COMM_WORLD .*rank=0 ' "$log" | sed 's/.*dims=/# selected dims=/; s/ bw_source.*//'
awk -v spec="$SPEC" -v dim="$DIM" -v rate="$RATE" -v after="$AFTER" -v bytes="$BYTES" -v window="$WINDOW" '
  BEGIN {
    split(spec, part, ":"); n = split(part[1], peers, "x"); N = 1
    for (d = 1; d <= n; ++d) N *= peers[d]
    sub(/^bw=/, "", part[2]); split(part[2], bw, ",")
    for (d = 1; d <= n; ++d) { gsub(/Mbps/, "", bw[d]); before += bw[d]; now[d] = bw[d] }
    now[dim + 1] = rate; for (d = 1; d <= n; ++d) later += now[d]
    work = 2 * bytes * (1 - 1 / N) * 8 / 1e6     # Mbit
    print "# call start_s ms util% (ideal: " before " Mbit/s before, " later " after)"
  }
  /coll:themis:rates comm=MPI_COMM_WORLD .*rank=0 / {   # printed during the run: before the rows
    calls = $0; sub(/.* calls=/, "", calls); sub(/ .*/, "", calls)
    text = $0; sub(/.*dims=/, "", text); sub(/ calls=.*/, "", text)
    revised[calls] = "#      rates revised after " calls " calls: dims=" text; next }
  /^timeline,/ {
    split($0, f, ","); t = f[3]; ms = f[4]
    ideal = work / (t < after ? before : later) * 1e3
    u = 100 * ideal / ms
    printf "%4d %8.2f %8.1f %6.1f\n", f[2], t, ms, u
    if ((f[2] + 1) in revised) print revised[f[2] + 1]
    if (t + ms / 1e3 < after) { sb += u; nb++ }
    else if (t >= after) { if (na < window) { sw += u; nw++ } else { sr += u; nr++ }; na++ }
  }
  /^timeline_errors,/ { split($0, f, ","); errors = f[2] }
  END {
    printf "# mean util: before %.1f %% (%d calls), first %d after %.1f %%, the rest %.1f %% (%d calls); wrong elements %s\n",
      nb ? sb / nb : 0, nb, nw, nw ? sw / nw : 0, nr ? sr / nr : 0, nr, errors
  }' "$log"
rm -f "$log"
