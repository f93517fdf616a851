#!/usr/bin/env bash
# fake_slurm_topology.sh -- run a program with the SLURM_TOPOLOGY_ADDR(_PATTERN) that Slurm's
# topology/tree plugin would give on the emulated network's hosts (hosts mode): host <p>h<i>
# sits under leaf switch leaf<i / LEAF>, all leaves under one top switch. LEAF (default 2) is
# the number of hosts per leaf: the hosts' dimension 0 of `netem.py topo-file` (2x2 hosts:
# LEAF=2 gives the same grid; 4 hosts in a line: LEAF=4, one leaf, no grid).
#   netem.py run --themis -- --mca coll_themis_dims auto -x LEAF=2 \
#     bench/netem/fake_slurm_topology.sh PROGRAM ARGS
set -euo pipefail
host=$(hostname)
index=${host##*h}
[[ $index =~ ^[0-9]+$ ]] || { echo "fake_slurm_topology.sh: host $host is not <prefix>h<i>" >&2; exit 2; }
export SLURM_TOPOLOGY_ADDR="top.leaf$((index / ${LEAF:-2})).$host"
export SLURM_TOPOLOGY_ADDR_PATTERN="switch.switch.node"
exec "$@"
