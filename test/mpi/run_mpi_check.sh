#!/usr/bin/env bash
# run_mpi_check.sh -- run test/mpi/themis-mpi-check under mpirun with coll/themis loaded
# from the build tree, and decide from two sources:
#   (a) the program's own verdict ("themis_mpi_check: N passed, 0 failed", exit 0; any
#       program named by THEMIS_MPI_CHECK that ends the same way, e.g. themis-stress), and
#   (b) themis's call statistics (coll_themis_verbose >= 2 writes, per rank, communicator
#       and collective, the event "coll:themis:stats comm=NAME ... rank=R coll=COLL
#       calls=N themis=M" when the communicator is freed; the events:
#       docs/log-events.md): where themis should run it must have run
#       (M > 0), where it should decline it must not have (M = 0), where it is not even
#       loaded there are no such lines;
#   (c) every event line as docs/log-events.md specifies it (log_check_spec).
#
# usage: run_mpi_check.sh [options] [-- program options]
#   --name NAME            log directory name (default mpi_check)
#   --np N                 processes (default 4; run with --oversubscribe)
#   --dims SPEC            coll_themis_dims (default auto; "" = leave unset)
#   --policy P             coll_themis_policy (baseline|themis)
#   --intra P              coll_themis_intra_policy (fifo|scf)
#   --max-active K         coll_themis_max_active
#   --chunks C             coll_themis_chunks (default 8); also given to the program
#   --min-bytes B          coll_themis_min_bytes (default 1024); also given to the program
#   --min-chunk-bytes B    coll_themis_min_chunk_bytes (default 64, so small messages are
#                          still cut into chunks)
#   (coll_themis_node_transport defaults to cma here: the single-copy transport on every
#   node-local dimension; --mca coll_themis_node_transport transport|auto for the others)
#   --verbose V            coll_themis_verbose (default 2)
#   --mca NAME VALUE       any other MCA parameter (repeatable; overrides the above)
#   --collectives LIST     collectives the program runs and the stats checks require
#                          (default: the four themis takes)
#   --require LIST         collectives the stats checks require (default: --collectives)
#   --expect-themis LIST   comma-separated communicator names (shell globs): for every
#                          required collective there are stats lines and every one shows
#                          themis > 0
#   --expect-declined LIST stats lines exist and all show themis 0
#   --expect-absent LIST   no stats lines at all for these names
#   --expect-no-stats      themis is not loaded: no coll:themis output at all
#   --expect-policy NAME=P the verbose-5 plan events of NAME all say policy=P (repeatable)
#   --expect-event SPEC    the output has an event "EVENT KEY=ERE ..." (every named key there,
#                          its whole value matching the extended regex ERE; a blank in an
#                          ERE is written [[:space:]]; test/common/log_events.sh)
#                          (repeatable)
#   --expect-output REGEX  the output matches this extended regex (repeatable; for lines
#                          that are no events: help messages, Open MPI's own)
#   --expect-failure REGEX the run must fail (MPI_Init, a rank that died) within the
#                          timeout and its output match REGEX (on one line, or on the lines
#                          joined by blanks); the program's verdict and
#                          the stats are not checked
#   --timeout S            limit for mpirun (default $THEMIS_MPI_TIMEOUT or 240)
# Environment: MPIRUN, THEMIS_BUILDDIR (default: <this dir>/../../build),
#   OMPI_DEFAULT_COMPONENT_DIR (Open MPI's own component dir; it must stay in the path).
# Logs: $THEMIS_BUILDDIR/test/mpi/logs/NAME/: console.log (mpirun's own), ranks/rank.N.log
#   (what each rank printed, written by the rank itself: mpirun_flags rank-log), ranks.log
#   (those, concatenated), all.log (both), component/ (the copy of the DSO the run used).
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
# shellcheck source=../common/log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/log_events.sh"

