#!/usr/bin/env bash
# scripts/demo.sh -- Themis at work, in a few minutes (run scripts/setup.sh first).
#
#   1. the planner: themis-sim reproduces the paper's microbenchmark (bandwidth-only
#      model) and predicts the emulated network below;
#   2. real MPI collectives through coll/themis on an emulated 2x4 network (network
#      namespaces, every link shaped to 150 Mbit/s, hosts that Open MPI sees as separate
#      nodes so coll/han takes part), when this machine can build one (root, tbf, netns);
#      otherwise on shared memory (8 ranks as 2x4). As a user runs it: dims=auto with the
#      network's topology file, rates measured by themis. themis (Themis order), themis
#      with the fixed hierarchical order, tuned and han run the same calls in one run,
#      interleaved, and every result is checked (-c);
#   3. themis again with the network's exact rates given (the oracle spec), and how
#      dims=auto compares with it.
#
# Environment: DEMO_SIZE [16M] message size; DEMO_ITERS [2]; DEMO_SHM=1 skips the
# emulated network.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=build
SIZE=${DEMO_SIZE:-16M}
ITERS=${DEMO_ITERS:-2}
NETEM=bench/netem/netem.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

step() { printf '\n==> %s\n' "$*"; }
# Keeps rank 0's coll/themis lines (human ones, and its events "coll:themis:EVENT
# key=value ...": docs/log-events.md) about MPI_COMM_WORLD's set-up, and everything else
# the benchmark prints.
quiet() {
  grep -vE "setpgid|coll:themis: (comm MPI_COMM_SELF|no CUDA)|coll:themis: .* rank [1-9][0-9]*:|coll:themis:[a-z_]+ .*(comm=MPI_COMM_SELF|rank=[1-9][0-9]*)( |$)"
}

if [ ! -x "$BUILD/tools/themis-sim" ] || [ ! -x "$BUILD/bench/themis-bench" ]; then
  echo "demo.sh: build/ is not built; run: bash scripts/setup.sh" >&2
  exit 2
fi

step "1. The planner reproduces the paper (Table 2 topologies, All-Reduce 100 MB-1 GB, 64 chunks)"
echo "   paper, bandwidth-only averages: baseline 56.31 %, Themis+FIFO 87.67 %, Themis+SCF 95.14 %"
"$BUILD/tools/themis-sim" --paper | awk '
  /^topology/ && !header++ { print "   " $0 }
  /^(bandwidth_only|table2_latency):/ { model = $1 }
  /all topologies/ && model { print "   " model " " $0; model = "" }'

SPEC="2x4:bw=150Mbps,150Mbps"
step "   and predicts a 2x4 network with 150 Mbit/s on both dimensions, All-Reduce of $SIZE:"
for policy in baseline themis; do
  "$BUILD/tools/themis-sim" --topology "$SPEC:lat=0us" --collective allreduce --size "$SIZE" \
    --chunks 64 --policy "$policy" --intra scf --max-active 4 --bandwidth-only \
    | awk '/^(policy|predicted|utilization)/ { printf "   %s", $0 } END { print "" }' 
done

BENCH=(-m "$SIZE:$SIZE" -i "$ITERS" -x 1 -c --collective allreduce,reduce_scatter_block,allgather)
if [ "${DEMO_SHM:-0}" != 1 ] && python3 "$NETEM" check >/dev/null 2>&1; then
  step "2. coll/themis on an emulated 2x4 network (4 hosts x 2 ranks, every link 150 Mbit/s, jumbo frames)"
  echo "   run as a user would: dims=auto and the network's topology file (hosts' coordinates, no"
  echo "   rates); themis measures every dimension's rates itself (the 'calibration' lines)"
  trap 'python3 "$NETEM" down >/dev/null 2>&1 || true' EXIT
  python3 "$NETEM" up --dims "$SPEC" --mode hosts >/dev/null
  python3 "$NETEM" topo-file >"$BUILD/demo.topo"
  sed 's/^/   | /' "$BUILD/demo.topo"
  python3 "$NETEM" run --themis --timeout 900 -- --mca coll_themis_dims auto \
    --mca coll_themis_topo_file "$BUILD/demo.topo" --mca coll_themis_verbose 1 \
    "$BUILD/bench/themis-bench" "${BENCH[@]}" --dims "$SPEC" --impl themis,themis_baseline,tuned,han \
    --csv "$BUILD/demo_auto.csv" 2>&1 | quiet
  step "3. the same network with its exact rates typed in ($SPEC, the oracle), themis alone"
  python3 "$NETEM" run --themis --timeout 900 -- --mca coll_themis_calibration_seconds 0 \
    "$BUILD/bench/themis-bench" "${BENCH[@]}" --dims "$SPEC" --impl themis \
    --csv "$BUILD/demo_oracle.csv" 2>&1 | quiet
  python3 "$NETEM" down >/dev/null
  echo "   dims=auto against the oracle spec (share of the ideal bound; time ratio > 0.95 matches):"
  awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
           $col["impl"] == "themis" { u[FILENAME, $col["collective"]] = $col["util"]
                                      t[FILENAME, $col["collective"]] = $col["avg_us"]; c[$col["collective"]] = 1 }
           END { for (k in c) printf "   %-22s auto %5.1f %%  oracle %5.1f %%  oracle/auto time %.2f\n", k,
                   100 * u[ARGV[1], k], 100 * u[ARGV[2], k], t[ARGV[2], k] / t[ARGV[1], k] }' \
    "$BUILD/demo_auto.csv" "$BUILD/demo_oracle.csv"
else
  step "2. coll/themis on shared memory (8 ranks as 2x4; no emulated network here)"
  mpirun --oversubscribe --bind-to none -np 8 --mca coll_themis_dims 2x4 \
    --mca coll_themis_verbose 1 "$BUILD/bench/themis-bench" "${BENCH[@]}" --peers 2,4 \
    --impl themis,themis_baseline,tuned < /dev/null 2>&1 | quiet
fi
step "done: every result above was checked against values computed independently (-c)"
