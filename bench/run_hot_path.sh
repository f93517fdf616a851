#!/usr/bin/env bash
# run_hot_path.sh -- two builds of coll/themis side by side on small repeated calls (issue #31):
# heap allocations per call and the time of a call, themis forced on.
#
#   bench/run_hot_path.sh                       build-before/build against build
#   BEFORE=/path/to/build AFTER=build ROUNDS=7 bench/run_hot_path.sh
#
# Each build's component (BUILD/component/mca_coll_themis.so) is copied into a directory of
# its own and loaded through mca_base_component_path, as test/mpi/run_mpi_check.sh does.
# themis-hot-path (bench/hot_path.c, built here with mpicc) runs on NP ranks
# (--oversubscribe), coll_themis_dims DIMS, coll_themis_min_bytes 0 (themis runs every call),
# coll_themis_node_transport NODE:
#   1. once per build with bench/alloc_count.c preloaded: allocations per call, charged to
#      themis's code or to others' (Open MPI's), after the warm-up calls;
#   2. ROUNDS rounds without it, the two builds alternately (the first of a round flips
#      every round): the time per call, sizes SIZES (each rank's bytes, x4 apart).
# Prints, per collective and size, each build's median over the rounds of its median time
# per call and their ratio after/before (< 1: after is faster); paired: the median over the
# rounds of after/before within a round (both ran minutes apart at most), and in how many
# rounds after was faster; the allocations per call, themis's (+ others'). Every row of
# every run goes to OUT/hot_path_NODE$TAG.csv; SUMMARY_ONLY=1 prints the table of an
# existing one without running anything.
#
# Environment (defaults in brackets):
#   BEFORE [build-before/build]  AFTER [build]   configured build directories
#   NP [4]  DIMS [2x2]  NODE [transport]          the job (NODE: transport, cma or auto)
#   SIZES [4:65536]  COLLS [all]                  themis-hot-path -m and -c
#   ITERS [200]  REPS [11]  WARMUP [50]           calls per sample, samples per size and
#                                                 round, calls before measuring
#   ROUNDS [5]  TIMEOUT [900]  OUT [bench/results]  TAG [""]
#   EXTRA_MCA [""]                                more mpirun arguments
# Runs as root need OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (set here).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd -P)
BEFORE=${BEFORE:-$ROOT/build-before/build}
AFTER=${AFTER:-$ROOT/build}
NP=${NP:-4} DIMS=${DIMS:-2x2} NODE=${NODE:-transport}
SIZES=${SIZES:-4:65536} COLLS=${COLLS:-all}
ITERS=${ITERS:-200} REPS=${REPS:-11} WARMUP=${WARMUP:-50}
ROUNDS=${ROUNDS:-5} TIMEOUT=${TIMEOUT:-900}
OUT=${OUT:-$ROOT/bench/results} TAG=${TAG:-}
EXTRA_MCA=${EXTRA_MCA:-}
MPIRUN=${MPIRUN:-mpirun}

die() { echo "run_hot_path: $*" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
libdir=$(pkg-config --variable=libdir ompi 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/openmpi/lib)
if [ -d "$libdir/openmpi3" ]; then OMPI_DIR=$libdir/openmpi3; else OMPI_DIR=$libdir/openmpi; fi

CSV=$OUT/hot_path_${NODE}${TAG}.csv
[ "${SUMMARY_ONLY:-0}" = 1 ] && RUN=0 || RUN=1

if [ "$RUN" = 1 ]; then
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hot_path.XXXXXX") || die "no temporary directory"
trap 'rm -rf "$WORK"' EXIT
mpicc -O2 -o "$WORK/themis-hot-path" bench/hot_path.c || die "cannot build bench/hot_path.c"
cc -O2 -shared -fPIC -o "$WORK/alloc_count.so" bench/alloc_count.c || die "cannot build bench/alloc_count.c"
declare -A COMP
for b in before after; do
  dir=$BEFORE; [ "$b" = after ] && dir=$AFTER
  so=$dir/component/mca_coll_themis.so
  [ -f "$so" ] || die "$so missing (make -C $dir)"
  mkdir -p "$WORK/$b" && cp "$so" "$WORK/$b/mca_coll_themis.so"
  COMP[$b]=$WORK/$b
  echo "run_hot_path: $b = $so"
done
mkdir -p "$OUT"
echo "build,round,collective,bytes,median_us,min_us,allocs_themis,allocs_other" >"$CSV"

# run BUILD ROUND [program options]: one mpirun, its rows appended to the CSV
run() {
  local b=$1 round=$2; shift 2
  local cmd=(timeout -k 10 "$TIMEOUT" "$MPIRUN" --oversubscribe --bind-to none -np "$NP"
             --mca mca_base_component_path "${COMP[$b]}:$OMPI_DIR"
             --mca coll_themis_min_bytes 0 --mca coll_themis_dims "$DIMS"
             --mca coll_themis_node_transport "$NODE")
  # shellcheck disable=SC2206
  cmd+=($EXTRA_MCA)
  [ "$round" = count ] && cmd+=(-x "LD_PRELOAD=$WORK/alloc_count.so")
  cmd+=("$WORK/themis-hot-path" -m "$SIZES" -c "$COLLS" -n "$ITERS" -r "$REPS" -w "$WARMUP" "$@")
  [ "$round" = 1 ] && [ "$b" = before ] && echo "run_hot_path: ${cmd[*]}"
  "${cmd[@]}" >"$WORK/out" 2>&1 || { cat "$WORK/out"; die "$b round $round failed"; }
  grep '^hot_path,' "$WORK/out" | sed "s/^hot_path,/$b,$round,/" >>"$CSV"
}

for b in before after; do run "$b" count --count-allocs --no-latency; done
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then order="before after"; else order="after before"; fi
  for b in $order; do run "$b" "$r"; done
  echo "run_hot_path: round $r of $ROUNDS done"
done
fi

echo "run_hot_path: $(nproc) CPUs, $(uname -r), Open MPI $(ompi_info --version 2>/dev/null | head -1 | awk '{print $NF}'); $CSV"
awk -F, '
  NR == 1 { next }
  { key = $3 "," $4; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
  $2 == "count" { allocs[$1, key] = $7; other[$1, key] = $8; next }
  { t[$1, key, ++m[$1, key]] = $5; at[$1, key, $2] = $5; if ($2 > rounds) rounds = $2 }
  function median(v, c,    i, j, x) {
    for (i = 2; i <= c; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
  }
  function build_median(b, key,    v, i, c) {
    c = m[b, key]
    for (i = 1; i <= c; i++) v[i] = t[b, key, i]
    return median(v, c)
  }
  END {
    printf "%-20s %6s %9s %9s %9s %9s %7s %15s %15s\n", "collective", "bytes", "before_us",
           "after_us", "after/bef", "paired", "faster", "allocs before", "allocs after"
    for (i = 0; i < n; i++) {
      key = order[i]; split(key, f, ",")
      b = build_median("before", key); a = build_median("after", key)
      # paired: after/before of the same round, their median; rounds where after was faster
      c = 0; faster = 0; delete r
      for (k = 1; k <= rounds; k++)
        if (("after", key, k) in at && ("before", key, k) in at) {
          r[++c] = at["after", key, k] / at["before", key, k]
          if (r[c] < 1) ++faster
        }
      printf "%-20s %6s %9.1f %9.1f %9.3f %9.3f %4d/%-2d %8s (+%s) %8s (+%s)\n", f[1], f[2], b, a,
             a / b, c ? median(r, c) : 0, faster, c, allocs["before", key], other["before", key],
             allocs["after", key], other["after", key]
    }
  }' "$CSV"
