#!/usr/bin/env bash
# scripts/setup.sh -- prepare a fresh Debian 12 machine and build coll/themis.
#
#   1. apt-get install the build/test dependencies (only if some are missing)
#   2. ./autogen.sh            (only if configure is missing or out of date)
#   3. configure into build/   (only if build/ is not configured or stale)
#   4. make -j2 && make install
#
# Idempotent; works from any cwd.  Extra configure arguments can be passed via
# the environment: THEMIS_CONFIGURE_ARGS="--enable-werror --without-cuda".
# Which Open MPI (scripts/series.sh): Debian's by default; THEMIS_OMPI=PREFIX builds against
# the one installed in PREFIX (configure --with-ompi=PREFIX) in build-<basename of PREFIX>/
# and installs into its component directory; --all-series builds against Debian's and the
# Open MPI 5.0.9 of ../shared/ompi5 (steps 3-4 once per series).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)
# shellcheck source=series.sh
source "$ROOT/scripts/series.sh"
JOBS=2

step() { printf '==> %s\n' "$*"; }

# ---------------------------------------------------------------- packages
PACKAGES=(
  build-essential autoconf automake libtool pkg-config
  openmpi-bin libopenmpi-dev libucx-dev libhwloc-dev libglpk-dev
  libgtest-dev googletest libbenchmark-dev cmake
  iproute2 python3 procps clang-format git
  libevent-dev  # Open MPI 5's internal headers include event.h
  xz-utils      # unpacks the Open MPI 5.0.9 of ../shared/ompi5 (--all-series)
  dpkg-dev debhelper fakeroot  # scripts/check_packages.sh builds the Debian package
)
missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing packages (a few minutes on a fresh machine): ${missing[*]}"
  SUDO=
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
      echo "setup.sh: missing packages (${missing[*]}) and not root" >&2; exit 1
    fi
  fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  step "packages: all present"
fi

# ------------------------------------------------------------------ autogen
newer_than() {  # newer_than TARGET FILE...: true if TARGET missing or any FILE is newer
  local t=$1; shift
  [ -e "$t" ] || return 0
  local f
  for f in "$@"; do
    [ -e "$f" ] && [ "$f" -nt "$t" ] && return 0
  done
  return 1
}

shopt -s nullglob
gen_inputs=(configure.ac Makefile.am m4/themis_*.m4)
shopt -u nullglob
if newer_than configure "${gen_inputs[@]}" || [ ! -e Makefile.in ] || [ ! -e config/ltmain.sh ]; then
  step "autogen.sh"
  log=$(mktemp)
  if ! ./autogen.sh >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; exit 1; fi
  grep -iE 'warning|error' "$log" >&2 || true
  rm -f "$log"
else
  step "autogen.sh: up to date"
fi

# ------------------------------------------------- configure, build, install
# build_against PREFIX: steps 3-4 for the Open MPI in PREFIX ("" = Debian's).
build_against() {
  local prefix=$1 dir build
  dir=$(build_dir_for "$prefix")
  build=$ROOT/$dir
  if newer_than "$build/config.status" configure configure.ac Makefile.am Makefile.in \
     || [ ! -e "$build/Makefile" ]; then
    step "configure ($dir/${prefix:+, Open MPI in $prefix})"
    mkdir -p "$build"
    # --quiet: only errors and configure's final summary are printed.
    # shellcheck disable=SC2086
    (cd "$build" && "$ROOT/configure" --quiet ${prefix:+--with-ompi="$prefix"} ${THEMIS_CONFIGURE_ARGS:-})
  else
    step "configure: $dir/ already configured"
  fi

  step "make -j$JOBS ($dir/)"
  make -C "$build" --no-print-directory -j"$JOBS"

  step "make install ($dir/)"
  make -C "$build" --no-print-directory install >/dev/null
}

# An array, not a loop reading the list: make would read the rest of it as stdin.
mapfile -t prefixes < <(series_prefixes "$@")
[ ${#prefixes[@]} -gt 0 ] || exit 2
for prefix in "${prefixes[@]}"; do
  build_against "$prefix" </dev/null
done

step "setup done"
