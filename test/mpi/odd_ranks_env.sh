#!/usr/bin/env bash
# odd_ranks_env.sh -- run test/mpi/themis-mpi-check with the environment assignments in
# $ODD_RANKS_ENV (e.g. "OMPI_MCA_coll_themis_pml_message_bytes=2048") added on the odd
# ranks of MPI_COMM_WORLD only, so that a test can give the ranks different MCA values.
# Use as THEMIS_MPI_CHECK for run_mpi_check.sh.
set -euo pipefail
prog=${THEMIS_BUILDDIR:?}/test/mpi/themis-mpi-check
if (( ${OMPI_COMM_WORLD_RANK:?not started by mpirun} % 2 == 1 )); then
  # shellcheck disable=SC2086  # a list of NAME=VALUE words
  exec env ${ODD_RANKS_ENV:?} "$prog" "$@"
fi
exec "$prog" "$@"
