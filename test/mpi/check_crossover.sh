#!/usr/bin/env bash
# check_crossover.sh -- the measured crossover end to end (src/crossover.h,
# coll_themis_crossover.h): coll_themis_min_bytes left at its default, 4 ranks as 2x2,
# themis-bench's blocking allreduce, reduce_scatter_block and allgather of 64, 128 and
# 256 KiB, 11 calls of each (3 bins per collective), every result validated:
#   - every timed themis run counted 20 ms longer (THEMIS_TEST_SLOW_THEMIS_MS): every bin's trial must
#     end below, on every rank (36 "crossover ... runs=below decided_by=trial" events), and
#     themis must have run exactly the trial's themis calls: 2 of each bin's 11 (its first
#     two), 6 of each collective's 33;
#   - every run of the module below 20 ms longer: every bin themis, which then runs all but
#     the trial's 4 calls below per bin (2 of them, and the likelier winner's 2, with no bound
#     known): 21 of 33;
#   - rates given that make the module below's least time (src/crossover.h) far longer than
#     themis's measured one, and themis's own least time shorter (coll_themis_dims
#     2x2:bw=10Mbps,10Gbps, every themis run 5 ms longer): every bin themis at its fourth call,
#     untried (decided_by=bound), themis runs all but the one call below per bin that ran while
#     the ranks agreed: 30 of 33;
#   - the same where themis's time is far under its own least time (2x2:bw=1Mbps, nothing
#     slowed: a time no such network could give, as a shaper's burst makes one): no bin
#     decided untried, every bin themis by its trial, each time counted as at least its
#     least; themis the likelier winner, it runs the 2 calls after the module below's: 27 of 33;
#   - coll_themis_min_bytes given (65536): no trial, themis runs all 33;
#   - a communicator made after another decided a bin starts with the decision
#     (themis-mpi-check --tests inherit: chk_decide runs the 64 KiB bin's trial with the module
#     below slowed, then its duplicate chk_heir 4 calls of that size): all 4 on themis, none
#     below for a trial of its own;
#   - trials cut short (themis-mpi-check --tests cut): communicators freed in every state of a
#     trial, and MPI_Finalize reached with an agreement in flight, end cleanly, results exact.
# Calibration is off: it is not what this tests, and it costs time; with the spec's default
# rates the module below's least time is unknown, so every bin goes to trial.
# Environment: MPIRUN, THEMIS_BUILDDIR, OMPI_DEFAULT_COMPONENT_DIR.
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
# shellcheck source=../common/log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/log_events.sh"
OUT=$BUILDDIR/test/mpi/logs/crossover
rm -rf "$OUT" && mkdir -p "$OUT"
fail() { echo "check_crossover: FAIL: $*"; exit 1; }
COLLS=(allreduce reduce_scatter_block allgather)

# run NAME [mpirun options...]: the benchmark, validated, on coll_themis_dims $DIMS (2x2 unless
# set); its log is $OUT/NAME.log.
run() {
  local name=$1; shift
  mpirun_logged "$OUT/$name.log" 240 -np 4 \
    --mca coll_themis_dims "${DIMS:-2x2}" --mca coll_themis_calibration_seconds 0 \
    --mca coll_themis_verbose 2 "$@" \
    -- "$BUILDDIR/bench/themis-bench" -m 64K:256K -i 10 -x 1 -c \
    --collective "$(IFS=,; echo "${COLLS[*]}")" --impl themis --dims 2x2 || fail "$name: the run failed (log $OUT/$name.log)"
  grep -q '^# validation: passed' "$OUT/$name.log" || fail "$name: results not validated (log $OUT/$name.log)"
}

