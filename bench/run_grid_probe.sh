#!/usr/bin/env bash
# run_grid_probe.sh -- whether dims=auto finds the hosts' grid by probing, and what the job then
# reaches, on an emulated network built here (issue #48). JOBS jobs, each with nothing typed (no
# topology file, an empty user cache): themis-bench, 16 MiB allreduce, reduce_scatter_block and
# allgather, validated; per job the grid event (rank 0), the rates selected and each collective's
# share of the ideal.
#
#   SPEC=2x2x2:bw=25Mbps,50Mbps,100Mbps PPN=1 bench/run_grid_probe.sh     # 8 one-rank hosts
#   SPEC=2x2x2x2:bw=25Mbps,50Mbps,100Mbps,200Mbps bench/run_grid_probe.sh # 8 two-rank hosts
#
# Environment: SPEC (required), PPN [the first dimension's size] ranks per host, JOBS [3],
# BYTES [16M], ITERS [5], PREFIX [tg], OUT [a temporary directory, printed], TIMEOUT [900],
# VERBOSE [1] (10: every probe's measurement), TYPED [0] (1: before each job, one with the spec
# typed, `coll_themis_dims SPEC`, the rates given, alternated so both meet the machine alike).
# The node level runs over its shaped links, as the other emulated figures
# (coll_themis_node_transport transport, netem.py run --themis's default).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
NETEM=bench/netem/netem.py
: "${SPEC:?set SPEC, e.g. 2x2x2:bw=25Mbps,50Mbps,100Mbps}"
JOBS=${JOBS:-3} BYTES=${BYTES:-16M} ITERS=${ITERS:-5} PREFIX=${PREFIX:-tg} TIMEOUT=${TIMEOUT:-900}
VERBOSE=${VERBOSE:-1}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/grid_probe.XXXXXX")}
mkdir -p "$OUT"
die() { echo "run_grid_probe: $*" >&2; exit 2; }
ppn=()
[ -n "${PPN:-}" ] && ppn=(--ppn "$PPN")
python3 "$NETEM" up --prefix "$PREFIX" --dims "$SPEC" --mode hosts "${ppn[@]}" >/dev/null ||
  die "cannot build the network $SPEC"
trap 'python3 "$NETEM" down --prefix "$PREFIX" >/dev/null 2>&1 || true' EXIT
build=$(python3 "$NETEM" ompi build) || die "cannot tell the build directory"
echo "run_grid_probe: $SPEC${PPN:+, $PPN ranks per host}, $JOBS jobs, $BYTES; logs in $OUT"
# job NAME DIMS: one job with coll_themis_dims DIMS and an empty user cache; prints its util,
# and with DIMS auto its grid event (rank 0); always the rates selected.
job() {
  local name=$1 dims=$2 log=$OUT/$1.log cache=$OUT/cache_$1 grid sel util
  rm -rf "$cache" && mkdir -p "$cache"
  python3 "$NETEM" run --prefix "$PREFIX" --timeout "$TIMEOUT" --themis -- \
    --mca coll_themis_dims "$dims" --mca coll_themis_verbose "$VERBOSE" -x XDG_CACHE_HOME="$cache" \
    "$build/bench/themis-bench" -m "$BYTES:$BYTES" -i "$ITERS" -x 1 -c \
    --collective allreduce,reduce_scatter_block,allgather --impl themis --dims "$SPEC" \
    >"$log" 2>&1 </dev/null || die "$name failed: $log"
  grep -q '^# validation: passed' "$log" || die "$name: results not validated: $log"
  grid=$(grep -a 'coll:themis:grid comm=bench_themis .*rank=0 ' "$log" | sed 's/.*rank=0 //')
  sel=$(grep -a 'coll:themis:selected comm=bench_themis .*rank=0 ' "$log" | sed 's/.*dims=\([^ ]*\).*/\1/')
  util=$(grep -aE '^ +[0-9]+  themis ' "$log" | awk '{printf "%s%s", sep, $8; sep=" / "}')
  echo "${name//_/ }: util allreduce / reduce_scatter_block / allgather: $util %"
  [ "$dims" = auto ] && echo "    grid: $grid"
  echo "    selected: $sel"
}

for ((j = 1; j <= JOBS; ++j)); do
  [ "${TYPED:-0}" = 1 ] && job "typed_$j" "$SPEC"
  job "job_$j" auto
done
