#!/usr/bin/env bash
# check_spack_install.sh -- the Spack package end to end (issue #51): `spack install coll-themis`
# from the build tree's release tarball, with the system's Open MPI, hwloc, UCX, GLPK, googletest,
# pkgconf and make as externals (nothing is downloaded); `spack load coll-themis`; then a plain
# mpirun of themis-mpi-check (4 ranks, dims 2x2, verbose 2) must pass and show themis ran calls
# from the component Spack installed.
#
# Needs a Spack checkout (SPACK_ROOT, or spack on PATH) whose concretizer runs: the clingo Python
# module importable by the Python Spack uses (SPACK_PYTHON, PYTHONPATH; Debian 12 packages no
# clingo, and Spack bootstraps it from the network: docs/install.md says how it was built here).
# Without either it skips (77), saying why. The externals' versions are read with dpkg-query
# (Debian). Spack's configuration is a directory of the check's own; the package is installed
# into the Spack checkout and uninstalled at the end. A component that `make install` put into
# Open MPI's own directory is set aside while mpirun runs and put back.
# Usage: check_spack_install.sh [BUILDDIR (default build)]: its `make dist` is what Spack builds.
# Root for the set-aside.
set -uo pipefail

SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILDDIR=$(cd "${1:-$SRCDIR/build}" && pwd -P) || exit 2
skip() { echo "check_spack_install: SKIPPED: $*"; exit 77; }
fail() { echo "check_spack_install: FAIL: $*"; exit 1; }

SPACK=$(command -v spack || true)
[ -n "$SPACK" ] || { [ -n "${SPACK_ROOT:-}" ] && [ -x "$SPACK_ROOT/bin/spack" ] && SPACK=$SPACK_ROOT/bin/spack; }
[ -n "$SPACK" ] || skip "no Spack (put spack on PATH or set SPACK_ROOT)"
"${SPACK_PYTHON:-python3}" -c 'import clingo' 2>/dev/null ||
  skip "no clingo module for ${SPACK_PYTHON:-python3} (set SPACK_PYTHON and PYTHONPATH; docs/install.md)"
command -v dpkg-query >/dev/null || skip "no dpkg-query to read the externals' versions"
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$SRCDIR/configure.ac")
tarball=$BUILDDIR/coll-themis-$version.tar.gz
make -C "$BUILDDIR" dist >/dev/null && [ -f "$tarball" ] || fail "make dist made no $tarball"
check=$BUILDDIR/test/mpi/themis-mpi-check
[ -x "$check" ] || fail "no $check (make check builds it)"

work=$(mktemp -d /tmp/check_spack_install.XXXXXX)
component=""
cleanup() {
  [ -n "$component" ] && mv "$work"/aside/mca_coll_themis.* "$component/" 2>/dev/null
  "$SPACK" uninstall -y coll-themis >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
export SPACK_USER_CONFIG_PATH=$work/config
unset SPACK_DISABLE_LOCAL_CONFIG

# The Debian package's upstream version: 1:1.16.5-1.3 -> 1.16.5.
deb_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null | sed 's/^[0-9]*://; s/[-+~].*//'; }
mkdir -p "$work/config" "$work/mirror/coll-themis"
{
  echo "packages:"
  echo "  all: {providers: {mpi: [openmpi]}}"
  while read -r name deb; do
    v=$(deb_version "$deb")
    [ -n "$v" ] || fail "dpkg-query knows no $deb"
    echo "  $name: {buildable: false, externals: [{spec: $name@$v, prefix: /usr}]}"
  done <<'EOF'
openmpi libopenmpi-dev
hwloc libhwloc-dev
ucx libucx-dev
glpk libglpk-dev
googletest googletest
pkgconf pkgconf
gmake make
EOF
} >"$work/config/packages.yaml"
cp "$tarball" "$work/mirror/coll-themis/"
step() { printf '==> check_spack_install: %s\n' "$*"; }
step "$("$SPACK" --version), externals: $(grep -o '[a-z]*@[0-9.]*' "$work/config/packages.yaml" | tr '\n' ' ')"
# A Spack whose site configuration already holds the repository has it: fine.
added=$("$SPACK" repo add --scope user "$SRCDIR/packaging/spack" 2>&1) || grep -q 'already registered' <<<"$added" ||
  fail "spack repo add: $added"
"$SPACK" bootstrap disable >/dev/null &&
  "$SPACK" compiler find --scope user >/dev/null &&
  "$SPACK" mirror add --scope user local "file://$work/mirror" >/dev/null || fail "spack configuration"

step "spack install coll-themis (a few minutes)"
# --no-checksum: the recipe holds no digest of a tarball built here.
"$SPACK" install --no-checksum coll-themis >"$work/install.log" 2>&1 ||
  { tail -30 "$work/install.log"; fail "spack install coll-themis"; }
grep -E 'Successfully installed|Total:' "$work/install.log"
prefix=$("$SPACK" location -i coll-themis) || fail "spack location -i coll-themis"
[ -f "$prefix/lib/openmpi/mca_coll_themis.so" ] || fail "no $prefix/lib/openmpi/mca_coll_themis.so"

step "spack load coll-themis, then a plain mpirun"
eval "$("$SPACK" load --sh coll-themis)" || fail "spack load coll-themis"
echo "OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path"
[ "${OMPI_MCA_mca_base_component_path%%:*}" = "$prefix/lib/openmpi" ] ||
  fail "spack load did not put $prefix/lib/openmpi first in OMPI_MCA_mca_base_component_path"
# Open MPI's own directory (the second entry) may hold a make-installed component: set aside.
ompi_dir=${OMPI_MCA_mca_base_component_path#*:}
if compgen -G "$ompi_dir/mca_coll_themis.*" >/dev/null; then
  mkdir -p "$work/aside" && mv "$ompi_dir"/mca_coll_themis.* "$work/aside/" || fail "cannot set aside $ompi_dir/mca_coll_themis.*"
  component=$ompi_dir
fi
ompi_info | grep -q 'MCA coll: themis' || fail "ompi_info does not list coll/themis after spack load"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log=$work/mpirun.log
mpirun --oversubscribe -np 4 --mca coll_themis_verbose 2 --mca coll_themis_dims 2x2 \
  --mca coll_themis_min_bytes 0 "$check" >"$log" 2>&1 || { tail -30 "$log"; fail "mpirun themis-mpi-check"; }
grep -a 'themis_mpi_check: .* passed, 0 failed' "$log" || { tail -30 "$log"; fail "the MPI check failed"; }
ran=$(grep -a 'coll:themis:stats comm=MPI_COMM_WORLD .*coll=allreduce ' "$log" | head -n 1)
echo "$ran"
[[ $ran =~ themis=([1-9][0-9]*) ]] || fail "themis ran no MPI_Allreduce on MPI_COMM_WORLD"
echo "check_spack_install: PASS"
