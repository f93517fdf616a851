#!/usr/bin/env bash
# run_calibration_spread.sh -- how far apart the rates of repeated calibrations land, for two
# settings (or two builds) of coll/themis on one emulated network, alternated.
#
# Builds the network once (bench/netem/netem.py, hosts mode), then runs JOBS short jobs per
# setting, A and B alternating: each one themis-bench allreduce of 1 MiB with dims=auto and the
# network's topology file, as a user would run it, so every job measures the rates anew.
# Prints per job rank 0's measured bandwidths and the calibration's seconds, then per setting
# how far the rates' ratios were off the network's: per job and dimension, the rate over the
# shaped one, divided by the geometric mean of that over the job's dimensions (a slowdown
# common to every dimension leaves the plans as they are, see docs/usage.md "Calibration"), less 1.
#
# Environment: SPEC (a netem dims spec with bw= in Mbps, required; the summary reads the
# measured rates in Mbps too, as themis prints them under 1 Gbit/s), A, B (mpirun options of
# each setting, e.g. "--mca mca_base_component_path DIR:OMPI_DIR" for a build's component, or
# "--mca coll_themis_calibration_seconds 1"; either may be empty), JOBS [10], QUEUE_MS [20],
# MTU [9000], TIMEOUT [120] seconds per job.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
: "${SPEC:?set SPEC, e.g. SPEC=2x4:bw=100Mbps,200Mbps}"
A=${A:-} B=${B:-} JOBS=${JOBS:-10}
QUEUE_MS=${QUEUE_MS:-20} MTU=${MTU:-9000} TIMEOUT=${TIMEOUT:-120}
# shellcheck source=netem/hosts_network.sh
source bench/netem/hosts_network.sh

# The shaped rates in Mbit/s, comma-separated (the spec's bw= list; netem takes Mbps).
shaped=$(sed 's/.*bw=\([^:]*\).*/\1/; s/Mbps//g' <<<"$SPEC")
echo "# $SPEC: per job rank 0's measured bandwidths (Mbit/s) and calibration seconds"
for job in $(seq 1 "$JOBS"); do
  for setting in A B; do
    # shellcheck disable=SC2086  # A and B are lists of options
    out=$(python3 "$NETEM" run --themis --timeout "$TIMEOUT" -- ${!setting} \
      --mca coll_themis_dims auto --mca coll_themis_topo_file "$work/topo" \
      --mca coll_themis_calibration_file none \
      --mca coll_themis_verbose 1 "$build/bench/themis-bench" -m 1M:1M -i 1 -x 1 -c \
      --collective allreduce --impl themis --dims "$SPEC" 2>&1 </dev/null | grep -a ' rank=0 ')
    bw=$(grep -a 'coll:themis:selected' <<<"$out" | sed -n 's/.*:bw=\([^:]*\):.*/\1/p' | sed 's/Mbps//g')
    seconds=$(grep -a 'coll:themis:calibration' <<<"$out" | sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
    echo "$setting job $job: bw=${bw:-none} seconds=${seconds:-none}"
  done
done | tee "$work/jobs"
# Per setting: jobs, the mean and largest |ratio error| over every reading, and the jobs with
# a reading off by more than 5 %.
awk -v shaped="$shaped" '
  BEGIN { dims = split(shaped, s, ",") }
  $4 ~ /^bw=[0-9]/ {
    split(substr($4, 4), m, ",")
    log_mean = 0
    for (d = 1; d <= dims; d++) log_mean += log(m[d] / s[d]) / dims
    off = 0
    for (d = 1; d <= dims; d++) {
      e = m[d] / s[d] / exp(log_mean) - 1
      e = e < 0 ? -e : e
      sum[$1] += e; readings[$1]++
      if (e > worst[$1]) worst[$1] = e
      if (e > 0.05) off = 1
    }
    jobs[$1]++; off_jobs[$1] += off
  }
  END {
    for (x in jobs)
      printf "# %s: %d jobs, ratio error mean %.1f %%, largest %.1f %%, jobs off > 5 %%: %d\n",
        x, jobs[x], 100 * sum[x] / readings[x], 100 * worst[x], off_jobs[x]
  }' "$work/jobs" | sort
