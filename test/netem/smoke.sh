#!/usr/bin/env bash
# test/netem/smoke.sh -- CI smoke test of the emulated network (bench/netem/; a few seconds).
#
# Builds a 2x4 network of 4 hosts x 2 ranks (one namespace per rank, tbf-shaped links,
# 100/50 Mbit/s; Open MPI sees four nodes; the ranks' TCP congestion control cubic, or up
# saying why not), runs netcheck (validated MPI_Allreduce,
# MPI_Reduce_scatter_block, MPI_Allgather) on 8 ranks with coll/themis loaded from the build
# tree (coll_themis_dims = the network's spec, verbose 2), checks (from the component's
# events, test/common/log_events.sh) that themis ran the
# allreduce and cut its TCP messages into eager parts on both dimensions (the one inside a
# host and the one between hosts, whose peers ob1 has not reached yet when MPI_COMM_WORLD is
# set up); then runs it again as a user would, with dims=auto and the network's topology
# file only, and checks that every rank measured both dimensions' rates, agreed, and got
# them within 15 % of the links' payload rate; without the file, that probing finds these
# hosts on one switch (no grid), keeps that in the calibration file for the next job, and
# that a probe failing on one rank falls back on all; in CUDA builds runs the device-buffer checks
# against the emulated CUDA driver across the hosts; and tears the network down (always,
# via trap).
#
# Exit: 0 success, 1 failure, 77 skipped (not root, no mpicc/mpirun, kernel lacks
# netns/veth/bridge/tbf). Environment: NETEM_SMOKE_PREFIX (default tmsmk, <= 6 chars),
# THEMIS_OMPI (an Open MPI 4.1 or 5.0 install's prefix; default: the one the build
# directory was configured against), THEMIS_BUILD_DIR (default <repo>/build, or
# <repo>/build-<basename THEMIS_OMPI>): as bench/netem/netem.py, which says which
# (`netem.py ompi`).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common/log_events.sh
source "$here/../common/log_events.sh"
# shellcheck source=../common/mpirun_flags.sh
source "$here/../common/mpirun_flags.sh"
NETEM_DIR=$(cd "$here/../../bench/netem" && pwd)
NETEM="$NETEM_DIR/netem.py"
PREFIX=${NETEM_SMOKE_PREFIX:-tmsmk}
PY=${PYTHON:-python3}

skip() { echo "netem smoke: SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, veth, tc)"
command -v "$PY" >/dev/null 2>&1 || skip "python3 not found"
# the build directory, as netem.py runs it (a THEMIS_OMPI it was not configured against fails)
build=$(timeout 60 "$PY" "$NETEM" ompi build) || { echo "netem smoke: FAIL: netem.py ompi build"; exit 1; }
# netem's check covers mpirun and mpicc too (those of the Open MPI it runs)
if ! out=$(timeout 60 "$PY" "$NETEM" check --prefix "$PREFIX" 2>&1); then
    echo "$out"
    skip "kernel or tools lack what the emulated network needs (see the line above)"
fi
series=$(timeout 60 "$PY" "$NETEM" ompi series) || { echo "netem smoke: FAIL: netem.py ompi series"; exit 1; }
MPIRUN=$(timeout 60 "$PY" "$NETEM" ompi mpirun) || { echo "netem smoke: FAIL: netem.py ompi mpirun"; exit 1; }
export MPIRUN

log=$(mktemp /tmp/netem-smoke.XXXXXX)
topo=$(mktemp /tmp/netem-smoke-topo.XXXXXX)
ranks=$(mktemp -d /tmp/netem-smoke-ranks.XXXXXX)
cleanup() {
    timeout 60 "$PY" "$NETEM" down --prefix "$PREFIX" >/dev/null 2>&1
    rm -rf "$log" "$topo" "$ranks"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
    echo "netem smoke: FAIL: $*"
    [ -s "$log" ] && tail -40 "$log"
    [ -s "$ranks/console" ] && { echo "---- mpirun's console ----"; tail -20 "$ranks/console"; }
    exit 1
}

# netem_run runs `netem.py run`; $log gets what the ranks printed, one rank after the other,
# from the files they write themselves (mpirun_flags rank-log): on the console, and in the
# launcher's own per-rank files, lines can be cut and interleaved (a stats line cut so was
# read as missing, CI on 5.0).
mapfile -t rank_log < <(mpirun_flags rank-log "$ranks/out")
netem_run() {  # netem_run MPIRUN_OPTION... -- PROGRAM ARG...
    local opts=() rc
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    rm -rf "$ranks/out" && mkdir -p "$ranks/out"
    timeout 180 "$PY" "$NETEM" run --prefix "$PREFIX" --timeout 120 --themis -- \
        "${opts[@]}" "${rank_log[@]}" "$@" >"$ranks/console" 2>&1
    rc=$?
    rank_logs "$ranks/out" >"$log"
    return $rc
}

start=$(date +%s)
timeout 60 "$PY" "$NETEM" up --prefix "$PREFIX" --dims 2x4 --rates 100,50 --mode hosts >"$log" 2>&1 ||
    fail "netem.py up"
# the ranks' sockets get cubic (BBR's pacing made the benchmarks' times wander), or up says
# why not.
cc=$(ip netns exec "${PREFIX}0" cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null)
case "$(sed -n 's/^  TCP congestion control: //p' "$log")" in
    cubic) [ "$cc" = cubic ] ;;
    "the kernel's default") grep -q 'congestion control cubic not set' "$log" ;;
    *) false ;;
