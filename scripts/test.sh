#!/usr/bin/env bash
# scripts/test.sh -- build the tests and run them with CTest (`make check`).
# Which Open MPI (scripts/series.sh): Debian's by default, THEMIS_OMPI=PREFIX the build
# against the one in PREFIX, --all-series every series setup.sh --all-series built: Debian's
# 4.1 (every test), then 5.0.9 when there (`make check-series`: the tests that depend on
# the Open MPI, not again the MPI-free unit tests). Exit status: CTest's (or make's, if the
# build itself failed), the first failing series'.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=series.sh
source scripts/series.sh

# test_against PREFIX TARGET: make TARGET (check, or check-series: see Makefile.am) in that
# series' build directory.
test_against() {
  local build rc=0
  build=$(build_dir_for "$1")
  if [ ! -f "$build/Makefile" ]; then
    echo "test.sh: $build/ is not configured; run: ${1:+THEMIS_OMPI=$1 }bash scripts/setup.sh" >&2
    return 2
  fi
  echo "==> make $2 in $build/ (Open MPI ${1:-from pkg-config ompi})"
  rm -f "$build/test/ctest.rc"
  make -C "$build" --no-print-directory -j2 "$2" || rc=$?
  if [ -s "$build/test/ctest.rc" ]; then
    rc=$(cat "$build/test/ctest.rc")
  fi
  return "$rc"
}

# An array, not a loop reading the list: make and CTest would read the rest of it as stdin.
mapfile -t prefixes < <(series_prefixes "$@")
[ ${#prefixes[@]} -gt 0 ] || exit 2
status=0 target=check
for prefix in "${prefixes[@]}"; do
  rc=0
  test_against "$prefix" "$target" </dev/null || rc=$?
  [ "$status" != 0 ] || status=$rc
  target=check-series
done
# The release tarball and the Debian package (scripts/check_packages.sh: make distcheck, then
# the .deb built, installed, run by a plain mpirun and purged), against Debian's Open MPI.
if [ "${prefixes[0]}" = "" ]; then
  rc=0
  bash scripts/check_packages.sh "$(build_dir_for "")" </dev/null || rc=$?
  [ "$status" != 0 ] || status=$rc
fi
exit "$status"