NAME=mpi_check NP=4 TIMEOUT=${THEMIS_MPI_TIMEOUT:-240}
COLLS=allreduce,reduce_scatter,reduce_scatter_block,allgather
# coll_themis_node_transport cma: every node-local dimension of the matrix runs the
# single-copy transport (tests give `transport` or `auto` to run the others).
declare -A MCA=([coll_themis_dims]=auto [coll_themis_chunks]=8 [coll_themis_min_bytes]=1024
                [coll_themis_min_chunk_bytes]=64 [coll_themis_verbose]=2
                [coll_themis_node_transport]=cma)
EXPECT_THEMIS=() EXPECT_DECLINED=() EXPECT_ABSENT=() EXPECT_POLICY=() EXPECT_OUTPUT=() EXPECT_EVENT=()
EXPECT_NO_STATS=0 EXPECT_FAILURE='' PROG_ARGS=() COLLS_GIVEN=0 REQUIRE=

die() { echo "run_mpi_check: $*" >&2; exit 2; }
split() { local IFS=,; read -ra _out <<<"$1"; printf '%s\n' "${_out[@]}"; }

while [ $# -gt 0 ]; do
  case $1 in
    --name) NAME=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --dims) if [ -n "$2" ]; then MCA[coll_themis_dims]=$2; else unset 'MCA[coll_themis_dims]'; fi; shift 2 ;;
    --policy) MCA[coll_themis_policy]=$2; shift 2 ;;
    --intra) MCA[coll_themis_intra_policy]=$2; shift 2 ;;
    --max-active) MCA[coll_themis_max_active]=$2; shift 2 ;;
    --chunks) MCA[coll_themis_chunks]=$2; shift 2 ;;
    --min-bytes) MCA[coll_themis_min_bytes]=$2; shift 2 ;;
    --min-chunk-bytes) MCA[coll_themis_min_chunk_bytes]=$2; shift 2 ;;
    --verbose) MCA[coll_themis_verbose]=$2; shift 2 ;;
    --mca) MCA[$2]=$3; shift 3 ;;
    --collectives) COLLS=$2; COLLS_GIVEN=1; shift 2 ;;
    --require) REQUIRE=$2; shift 2 ;;
    --expect-themis) mapfile -t -O ${#EXPECT_THEMIS[@]} EXPECT_THEMIS < <(split "$2"); shift 2 ;;
    --expect-declined) mapfile -t -O ${#EXPECT_DECLINED[@]} EXPECT_DECLINED < <(split "$2"); shift 2 ;;
    --expect-absent) mapfile -t -O ${#EXPECT_ABSENT[@]} EXPECT_ABSENT < <(split "$2"); shift 2 ;;
    --expect-no-stats) EXPECT_NO_STATS=1; shift ;;
    --expect-policy) EXPECT_POLICY+=("$2"); shift 2 ;;
    --expect-event) EXPECT_EVENT+=("$2"); shift 2 ;;
    --expect-output) EXPECT_OUTPUT+=("$2"); shift 2 ;;
    --expect-failure) EXPECT_FAILURE=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --) shift; PROG_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

BUILDDIR=$(cd "$BUILDDIR" 2>/dev/null && pwd -P) || die "no build directory (set THEMIS_BUILDDIR)"
PROG=${THEMIS_MPI_CHECK:-$BUILDDIR/test/mpi/themis-mpi-check}
COMPONENT=$BUILDDIR/ompi/mca/coll/themis/.libs/mca_coll_themis.so
[ -x "$PROG" ] || die "$PROG not built (make -C $BUILDDIR test/mpi/themis-mpi-check)"
[ -f "$COMPONENT" ] || die "$COMPONENT not built (make -C $BUILDDIR ompi/mca/coll/themis/mca_coll_themis.la)"
[ -d "$OMPI_DEFAULT_COMPONENT_DIR" ] || die "Open MPI component dir $OMPI_DEFAULT_COMPONENT_DIR missing"
# A run that asks for themis's UCX transport (the parameter or the program's info key)
# cannot run in a build without it (configure --without-ucx): skipped, exit 77.
if { [ "${MCA[coll_themis_transport]:-}" = ucx ] || [[ " ${PROG_ARGS[*]} " == *" --info-transport ucx "* ]]; } &&
   ! configured_with THEMIS_HAVE_UCX; then
  echo "run_mpi_check: SKIPPED: this build has no UCX transport (configured without UCX)"
  exit 77