esac || fail "netem.py up: the ranks' TCP congestion control is $cc, not what up printed"
exe=$(timeout 120 "$PY" "$NETEM" build --prefix "$PREFIX" 2>>"$log" | grep '/netcheck$') ||
    fail "compiling netcheck.c with mpicc"
# 256 Ki ints = 1 MiB: above coll_themis_min_bytes (64 KiB), so themis runs it.
netem_run --mca coll_themis_verbose 2 -- "$exe" 262144 -v || fail "MPI run (rc $?)"
grep -q '^NETCHECK_OK ranks=8 ' "$log" || fail "netcheck did not report NETCHECK_OK on 8 ranks"
n=$(log_count "$log" stats comm=MPI_COMM_WORLD coll=allreduce 'themis=[1-9][0-9]*')
[ "$n" = 8 ] || fail "themis did not run the allreduce on every rank ($n of 8 stats lines)"
n=$(log_count "$log" transport comm=MPI_COMM_WORLD cid=0 transport=pml 'parts=0:[0-9]+,1:[0-9]+')
[ "$n" = 8 ] || fail "themis did not cut its messages into parts on both dimensions on every rank ($n of 8)"
# the collectives crossed the shaped links: rank 0's dimension-0 link carried at least
# the 1 MiB allreduce's share.
bytes=$(ip -n "${PREFIX}0" -s link show d0 2>/dev/null | awk '/TX:/{getline; print $1; exit}')
[ "${bytes:-0}" -gt 262144 ] || fail "no traffic on ${PREFIX}0's dimension-0 link (${bytes:-0} bytes)"
grep '^NETCHECK_OK' "$log"

# As a user would run it: dims=auto with the network's topology file and nothing else.
# Every rank must lay the job out as 2x4 (node, network0), measure both dimensions and
# agree; the measured rates must lie within 15 % of the links' TCP payload rate.
timeout 30 "$PY" "$NETEM" topo-file --prefix "$PREFIX" >"$topo" 2>>"$log" || fail "netem.py topo-file"
netem_run --mca coll_themis_dims auto --mca coll_themis_topo_file "$topo" --mca coll_themis_verbose 1 \
    -- "$exe" 262144 -v || fail "MPI run with dims=auto (rc $?)"
grep -q '^NETCHECK_OK ranks=8 ' "$log" || fail "dims=auto: netcheck did not report NETCHECK_OK on 8 ranks"
n=$(log_count "$log" selected comm=MPI_COMM_WORLD cid=0 'dims=2x4:.*' bw_source=measured,measured \
  lat_source=measured,measured levels=node,network0)
[ "$n" = 8 ] || fail "dims=auto: $n of 8 ranks measured a 2x4 node x network0 layout"
n=$(log_values "$log" selected dims comm=MPI_COMM_WORLD cid=0 | sort -u | wc -l)
[ "$n" = 1 ] || fail "dims=auto: the ranks disagree on the measured dimensions"
rates=$(log_values "$log" selected dims comm=MPI_COMM_WORLD cid=0 | head -n 1 | sed -n 's/.*:bw=\([^:]*\).*/\1/p')
"$PY" "$NETEM_DIR/within.py" "$rates" 100,50 0.15 ||
    fail "dims=auto: measured rates $rates are not within 15 % of the links' payload rate"
echo "rank 0's calibration: $(log_values "$log" calibration '' comm=MPI_COMM_WORLD rank=0)"

