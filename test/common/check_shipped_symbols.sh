#!/usr/bin/env bash
# check_shipped_symbols.sh -- the component's shared object holds no code written for tests or
# tools: not the loopback transport, not the paper's Table 2 (src/testbed/, which only tests
# and tools link), not the test programs' CUDA driver access (test/common/cuda_driver.c),
# not the emulated CUDA driver (test/cuda/cuda_fake_driver.c).
# Usage: check_shipped_symbols.sh BUILDDIR
set -uo pipefail
BUILDDIR=${1:?usage: check_shipped_symbols.sh BUILDDIR}
SO=$BUILDDIR/ompi/mca/coll/themis/.libs/mca_coll_themis.so
[ -f "$SO" ] || { echo "check_shipped_symbols: $SO is not built"; exit 1; }
command -v nm >/dev/null || { echo "check_shipped_symbols: SKIPPED: no nm (binutils)"; exit 77; }
# Names as nm -C prints them: classes, functions and files of the test-only code.
FORBIDDEN='LoopbackNetwork|loopback_transport|paper_topolog|cuda_driver_(load|use_device|error)|themis_fake_cuda'
symbols=$(nm -C "$SO") || { echo "check_shipped_symbols: nm failed on $SO"; exit 1; }
found=$(grep -E "$FORBIDDEN" <<<"$symbols" | sed 's/^[0-9a-f ]* [A-Za-z] //' | sort -u)
if [ -n "$found" ]; then
  echo "check_shipped_symbols: FAIL: $SO holds test-only code:"
  printf '  %s\n' "$found" | cut -c1-160 | head -20
  exit 1
fi
echo "check_shipped_symbols: PASS ($(wc -l <<<"$symbols") symbols in $SO, none test-only)"