fi

LOGDIR=$BUILDDIR/test/mpi/logs/$NAME
rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"
CONSOLE=$LOGDIR/console.log

# A directory holding only the component (pointing mca_base_component_path at .libs
# makes Open MPI try, and complain about, every object file there), with a copy of
# it: a relink of the build tree's DSO during the run cannot change it under us.
COMPDIR=$LOGDIR/component
mkdir -p "$COMPDIR"
cp "$COMPONENT" "$COMPDIR/mca_coll_themis.so" || die "cannot copy $COMPONENT"

# The program computes its boundary counts from the parameters in force.
pre=(--chunks "${MCA[coll_themis_chunks]:-64}" --min-bytes "${MCA[coll_themis_min_bytes]:-65536}")
[ "$COLLS_GIVEN" = 0 ] || pre+=(--collectives "$COLLS")
PROG_ARGS=("${pre[@]}" "${PROG_ARGS[@]}")

mpirun_cmd "$COMPDIR" || die "cannot tell how to run $MPIRUN"
mkdir -p "$LOGDIR/ranks"
mapfile -t rank_log < <(mpirun_flags rank-log "$LOGDIR/ranks")
cmd=(timeout -k 10 "$TIMEOUT" "${MPIRUN_CMD[@]}" -np "$NP")
for k in $(printf '%s\n' "${!MCA[@]}" | sort); do cmd+=(--mca "$k" "${MCA[$k]}"); done
cmd+=("${rank_log[@]}" "$PROG" "${PROG_ARGS[@]}")

echo "run_mpi_check: $NAME: ${cmd[*]}"
start=$(date +%s.%N)
"${cmd[@]}" >"$CONSOLE" 2>&1 </dev/null
rc=$?
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

# What the ranks printed, one rank after the other, every line whole. ALL adds the
# console (mpirun's own messages).
RANKS=$LOGDIR/ranks.log ALL=$LOGDIR/all.log
rank_logs "$LOGDIR/ranks" >"$RANKS"
cat "$RANKS" "$CONSOLE" >"$ALL"

problems=()
fail() { problems+=("$*"); }

if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  fail "mpirun did not finish within ${TIMEOUT}s (killed)"
elif [ -n "$EXPECT_FAILURE" ]; then
  [ "$rc" != 0 ] || fail "expected the run to fail, but it exited 0"
  # Per line, or across lines: 5.0's launcher wraps its messages ("... exited on" /
  # "signal 14 (Alarm clock).") where 4.1's kept them on one line.
  grep -Eq -- "$EXPECT_FAILURE" "$ALL" || tr '\n' ' ' <"$ALL" | grep -Eq -- "$EXPECT_FAILURE" ||
    fail "output does not match /$EXPECT_FAILURE/"
