#!/usr/bin/env bash
# cuda_run.sh -- the CUDA tests of coll/themis (test/cuda/tests.cmake.in runs them).
#
#   cuda_run.sh kernels   the fat binary holds SASS for sm_75/80/86/89/90, PTX for
#                         compute_90 and every kernel (no GPU needed)
#   cuda_run.sh variant   the component's sources still compile without CUDA
#                         (make cuda-off-variant; no GPU needed)
#   cuda_run.sh fake      the MPI test matrix on device buffers against an emulated CUDA
#                         driver (test/cuda/cuda_fake_driver.c): checks the glue's logic
#                         (detection, routing, staging, kernel selection) and
#                         themis-bench and themis-stress --mem device, NOT a GPU
#   cuda_run.sh gpu       the MPI test matrix on a real GPU: several ranks per GPU,
#                         transports pml and ucx, coll_themis_cuda auto and staged,
#                         a staging budget small enough to evict; themis-bench --mem
#                         device (validated) with each transport; themis-stress --mem
#                         device and mixed
#   cuda_run.sh bench [BYTES...]
#                         All-Reduce bandwidth, device vs host buffers in one run (GPU)
#
# Exit status 77 means "skipped" (CTest: SKIP_RETURN_CODE 77): CUDA not configured,
# or (gpu, bench) no usable GPU. Never "passed" without having run.
# Environment: MPIRUN, THEMIS_BUILDDIR (default <this dir>/../../build), NP (bench,
# default 2), OMPI_DEFAULT_COMPONENT_DIR (Open MPI's own component dir).
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
# shellcheck source=../common/log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/log_events.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PROG=$BUILDDIR/test/cuda/themis-cuda-check
BENCH=$BUILDDIR/bench/themis-bench
STRESS=$BUILDDIR/test/stress/themis-stress
KDIR=$BUILDDIR/ompi/mca/coll/themis/cuda

skip() { echo "cuda_run: SKIPPED: $*"; exit 77; }
die() { echo "cuda_run: FAILED: $*" >&2; exit 1; }


# run NAME NP [--env VAR=VALUE]... [--mca NAME VALUE]... [--colls LIST] [--verbose V]
#     [--event SPEC]... [--expect REGEX]... [--bench COMM | --stress] -- PROGRAM ARGS
# Runs themis-cuda-check (--bench COMM: themis-bench, whose themis runs on communicator
# COMM; --stress: themis-stress) under mpirun with coll/themis from the build tree
# (verbose 2 unless given), and checks the program's verdict, that themis itself ran the
# collectives (default: all four and the nonblocking forms the program starts) on
# MPI_COMM_WORLD or COMM (its events stats), that the component wrote an event for every
# SPEC ("EVENT KEY=ERE ...", test/common/log_events.sh) and that the output matches every
# REGEX (lines that are no events: the programs', help messages).
run() {
  local name=$1 np=$2; shift 2
  local -a env=() mca=() expect=() events=()
  local colls="allreduce reduce_scatter reduce_scatter_block allgather iallreduce ireduce_scatter_block iallgather" verbose=2
  local prog=$PROG comm=MPI_COMM_WORLD verdict='cuda_check: passed|cuda_bench:'
  while [ "$1" != "--" ]; do
    case $1 in
      --bench) prog=$BENCH comm=$2 verdict='^# validation: passed \(0 wrong elements\)'; shift 2 ;;
      --stress) prog=$STRESS verdict='^themis_stress: [1-9][0-9]* passed, 0 failed'; shift ;;
      --env) env+=(-x "$2"); shift 2 ;;
      --mca) mca+=(--mca "$2" "$3"); shift 3 ;;
      --colls) colls=$2; shift 2 ;;
      --verbose) verbose=$2; shift 2 ;;
      --event) events+=("$2"); shift 2 ;;
      --expect) expect+=("$2"); shift 2 ;;
      *) die "run: bad option $1" ;;
    esac
  done
  shift
  local log=$BUILDDIR/test/cuda/logs/cuda_$name.log
  mkdir -p "$(dirname "$log")"
  echo "== $name: np $np ${mca[*]} ${env[*]} -- $*"
  timeout "${THEMIS_MPI_TIMEOUT:-300}" "${MPIRUN_CMD[@]}" -np "$np" \
    --mca coll_themis_verbose "$verbose" --mca coll_themis_min_bytes 65536 "${mca[@]}" "${env[@]}" \
    "$prog" "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^(cuda_(check|bench)|themis_stress: [0-9]+ passed)' "$log"
  if [ $rc -ne 0 ]; then tail -n 40 "$log"; die "$name: exit status $rc (log $log)"; fi
  grep -Eq "$verdict" "$log" || die "$name: no verdict (log $log)"
  local coll
  for coll in $colls; do
    [ "$(log_count "$log" stats "comm=$comm" "coll=$coll" 'themis=[1-9][0-9]*')" -gt 0 ] \
      || die "$name: themis never ran $coll on $comm (log $log)"
  done
  local ev re spec_diff
  spec_diff=$(log_check_spec "$log") || die "$name: event lines differ from docs/log-events.md: $spec_diff"
  for ev in "${events[@]}"; do
    [ "$(log_spec_count "$log" "$ev")" -gt 0 ] || die "$name: no event $ev (log $log)"
  done
  for re in "${expect[@]}"; do
    grep -Eq "$re" "$log" || die "$name: no output matches /$re/ (log $log)"
  done
}

