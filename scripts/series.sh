# series.sh -- sourced by setup.sh and test.sh: which Open MPI installs to build and test
# against, and where each one's build directory is.
#
#   (default)         Debian's Open MPI 4.1 (pkg-config ompi), built in build/
#   THEMIS_OMPI=PREFIX the Open MPI installed in PREFIX, built in build-<basename of PREFIX>/
#   --all-series      Debian's, then the Open MPI 5.0.9 this project ships in
#                     ../shared/ompi5 (unpacked into /opt/openmpi-5.0.9 when missing);
#                     without it the 5.0 pass is skipped with a message
# Defines: series_prefixes ARGS... (prints the prefixes to use, one per line, "" meaning
# Debian's), build_dir_for PREFIX (the build directory, relative to the top of the tree).

OMPI5_PREFIX=/opt/openmpi-5.0.9
OMPI5_TARBALL=openmpi-5.0.9-debian12-x86_64.tar.xz
OMPI5_SHA256=b4c3e626ebb6d85b186054a61d34658550502368773b598028d1740f12e4cf5a

build_dir_for() {
  if [ -z "$1" ]; then echo build; else echo "build-$(basename "$1")"; fi
}

# ompi5_available: true when the 5.0.9 prefix is there, after unpacking the shipped tarball
# (checked against its recorded sha256) if it is not; says why when neither is.
ompi5_available() {
  [ -x "$OMPI5_PREFIX/bin/mpirun" ] && return 0
  local tarball dir
  for dir in ../shared/ompi5 /work/shared/ompi5; do
    [ -f "$dir/$OMPI5_TARBALL" ] && { tarball=$dir/$OMPI5_TARBALL; break; }
  done
  if [ -z "${tarball:-}" ]; then
    echo "==> Open MPI 5.0: skipped: no $OMPI5_PREFIX and no ../shared/ompi5/$OMPI5_TARBALL" >&2
    return 1
  fi
  if ! echo "$OMPI5_SHA256  $tarball" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "==> Open MPI 5.0: skipped: $tarball does not match its sha256" >&2
    return 1
  fi
  echo "==> unpacking $tarball into $OMPI5_PREFIX" >&2
  tar -C / -xJf "$tarball"
}

series_prefixes() {
  local prefix
  if [ "${1:-}" = --all-series ]; then
    echo ""
    ! ompi5_available || echo "$OMPI5_PREFIX"
  elif [ -n "${1:-}" ]; then
    echo "unknown option $1 (--all-series, or THEMIS_OMPI=PREFIX in the environment)" >&2
    return 2
  elif [ -n "${THEMIS_OMPI:-}" ]; then
    if [ ! -x "$THEMIS_OMPI/bin/mpirun" ]; then
      echo "THEMIS_OMPI=$THEMIS_OMPI: no Open MPI there (no bin/mpirun)" >&2
      return 2
    fi
    prefix=$(cd "$THEMIS_OMPI" && pwd -P)
    echo "$prefix"
  else
    echo ""
  fi
}
