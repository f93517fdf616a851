#!/usr/bin/env bash
# scripts/test.sh -- build the tests and run them with CTest (`make check`).
# Exit status: CTest's (or make's, if the build itself failed).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=build

if [ ! -f "$BUILD/Makefile" ]; then
  echo "test.sh: $BUILD/ is not configured; run: bash scripts/setup.sh" >&2
  exit 2
fi

rm -f "$BUILD/test/ctest.rc"
rc=0
make -C "$BUILD" --no-print-directory -j2 check || rc=$?
if [ -s "$BUILD/test/ctest.rc" ]; then
  rc=$(cat "$BUILD/test/ctest.rc")
fi
exit "$rc"
