#!/usr/bin/env bash
# check_trace.sh -- coll_themis_trace end to end. themis-bench runs an All-Reduce and an
# All-Gather of 1 MiB through themis (4 ranks as 2x2) with the trace on; every rank must
# write its CSV, and themis-sim --measured must accept each rank's last call as a run of
# the plan it computes itself for the same case, with the same defaults (the planner's
# chunk count included): the same stages, on the same dimensions, every one of them (so
# the component ran the plan the simulator predicts, and both plan alike).
# A prefix that cannot be written is reported and the collectives run on. Calibration is
# off (themis-sim plans with the spec's default rates, so must the component).
# Environment: MPIRUN, THEMIS_BUILDDIR, OMPI_DEFAULT_COMPONENT_DIR.
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
OUT=$BUILDDIR/test/mpi/logs/trace
rm -rf "$OUT" && mkdir -p "$OUT"
fail() { echo "check_trace: FAIL: $*"; exit 1; }

for coll in allreduce allgather; do
  log=$OUT/$coll.log
  mpirun_logged "$log" 120 -np 4 \
    --mca coll_themis_dims 2x2 --mca coll_themis_calibration_seconds 0 \
    --mca coll_themis_trace "$OUT/$coll" \
    -- "$BUILDDIR/bench/themis-bench" -m 1M:1M -i 1 -x 1 -c --collective "$coll" \
    --impl themis --peers 2,2 || fail "$coll: the run failed (log $log)"
  grep -q '^# validation: passed' "$log" || fail "$coll: results not validated (log $log)"
  for rank in 0 1 2 3; do
    csv=$(ls "$OUT/$coll".cid*.rank$rank.csv 2>/dev/null | head -n 1)
    [ -n "$csv" ] || fail "$coll: rank $rank wrote no trace (log $log)"
    "$BUILDDIR/tools/themis-sim" --topology 2x2 --size 1MiB --collective "$coll" \
      --max-active 4 --max-active-bytes 2MiB --measured "$csv" >"$OUT/$coll.rank$rank.txt" 2>&1 ||
      fail "$coll: themis-sim does not accept $csv: $(tail -n 1 "$OUT/$coll.rank$rank.txt")"
    grep -q '^completion' "$OUT/$coll.rank$rank.txt" || fail "$coll: no comparison for rank $rank"
  done
done
# A prefix nobody can write to: the help message, and the collectives still run.
log=$OUT/unwritable.log
mpirun_logged "$log" 120 -np 4 \
  --mca coll_themis_dims 2x2 --mca coll_themis_trace /nonexistent/themis/trace \
  -- "$BUILDDIR/bench/themis-bench" -m 1M:1M -i 1 -x 1 -c --impl themis --peers 2,2 ||
  fail "unwritable trace: the run failed (log $log)"
grep -q '^# validation: passed' "$log" || fail "unwritable trace: results not validated (log $log)"
grep -Eq 'cannot write the stage trace|trace-unwritable' "$log" ||
  fail "unwritable trace: no message (log $log)"
echo "check_trace: passed (2 collectives x 4 ranks, traces match themis-sim's plans; an unwritable prefix is reported)"
