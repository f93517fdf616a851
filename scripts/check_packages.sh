#!/usr/bin/env bash
# scripts/check_packages.sh -- the release tarball and the Debian package, built and tried
# (scripts/test.sh runs it after the suite, against Debian's Open MPI; issue #51):
#
#   1. the version is one: configure.ac's, debian/changelog's, the Spack package's;
#   2. make distcheck: the tarball builds from its own configure in a read-only copy,
#      installs under a prefix of its own and passes the tests labelled dist (Makefile.am);
#   3. from that tarball, dpkg-buildpackage -us -uc -b builds openmpi-coll-themis_V_ARCH.deb;
#   4. apt installs it; a plain mpirun (no component path) runs themis-mpi-check on 4 ranks
#      and themis's stats say it ran the calls from the packaged .so; apt purges it and no
#      file of it is left. A component that `make install` put where the package goes is
#      set aside meanwhile and put back, so the machine ends as it began.
#
# Usage: scripts/check_packages.sh [BUILDDIR (default build)]. Root (apt) for steps 3-4;
# without root, or without dpkg-buildpackage, those are skipped with a message.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)
BUILD=$(cd "${1:-build}" && pwd -P)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step() { printf '==> check_packages: %s\n' "$*"; }
fail() { echo "check_packages: FAIL: $*" >&2; exit 1; }

# 1. One version.
version=$(sed -n 's/^AC_INIT(\[coll-themis\], \[\([^]]*\)\].*/\1/p' configure.ac)
deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null || sed -n '1s/.*(\(.*\)).*/\1/p' debian/changelog)
spack_versions=$(sed -n 's/^ *version("\([^"]*\)".*/\1/p' packaging/spack/packages/coll-themis/package.py)
[ "$deb_version" = "$version" ] || fail "debian/changelog says $deb_version, configure.ac $version"
grep -qx "$version" <<<"$spack_versions" || fail "the Spack package lacks version $version (has: $spack_versions)"
step "version $version in configure.ac, debian/changelog and the Spack package"

# 2. The tarball.
step "make distcheck (a few minutes)"
make -C "$BUILD" -j2 distcheck >"$BUILD/distcheck.log" 2>&1 || { tail -40 "$BUILD/distcheck.log"; fail "make distcheck (log $BUILD/distcheck.log)"; }
tarball=$BUILD/coll-themis-$version.tar.gz
[ -f "$tarball" ] || fail "make distcheck left no $tarball"
grep -E '^(coll-themis-.* archives ready|[0-9]+% tests passed)' "$BUILD/distcheck.log" || true

# 3. The Debian package, from the tarball.
if [ "$(id -u)" -ne 0 ] || ! command -v dpkg-buildpackage >/dev/null; then
  echo "check_packages: SKIPPED the Debian package: needs root and dpkg-buildpackage (scripts/setup.sh installs it)"
  exit 0
fi
work=$(mktemp -d /tmp/coll-themis-deb.XXXXXX)
step "dpkg-buildpackage in $work"
tar -C "$work" -xzf "$tarball"
(cd "$work/coll-themis-$version" && dpkg-buildpackage -us -uc -b -j2) >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; fail "dpkg-buildpackage (log $work/build.log)"; }
deb=$(ls "$work"/openmpi-coll-themis_"$version"_*.deb)
dpkg-deb -c "$deb" | awk '{print $NF}'

# 4. Install, run, purge.
component_dir=$(dpkg-deb -c "$deb" | awk '{print $NF}' | grep '/mca_coll_themis\.so$' | sed 's:^\./::; s:/mca_coll_themis\.so$::')
[ -n "$component_dir" ] || fail "the package holds no mca_coll_themis.so"
component_dir=/$component_dir
aside=$work/set-aside
restore() {
  apt-get purge -y -qq openmpi-coll-themis >/dev/null 2>&1 || true
  if [ -f "$aside/mca_coll_themis.so" ]; then mv -f "$aside/mca_coll_themis.so" "$component_dir/"; fi
}
trap restore EXIT
mkdir -p "$aside"
if [ -f "$component_dir/mca_coll_themis.so" ] && ! dpkg -S "$component_dir/mca_coll_themis.so" >/dev/null 2>&1; then
  mv "$component_dir/mca_coll_themis.so" "$aside/" # make install's, put back at the end
fi
# The package's paths that were there before (its directories' parents): after the purge
# exactly those remain; and the component directory holds what it held.
paths=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's:^\./:/:; s:/$::' | grep -v '^$' | sort -u)
existed=$(while read -r p; do [ -e "$p" ] && echo "$p"; done <<<"$paths" || true)
before=$(ls -A "$component_dir")
step "apt install $deb"
env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log"; fail "apt install"; }
files=$(dpkg -L openmpi-coll-themis)
grep -qx "$component_dir/mca_coll_themis.so" <<<"$files" || fail "installed, but not into $component_dir"
step "a plain mpirun of themis-mpi-check on the packaged component"
log=$work/mpirun.log
mpirun --oversubscribe -np 4 --mca coll_themis_dims 2x2 --mca coll_themis_verbose 2 \
  --mca coll_themis_calibration_file none --mca coll_themis_min_bytes 0 \
  "$BUILD/test/mpi/themis-mpi-check" --tests sizes >"$log" 2>&1 || { tail -30 "$log"; fail "mpirun (log $log)"; }
grep -q 'themis_mpi_check: .* 0 failed' "$log" || { tail -30 "$log"; fail "the MPI check failed (log $log)"; }
# shellcheck source=../test/common/log_events.sh
source "$ROOT/test/common/log_events.sh"
ran=$(log_values "$log" stats themis comm=MPI_COMM_WORLD coll=allreduce | awk '{s += $1} END {print s + 0}')
[ "$ran" -gt 0 ] || fail "themis ran no MPI_Allreduce on MPI_COMM_WORLD (log $log)"
step "themis ran $ran MPI_Allreduce calls (all ranks) from $component_dir/mca_coll_themis.so"
step "apt purge"
apt-get purge -y -qq openmpi-coll-themis >/dev/null 2>&1 || fail "apt purge"
now=$(while read -r p; do [ -e "$p" ] && echo "$p"; done <<<"$paths" || true)
[ "$now" = "$existed" ] || fail "purged, but these are left: $(comm -13 <(echo "$existed") <(echo "$now") | tr '\n' ' ')"
[ "$(ls -A "$component_dir")" = "$before" ] || fail "the purge changed $component_dir"
step "purged: of its $(wc -l <<<"$paths") paths only the $(wc -l <<<"$existed") there before remain; $component_dir as before"
rm -rf "$work/coll-themis-$version"
echo "check_packages: PASS (tarball $tarball, package $(basename "$deb"))"