case ${1:-} in
kernels)
  configured_with THEMIS_HAVE_CUDA || skip "this build has no CUDA (configure found no nvcc)"
  python3 "$SRCDIR/test/cuda/cuda_kernels_check.py" "$KDIR/reduce_kernels.fatbin" "$KDIR/reduce_kernels_fatbin.c"
  ;;
variant)
  configured_with THEMIS_HAVE_CUDA || skip "this build is itself the variant without CUDA"
  make -s -C "$BUILDDIR" cuda-off-variant
  ;;
fake)
  configured_with THEMIS_HAVE_CUDA || skip "this build has no CUDA (configure found no nvcc)"
  fake=$BUILDDIR/test/cuda/.libs/libcuda-fake.so
  [ -f "$fake" ] && [ -x "$PROG" ] || die "build the tests first (make check)"
  # The emulated driver is loaded by its path (coll_themis_cuda_driver; the test programs
  # read the same variable), never as "libcuda.so.1": where a real driver is installed,
  # or already loaded by another library, that name would give the process the real one.
  L=(--env "OMPI_MCA_coll_themis_cuda_driver=$fake")
  export OMPI_MCA_coll_themis_cuda_driver=$fake
  NOIPC=(--mca coll_themis_cuda_ipc off)
  # Device-direct node dimensions (CUDA IPC between the processes, emulated through
  # shared memory; device memory stays unreadable by the host): 2x2 on one node (both
  # dimensions by IPC), dims=auto on one node (themis runs it instead of copying to the
  # host), memory kinds that differ between ranks and between send and receive buffers.
  # cuda_nb_cold: a communicator first used by nonblocking device-buffer calls, its set-up
  # (the device-direct probe included) inside them.
  COLD='stats comm=cuda_nb_cold rank=0 coll=iallreduce calls=3 themis=3'
  run fake_ipc_2x2 4 "${L[@]}" --mca coll_themis_dims 2x2 \
    --event "device_direct ipc=0,1" --event "device_direct comm=cuda_nb_cold rank=0 ipc=0,1" \
    --event "$COLD" -- --kinds device --expect ipc
  run fake_ipc_auto 4 "${L[@]}" --event "device_direct ipc=0" \
    -- --kinds device --expect ipc
  # Device-direct is chosen by the call that sets a communicator up, on every rank: with
  # host buffers on the odd ranks it is not, and device data is staged (no IPC, no kernels).
  run fake_ipc_mixed 4 "${L[@]}" --mca coll_themis_dims 2x2 --mca coll_themis_max_active 1 \
    --event "selected" -- --kinds mixed --expect staged
  run fake_ipc_split_np3 3 "${L[@]}" --mca coll_themis_dims 3 --mca coll_themis_cuda_ipc_cache 1 \
    --event "device_direct ipc=[0-9,]+" -- --kinds split --expect ipc
  # Without IPC (coll_themis_cuda_ipc=off): a dims=auto communicator on one node is the
  # previous module's, device buffers copied to the host and back.
  run fake_noipc_auto 4 "${L[@]}" "${NOIPC[@]}" --colls "" --event "declined reason=one_dimension" \
    -- --kinds device --expect any
  # The transport cannot move device memory here: staged, in every memory layout.
  run fake_staged_2x2 4 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_dims 2x2 --event "$COLD" \
    -- --kinds device --expect staged
  # The least budget, many small chunks: the staging window has to move (evictions).
  run fake_staged_mixed_evict 4 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_dims 2x2 --mca coll_themis_staging_bytes 1 \
    --mca coll_themis_chunks 32 --mca coll_themis_min_chunk_bytes 4096 --mca coll_themis_max_active 1 \
    --verbose 5 --event "staging evictions=[1-9][0-9]*" \
    -- --kinds mixed --expect staged
  run fake_staged_split_np3 3 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_dims 3 --mca coll_themis_max_active 1 -- --kinds split --expect any
  run fake_staged_ucx 4 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_transport ucx --mca coll_themis_dims 4 \
    -- --kinds device --expect staged
  # Direct: device memory readable by the host stands for a transport that moves it.
  run fake_direct_2x2 4 "${L[@]}" "${NOIPC[@]}" --env FAKE_CUDA_HOST_VISIBLE=1 --env THEMIS_TEST_CUDA_DIRECT=1 \
    --mca coll_themis_dims 2x2 -- --kinds device --expect direct
  run fake_direct_mixed 4 "${L[@]}" "${NOIPC[@]}" --env FAKE_CUDA_HOST_VISIBLE=1 --env THEMIS_TEST_CUDA_DIRECT=1 \
    --mca coll_themis_dims 2x2 -- --kinds mixed --expect direct
  # No kernels for this GPU: device reductions on the host, still correct.
  run fake_direct_nokernels 2 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_dims 2 --env FAKE_CUDA_HOST_VISIBLE=1 --env THEMIS_TEST_CUDA_DIRECT=1 \
    --env FAKE_CUDA_NO_KERNELS=1 --expect "cuda-kernels-unavailable|could not load its CUDA reduction kernels" \
    -- --kinds device --expect nokernels
  # themis-bench with device buffers, every result read back and checked.
  run fake_bench_ipc_2x2 4 "${L[@]}" --mca coll_themis_dims 2x2 --bench bench_themis \
    --colls "allreduce reduce_scatter_block allgather" --expect "^# buffers: CUDA device memory" \
    --event "device_direct ipc=[0-9,]+" \
    -- -m 256K:1M -i 2 -x 1 -c --mem device --collective allreduce,reduce_scatter_block,allgather \
    --impl themis,themis_baseline --peers 2,2
  # Device-direct communicators plan their chunk count unless coll_themis_chunks is given
  # (a CUDA IPC message is a rendezvous: 128 chunks are latency-bound there): the default
  # plans what chunks=0 (auto) plans; an explicit 128 gives 16 MiB / 256 KiB = 64 chunks
  # (the floor given here, so that the count does not follow its default).
  for c in default 0 128; do
    chunks=(); [ $c = default ] || chunks=(--mca coll_themis_chunks $c)
    run fake_ipc_chunks_$c 4 "${L[@]}" --mca coll_themis_dims 2x2:bw=1600Gbps,1600Gbps:lat=16us,16us "${chunks[@]}" \
      --mca coll_themis_min_chunk_bytes 262144 --bench bench_themis \
      --colls allreduce --verbose 5 --event "plan rank=0 coll=allreduce bytes=16777216" \
      -- -m 16M:16M -i 1 -x 1 -c --mem device --collective allreduce --impl themis --peers 2,2
  done
  planned() { log_values "$BUILDDIR/test/cuda/logs/cuda_fake_ipc_chunks_$1.log" plan chunks rank=0 coll=allreduce bytes=16777216 | head -1; }
  [ "$(planned default)" = "$(planned 0)" ] || die "default device-direct plan: $(planned default) chunks, auto: $(planned 0)"
  [ "$(planned 128)" = 64 ] || die "chunks=128 gave $(planned 128) chunks, not 64"
  run fake_bench_2x2 4 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_dims 2x2 --bench bench_themis \
    --colls "allreduce reduce_scatter_block allgather" --expect "^# buffers: CUDA device memory" \
    --verbose 5 --event "staging" \
    -- -m 256K:1M -i 2 -x 1 -c --mem device --collective allreduce,reduce_scatter_block,allgather \
    --impl themis,themis_baseline --peers 2,2
  # MPI_THREAD_MULTIPLE: device-buffer nonblocking calls waited for by a thread without a
  # CUDA context (without the context the calls started in, device-direct work fails
  # there, and memory freed there stays allocated). 1 MiB of staging keeps 16 MiB of host
  # copies between calls, so the 17 MiB ones of the handed-down calls are freed.
  for mode in ipc staged; do
    opts=(); [ $mode = staged ] && opts=("${NOIPC[@]}")
    run fake_other_thread_$mode 4 "${L[@]}" "${opts[@]}" --mca coll_themis_dims 2x2 \
      --mca coll_themis_staging_bytes 1048576 \
      --colls "allreduce iallreduce ireduce_scatter_block" -- --threads
  done
  # DDP-style gradient buckets on device buffers: 8 nonblocking calls in flight at once,
  # device-direct (IPC) and staged, every result read back and checked.
  for mode in ipc staged; do
    opts=(); [ $mode = staged ] && opts=("${NOIPC[@]}")
    run fake_bench_buckets_$mode 4 "${L[@]}" "${opts[@]}" --mca coll_themis_dims 2x2 --bench bench_themis \
      --colls "iallreduce ireduce_scatter_block iallgather" --expect "^# buffers: CUDA device memory" \
      -- --nonblocking buckets --buckets 8 -m 1M:1M -i 2 -x 1 -c --mem device \
      --collective allreduce,reduce_scatter_block,allgather --impl themis
  done
  # The randomized stress on device buffers: every call's buffers device copies (device-
  # direct), or each on the device or not per call and rank (staged), also from three
  # threads at once; every result read back and checked. Resident memory: the emulated
  # device memory is host memory, and what holds it across calls (themis's device and
  # pinned buffers, the IPC mappings of the peers' allocations) fills over thousands of
  # calls (seed 41: 19 MiB of growth after the warm-up of 1000 calls, 1 MiB of 8000).
  SC="allreduce reduce_scatter allgather iallreduce iallgather"
  S=(--max-bytes 2097152 --rss-margin-mib 48 --persistent)
  run fake_stress_device 4 "${L[@]}" --mca coll_themis_dims 2x2 --stress --colls "$SC" \
    --event "device_direct ipc=[0-9,]+" -- --seed 41 --calls 1000 "${S[@]}" --mem device
  run fake_stress_mixed 4 "${L[@]}" "${NOIPC[@]}" --mca coll_themis_dims 2x2 --stress --colls "$SC" \
    -- --seed 42 --calls 1000 "${S[@]}" --mem mixed
  run fake_stress_threads 4 "${L[@]}" --mca coll_themis_dims 2x2 --stress --colls "" \
    -- --seed 43 --threads 3 --calls 300 "${S[@]}" --mem mixed
  echo "cuda_run: fake: all passed (emulated driver: no GPU was used)"
  ;;
