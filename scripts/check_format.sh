#!/usr/bin/env bash
# scripts/check_format.sh -- the C++ sources follow .clang-format (clang-format --dry-run).
#
# Covers the C++ of src/, tools/, bench/, test/unit/ and the component (its CUDA folder
# included). Not covered: the C programs (component entry file, MPI tests, themis-bench,
# drivers), whose hand-aligned option and enum tables clang-format would spread one item
# per line, and shim/, which mirrors Open MPI's own headers. Exit 77 (CTest: skipped)
# without clang-format.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
command -v clang-format >/dev/null || { echo "check_format: clang-format not installed"; exit 77; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'tools/*.cpp' 'tools/*.h' \
  'test/unit/*.cpp' 'test/unit/*.h' 'bench/*.cpp' 'ompi/mca/coll/themis/*.cpp' \
  'ompi/mca/coll/themis/*.h' 'ompi/mca/coll/themis/cuda/*' | grep -v '/shim/')
((${#files[@]})) || { echo "check_format: no sources found (not a git checkout?)"; exit 77; }
if report=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
  echo "check_format: ${#files[@]} files follow .clang-format"
  exit 0
fi
printf '%s\n' "$report" | head -n 40
echo "check_format: FAIL: clang-format -i the files named above" >&2
exit 1
