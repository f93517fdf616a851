#!/usr/bin/env bash
# run_netem_ab.sh -- two settings of coll/themis on one emulated network, alternated.
#
# Builds the network once (bench/netem/netem.py, hosts mode), then runs themis-bench (of
# netem's build directory and Open MPI: THEMIS_OMPI, THEMIS_BUILD_DIR, `netem.py ompi`)
# with themis alone ROUNDS times under setting A and under setting B, A and B alternating
# so that the machine's drift hits both alike, every result validated; prints one line
# per run: utilization (% of the ideal bound) / average time in ms, per collective.
# For settings that are MCA parameters (which one job cannot vary per communicator), or
# settings of the network itself: NET_A and NET_B, when they differ, rebuild the network
# before every run.
#
# Environment: SPEC (a netem dims spec, required), A, B (mpirun options of each
# setting, e.g. "--mca coll_themis_chunks 128"; either may be empty), NET_A, NET_B
# (more `netem.py up` options of each setting, e.g. "--mtu 1500"), ROUNDS [3],
# SIZES [16M:16M], ITERS [5], COLLS [allreduce,reduce_scatter_block,allgather],
# QUEUE_MS [20], MTU [9000], TIMEOUT [600] seconds per run, LOAD [0] busy loops (a CPU load
# beside the jobs, for the whole comparison), LOGS [none]: a directory that keeps each run's
# whole output (round<N>.<A|B>.log: themis's verbose lines, the rates it measured),
# TOPO [<build>/netem.topo]:
# after every `up`, `netem.py topo-file` writes the network's coll_themis_topo_file there,
# so a setting can be dims=auto as a user would run it, e.g.
#   B="--mca coll_themis_dims auto --mca coll_themis_topo_file build/netem.topo"
# (A="" is the oracle: `run --themis` gives the network's exact spec). Two builds of the
# component: A="--mca mca_base_component_path DIR_A:OMPI_DIR" and the same for B (DIR: a
# build's component/, OMPI_DIR: Open MPI's own components, `netem.py ompi components`).
# IMPL_A, IMPL_B [themis]: themis-bench's implementation of each setting. What an
# implementation sets by info key wins over the same MCA parameter: themis sets
# themis_policy=themis, so the baseline order is IMPL_B=themis_baseline, never
# B="--mca coll_themis_policy baseline" (refused: it would measure themis twice).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
: "${SPEC:?set SPEC, e.g. SPEC=2x2x2:bw=50Mbps,100Mbps,200Mbps}"
A=${A:-} B=${B:-} NET_A=${NET_A:-} NET_B=${NET_B:-} IMPL_A=${IMPL_A:-themis} IMPL_B=${IMPL_B:-themis}
case "$A $B" in
  *coll_themis_policy*)
    echo "run_netem_ab: coll_themis_policy in A or B has no effect (themis-bench's implementation sets the policy by info key): use IMPL_A/IMPL_B=themis_baseline" >&2
    exit 2 ;;
esac
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-16M:16M}
ITERS=${ITERS:-5}
COLLS=${COLLS:-allreduce,reduce_scatter_block,allgather}
QUEUE_MS=${QUEUE_MS:-20}
MTU=${MTU:-9000}
TIMEOUT=${TIMEOUT:-600}
LOAD=${LOAD:-0}
LOGS=${LOGS:-}
NETEM=bench/netem/netem.py
build=$(python3 "$NETEM" ompi build) || exit 1
TOPO=${TOPO:-$build/netem.topo}

loops=()
trap 'kill "${loops[@]}" 2>/dev/null; python3 "$NETEM" down >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 "$LOAD"); do
  bash -c 'while :; do :; done' &
  loops+=($!)
done
python3 "$NETEM" check >/dev/null || exit 77
up() {  # shellcheck disable=SC2086  # $1 is a list of options
  python3 "$NETEM" up --dims "$SPEC" --mode hosts --queue-ms "$QUEUE_MS" --mtu "$MTU" $1 >/dev/null || exit 1
  python3 "$NETEM" topo-file >"$TOPO" || exit 1
}
up "$NET_A"
[ -z "$LOGS" ] || mkdir -p "$LOGS" || exit 1
echo "# $SPEC, $COLLS, $SIZES, $ITERS iterations, $LOAD busy loops beside; per collective: util% / avg ms"
for round in $(seq 1 "$ROUNDS"); do
  for setting in A B; do
    net=NET_$setting impl=IMPL_$setting log=${LOGS:+$LOGS/round$round.$setting.log}
    [ "$NET_A" = "$NET_B" ] || up "${!net}"
    # shellcheck disable=SC2086  # A and B are lists of options
    line=$(python3 "$NETEM" run --themis --timeout "$TIMEOUT" -- ${!setting} \
      "$build/bench/themis-bench" -m "$SIZES" -i "$ITERS" -x 1 -c --collective "$COLLS" \
      --impl "${!impl}" --dims "$SPEC" 2>&1 | tee ${log:+"$log"} |
      awk -v impl="${!impl}" '$2 == impl { printf "%s%% / %.1f  ", $8, $3 / 1000 }
           /validation: FAILED/ { bad = 1 } END { if (bad) printf "VALIDATION FAILED" }')
    echo "round $round $setting: $line"
  done
done