else
  verdict=$(grep -ho 'themis_[a-z_]*: [0-9]* passed, [0-9]* failed' "$RANKS" | tail -1)
  [ "$rc" = 0 ] || fail "mpirun exited $rc"
  case $verdict in
    *" passed, 0 failed") ;;
    "") fail "no final 'themis_...: N passed, M failed' line" ;;
    *) fail "program reported: ${verdict#*: }" ;;
  esac

  # name|rank|collective|calls|themis
  mapfile -t STATS < <(log_values "$RANKS" stats comm,rank,coll,calls,themis)
  mapfile -t REQUIRED < <(split "${REQUIRE:-$COLLS}")

  # stats_for PATTERN [COLL]: the matching records
  stats_for() {
    local rec name rest coll
    for rec in "${STATS[@]}"; do
      name=${rec%%|*}; rest=${rec#*|}; rest=${rest#*|}; coll=${rest%%|*}
      # shellcheck disable=SC2053
      [[ $name == $1 ]] || continue
      [ -z "${2:-}" ] || [ "$coll" = "$2" ] || continue
      echo "$rec"
    done
  }

  for pat in "${EXPECT_THEMIS[@]}"; do
    summary=()
    for coll in "${REQUIRED[@]}"; do
      mapfile -t recs < <(stats_for "$pat" "$coll")
      if [ ${#recs[@]} = 0 ]; then fail "$pat: no stats line for $coll (themis never called?)"; continue; fi
      zero=0 calls=0 acc=0
      for rec in "${recs[@]}"; do
        IFS='|' read -r _ _ _ c m <<<"$rec"
        calls=$((calls + c)); acc=$((acc + m)); [ "$m" -gt 0 ] || zero=$((zero + 1))
      done
      [ "$zero" = 0 ] || fail "$pat: $coll: themis ran 0 of the calls on $zero of ${#recs[@]} rank(s)"
      summary+=("$coll $acc/$calls")
    done
    echo "run_mpi_check: $pat: themis ran (themis/calls, all ranks): ${summary[*]}"
  done
  for pat in "${EXPECT_DECLINED[@]}"; do
    mapfile -t recs < <(stats_for "$pat")
    if [ ${#recs[@]} = 0 ]; then fail "$pat: no stats lines (themis not selected, or not called?)"; continue; fi
    acc=0 calls=0
    for rec in "${recs[@]}"; do IFS='|' read -r _ _ _ c m <<<"$rec"; acc=$((acc + m)); calls=$((calls + c)); done
    [ "$acc" = 0 ] || fail "$pat: expected themis to decline, but it ran $acc call(s)"
    echo "run_mpi_check: $pat: declined: $calls calls, all to the previous module"
  done
  for pat in "${EXPECT_ABSENT[@]}"; do
    mapfile -t recs < <(stats_for "$pat")
    [ ${#recs[@]} = 0 ] || fail "$pat: expected no themis module, found ${#recs[@]} stats line(s)"
  done
  if [ "$EXPECT_NO_STATS" = 1 ]; then
    n=$(grep -c 'coll:themis' "$ALL")
    [ "$n" = 0 ] || fail "expected themis not to be loaded, found $n coll:themis line(s)"
  fi
  for ep in "${EXPECT_POLICY[@]}"; do
    cname=${ep%%=*} want=${ep#*=}
    mapfile -t plans < <(log_values "$RANKS" plan policy "comm=$cname")
    if [ ${#plans[@]} = 0 ]; then fail "$cname: no plan events (coll_themis_verbose >= 5?)"; continue; fi
    bad=$(printf '%s\n' "${plans[@]}" | grep -vcx "$want")
    if [ "$bad" = 0 ]; then echo "run_mpi_check: $cname: ${#plans[@]} plan events, all policy=$want"
    else fail "$cname: $bad of ${#plans[@]} plan events do not say policy=$want"; fi
  done
fi
spec_diff=$(log_check_spec "$ALL") || fail "event lines differ from docs/log-events.md: ${spec_diff//$'\n'/; }"
for ev in "${EXPECT_EVENT[@]}"; do
  [ "$(log_spec_count "$ALL" "$ev")" -gt 0 ] || fail "no event $ev"
done
for re in "${EXPECT_OUTPUT[@]}"; do
  grep -Eq -- "$re" "$ALL" || fail "output does not match /$re/"
done

if [ ${#problems[@]} = 0 ]; then
  echo "run_mpi_check: PASS $NAME (${secs}s)${verdict:+: ${verdict#*: }}"
  exit 0
fi
echo "run_mpi_check: FAIL $NAME (${secs}s, exit $rc); log: $CONSOLE"
printf '  - %s\n' "${problems[@]}"
echo "---- program failures (first 40) ----"
grep -h 'themis_[a-z_]*: FAIL' "$RANKS" | head -40
echo "---- last 40 lines of $ALL (the ranks' files, then mpirun's console) ----"
tail -40 "$ALL"
exit 1
