#!/usr/bin/env bash
# check_bench_nonblocking.sh -- themis-bench's nonblocking modes end to end: 4 ranks as
# 2x2, the six nonblocking collectives of 1 MiB (ibcast and ireduce from root 0), 4 buckets
# in flight at once with a compute loop between the starts and the wait (so both the
# buckets and the overlap phases run), every request's result validated. themis must have run the nonblocking
# calls on the themis communicator (its set-up comes from the benchmark's blocking
# warm-up call; without that they would all go to libnbc) and none on the tuned one.
# Calibration is off: it is not what this tests, and it costs time.
# Environment: MPIRUN, THEMIS_BUILDDIR, OMPI_DEFAULT_COMPONENT_DIR.
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
# shellcheck source=../common/log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/log_events.sh"
OUT=$BUILDDIR/test/mpi/logs/bench_nonblocking
rm -rf "$OUT" && mkdir -p "$OUT"
fail() { echo "check_bench_nonblocking: FAIL: $*"; exit 1; }

log=$OUT/buckets.log
mpirun_logged "$log" 240 -np 4 \
  --mca coll_themis_dims 2x2 --mca coll_themis_calibration_seconds 0 \
  --mca coll_themis_verbose 2 \
  -- "$BUILDDIR/bench/themis-bench" --nonblocking buckets --buckets 4 --compute-factor 1 \
  -m 1M:1M -i 1 -x 1 -c --collective all --impl themis,tuned --dims 2x2 \
  --csv "$OUT/buckets.csv" || fail "the run failed (log $log)"
grep -q '^# validation: passed' "$log" || fail "results not validated (log $log)"
for coll in iallreduce ireduce_scatter ireduce_scatter_block iallgather ibcast ireduce; do
  # Every rank's event stats for COLL on bench_themis: themis ran some of its calls.
  ran=$(log_count "$log" stats comm=bench_themis "coll=$coll" 'rank=[0-3]' 'themis=[1-9][0-9]*')
  [ "$ran" = 4 ] || fail "themis ran $coll on $ran of 4 ranks (log $log)"
done
[ "$(log_count "$log" stats comm=bench_tuned)" = 0 ] ||
  fail "themis ran calls on the tuned communicator (log $log)"
# 6 collectives x 2 implementations, all in buckets mode with an overlap figure.
rows=$(awk -F, 'NR > 1 && $21 == "buckets" && $22 == 4 && $25 >= 0' "$OUT/buckets.csv" | wc -l)
[ "$rows" = 12 ] || fail "expected 12 buckets rows with overlap in $OUT/buckets.csv, got $rows"
spec_diff=$(log_check_spec "$OUT"/*.log) || fail "event lines differ from docs/log-events.md: $spec_diff"
echo "check_bench_nonblocking: passed (6 nonblocking collectives x 4 buckets validated, themis ran them)"
