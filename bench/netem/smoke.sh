#!/bin/sh
# bench/netem/smoke.sh -- CI smoke test of the emulated network (a few seconds).
#
# Builds a 2x4 network of 4 hosts x 2 ranks (one namespace per rank, tbf-shaped links,
# 100/50 Mbit/s; Open MPI sees four nodes), runs netcheck (validated MPI_Allreduce,
# MPI_Reduce_scatter_block, MPI_Allgather) on 8 ranks with coll/themis loaded from the build
# tree (coll_themis_dims = the network's spec, verbose 2), checks that themis ran the
# allreduce and cut its TCP messages into eager parts on both dimensions (the one inside a
# host and the one between hosts, whose peers ob1 has not reached yet when MPI_COMM_WORLD is
# set up), and tears the network down (always, via trap).
#
# Exit: 0 success, 1 failure, 77 skipped (not root, no mpicc/mpirun, kernel lacks
# netns/veth/bridge/tbf). Environment: NETEM_SMOKE_PREFIX (default tmsmk, <= 6 chars),
# THEMIS_BUILD_DIR (default <repo>/build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
NETEM="$here/netem.py"
PREFIX=${NETEM_SMOKE_PREFIX:-tmsmk}
PY=${PYTHON:-python3}

skip() { echo "netem smoke: SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, veth, tc)"
command -v "$PY" >/dev/null 2>&1 || skip "python3 not found"
command -v mpicc >/dev/null 2>&1 || skip "mpicc not found (libopenmpi-dev)"
command -v mpirun >/dev/null 2>&1 || skip "mpirun not found (openmpi-bin)"
if ! out=$(timeout 60 "$PY" "$NETEM" check --prefix "$PREFIX" 2>&1); then
    echo "$out"
    skip "kernel or tools lack what the emulated network needs (see the line above)"
fi

log=$(mktemp /tmp/netem-smoke.XXXXXX)
cleanup() {
    timeout 60 "$PY" "$NETEM" down --prefix "$PREFIX" >/dev/null 2>&1
    rm -f "$log"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() { echo "netem smoke: FAIL: $*"; [ -s "$log" ] && tail -40 "$log"; exit 1; }

start=$(date +%s)
timeout 60 "$PY" "$NETEM" up --prefix "$PREFIX" --dims 2x4 --rates 100,50 --mode hosts >"$log" 2>&1 ||
    fail "netem.py up"
exe=$(timeout 120 "$PY" "$NETEM" build --prefix "$PREFIX" 2>>"$log" | grep '/netcheck$') ||
    fail "compiling netcheck.c with mpicc"
# 256 Ki ints = 1 MiB: above coll_themis_min_bytes (64 KiB), so themis runs it.
timeout 180 "$PY" "$NETEM" run --prefix "$PREFIX" --timeout 120 --themis -- \
    --mca coll_themis_verbose 2 "$exe" 262144 -v >"$log" 2>&1 || fail "MPI run (rc $?)"
grep -q '^NETCHECK_OK ranks=8 ' "$log" || fail "netcheck did not report NETCHECK_OK on 8 ranks"
n=$(grep -c 'coll:themis:stats comm MPI_COMM_WORLD rank [0-9]*: allreduce calls [0-9]* themis [1-9]' "$log")
[ "$n" = 8 ] || fail "themis did not run the allreduce on every rank ($n of 8 stats lines)"
n=$(grep -c 'comm MPI_COMM_WORLD (cid 0) rank [0-9]*: transport pml .*per dimension, 0:[0-9]* 1:[0-9]*)' "$log")
[ "$n" = 8 ] || fail "themis did not cut its messages into parts on both dimensions on every rank ($n of 8)"
# the collectives crossed the shaped links: rank 0's dimension-0 link carried at least
# the 1 MiB allreduce's share.
bytes=$(ip -n "${PREFIX}0" -s link show d0 2>/dev/null | awk '/TX:/{getline; print $1; exit}')
[ "${bytes:-0}" -gt 262144 ] || fail "no traffic on ${PREFIX}0's dimension-0 link (${bytes:-0} bytes)"
grep '^NETCHECK_OK' "$log"
echo "netem smoke: OK: themis ran the allreduce on 8 ranks across 8 namespaces on 4 hosts, messages in parts on both dimensions ($bytes bytes sent on ${PREFIX}0 d0) in $(( $(date +%s) - start )) s"
exit 0
