#!/usr/bin/env bash
# run_netem_compare.sh -- coll/themis vs tuned and han on the emulated network.
#
# For every profile below: build the network (bench/netem/netem.py, hosts mode: 4 hosts
# x 2 ranks that Open MPI sees as separate nodes, so coll/han engages; every dimension
# a shaped link), run <build>/bench/themis-bench with themis (Themis order),
# themis_baseline (fixed hierarchical order), tuned and han interleaved in one run,
# every result validated, and tear the network down. CSV files go to bench/results/.
# The Open MPI and the build directory are netem's (THEMIS_OMPI, THEMIS_BUILD_DIR; see
# `bench/netem/netem.py ompi`); on Open MPI 5.0 han is kept below tuned but where asked
# for (test/common/mpirun_flags.sh han-by-request), so that tuned and han are each alone,
# as on 4.1.
#
# Profiles (rates in Mbit/s per rank and dimension):
#   equal   every dimension alike: the baseline order overloads the first dimension
#   enough  "just enough": B_d = n_d x B_(d+1), where the baseline order is balanced
#   hetero  the first dimension the slowest
#
# Environment: SIZES [16M:16M], ITERS [2], COLLS [allreduce,reduce_scatter_block,allgather],
# IMPLS [themis,themis_baseline,tuned,han], PROFILES [all six], OUT [bench/results],
# TAG [] (appended to the CSV names), QUEUE_MS [20] (the links' buffer, netem.py up
# --queue-ms), MTU [9000] (the links' MTU, netem.py up --mtu), MPI_ARGS [] (more mpirun options, e.g. MCA parameters, for every
# implementation alike), TIMEOUT [1200] seconds per run.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:-bench/results}
SIZES=${SIZES:-16M:16M}
ITERS=${ITERS:-2}
COLLS=${COLLS:-allreduce,reduce_scatter_block,allgather}
IMPLS=${IMPLS:-themis,themis_baseline,tuned,han}
TAG=${TAG:-}
QUEUE_MS=${QUEUE_MS:-20}
MTU=${MTU:-9000}
MPI_ARGS=${MPI_ARGS:-}
TIMEOUT=${TIMEOUT:-1200}
NETEM=bench/netem/netem.py
build=$(python3 "$NETEM" ompi build) || exit 1
mapfile -t han_by_request < <(bash test/common/mpirun_flags.sh --mpirun "$(python3 "$NETEM" ompi mpirun)" han-by-request)
PROFILES=${PROFILES:-"2x4:equal:150,150 2x4:enough:200,100 2x4:hetero:100,200
2x2x2:equal:100,100,100 2x2x2:enough:200,100,50 2x2x2:hetero:50,100,200"}

mkdir -p "$OUT"
trap 'python3 "$NETEM" down >/dev/null 2>&1 || true' EXIT
python3 "$NETEM" check || exit 77
echo "# Open MPI $(python3 "$NETEM" ompi series), $build${han_by_request[*]:+, ${han_by_request[*]}}"
for profile in $PROFILES; do
  IFS=: read -r dims name rates <<<"$profile"
  label="${dims}_${name}"
  spec="$dims:bw=$(echo "$rates" | sed 's/,/Mbps,/g')Mbps"
  echo "==> $label: $spec"
  python3 "$NETEM" up --dims "$spec" --mode hosts --queue-ms "$QUEUE_MS" --mtu "$MTU" >/dev/null || exit 1
  # A cache of its own per profile: the profiles' hosts have the same names, so one
  # profile's measured rates and grid would be read for the next (the user's cache is keyed
  # by host names).
  cache=$(mktemp -d "${TMPDIR:-/tmp}/netem_compare_cache.XXXXXX") || exit 1
  # shellcheck disable=SC2086  # MPI_ARGS is a list of options
  python3 "$NETEM" run --themis --timeout "$TIMEOUT" -- "${han_by_request[@]}" $MPI_ARGS \
    -x XDG_CACHE_HOME="$cache" \
    "$build/bench/themis-bench" -m "$SIZES" -i "$ITERS" -x 1 -c --collective "$COLLS" \
    --impl "$IMPLS" --dims "$spec" --label "$label" \
    --csv "$OUT/netem_$label$TAG.csv" 2>&1 | grep -vE "setpgid|coll:themis"
  rm -rf "$cache"
  python3 "$NETEM" down >/dev/null
done
