#!/usr/bin/env bash
# run_first_job.sh -- what a short job costs from mpirun to its exit, themis against tuned, on the
# emulated network that is up (bench/netem, hosts mode) (issue #48). Per round, alternated:
#   tuned   --mca coll ^themis
#   first   themis with nothing typed (dims=auto, no topology file) and an empty user cache (a new
#           XDG_CACHE_HOME): it probes the hosts' grid and measures the rates
#   second  themis again, with the cache the first job left
# each running themis-first-job (bench/first_job.c, built here with the network's mpicc): CALLS
# validated MPI_Allreduce of BYTES on MPI_COMM_WORLD. Prints each job's wall time, the ratios to
# tuned's in the same round, and the first job's grid and calibration events (rank 0); every
# job's output goes to OUT/first_job_<round>_<job>.log.
#
#   python3 bench/netem/netem.py up --dims 2x2x2 --rates 50,100,200 --mode hosts
#   bench/run_first_job.sh                      # 1 call of 1 MiB
#   CALLS=6 BYTES=16777216 bench/run_first_job.sh
#
# Environment: CALLS [1], BYTES [1048576], ROUNDS [3], OUT [a temporary directory, printed],
# THEMIS_ARGS [""] more options for both themis jobs, TIMEOUT [300] seconds per job.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
NETEM=bench/netem/netem.py
CALLS=${CALLS:-1} BYTES=${BYTES:-1048576} ROUNDS=${ROUNDS:-3} TIMEOUT=${TIMEOUT:-300}
THEMIS_ARGS=${THEMIS_ARGS:-}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/first_job.XXXXXX")}
mkdir -p "$OUT"
die() { echo "run_first_job: $*" >&2; exit 2; }
python3 "$NETEM" status >/dev/null 2>&1 || die "no emulated network is up (bench/netem/netem.py up ...)"
build=$(python3 "$NETEM" ompi build) || die "cannot tell the build directory"
mpicc=$(python3 "$NETEM" ompi mpicc) || die "cannot tell the mpicc"
prog=$build/netem/themis-first-job
mkdir -p "$build/netem"
"$mpicc" -O2 -o "$prog" bench/first_job.c || die "cannot build bench/first_job.c"

# job NAME ROUND OPTIONS...: the job's wall time in seconds (its output to OUT), checked.
job() {
  local name=$1 round=$2 log t0 t1; shift 2
  log=$OUT/first_job_${round}_$name.log
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # THEMIS_ARGS is a list of options
  python3 "$NETEM" run "$@" --timeout "$TIMEOUT" -- "${MCA[@]}" "$prog" -n "$CALLS" -m "$BYTES" \
    >"$log" 2>&1 </dev/null || die "$name (round $round) failed: $log"
  t1=$(date +%s.%N)
  grep -q "^first_job,.*,0\$" "$log" || die "$name (round $round): wrong results: $log"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

echo "run_first_job: $CALLS x $BYTES B MPI_Allreduce; logs in $OUT"
printf '%-6s %9s %9s %9s %12s %12s\n' round tuned first second first/tuned second/tuned
for ((r = 1; r <= ROUNDS; ++r)); do
  cache=$OUT/cache_$r
  rm -rf "$cache" && mkdir -p "$cache"
  MCA=(--mca coll ^themis)
  tuned=$(job tuned "$r") || exit 2
  # shellcheck disable=SC2206  # THEMIS_ARGS is a list of options
  MCA=(--mca coll_themis_dims auto --mca coll_themis_verbose 1 -x XDG_CACHE_HOME="$cache" $THEMIS_ARGS)
  first=$(job first "$r" --themis) || exit 2
  second=$(job second "$r" --themis) || exit 2
  printf '%-6s %9s %9s %9s %12s %12s\n' "$r" "$tuned" "$first" "$second" \
    "$(awk -v a="$first" -v b="$tuned" 'BEGIN { printf "%.2f", a / b }')" \
    "$(awk -v a="$second" -v b="$tuned" 'BEGIN { printf "%.2f", a / b }')"
  for name in first second; do
    log=$OUT/first_job_${r}_$name.log
    echo "    $name: $(grep -a 'coll:themis:grid comm=MPI_COMM_WORLD.* rank=0 ' "$log" | sed 's/.*rank=0 //' | cut -c1-90)"
    echo "    $name: $(grep -a 'coll:themis:calibration comm=MPI_COMM_WORLD.* rank=0 ' "$log" | sed 's/.*rank=0 //' | cut -c1-60)$(grep -a 'coll:themis:setup_end comm=MPI_COMM_WORLD.* rank=0 ' "$log" | sed 's/.*rank=0 / /')"
  done
done