# expect NAME RUNS THEMIS_CALLS [BY]: every collective's crossover events say RUNS (decided by
# BY, trial by default) on every rank for each of the 3 bins (RUNS "none": no event at all),
# and every rank's stats say themis ran THEMIS_CALLS of the 33 calls.
expect() {
  local name=$1 runs=$2 themis=$3 by=${4:-trial} log=$OUT/$1.log coll n
  for coll in "${COLLS[@]}"; do
    if [ "$runs" = none ]; then
      n=$(log_count "$log" crossover comm=bench_themis)
      [ "$n" = 0 ] || fail "$name: $n crossover events, expected none (log $log)"
    else
      n=$(log_count "$log" crossover comm=bench_themis "coll=$coll" "runs=$runs" "decided_by=$by" \
        'bytes=(65536|131072|262144)')
      [ "$n" = 12 ] || fail "$name: $coll: $n of 12 crossover events (3 bins x 4 ranks) say runs=$runs (log $log)"
    fi
    n=$(log_count "$log" stats comm=bench_themis "coll=$coll" calls=33 "themis=$themis")
    [ "$n" = 4 ] || fail "$name: $coll: $n of 4 ranks' stats say themis ran $themis of 33 calls (log $log)"
  done
}

run themis_slow -x THEMIS_TEST_SLOW_THEMIS_MS=20
expect themis_slow below 6
run below_slow -x THEMIS_TEST_SLOW_BELOW_MS=20
expect below_slow themis 21
DIMS=2x2:bw=10Mbps,10Gbps run clearly_faster -x THEMIS_TEST_SLOW_THEMIS_MS=5 -x THEMIS_TEST_SLOW_BELOW_MS=20
expect clearly_faster themis 30 bound
DIMS=2x2:bw=1Mbps run unbelievable -x THEMIS_TEST_SLOW_BELOW_MS=20
expect unbelievable themis 27
run min_bytes_given -x THEMIS_TEST_SLOW_THEMIS_MS=20 --mca coll_themis_min_bytes 65536
expect min_bytes_given none 33
mpirun_logged "$OUT/inherit.log" 240 -np 4 --mca coll_themis_dims 2x2 \
  --mca coll_themis_calibration_seconds 0 --mca coll_themis_verbose 2 -x THEMIS_TEST_SLOW_BELOW_MS=20 \
  -- "$BUILDDIR/test/mpi/themis-mpi-check" --tests inherit || fail "inherit: the run failed (log $OUT/inherit.log)"
n=$(log_count "$OUT/inherit.log" stats comm=chk_decide coll=allreduce calls=8 themis=4)
[ "$n" = 4 ] || fail "inherit: $n of 4 ranks say chk_decide ran 4 of 8 calls on themis (the trial's first 2, then the 2 from its decision on) (log $OUT/inherit.log)"
n=$(log_count "$OUT/inherit.log" stats comm=chk_heir coll=allreduce calls=4 themis=4)
[ "$n" = 4 ] || fail "inherit: $n of 4 ranks say chk_heir ran its 4 calls on themis (log $OUT/inherit.log)"
# Trials cut short: communicators freed, and MPI_Finalize reached, with an agreement in flight.
mpirun_logged "$OUT/cut.log" 120 -np 4 --mca coll_themis_dims 2x2 \
  --mca coll_themis_calibration_seconds 0 --mca coll_themis_verbose 2 \
  -- "$BUILDDIR/test/mpi/themis-mpi-check" --tests cut || fail "cut: the run failed or hung (log $OUT/cut.log)"
n=$(log_count "$OUT/cut.log" stats comm=MPI_COMM_WORLD coll=allreduce themis=2)
[ "$n" = 4 ] || fail "cut: $n of 4 ranks say MPI_COMM_WORLD ran its trial's 2 calls on themis (log $OUT/cut.log)"
spec_diff=$(log_check_spec "$OUT"/*.log) || fail "event lines differ from docs/log-events.md: $spec_diff"
echo "check_crossover: passed (themis slower: every bin below; the module below slower: every bin themis; themis under the module below's least time: every bin themis untried; min_bytes given: no trial; a duplicate starts with the decisions; trials cut short end cleanly)"
