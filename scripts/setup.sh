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
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)
BUILD="$ROOT/build"
JOBS=2

step() { printf '==> %s\n' "$*"; }

# ---------------------------------------------------------------- packages
PACKAGES=(
  build-essential autoconf automake libtool pkg-config
  openmpi-bin libopenmpi-dev libucx-dev libhwloc-dev libglpk-dev
  libgtest-dev googletest libbenchmark-dev cmake
  iproute2 python3 procps clang-format git
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

# ---------------------------------------------------------------- configure
if newer_than "$BUILD/config.status" configure configure.ac Makefile.am Makefile.in \
   || [ ! -e "$BUILD/Makefile" ]; then
  step "configure (build/)"
  mkdir -p "$BUILD"
  # --quiet: only errors and configure's final summary are printed.
  # shellcheck disable=SC2086
  (cd "$BUILD" && "$ROOT/configure" --quiet ${THEMIS_CONFIGURE_ARGS:-})
else
  step "configure: build/ already configured"
fi

# -------------------------------------------------------------------- build
step "make -j$JOBS"
make -C "$BUILD" --no-print-directory -j"$JOBS"

step "make install"
make -C "$BUILD" --no-print-directory install >/dev/null

step "setup done"
