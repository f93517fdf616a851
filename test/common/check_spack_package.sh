#!/usr/bin/env bash
# check_spack_package.sh -- the Spack package (packaging/spack) passes Spack's own audit.
# Spack is not a Debian package: the test runs where `spack` is on PATH or SPACK_ROOT names
# a Spack checkout, and skips (77) saying so elsewhere. The user's Spack configuration is
# left alone: the repository is added in a configuration directory of the test's own.
# Usage: check_spack_package.sh [SRCDIR]
set -uo pipefail
SRCDIR=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
SPACK=$(command -v spack || true)
[ -n "$SPACK" ] || { [ -n "${SPACK_ROOT:-}" ] && [ -x "$SPACK_ROOT/bin/spack" ] && SPACK=$SPACK_ROOT/bin/spack; }
[ -n "$SPACK" ] || { echo "check_spack_package: SKIPPED: no Spack (put spack on PATH or set SPACK_ROOT)"; exit 77; }
config=$(mktemp -d /tmp/check_spack_package.XXXXXX)
trap 'rm -rf "$config"' EXIT
export SPACK_USER_CONFIG_PATH=$config SPACK_DISABLE_LOCAL_CONFIG=1
# A Spack whose site configuration already holds the repository has it: fine.
added=$("$SPACK" repo add "$SRCDIR/packaging/spack" 2>&1) || grep -q 'already registered' <<<"$added" ||
  { echo "$added"; echo "check_spack_package: FAIL: spack repo add"; exit 1; }
out=$("$SPACK" audit packages coll-themis 2>&1); rc=$?
echo "$out"
[ $rc = 0 ] && ! grep -q '[1-9][0-9]* issues\? found' <<<"$out" ||
  { echo "check_spack_package: FAIL: spack audit packages coll-themis"; exit 1; }
echo "check_spack_package: PASS ($("$SPACK" --version))"
