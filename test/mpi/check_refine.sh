#!/usr/bin/env bash
# check_refine.sh -- the run-time rate revision end to end (coll_themis_refine.h): 4 ranks as
# 2x2 with measured rates (no bw= in the spec, a short calibration), 20 validated 8 MiB
# All-Reduces in themis-bench, coll_themis_refine_threshold 3 (a dimension must be off the
# other by more than a factor of 4: noise on this machine does not get there).
#   - every rank sees dimension 1 sixteen times slower than its plan (THEMIS_TEST_BUSY_SCALE=1:16;
#     a 0.2 s calibration on a loaded machine can misjudge the two dimensions by 2x, and the
#     revision needs a factor of 4):
#     at the first window's end (8 calls) every rank revises, to the same rates (one `rates`
#     event per rank, calls=8, all four alike), dimension 1's factor under half of
#     dimension 0's; every result, before and after the revision, exact;
#   - the same with nonblocking calls only (64 MiB MPI_Iallreduce then MPI_Wait, no blocking call:
#     the window ends with a nonblocking call, whose agreement the calls after it wait for):
#     every rank revises alike at call 8, every result exact;
#   - only rank 0 sees it: the agreed means (3 of 4 ranks see the plan) stay within the
#     threshold, and no rank revises alone (no `rates` event at all);
#   - every rank sees it, coll_themis_refine_calls 0: no revision;
#   - every rank sees it in 4 MiB calls (under the 8 MiB evidence needs): no revision.
# Environment: MPIRUN, THEMIS_BUILDDIR, OMPI_DEFAULT_COMPONENT_DIR.
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
# shellcheck source=../common/log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/log_events.sh"
OUT=$BUILDDIR/test/mpi/logs/refine
rm -rf "$OUT" && mkdir -p "$OUT"
fail() { echo "check_refine: FAIL: $*"; exit 1; }

# run NAME RANKS [mpirun options...]: the benchmark (with the options in the array bench,
# if any), validated, with dimension 1 seen eight times slower on the ranks whose
# MPI_COMM_WORLD rank matches the extended regex RANKS; its log is $OUT/NAME.log.
bench=()
run() {
  local name=$1 ranks=$2; shift 2
  mpirun_logged "$OUT/$name.log" 240 -np 4 \
    --mca coll_themis_dims 2x2 --mca coll_themis_calibration_seconds 0.2 \
    --mca coll_themis_refine_threshold 3 --mca coll_themis_verbose 1 "$@" \
    -- /bin/bash -c '[[ $OMPI_COMM_WORLD_RANK =~ ^('"$ranks"')$ ]] && export THEMIS_TEST_BUSY_SCALE=1:16
                  exec "$@"' run_refine \
    "$BUILDDIR/bench/themis-bench" -m 8M:8M -i 20 -x 1 -c --collective allreduce \
    --impl themis --dims 2x2 "${bench[@]}" || fail "$name: the run failed (log $OUT/$name.log)"
  grep -q '^# validation: passed' "$OUT/$name.log" || fail "$name: results not validated (log $OUT/$name.log)"
}

# revised_alike NAME: in $OUT/NAME.log every rank revised at call 8 to the same rates, dimension
# 1's factor under half of dimension 0's; prints the factors (called in $(...): || exit 1).
revised_alike() {
  local name=$1 log=$OUT/$1.log factors
  [ "$(log_count "$log" rates comm=bench_themis calls=8)" = 4 ] ||
    fail "$name: not every rank revised its rates after 8 calls (log $log)" >&2
  [ "$(log_values "$log" rates dims,factors,calls comm=bench_themis | sort -u | wc -l)" = 1 ] ||
    fail "$name: the ranks revised to different rates (log $log)" >&2
  factors=$(log_values "$log" rates factors comm=bench_themis | head -n 1)
  awk -v f="$factors" 'BEGIN { split(f, x, ","); exit !(x[2] < x[1] / 2) }' ||
    fail "$name: factors $factors: dimension 1's not under half of dimension 0's (log $log)" >&2
  echo "$factors"
}

# The file's key names the node transport, chosen by measurement unless pinned.
cal=$OUT/rates.cal kept_in=(--mca coll_themis_calibration_file "$cal" --mca coll_themis_node_transport transport)
run all_ranks '[0-3]' "${kept_in[@]}"
log=$OUT/all_ranks.log
factors=$(revised_alike all_ranks) || exit 1
revised=$(log_values "$log" rates dims comm=bench_themis | head -n 1)
kept=$(awk 'NR > 1 { print $2 }' "$cal")
[ "$kept" = "$revised" ] ||
  fail "all_ranks: the calibration file holds '$kept', not the revised rates '$revised' ($cal)"

run from_file 'none' "${kept_in[@]}"
log=$OUT/from_file.log
[ "$(log_values "$log" selected dims,bw_source comm=bench_themis | sort -u)" = "$revised|cached,cached" ] ||
  fail "from_file: the job after did not start from the revised rates $revised (log $log)"

# 64 MiB: long enough that the scheduler's gaps between polls (up to 5 ms on 2 cores) leave
# most calls driven all along (coll_themis_refine.h: a gap over a quarter of the predicted
# time gives no evidence). At 16 MiB a calibration that read the links fast (7 and 24 Gbit/s)
# predicted calls so short that once no call of the window counted, and no rank revised.
bench=(--nonblocking buckets --buckets 1 --compute-factor 0 -m 64M:64M)
run nonblocking '[0-3]'
nb_factors=$(revised_alike nonblocking) || exit 1
bench=()

run rank0_only '0'
[ "$(log_count "$OUT/rank0_only.log" rates)" = 0 ] ||
  fail "rank0_only: a revision, though 3 of 4 ranks saw the plan (log $OUT/rank0_only.log)"

run refine_off '[0-3]' --mca coll_themis_refine_calls 0
[ "$(log_count "$OUT/refine_off.log" rates)" = 0 ] ||
  fail "refine_off: a revision with coll_themis_refine_calls 0 (log $OUT/refine_off.log)"
# 4 MiB: under the 8 MiB a call needs to give evidence (its busy times would tell the
# transport's buffers), so every rank seeing dimension 1 slow revises nothing.
bench=(-m 4M:4M)
run small_calls '[0-3]'
bench=()
[ "$(log_count "$OUT/small_calls.log" rates)" = 0 ] ||
  fail "small_calls: a revision from 4 MiB calls (log $OUT/small_calls.log)"
spec_diff=$(log_check_spec "$OUT"/*.log) || fail "event lines differ from docs/log-events.md: $spec_diff"
echo "check_refine: passed (all ranks revise alike at call 8 ($factors), kept for the next job; nonblocking calls alike ($nb_factors); one rank alone revises nothing; refine_calls 0 revises nothing; 4 MiB calls revise nothing)"
