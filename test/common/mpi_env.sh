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