gpu)
  configured_with THEMIS_HAVE_CUDA || skip "this build has no CUDA (configure found no nvcc)"
  [ -x "$PROG" ] || die "build the tests first (make check)"
  "$PROG" --probe || skip "no usable GPU here"
  for t in pml ucx; do
    for c in auto staged; do
      run gpu_${t}_${c}_np4 4 --mca coll_themis_transport $t --mca coll_themis_cuda $c \
        --mca coll_themis_dims 2x2 -- --kinds device
      run gpu_${t}_${c}_np3_mixed 3 --mca coll_themis_transport $t --mca coll_themis_cuda $c \
        --mca coll_themis_dims 3 -- --kinds mixed
    done
  done
  run gpu_pml_split_np2 2 --mca coll_themis_dims 2 -- --kinds split
  # Device-direct node dimension (CUDA IPC; the auto runs above use it too), dims=auto on
  # one node, and the staged path it replaces.
  run gpu_ipc_auto_np4 4 --event "device_direct ipc=[0-9,]+" -- --kinds device
  run gpu_noipc_2x2_np4 4 --mca coll_themis_cuda_ipc off --mca coll_themis_dims 2x2 -- --kinds device
  for t in pml ucx; do
    run gpu_bench_${t}_np4 4 --mca coll_themis_dims 2x2 --bench bench_themis_$t \
      --colls "allreduce reduce_scatter_block allgather" --expect "^# buffers: CUDA device memory" \
      -- -m 1M:64M -i 5 -x 1 -c --mem device --collective allreduce,reduce_scatter_block,allgather \
      --impl themis_$t,themis_baseline --peers 2,2
  done
  run gpu_other_thread_np4 4 --mca coll_themis_dims 2x2 --mca coll_themis_staging_bytes 1048576 \
    --colls "allreduce iallreduce ireduce_scatter_block" -- --threads
  run gpu_bench_buckets_np4 4 --mca coll_themis_dims 2x2 --bench bench_themis \
    --colls "iallreduce ireduce_scatter_block iallgather" --expect "^# buffers: CUDA device memory" \
    -- --nonblocking buckets --buckets 8 -m 4M:4M -i 3 -x 1 -c --mem device \
    --collective allreduce,reduce_scatter_block,allgather --impl themis
  run gpu_staged_evict_np4 4 --mca coll_themis_cuda staged --mca coll_themis_staging_bytes 1 \
    --mca coll_themis_chunks 32 --mca coll_themis_min_chunk_bytes 4096 --mca coll_themis_max_active 1 \
    --mca coll_themis_dims 2x2 --verbose 5 --event "staging evictions=[1-9][0-9]*" \
    -- --kinds device
  # The randomized stress on device buffers (as in the fake runs): device-direct with UCX
  # and the PML, memory kinds drawn per call, three threads at once. The margin as in the
  # fake runs: pinned staging buffers fill for thousands of calls.
  SC="allreduce reduce_scatter allgather iallreduce iallgather"
  S=(--rss-margin-mib 48 --persistent --mem)
  for t in pml ucx; do
    run gpu_stress_device_$t 4 --mca coll_themis_transport $t --mca coll_themis_dims 2x2 --stress \
      --colls "$SC" -- --seed 51 --calls 2000 --max-bytes 4194304 "${S[@]}" device
  done
  run gpu_stress_mixed 4 --mca coll_themis_dims 2x2 --stress --colls "$SC" \
    -- --seed 52 --calls 2000 --max-bytes 4194304 "${S[@]}" mixed
  run gpu_stress_threads 4 --mca coll_themis_dims 2x2 --stress --colls "" \
    -- --seed 53 --threads 3 --calls 500 --max-bytes 2097152 "${S[@]}" mixed
  echo "cuda_run: gpu: all passed"
  ;;
bench)
  configured_with THEMIS_HAVE_CUDA || skip "this build has no CUDA (configure found no nvcc)"
  [ -x "$PROG" ] || die "build the tests first (make check)"
  "$PROG" --probe || skip "no usable GPU here"
  shift
  sizes=("$@")
  [ ${#sizes[@]} -gt 0 ] || sizes=(1048576 16777216 268435456)
  for bytes in "${sizes[@]}"; do
    for t in pml ucx; do
      run bench_${t}_$bytes "${NP:-2}" --mca coll_themis_dims "${NP:-2}" --mca coll_themis_transport $t --colls allreduce \
        -- --bench "$bytes" --iters 20
    done
  done
  ;;
*)
  sed -n '2,20p' "$0"; exit 2 ;;
esac
