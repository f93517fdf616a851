#!/usr/bin/env bash
# run_shm_compare.sh -- coll/themis vs coll/tuned on one node (shared memory).
#
# Runs build/bench/themis-bench with 4 and 8 ranks, 1 MB to 64 MB:
#   * dims auto (all ranks on one node = one dimension) : themis vs tuned
#   * dims 2x2 (4 ranks) / 2x4 (8 ranks), the multi-dimensional path: themis (Themis
#     order), themis_baseline (fixed hierarchical order) vs tuned
#   * small messages (1 KB to 8 KB, below coll_themis_min_bytes): the cost of having
#     themis loaded (it hands the call to tuned) vs a communicator without it
# every implementation in the same run, interleaved (see themis_bench.c), and writes
# CSV + SVG files into bench/results/ (current figures: bench/RESULTS.md; earlier runs:
# bench/HISTORY.md).
#
#   bench/run_shm_compare.sh          the comparison above
#   bench/run_shm_compare.sh node     the node-local transport: 4 ranks 2x2, 8 ranks 2x4 and
#                                     2x2x2, themis (node transport auto), themis_nocma (node
#                                     dimensions on the PML, as before it) and tuned, one CSV
#                                     per layout (shm_node_*.csv)
#   bench/run_shm_compare.sh sweep    knob sweep: themis with each setting of SWEEP_CONFIGS
#                                     vs tuned (same run), NPS ranks, one CSV per rank count
#                                     (with coll_themis_single_dim=1, so 1-D runs the engine)
#
# Environment (defaults in brackets):
#   BUILD [build]           configured build directory (make bench/themis-bench there)
#   COMPONENT_DIR [$BUILD/component, else $BUILD/ompi/mca/coll/themis/.libs]
#   OUT [bench/results]     where the CSV/SVG files go
#   NPS ["4 8"]             rank counts
#   COLLS [all]             themis-bench --collective value
#   SIZES [1M:64M]          large-message range;  SMALL_SIZES [1K:8K]
#   ITERS [20] WARMUP [3]   large messages;  SMALL_ITERS [300] small messages
#   SMALL [1]               0: skip the small-message runs
#   STAT [avg]              avg|median|min: what speedups and bandwidths use
#   TIMEOUT [600]           seconds per mpirun
#   VALIDATE [0]            1: themis-bench -c (check every result)
#   EXTRA_MCA [""]          more mpirun arguments, e.g. "--mca coll_themis_chunks 16"
#   DIMS_OPTS [""]          appended to every coll_themis_dims value, e.g. ":alg=direct"
#                           (auto:alg=direct, 2x2:alg=direct, ...)
#   TAG [""]                suffix of the output file names
#   WAIT_IDLE [120]         wait up to this many seconds before each mpirun for the CPUs to
#                           be >= 85 % idle (other jobs on the machine spoil timings); 0: no
#   sweep mode: SWEEP_SIZES [1M:16M], SWEEP_COLLS [allreduce allgather], SWEEP_CONFIGS
#     (newline-separated "label|coll_themis_dims|mpirun args", default: chunks, min_chunk_bytes, max_active,
#     per-dimension algorithm and transport variants)
# MPIRUN [mpirun] and OMPI_DEFAULT_COMPONENT_DIR [pkg-config ompi's]: the Open MPI of BUILD.
# Runs as root need OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (set here).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd -P)
BUILD=${BUILD:-$ROOT/build}
OUT=${OUT:-$ROOT/bench/results}
NPS=${NPS:-"4 8"}
COLLS=${COLLS:-all}
SIZES=${SIZES:-1M:64M}
SMALL_SIZES=${SMALL_SIZES:-1K:8K}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-3}
SMALL_ITERS=${SMALL_ITERS:-300}
SMALL=${SMALL:-1}
STAT=${STAT:-avg}
TIMEOUT=${TIMEOUT:-600}
VALIDATE=${VALIDATE:-0}
EXTRA_MCA=${EXTRA_MCA:-}
TAG=${TAG:-}
DIMS_OPTS=${DIMS_OPTS:-}
WAIT_IDLE=${WAIT_IDLE:-120}
MODE=${1:-compare}
# The Open MPI of the build (MPIRUN and its component directory; Debian's by default), and
# mpirun's options for its series.
MPIRUN=${MPIRUN:-mpirun}
OMPI_DIR=${OMPI_DEFAULT_COMPONENT_DIR:-$(pkg-config --variable=libdir ompi 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/openmpi/lib)/openmpi3}
[ -d "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
# shellcheck source=../test/common/mpirun_flags.sh
source "$ROOT/test/common/mpirun_flags.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

BENCH=$BUILD/bench/themis-bench
if [ ! -x "$BENCH" ]; then
  make -C "$BUILD" bench/themis-bench >/dev/null || { echo "cannot build $BENCH" >&2; exit 1; }
fi
if [ -z "${COMPONENT_DIR:-}" ]; then
  COMPONENT_DIR=$BUILD/component
  [ -f "$COMPONENT_DIR/mca_coll_themis.so" ] || COMPONENT_DIR=$BUILD/ompi/mca/coll/themis/.libs
fi
[ -f "$COMPONENT_DIR/mca_coll_themis.so" ] || { echo "no mca_coll_themis.so in $COMPONENT_DIR" >&2; exit 1; }
# Run a private copy: a rebuild during the runs must not change what is measured.
SNAP=$(mktemp -d)
trap 'rm -rf "$SNAP"' EXIT
cp "$COMPONENT_DIR/mca_coll_themis.so" "$SNAP/"
mkdir -p "$OUT"

echo "# run_shm_compare.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) cores"
echo "# git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- src ompi 2>/dev/null || echo '+local changes'), component md5 $(md5sum < "$SNAP/mca_coll_themis.so" | cut -c1-12)"
echo "# ITERS=$ITERS WARMUP=$WARMUP SMALL_ITERS=$SMALL_ITERS STAT=$STAT EXTRA_MCA='$EXTRA_MCA' DIMS_OPTS='$DIMS_OPTS'"

VFLAG=()
[ "$VALIDATE" = 1 ] && VFLAG=(-c)
failed=0

if [ "$COLLS" = all ]; then
  COLL_LIST="allreduce reduce_scatter reduce_scatter_block allgather"
else
  COLL_LIST=${COLLS//,/ }
fi

# Waits (at most WAIT_IDLE s) until the CPUs are >= 85 % idle over 2 s; says how idle.
wait_idle() {
  local waited=0 u n s i w q sq st t1 i1 t2 i2 idle
  while :; do
    read -r _ u n s i w q sq st _ < /proc/stat; t1=$((u+n+s+i+w+q+sq+st)); i1=$i
    sleep 2
    read -r _ u n s i w q sq st _ < /proc/stat; t2=$((u+n+s+i+w+q+sq+st)); i2=$i
    idle=$(( 100 * (i2 - i1) / (t2 - t1 > 0 ? t2 - t1 : 1) ))
    if [ "$idle" -ge 85 ] || [ "$waited" -ge "$WAIT_IDLE" ]; then
      echo "cpu ${idle}% idle (waited ${waited}s)"; return
    fi
    waited=$((waited + 2))
  done
}

# bench NP DIMS LABEL CSV [themis-bench args...]: one mpirun (bounded by TIMEOUT) per
# collective, the CSVs merged into CSV.
bench() {
  local np=$1 dims=$2 label=$3 csv=$4; shift 4
  local oversub=() path coll part rc
  [ "$np" -gt "$(nproc)" ] && oversub=(--oversubscribe)
  rm -f "$csv"
  for coll in $COLL_LIST; do
    part=$SNAP/part.csv
    rm -f "$part"
    echo
    echo "## np=$np dims=$dims $coll ($label): $([ "$WAIT_IDLE" -gt 0 ] && wait_idle), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    # shellcheck disable=SC2086
    mapfile -t path < <(mpirun_flags component-path "$SNAP:$OMPI_DIR")
    timeout "$TIMEOUT" "$MPIRUN" -np "$np" "${oversub[@]}" "${path[@]}" \
      --mca coll_themis_dims "$dims" $EXTRA_MCA \
      "$BENCH" --label "$label" --csv "$part" --stat "$STAT" --collective "$coll" \
      "${VFLAG[@]}" "$@" < /dev/null
    rc=$?
    if [ $rc -ne 0 ]; then
      echo "!! np=$np dims=$dims $coll: mpirun exited with $rc$([ $rc -eq 124 ] && echo ' (timeout)')" >&2
      failed=1
    fi
    if [ -s "$part" ]; then
      if [ -s "$csv" ]; then tail -n +2 "$part" >> "$csv"; else cp "$part" "$csv"; fi
    fi
  done
}

PLOT=$ROOT/bench/plot_bench.py
existing() { local f; for f in "$@"; do [ -s "$f" ] && echo "$f"; done; }

if [ "$MODE" = sweep ]; then
  SWEEP_SIZES=${SWEEP_SIZES:-1M:16M}
  COLL_LIST=${SWEEP_COLLS:-allreduce allgather}
  COLL_LIST=${COLL_LIST//,/ }
  default_configs="defaults|auto|
chunks=1|auto|--mca coll_themis_chunks 1
chunks=4|auto|--mca coll_themis_chunks 4
chunks=16|auto|--mca coll_themis_chunks 16
min_chunk=64K|auto|--mca coll_themis_min_chunk_bytes 65536
min_chunk=1M|auto|--mca coll_themis_min_chunk_bytes 1048576
min_chunk=4M|auto|--mca coll_themis_min_chunk_bytes 4194304
max_active=1|auto|--mca coll_themis_max_active 1
max_active=4|auto|--mca coll_themis_max_active 4
alg=hd|auto:alg=hd|
alg=direct|auto:alg=direct|
transport=ucx|auto|--mca coll_themis_transport ucx"
  SWEEP_CONFIGS=${SWEEP_CONFIGS:-$default_configs}
  for np in $NPS; do
    csv=$OUT/shm_sweep_np${np}$TAG.csv
    rm -f "$csv"
    while IFS='|' read -r label dims args; do
      [ -n "$label" ] || continue
      part_all=$SNAP/sweep.csv
      # single_dim: a 1-D auto communicator would otherwise go straight to tuned.
      EXTRA_MCA="--mca coll_themis_single_dim 1 $EXTRA_MCA $args" bench "$np" "${dims:-auto}" "$label" "$part_all" -m "$SWEEP_SIZES" \
        -i "$ITERS" -x "$WARMUP" --impl themis,tuned
      if [ -s "$part_all" ]; then
        if [ -s "$csv" ]; then tail -n +2 "$part_all" >> "$csv"; else cp "$part_all" "$csv"; fi
      fi
    done <<< "$SWEEP_CONFIGS"
    echo
    [ -s "$csv" ] && python3 "$PLOT" --table "$csv"
  done
  exit $failed
fi

if [ "$MODE" = node ]; then
  node=()
  for layout in 4:2x2 8:2x4 8:2x2x2; do
    np=${layout%%:*} dims=${layout#*:}
    f=$OUT/shm_node_np${np}_${dims}$TAG.csv
    bench "$np" "$dims$DIMS_OPTS" "np$np dims=$dims" "$f" -m "$SIZES" -i "$ITERS" -x "$WARMUP" \
      --impl themis,themis_nocma,tuned
    node+=("$f")
  done
  mapfile -t node_ok < <(existing "${node[@]}")
  if [ ${#node_ok[@]} -gt 0 ]; then
    python3 "$PLOT" --columns 4 --metric speedup -o "$OUT/shm_node_speedup$TAG.svg" \
      --title "node-local transport: speedup t_tuned/t (>1: faster than tuned)" "${node_ok[@]}"
    echo
    python3 "$PLOT" --table "${node_ok[@]}"
  fi
  exit $failed
fi

large=()
small=()
for np in $NPS; do
  case $np in
    4) multi=2x2 ;;
    8) multi=2x4 ;;
    *) multi= ;;
  esac
  f=$OUT/shm_np${np}_auto$TAG.csv
  bench "$np" "auto$DIMS_OPTS" "np$np auto (1-D)" "$f" -m "$SIZES" -i "$ITERS" -x "$WARMUP" \
    --impl themis,tuned --bw measure
  large+=("$f")
  if [ -n "$multi" ]; then
    f=$OUT/shm_np${np}_${multi}$TAG.csv
    bench "$np" "$multi$DIMS_OPTS" "np$np dims=$multi" "$f" -m "$SIZES" -i "$ITERS" -x "$WARMUP" \
      --impl themis,themis_baseline,tuned --bw measure
    large+=("$f")
  fi
  if [ "$SMALL" = 1 ]; then
    f=$OUT/shm_np${np}_small$TAG.csv
    bench "$np" auto "np$np small" "$f" -m "$SMALL_SIZES" -i "$SMALL_ITERS" -x 20 \
      --impl themis,tuned
    small+=("$f")
  fi
done

mapfile -t large_ok < <(existing "${large[@]}")
mapfile -t small_ok < <(existing "${small[@]}")
if [ ${#large_ok[@]} -gt 0 ]; then
  python3 "$PLOT" --columns 4 -o "$OUT/shm_busbw$TAG.svg" \
    --title "themis vs tuned, shared memory: bus bandwidth (GB/s)" "${large_ok[@]}"
  python3 "$PLOT" --columns 4 --metric speedup -o "$OUT/shm_speedup$TAG.svg" \
    --title "themis vs tuned, shared memory: speedup t_tuned/t (>1: themis faster)" "${large_ok[@]}"
  echo
  python3 "$PLOT" --table "${large_ok[@]}"
fi
if [ ${#small_ok[@]} -gt 0 ]; then
  echo
  python3 "$PLOT" --table "${small_ok[@]}"
fi
echo
written=("${large_ok[@]}" "${small_ok[@]}")
[ ${#large_ok[@]} -gt 0 ] && written+=("$OUT/shm_busbw$TAG.svg" "$OUT/shm_speedup$TAG.svg")
echo "# files: ${written[*]}"
exit $failed
