# hosts_network.sh -- sourced by bench scripts (from the repository's root): builds the
# emulated network of SPEC in hosts mode with its topology file, and tears it down, the
# temporary directory with it, when the script exits.
# Needs SPEC, QUEUE_MS, MTU. Sets NETEM (netem.py), build (the build directory netem.py runs
# from) and work (a temporary directory; work/topo: the network's coll_themis_topo_file).
# shellcheck shell=bash
NETEM=bench/netem/netem.py
build=$(python3 "$NETEM" ompi build) || exit 1
work=$(mktemp -d) || exit 1

trap 'python3 "$NETEM" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
python3 "$NETEM" check >/dev/null || exit 77
python3 "$NETEM" up --dims "$SPEC" --mode hosts --queue-ms "$QUEUE_MS" --mtu "$MTU" >/dev/null || exit 1
python3 "$NETEM" topo-file >"$work/topo" || exit 1