# Without the topology file dims=auto probes the 4 hosts (grid_probe.h); all sit on one switch
# here, so there is no grid: every rank says why and runs node level x nodes (2x4). Then a probe
# that fails on one rank only (THEMIS_TEST_PROBE_FAILS on rank 3): the same fallback, and why, on
# every rank. Every result checked by netcheck both times.
probe_run() {  # probe_run NAME FAILING_RANK [MPIRUN_OPTION...]
    local name=$1 failing=$2
    shift 2
    netem_run --mca coll_themis_dims auto --mca coll_themis_verbose 1 "$@" -- \
        /bin/bash -c '[ "$OMPI_COMM_WORLD_RANK" = "'"$failing"'" ] && export THEMIS_TEST_PROBE_FAILS=1; exec "$@"' probe \
        "$exe" 262144 -v || fail "$name: MPI run (rc $?)"
    grep -q '^NETCHECK_OK ranks=8 ' "$log" || fail "$name: netcheck did not report NETCHECK_OK on 8 ranks"
    n=$(log_count "$log" selected comm=MPI_COMM_WORLD cid=0 'dims=2x4:.*' levels=node,network)
    [ "$n" = 8 ] || fail "$name: $n of 8 ranks laid the job out as node level x nodes (2x4)"
}
# The outcome is kept in the calibration file (a finished search: no grid, here), and the
# next job on these hosts takes it from there without probing.
cal=$ranks/calibration
probe_run "probing a flat network" none --mca coll_themis_calibration_file "$cal"
n=$(log_count "$log" grid comm=MPI_COMM_WORLD source=none 'probes=[1-9][0-9]*' \
  'why=probing found no grid: a flat network.*')
[ "$n" = 8 ] || fail "probing a flat network: $n of 8 ranks said it is flat"
probed=$(log_values "$log" grid probes,seconds comm=MPI_COMM_WORLD rank=0)
grep -Eq '^hosts4-[0-9a-f]{16} grid=none ' "$cal" || fail "probing a flat network: no grid=none entry in $cal"
probe_run "the next job" none --mca coll_themis_calibration_file "$cal"
n=$(log_count "$log" grid comm=MPI_COMM_WORLD source=none probes=0 kept=file \
  'why=probing found no grid: so kept by an earlier job.*')
[ "$n" = 8 ] || fail "the next job: $n of 8 ranks took the flat network from the calibration file"
probe_run "a probe failing on rank 3" 3
n=$(log_count "$log" grid comm=MPI_COMM_WORLD source=none 'why=probing found no grid: a probe failed on some rank')
[ "$n" = 8 ] || fail "a probe failing on rank 3: $n of 8 ranks fell back saying so"

# CUDA builds: device buffers across the same hosts, against the emulated CUDA driver (no
# GPU needed): the node dimension device-direct by CUDA IPC, the network dimension bounced
# through pinned host memory, every result checked by the program.
fake=$build/test/cuda/.libs/libcuda-fake.so
cudacheck=$build/test/cuda/themis-cuda-check
cuda="no CUDA build"
if [ -f "$fake" ] && [ -x "$cudacheck" ]; then
    netem_run -x "OMPI_MCA_coll_themis_cuda_driver=$fake" --mca coll_themis_cuda_driver "$fake" \
        --mca coll_themis_dims auto --mca coll_themis_topo_file "$topo" --mca coll_themis_verbose 1 \
        -- "$cudacheck" --kinds device --expect ipc || fail "device buffers (rc $?)"
    grep -q '^cuda_check: passed: 8 ranks' "$log" || fail "device buffers: cuda_check did not pass on 8 ranks"
    n=$(log_count "$log" device_direct comm=MPI_COMM_WORLD ipc=0 others=pinned)
    [ "$n" = 8 ] || fail "device buffers: $n of 8 ranks ran dimension 0 by IPC and bounced the network"
    cuda="device buffers checked (IPC inside hosts, pinned bounce between them)"
fi
echo "netem smoke: OK: Open MPI $series: themis ran the allreduce on 8 ranks across 8 namespaces on 4 hosts, messages in parts on both dimensions ($bytes bytes sent on ${PREFIX}0 d0); dims=auto measured $rates; probing found the flat network flat (probes|seconds: $probed), the next job took that from the calibration file, and a failed probe fell back on every rank; $cuda; in $(( $(date +%s) - start )) s"
exit 0
