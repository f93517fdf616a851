#!/usr/bin/env bash
# run_comm_setup.sh -- what a new communicator costs up to its first result, themis against the
# module below (issue #48): themis-comm-setup (bench/comm_setup.c) in jobs that alternate
# between themis loaded from the build tree and `--mca coll ^themis` (tuned), the first of a
# round flipping every round.
#
#   bench/run_comm_setup.sh                                # dup, split, idup x allreduce, iallreduce
#   FORMS=dup CALLS=allreduce ROUNDS=5 bench/run_comm_setup.sh
#
# Environment (defaults in brackets):
#   NP [4]  SAMPLES [20]  BYTES [1048576]        ranks, communicators per job, the call's size
#   FORMS [dup split idup]  CALLS [allreduce iallreduce]
#   KEEP [""]                                    1: every communicator kept to the end (-k)
#   THEMIS_ARGS [--mca coll_themis_dims 2x2 --mca coll_themis_min_bytes 0]  the themis jobs'
#   ROUNDS [3]  OUT [""]                         a file that gets every job's line
# Prints per form and call each round's medians (ms) and their ratio themis / tuned, then the
# median of the ratios. Runs as root need OMPI_ALLOW_RUN_AS_ROOT=1 (set here).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
# shellcheck source=../test/common/mpi_env.sh
source test/common/mpi_env.sh
NP=${NP:-4} SAMPLES=${SAMPLES:-20} BYTES=${BYTES:-1048576}
FORMS=${FORMS:-dup split idup} CALLS=${CALLS:-allreduce iallreduce} KEEP=${KEEP:-}
THEMIS_ARGS=${THEMIS_ARGS:---mca coll_themis_dims 2x2 --mca coll_themis_min_bytes 0}
ROUNDS=${ROUNDS:-3} OUT=${OUT:-}
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

die() { echo "run_comm_setup: $*" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/comm_setup.XXXXXX") || die "no temporary directory"
trap 'rm -rf "$WORK"' EXIT
mpicc -O2 -o "$WORK/themis-comm-setup" bench/comm_setup.c || die "cannot build bench/comm_setup.c"

# job IMPL FORM CALL: the median in ms of one job's samples (its line also to OUT).
job() {
  local impl=$1 form=$2 call=$3 args line
  if [ "$impl" = themis ]; then read -r -a args <<<"$THEMIS_ARGS"; else args=(--mca coll ^themis); fi
  line=$("${MPIRUN_CMD[@]}" -np "$NP" "${args[@]}" "$WORK/themis-comm-setup" -f "$form" \
    -c "$call" -m "$BYTES" -n "$SAMPLES" ${KEEP:+-k} | grep '^comm_setup,') ||
    die "$impl $form $call failed"
  [ -n "$OUT" ] && echo "$impl,$line" >>"$OUT"
  [ "$(cut -d, -f9 <<<"$line")" = 0 ] || die "$impl $form $call: wrong results ($line)"
  cut -d, -f6 <<<"$line"
}

echo "themis-comm-setup: $NP ranks, $BYTES B, $SAMPLES communicators per job${KEEP:+, all kept}; themis: $THEMIS_ARGS"
for form in $FORMS; do
  for call in $CALLS; do
    ratios=()
    for ((r = 1; r <= ROUNDS; ++r)); do
      if ((r % 2)); then order=(themis below); else order=(below themis); fi
      declare -A ms=()
      for impl in "${order[@]}"; do ms[$impl]=$(job "$impl" "$form" "$call") || exit 2; done
      ratio=$(awk -v a="${ms[themis]}" -v b="${ms[below]}" 'BEGIN { printf "%.2f", a / b }')
      ratios+=("$ratio")
      printf '%-6s %-11s round %d: themis %7.3f ms  tuned %7.3f ms  themis/tuned %s\n' \
        "$form" "$call" "$r" "${ms[themis]}" "${ms[below]}" "$ratio"
    done
    printf '%-6s %-11s median of the rounds themis/tuned: %s\n' "$form" "$call" \
      "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
  done
done
