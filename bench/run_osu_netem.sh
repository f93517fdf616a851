#!/usr/bin/env bash
# run_osu_netem.sh -- the OSU micro-benchmarks' blocking sweeps on the emulated network:
# coll/themis with its defaults (nothing typed: dims=auto, the crossover measured) against
# tuned and han, each forced, on one network, ROUNDS rounds, the three alternating.
#
# Builds the network once (bench/netem/netem.py, hosts mode), then per round and benchmark
# runs OSU's osu_allreduce (-m ALLREDUCE_SIZES) and osu_allgather (-m ALLGATHER_SIZES,
# bytes per rank), -T mpi_float, with VALIDATE=1 -c (OSU validates every result; it takes
# several times as long on this network):
#   themis  coll/themis loaded, `--mca coll_themis_dims auto`: what a user gets (and
#           `coll_themis_verbose 1`: its crossover decisions are printed, rank 0's)
#   tuned   `--mca coll ^themis,han`
#   han     `--mca coll ^themis --mca coll_han_priority 100`
# themis gets WARMUP_THEMIS warm-up calls per size (its crossover's trial takes a size's
# first nine), tuned and han WARMUP. Prints per round and benchmark one row per size:
# the average latencies (us) and themis's speed-up over the faster of tuned and han, then
# the smallest speed-up from 64 KiB and from 1 MiB (the sizes OSU reports: the
# per-rank size for allgather).
#
# Environment: OSU_DIR (the folder of OSU's built osu_allreduce and osu_allgather,
# required: OSU is not a Debian package), SPEC [2x4:bw=100Mbps,200Mbps], ROUNDS [2],
# ITERS [5], WARMUP [3], WARMUP_THEMIS [10], VALIDATE [1], ALLREDUCE_SIZES [4:16777216],
# ALLGATHER_SIZES [4:2097152], QUEUE_MS [20], MTU [9000], TIMEOUT [1200] per run,
# THEMIS_ARGS [the themis run's options above] (e.g. `--mca coll_themis_min_bytes 1073741824`:
# every call handed to tuned, a run of tuned against itself that shows the sweep's own spread).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
: "${OSU_DIR:?set OSU_DIR to the folder holding osu_allreduce and osu_allgather}"
SPEC=${SPEC:-2x4:bw=100Mbps,200Mbps}
ROUNDS=${ROUNDS:-2} ITERS=${ITERS:-5} WARMUP=${WARMUP:-3} WARMUP_THEMIS=${WARMUP_THEMIS:-10}
VALIDATE=${VALIDATE:-1}
validate=()
[ "$VALIDATE" = 1 ] && validate=(-c)
ALLREDUCE_SIZES=${ALLREDUCE_SIZES:-4:16777216} ALLGATHER_SIZES=${ALLGATHER_SIZES:-4:2097152}
QUEUE_MS=${QUEUE_MS:-20} MTU=${MTU:-9000} TIMEOUT=${TIMEOUT:-1200}
NETEM=bench/netem/netem.py
for b in osu_allreduce osu_allgather; do
  [ -x "$OSU_DIR/$b" ] || { echo "run_osu_netem: no $OSU_DIR/$b" >&2; exit 1; }
done
declare -A IMPL_ARGS=(
  [themis]=${THEMIS_ARGS:-"--mca coll_themis_dims auto --mca coll_themis_verbose 1"}
  [tuned]="--mca coll ^themis,han"
  [han]="--mca coll ^themis --mca coll_han_priority 100")

trap 'python3 "$NETEM" down >/dev/null 2>&1 || true' EXIT
python3 "$NETEM" check >/dev/null || exit 77
python3 "$NETEM" up --dims "$SPEC" --mode hosts --queue-ms "$QUEUE_MS" --mtu "$MTU" >/dev/null || exit 1
tmp=$(mktemp -d)
echo "# $SPEC, Open MPI $(python3 "$NETEM" ompi series), OSU $OSU_DIR, $ITERS iterations, warm-up $WARMUP (themis $WARMUP_THEMIS), validation $VALIDATE"

# osu IMPL BENCH SIZES: one run; its "size avg_us" rows on stdout, nothing if it failed.
osu() {
  local impl=$1 bench=$2 sizes=$3 warmup=$WARMUP log
  [ "$impl" = themis ] && warmup=$WARMUP_THEMIS
  log=$tmp/$impl.$bench.log
  # shellcheck disable=SC2086  # IMPL_ARGS holds a list of options
  python3 "$NETEM" run --themis --timeout "$TIMEOUT" -- ${IMPL_ARGS[$impl]} \
    "$OSU_DIR/$bench" -m "$sizes" -i "$ITERS" -x "$warmup" -T mpi_float "${validate[@]}" >"$log" 2>&1
  if grep -q 'Fail' "$log"; then echo "run_osu_netem: $impl $bench: validation failed ($log)" >&2; fi
  awk '/^[0-9]/ { print $1, $2 }' "$log"
}

for round in $(seq 1 "$ROUNDS"); do
  for bench in osu_allreduce osu_allgather; do
    sizes=$ALLREDUCE_SIZES
    [ "$bench" = osu_allgather ] && sizes=$ALLGATHER_SIZES
    for impl in tuned han themis; do osu "$impl" "$bench" "$sizes" >"$tmp/rows.$impl"; done
    echo "## round $round, $bench: bytes, avg us themis / tuned / han, x best"
    grep -h 'coll:themis:crossover comm=MPI_COMM_WORLD .*rank=0 ' "$tmp/themis.$bench.log" |
      sed 's/.*coll=/# crossover coll=/'
    awk 'FILENAME ~ /rows\.tuned$/ { tuned[$1] = $2; next } FILENAME ~ /rows\.han$/ { han[$1] = $2; next }
           !($1 in tuned) || !($1 in han) { next }
           { best = tuned[$1] < han[$1] ? tuned[$1] : han[$1]; x = best / $2
             printf "%10d %12.1f %12.1f %12.1f %6.2f\n", $1, $2, tuned[$1], han[$1], x
             if ($1 >= 65536 && (min64 == "" || x < min64)) min64 = x
             if ($1 >= 1048576 && (min1m == "" || x < min1m)) min1m = x }
           END { printf "# smallest x best: from 64 KiB %.2f, from 1 MiB %.2f\n", min64, min1m }' \
      "$tmp/rows.tuned" "$tmp/rows.han" "$tmp/rows.themis"
  done
done
rm -rf "$tmp"
