# mpi_env.sh -- sourced by the test scripts that start MPI jobs (test/mpi, test/cuda):
# where the source and build trees, mpirun and Open MPI's own component directory are (the
# latter must stay in mca_base_component_path beside the build tree's coll/themis).
# Sets: SRCDIR (the top of the source tree), BUILDDIR ($THEMIS_BUILDDIR, default
# <SRCDIR>/build), MPIRUN (default mpirun), OMPI_DEFAULT_COMPONENT_DIR (default from
# pkg-config ompi), MPIRUN_CMD (an array: mpirun with this box's options for the series,
# test/common/mpirun_flags.sh, and coll/themis loaded from <BUILDDIR>/component).
# Defines mpirun_cmd [COMPONENT_DIR]: MPIRUN_CMD again, themis loaded from COMPONENT_DIR.
# Defines configured_with MACRO: whether the build tree was configured with MACRO=1
# (THEMIS_HAVE_CUDA, THEMIS_HAVE_UCX).
# Defines mpirun_logged LOG SECONDS ... -- PROGRAM ...: a job whose ranks write their own
# output, gathered into LOG (below).
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILDDIR=${THEMIS_BUILDDIR:-$SRCDIR/build}
MPIRUN=${MPIRUN:-mpirun}
configured_with() { grep -Eq "^DEFS = .*-D$1=1" "$BUILDDIR/Makefile" 2>/dev/null; }
if [ -z "${OMPI_DEFAULT_COMPONENT_DIR:-}" ]; then
  libdir=$(pkg-config --variable=libdir ompi 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/openmpi/lib)
  if [ -d "$libdir/openmpi3" ]; then OMPI_DEFAULT_COMPONENT_DIR=$libdir/openmpi3
  else OMPI_DEFAULT_COMPONENT_DIR=$libdir/openmpi; fi
fi

# shellcheck source=mpirun_flags.sh
source "$SRCDIR/test/common/mpirun_flags.sh"
mpirun_cmd() {
  local opts
  opts=$(mpirun_flags base && mpirun_flags component-path "${1:-$BUILDDIR/component}:$OMPI_DEFAULT_COMPONENT_DIR") ||
    return
  mapfile -t MPIRUN_CMD <<<"$opts"
  MPIRUN_CMD=("$MPIRUN" "${MPIRUN_CMD[@]}")
}
mpirun_cmd

# mpirun_logged LOG SECONDS MPIRUN-ARGS... -- PROGRAM [ARGS...]: MPIRUN_CMD with MPIRUN-ARGS
# running PROGRAM, within SECONDS (timeout). Each rank writes its own output into
# LOG.ranks/ (mpirun_flags rank-log: every line whole, where the launcher's forwarding
# cuts and interleaves them); LOG then holds those lines, rank 0's first, and after them
# mpirun's own (help messages included). Returns mpirun's status (124, 137: killed).
mpirun_logged() {
  local log=$1 seconds=$2 opts=() rank_log rc
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ $# -gt 1 ] || { echo "mpirun_logged: no -- PROGRAM" >&2; return 2; }
  shift
  rm -rf "$log.ranks" && mkdir -p "$log.ranks" || return
  mapfile -t rank_log < <(mpirun_flags rank-log "$log.ranks")
  timeout -k 10 "$seconds" "${MPIRUN_CMD[@]}" "${opts[@]}" "${rank_log[@]}" "$@" \
    >"$log.console" 2>&1 </dev/null
  rc=$?
  { rank_logs "$log.ranks"; cat "$log.console"; } >"$log"
  return "$rc"
}
