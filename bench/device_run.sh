#!/usr/bin/env bash
# shellcheck disable=SC2317 # the check_* functions run through "check_$id"
# device_run.sh -- what only a lent GPU machine can answer, in ONE device call (issue 30).
#
# A session lent a GPU machine (one H100 or H200, 16 cores, Ubuntu 24.04, Open MPI 4.1.6;
# 15 minutes of device time in all, each start included, so one call) runs this once. It
# builds coll/themis from the carried tree in /tmp, runs the checks below in order of
# value, each under its own time limit (a check that runs out says TIMEOUT, the rest go
# on), writes every result and log under $OUT and prints a summary table
# (check | result | figure | goal), also in $OUT/summary.txt and, as a Markdown table for
# bench/RESULTS.md ("GPU machine run"), $OUT/summary.md. Summary included, it ends within
# the budget (default 540 s), since the device tool allows 600 s per call.
#
#   bench/device_run.sh --prepare   HERE (Debian with libtool and its package registry),
#                                   before the device call: writes build-gpu/ (ignored by
#                                   git through /build-*/): the autotools output generated
#                                   in a scratch copy (the GPU machine has no libtool) and
#                                   the .deb files it lacks (UCX and GLPK headers, GLPK and
#                                   its runtime libraries); with OSU_SRC=DIR (an OSU 7.x
#                                   source tree) also a copy of it, which the device run
#                                   builds with CUDA in the background for the osu_* checks.
#                                   Rerun it after a change to configure.ac, Makefile.am or m4/.
#   bench/device_run.sh             on the GPU machine: build, checks, summary.
#   bench/device_run.sh --short     here, in CI and in CTest (device_run_short): no build
#                                   (THEMIS_BUILDDIR, default build/), the CUDA checks report
#                                   SKIPPED without a GPU, the host checks run tiny on 2
#                                   ranks; under 3 minutes on 2 cores.
#
# The device call (device tool `run`, from the repository root, after --prepare here):
#   command:   bash bench/device_run.sh
#   carry:     ["build-gpu"]
#   timeout_s: 600
# Only 8 files come back from $OUT: there, the logs end up in $OUT/device_run_logs.tar.gz
# beside summary.txt and summary.md. The .deb files are unpacked only where a file they
# hold is missing, never over one (the facts: /work/shared/notes/gpu-machine-facts.md).
#
# Checks, in order (limit in seconds on the GPU machine / in --short; every limit is also
# cut to what is left of the budget):
#   build              240/-    configure --with-cuda, make, the test programs, make install
#   gpu_probe           30/30   nvidia-smi, themis-cuda-check --probe; starts MPS (several
#                               ranks share the GPU: without MPS small calls measure the
#                               GPU's time-slicing)
#   dev_nb_persistent   75/60   themis-cuda-check --kinds device (blocking, nonblocking,
#                               persistent) and themis-stress --mem device --persistent, 2x2
#   dev_setup_nb_only   45/45   bench/device_nb_setup.py (mpi4py + CuPy): a communicator
#                               only nonblocking device calls use, set up inside the first
#   dev_threads         60/60   themis-cuda-check --threads; themis-stress --threads 3 --mem mixed
#   dev_chunks_default  45/45   64 MiB device All-Reduce, 2x2: the default plans as chunks=0
#                               (same given rates), and its time with calibrated rates
#   dev_host_copies     45/45   64 MiB device All-Reduce handed down on host copies (dims=auto,
#                               cuda_ipc off), against host buffers + one copy pair
#   dev_matrix         150/60   test/cuda/cuda_run.sh gpu (the device matrix, cuda_gpu)
#   osu_blocking        45/45   OSU -d cuda -c: osu_allreduce, osu_reduce_scatter, osu_allgather
#   osu_nonblocking     45/45   osu_iallreduce, osu_ireduce_scatter, osu_iallgather
#   osu_persistent      45/45   osu_allgather_persistent, osu_reduce_scatter_persistent
#                               (OSU checks: with OSU_DIR, or OSU_SRC at --prepare; else
#                               "OSU not available"; 4 ranks 2x2, -c -T mpi_float)
#   overlap_np8         60/40   #14: themis-bench --nonblocking overlap, 8 ranks (2 in --short)
#   shm_vs_tuned       100/80   #15: bench/run_shm_compare.sh node, a core per rank
#   ctest_suite       rest/60   the CTest suite in the time left, -j4 (nproc/4), but cuda_gpu
#                               (= dev_matrix) and this script's own test: the whole suite
#                               took 5.6 min serially there, it cannot fit beside the rest;
#                               the figure says how far it got. --short: two quick tests.
#
# Results: PASS/FAIL (correctness), MET/MISS (a figure against its goal; the run itself
# valid), RAN (--short: figures at toy sizes, goal not judged), SKIPPED, TIMEOUT.
# Exit status: 1 if a check FAILED (with --verify: also if a host check timed out or the
# summary lacks a check), else 0.
#
# Options: --checks A,B  only these (gpu_probe runs too where a GPU check is chosen)
#          --skip A,B    all but these;   --budget S   seconds in all;   --no-build
#          --verify      after the run, check summary.txt against the check list
#          --list        the checks, their kinds and limits
#          --fake-gpu    the GPU checks against the emulated CUDA driver of the build (no GPU;
#                        tests this script's plumbing, figures mean nothing)
#          --build-osu SRC DEST   build the OSU benchmarks the osu_* checks run (as the
#                        device run does), then exit
# Environment: OUT (default: a new /tmp/device_run.XXXXXX), THEMIS_BUILDDIR, MPIRUN,
#   OMPI_DEFAULT_COMPONENT_DIR, OSU_DIR (an OSU 7.x build or install made with
#   --enable-cuda, searched for the osu_* programs), PYTHON (with mpi4py and CuPy; default
#   /opt/torch/.venv/bin/python3 if present), DEVICE_RUN_INSTALL (1: make install; default
#   1 where nvidia-smi lists a GPU, else 0), DEVICE_RUN_JOBS (make -j, default nproc),
#   DEVICE_RUN_SRC (the tree to build, default this one), DEVICE_RUN_GIT (the commit to name
#   in the summary where the carried tree has no .git), DEVICE_RUN_SCALE (an integer the
#   limits are multiplied by, for a slower machine than the GPU machine; default 1).
set -uo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/$(basename "${BASH_SOURCE[0]}")
ROOT=$(cd "$(dirname "$SELF")/.." && pwd -P)
# The component's event lines (log_values, log_count).
# shellcheck source=../test/common/log_events.sh
source "$ROOT/test/common/log_events.sh"
# shellcheck source=../test/common/mpirun_flags.sh
source "$ROOT/test/common/mpirun_flags.sh"
WORK=/tmp/device_run          # build and source copy on the GPU machine (not the carried tree)
PREP=$ROOT/build-gpu          # what --prepare writes and the device call carries
RESERVE=15                    # seconds kept for the summary and the archive

# ----------------------------------------------------------------- the checks
# One row per check, in order of value: id | kind (build, gpu, host) | limit in seconds on
# the GPU machine | limit in --short | goal.
CHECK_TABLE='
build              | build |    240 |  0 | builds from the carried tree
gpu_probe          | gpu   |     30 | 30 | a usable GPU, MPS on
dev_nb_persistent  | gpu   |     75 | 60 | 0 failed; themis runs device I* and *_init calls
dev_setup_nb_only  | gpu   |     45 | 45 | exact; themis runs every call, the first too
dev_threads        | gpu   |     60 | 60 | 0 failed, calls from 3 threads and a context-less one
dev_chunks_default | gpu   |     45 | 45 | default plan = chunks 0'"'"'s; 64 MiB <= 4.8 ms (#13)
dev_host_copies    | gpu   |     45 | 45 | <= 1.5x host call + copy pair (was 251 ms)
dev_matrix         | gpu   |    150 | 60 | every run of cuda_run.sh gpu passes
osu_blocking       | gpu   |     45 | 45 | every size Pass, 4 B-64 MiB
osu_nonblocking    | gpu   |     45 | 45 | every size Pass, 4 B-16 MiB
osu_persistent     | gpu   |     45 | 45 | every size Pass, 4 B-16 MiB
overlap_np8        | host  |     60 | 40 | overlap >= 90 % at 1-16 MiB, 8 ranks (#14)
shm_vs_tuned       | host  |    100 | 80 | every point >= 1.0x tuned, 1-64 MiB (#15)
ctest_suite        | host  | 100000 | 60 | every test passes
'
CHECKS=()
declare -A KIND CAP_FULL CAP_SHORT GOAL
while IFS='|' read -r id kind full short goal; do
  id=${id// /}
  [ -n "$id" ] || continue
  CHECKS+=("$id")
  KIND[$id]=${kind// /} CAP_FULL[$id]=${full// /} CAP_SHORT[$id]=${short// /}
  goal=${goal#"${goal%%[! ]*}"}
  GOAL[$id]=$goal
done <<<"$CHECK_TABLE"

usage() { sed -n '3,/^set -uo pipefail/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; }

# ----------------------------------------------------------------- small helpers
now() { date +%s; }
note() { printf 'device_run: %s\n' "$*"; }

# result RESULT FIGURE: what this check found (written by the process that ran it).
result() { printf '%s\t%s\n' "$1" "$2" > "$STATE/result.$CHECK"; }

# progress TEXT: what a check has got so far, reported if it runs out of time.
progress() { printf '%s\n' "$*" > "$STATE/progress.$CHECK"; }

# configured_with MACRO: whether the build was configured with MACRO=1.
configured_with() { grep -Eq "^DEFS = .*-D$1=1" "$BUILD/Makefile" 2>/dev/null; }

# mpi NP LOG [mpirun options...] -- PROGRAM ARGS: one mpirun, coll/themis from the build,
# output appended to LOG; oversubscribed where NP exceeds the cores; the MPS variables
# passed on where MPS runs.
mpi() {
  local np=$1 log=$2 rc; shift 2
  local -a opts=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  [ "$np" -gt "$(nproc)" ] && opts+=(--oversubscribe)
  # Verbose 2 prints the stats lines the checks read; Open MPI refuses a parameter twice.
  [[ " ${opts[*]} " == *" coll_themis_verbose "* ]] || opts+=(--mca coll_themis_verbose 2)
  [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && opts+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
  printf '\n$ %s -np %s %s %s\n' "$MPIRUN" "$np" "${opts[*]}" "$*" >> "$log"
  local -a path
  mapfile -t path < <(mpirun_flags component-path "$BUILD/component:$OMPI_DEFAULT_COMPONENT_DIR")
  "$MPIRUN" -np "$np" "${path[@]}" "${opts[@]}" "$@" < /dev/null >> "$log" 2>&1
  rc=$?
  printf '# exit status %s\n' "$rc" >> "$log"
  return "$rc"
}

# stats LOG: themis's per-communicator call counts (its events stats), one line
# "comm|rank|slot|calls|themis".
stats() { log_values "$1" stats comm,rank,coll,calls,themis; }

# ran LOG REGEX [COMM]: "themis/calls" summed over the ranks and the slots matching REGEX.
ran() {
  stats "$1" | awk -F'|' -v re="^($2)\$" -v c="${3:-}" \
    '$3 ~ re && (c == "" || $1 == c) { n += $4; t += $5 } END { printf "%d/%d", t, n }'
}

# csv_col CSV COLUMN [IMPL]: the values of COLUMN (by header name), rows of IMPL only.
csv_col() {
  awk -F, -v col="$2" -v impl="${3:-}" 'NR == 1 { for (i = 1; i <= NF; ++i) h[$i] = i; next }
    impl == "" || $h["impl"] == impl { print $h[col] }' "$1"
}

# minmax FORMAT: "min-max" of the numbers on stdin (one number if all equal, empty if none).
minmax() {
  awk -v f="$1" 'NR == 1 || $1 < lo { lo = $1 } NR == 1 || $1 > hi { hi = $1 }
    END { if (NR) { a = sprintf(f, lo); b = sprintf(f, hi); printf "%s", a == b ? a : a "-" b } }'
}

in_list() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }

# ----------------------------------------------------------------- --prepare
# Files that ./autogen.sh generates, as found in a scratch copy: their list is what
# changed there, so it follows configure.ac and Makefile.am without being written down.
prepare() {
  local tmp gen n
  tmp=$(mktemp -d /tmp/device_run_prepare.XXXXXX)
  mkdir -p "$PREP/debs"
  note "autogen in a scratch copy ($tmp): the working tree's own generated files stay as they are"
  mkdir -p "$tmp/src"
  if git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard) |
      (cd "$ROOT" && tar --null --ignore-failed-read -T - -cf - 2> /dev/null) | tar -C "$tmp/src" -xf -
  else
    copy_tree "$ROOT" "$tmp/src"
  fi
  (cd "$tmp/src" && find . -type f | sort) > "$tmp/before"
  if ! (cd "$tmp/src" && ./autogen.sh) > "$tmp/autogen.log" 2>&1; then
    tail -n 20 "$tmp/autogen.log"
    note "FAILED: ./autogen.sh (needs autoconf, automake, libtool: apt-get install them)"
    return 1
  fi
  (cd "$tmp/src" && find . -type f -not -path './autom4te.cache/*' | sort) > "$tmp/after"
  gen=$(comm -13 "$tmp/before" "$tmp/after")
  [ -n "$gen" ] || { note "FAILED: autogen generated nothing"; return 1; }
  # shellcheck disable=SC2086 # one path per line, none with blanks
  tar -C "$tmp/src" -czf "$PREP/autogen.tar.gz" $gen
  # What the generated files were made from, to tell there whether they still match.
  (cd "$tmp/src" && find . -maxdepth 2 \( -name configure.ac -o -name Makefile.am -o -path './m4/*.m4' \) \
    -type f | sort | grep -vxF -f <(echo "$gen") | xargs sha256sum) > "$PREP/autogen.sha256"
  n=$(printf '%s\n' "$gen" | wc -l)
  note "build-gpu/autogen.tar.gz: $n generated files"
  note "downloading the .deb files the GPU machine lacks into build-gpu/debs"
  if ! (cd "$PREP/debs" && apt-get download "${PREP_DEBS[@]}") > "$tmp/apt.log" 2>&1; then
    apt-get update -qq > /dev/null 2>&1
    if ! (cd "$PREP/debs" && apt-get download "${PREP_DEBS[@]}") > "$tmp/apt.log" 2>&1; then
      tail -n 5 "$tmp/apt.log"; note "FAILED: apt-get download ${PREP_DEBS[*]}"; return 1
    fi
  fi
  if [ -n "${OSU_SRC:-}" ]; then   # OSU's source, built there (with CUDA) by the full run
    if [ ! -f "$OSU_SRC/configure" ] || [ ! -d "$OSU_SRC/c/mpi/collective" ]; then
      note "FAILED: OSU_SRC=$OSU_SRC is no OSU source tree"; return 1
    fi
    rm -rf "$PREP/osu-src" && mkdir -p "$PREP/osu-src"
    tar -C "$OSU_SRC" --exclude=./.git --exclude='*.o' -cf - . | tar -C "$PREP/osu-src" -xf -
    (cd "$PREP/osu-src" && { [ ! -f Makefile ] || make distclean; }) > /dev/null 2>&1
    note "build-gpu/osu-src: OSU from $OSU_SRC ($(du -sh "$PREP/osu-src" | cut -f1))"
  fi
  git -C "$ROOT" describe --always --dirty 2> /dev/null > "$PREP/git_head"
  cat > "$PREP/README.txt" << EOF
Made by bench/device_run.sh --prepare at git $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%M:%SZ).
Carry this folder in the device call (carry: ["build-gpu"]); rerun --prepare after a change
to configure.ac, Makefile.am or m4/. osu-src/ (OSU_SRC=DIR at --prepare): built there.
EOF
  rm -rf "$tmp"
  note "ready: $(du -sh "$PREP" | cut -f1) in build-gpu/ ($(find "$PREP/debs" -name "*.deb" | wc -l) .deb files)"
  note "device call: command 'bash bench/device_run.sh', carry [\"build-gpu\"], timeout_s 600"
}
# Debian 12's packages the GPU machine lacks: UCX headers (its UCX 1.16 runtime has
# none), GLPK headers and library, and GLPK's runtime dependencies (SuiteSparse 5's AMD
# and COLAMD, libltdl), each unpacked there only where its files are missing.
PREP_DEBS=(libucx-dev libglpk-dev libglpk40 libamd2 libcolamd2 libsuitesparseconfig5 libltdl7)

# copy_tree FROM TO: the working tree without build outputs, build-gpu/ and git's database.
copy_tree() {
  tar -C "$1" --exclude=./.git --exclude=./build --exclude='./build-*' -cf - . | tar -C "$2" -xf -
}

# ----------------------------------------------------------------- build (GPU machine)
# install_debs DIR [ROOT]: unpack into ROOT (default /) each .deb that holds a header or
# library missing there, without replacing any file that exists (Ubuntu's newer libraries
# stay).
install_debs() {
  local deb tmp=$WORK/debroot dest=${2:-} missing
  [ -d "$1" ] || return 0
  for deb in "$1"/*.deb; do
    [ -f "$deb" ] || continue
    rm -rf "$tmp" && mkdir -p "$tmp" && dpkg-deb -x "$deb" "$tmp" || return 1
    missing=$(cd "$tmp" && find . \( -type f -o -type l \) \( -path './usr/include/*' -o -path './usr/lib/*' \) |
      while read -r f; do [ -e "$dest/${f#./}" ] || [ -L "$dest/${f#./}" ] || echo "$f"; done | head -n 1)
    if [ -n "$missing" ]; then
      echo "unpacking $(basename "$deb") (${missing#./} is missing)"
      # cp -n's exit status for a skipped file differs between coreutils releases: not used.
      cp -an "$tmp"/. "${dest:-/}" 2> /dev/null
      true
    fi
  done
  [ -n "$dest" ] || ldconfig 2> /dev/null
  return 0
}

# stamp_generated SRC: the generated files newer than what they are made from (the copy
# may give every file the same time), or, where an input changed since --prepare, that
# input newest, so that make reruns automake/autoconf (present there) for it alone.
stamp_generated() {
  local src=$1 t f changed
  t=$(($(now) - 1000))
  find "$src" -exec touch -h -d "@$t" {} +
  while read -r f; do touch -d "@$((t + 100))" "$src/$f"; done < <(tar -tzf "$PREP/autogen.tar.gz" | grep -v '/$')
  touch -d "@$((t + 200))" "$src/configure" "$src/Makefile.in" 2> /dev/null
  [ -f "$src/config.h.in" ] && touch -d "@$((t + 200))" "$src/config.h.in"
  changed=$(cd "$src" && sha256sum -c "$PREP/autogen.sha256" 2> /dev/null | sed -n 's/: FAILED.*//p')
  if [ -n "$changed" ]; then
    echo "changed since --prepare (make regenerates from them): $changed"
    for f in $changed; do touch -c "$src/$f"; done
  fi
}

check_build() {
  local log=$LOGDIR/build.log jobs=${DEVICE_RUN_JOBS:-$(nproc)} t0 t1 t2 t3 cuda=() left
  local src=$WORK/src
  t0=$(now)
  deadline_in() { left=$((CHECK_DEADLINE - $(now))); [ "$left" -gt 5 ] || left=5; }
  # Never empty a build directory this script did not make (THEMIS_BUILDDIR=build, say).
  if [ -n "$(ls -A "$BUILD" 2> /dev/null)" ] && [ ! -f "$BUILD/.device_run_build" ]; then
    result FAIL "$BUILD is not empty and not made by device_run.sh: not replaced"; return
  fi
  rm -rf "$src" "$BUILD" && mkdir -p "$src" "$BUILD" && touch "$BUILD/.device_run_build"
  copy_tree "${DEVICE_RUN_SRC:-$ROOT}" "$src"
  if [ -f "$PREP/autogen.tar.gz" ]; then
    tar -C "$src" -xzf "$PREP/autogen.tar.gz" && stamp_generated "$src" >> "$log" 2>&1
  elif [ ! -x "$src/configure" ]; then
    if command -v libtoolize > /dev/null && command -v autoreconf > /dev/null; then
      (cd "$src" && ./autogen.sh) >> "$log" 2>&1 || { result FAIL "autogen.sh failed"; return; }
    else
      result FAIL "no configure, no libtool: run --prepare where libtool is, carry build-gpu"
      return
    fi
  fi
  # Only where headers are missing (the GPU machine), and as root: dpkg-deb's files go to /.
  if [ "$(id -u)" = 0 ] && { [ ! -f /usr/include/glpk.h ] || [ ! -f /usr/include/ucp/api/ucp.h ]; }; then
    install_debs "$PREP/debs" >> "$log" 2>&1 || { result FAIL "unpacking build-gpu/debs failed"; return; }
  fi
  [ -x /usr/local/cuda/bin/nvcc ] && cuda=(--with-cuda=/usr/local/cuda)
  # step NAME COMMAND...: one build step within what is left of the limit; on failure
  # the result says which step and its first error.
  step() {
    local name=$1 rc; shift
    deadline_in
    (cd "$BUILD" && timeout "$left" "$@") >> "$log" 2>&1
    rc=$?
    [ "$rc" = 0 ] && return 0
    if [ "$rc" = 124 ]; then result TIMEOUT "$name: limit reached ($(progress_text))"
    else result FAIL "$name: $(grep -m1 -E 'error|Error' "$log" | cut -c1-70)"; fi
    return 1
  }
  progress_text() { cat "$STATE/progress.$CHECK" 2> /dev/null; }
  progress "configure"
  step configure "$src/configure" --quiet "${cuda[@]}" || return
  t1=$(now); progress "configure $((t1 - t0)) s, make"
  step make make -j"$jobs" || return
  t2=$(now); progress "configure $((t1 - t0)) s, make $((t2 - t1)) s, test programs"
  # make check builds the test programs, then runs CTest: CTEST=true makes that a no-op.
  step "test programs" make -j"$jobs" check CTEST=true || return
  t3=$(now)
  local fig="configure $((t1 - t0)) s, make $((t2 - t1)) s, tests $((t3 - t2)) s"
  configured_with THEMIS_HAVE_CUDA && fig="$fig, CUDA" || fig="$fig, no CUDA"
  configured_with THEMIS_HAVE_UCX || fig="$fig, no UCX"
  # Three tests read the installed help file. Only on the GPU machine (a machine of its
  # own) by default: never into a development machine's Open MPI.
  if [ "${DEVICE_RUN_INSTALL:-0}" = 1 ]; then
    deadline_in
    if timeout "$left" make -C "$BUILD" install >> "$log" 2>&1; then fig="$fig, installed"
    else fig="$fig, make install FAILED"; fi
  fi
  [ -x "$BUILD/test/stress/themis-stress" ] || { result FAIL "$fig, but no test/stress/themis-stress"; return; }
  result PASS "$fig"
}

# ----------------------------------------------------------------- GPU checks
check_gpu_probe() {
  local log=$LOGDIR/gpu_probe.log name rc
  if [ "${DEVICE_RUN_FAKE_GPU:-0}" = 1 ]; then   # --fake-gpu: the checks' plumbing, no GPU
    [ -f "$BUILD/test/cuda/.libs/libcuda-fake.so" ] || { result FAIL "no emulated driver in the build"; return; }
    echo "EMULATED CUDA driver (no GPU)" > "$STATE/gpu"
    result PASS "EMULATED driver (--fake-gpu): figures mean nothing"; return
  fi
  if ! command -v nvidia-smi > /dev/null; then result SKIPPED "no GPU: nvidia-smi not found"; return; fi
  name=$(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>> "$log" | head -n 1)
  timeout 20 nvidia-smi >> "$log" 2>&1
  [ -n "$name" ] || { result SKIPPED "no GPU: nvidia-smi lists none"; return; }
  configured_with THEMIS_HAVE_CUDA || { result FAIL "$name, but the build has no CUDA"; return; }
  [ -x "$CUDA_CHECK" ] || { result FAIL "$name, but no $CUDA_CHECK"; return; }
  "$CUDA_CHECK" --probe >> "$log" 2>&1
  rc=$?
  [ "$rc" = 77 ] && { result SKIPPED "no usable GPU ($name): themis-cuda-check --probe"; return; }
  [ "$rc" = 0 ] || { result FAIL "themis-cuda-check --probe: exit status $rc"; return; }
  echo "$name" > "$STATE/gpu"
  # MPS: the ranks share one GPU; without it small calls measure the GPU's time-slicing.
  local mps=off
  if command -v nvidia-cuda-mps-control > /dev/null; then
    mkdir -p "$MPS_PIPE" "$MPS_LOG"
    # Without this check's marker: the daemon outlives the check on purpose.
    if env -u DEVICE_RUN_CHECK CUDA_MPS_PIPE_DIRECTORY="$MPS_PIPE" CUDA_MPS_LOG_DIRECTORY="$MPS_LOG" \
      nvidia-cuda-mps-control -d >> "$log" 2>&1; then
      mps=on; echo on > "$STATE/mps"
    fi
  fi
  result PASS "$(echo "$name" | cut -d, -f1); MPS $mps"
}

# verdict LOG REGEX: whether the program's own verdict line is there.
verdict() { grep -Eq "$2" "$1"; }

# Sizes of the GPU checks: full on the GPU machine; small with --short (a GPU there, or
# --fake-gpu, whose device memory is host memory on 2 cores).
big() { if [ "$MODE" = short ]; then echo "$2"; else echo "$1"; fi; }

check_dev_nb_persistent() {
  local log=$LOGDIR/dev_nb_persistent.log nb pi calls
  calls=$(big 1500 200)
  if ! mpi 4 "$log" --mca coll_themis_dims 2x2 --mca coll_themis_min_bytes 65536 -- "$CUDA_CHECK" --kinds device ||
    ! verdict "$log" '^cuda_check: passed'; then
    result FAIL "themis-cuda-check --kinds device failed (log)"; return
  fi
  progress "cuda_check passed; stress running"
  local slog=$LOGDIR/dev_nb_persistent_stress.log
  # --seconds: the stress ends by itself (and says how far it got) before the limit. The
  # resident-memory bound is cuda_run.sh gpu's (2000 calls, 48 MiB): a run this short is
  # mostly warm-up (pinned staging fills up to 128 MiB), so its margin here is wide.
  mpi 4 "$slog" --mca coll_themis_dims 2x2 -- "$STRESS" --seed 61 --calls "$calls" --max-bytes 4194304 \
    --seconds $((CHECK_LIMIT / 2)) --rss-margin-mib 512 --persistent --mem device
  local rc=$? line
  line=$(grep -Eo '^themis_stress: [0-9]+ passed, [0-9]+ failed' "$slog" | tail -n 1)
  if ! [[ $line =~ ' 0 failed' ]] || [ "$rc" != 0 ]; then
    result FAIL "themis-stress --mem device: ${line:-no verdict}, exit status $rc"; return
  fi
  nb=$(cat "$log" "$slog" | ran /dev/stdin 'iallreduce|ireduce_scatter|ireduce_scatter_block|iallgather')
  pi=$(cat "$log" "$slog" | ran /dev/stdin 'allreduce_init|reduce_scatter_init|reduce_scatter_block_init|allgather_init')
  if [ "${nb%%/*}" -gt 0 ] && [ "${pi%%/*}" -gt 0 ]; then
    result PASS "cuda_check passed; stress ${line#themis_stress: }; themis ran nb $nb, init $pi"
  else
    result FAIL "results exact, but themis ran nb $nb, init $pi"
  fi
}

check_dev_setup_nb_only() {
  local log=$LOGDIR/dev_setup_nb_only.log rounds=4 slot r all=() bad=0 mem=device what="" mods=mpi4py,cupy
  # --fake-gpu: CuPy needs a real GPU; host buffers test the plumbing.
  [ "${DEVICE_RUN_FAKE_GPU:-0}" = 1 ] && mem=host what="host buffers (--fake-gpu): " mods=mpi4py
  if ! "$PYTHON" -c "import $mods" > /dev/null 2>&1; then
    result SKIPPED "no ${mods/,/ + } in $PYTHON (set PYTHON)"; return
  fi
  mpi 4 "$log" --mca coll_themis_dims 2x2 -- "$PYTHON" "$ROOT/bench/device_nb_setup.py" \
    --mem "$mem" --rounds "$rounds"
  local line
  line=$(grep -Eo 'device_nb_setup: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  [[ $line =~ ' 0 failed' ]] || { result FAIL "${line:-no verdict (log)}"; return; }
  # The first call sets the communicator up inside itself; the calls held meanwhile start
  # on themis after it: every call of every round, on the 4 ranks, runs on themis.
  for slot in iallreduce ireduce_scatter_block iallgather; do
    r=$(ran "$log" "$slot" nb_setup)
    all+=("${slot#i} $r")
    [ "${r%%/*}" -ge $((4 * rounds)) ] || bad=1
  done
  if [ "$bad" = 0 ]; then result PASS "${what}exact; themis ran ${all[*]}"
  else result FAIL "${what}exact, but themis ran ${all[*]} (want $((4 * rounds)) each)"; fi
}

check_dev_threads() {
  local log=$LOGDIR/dev_threads.log slog=$LOGDIR/dev_threads_stress.log line
  if ! mpi 4 "$log" --mca coll_themis_dims 2x2 --mca coll_themis_staging_bytes 1048576 \
    --mca coll_themis_min_bytes 65536 -- "$CUDA_CHECK" --threads || ! verdict "$log" '^cuda_check: passed'; then
    result FAIL "themis-cuda-check --threads failed (log)"; return
  fi
  progress "cuda_check --threads passed; stress running"
  mpi 4 "$slog" --mca coll_themis_dims 2x2 -- "$STRESS" --seed 63 --threads 3 --calls "$(big 400 60)" \
    --seconds $((CHECK_LIMIT / 2)) --max-bytes 2097152 --rss-margin-mib 512 --persistent --mem mixed
  local rc=$?
  line=$(grep -Eo '^themis_stress: [0-9]+ passed, [0-9]+ failed' "$slog" | tail -n 1)
  if ! [[ $line =~ ' 0 failed' ]] || [ "$rc" != 0 ]; then
    result FAIL "themis-stress --threads 3: ${line:-no verdict}, exit status $rc"; return
  fi
  result PASS "cuda_check --threads passed (iallreduce $(ran "$log" iallreduce MPI_COMM_WORLD)); stress ${line#themis_stress: }"
}

# bench_ms CSV IMPL: the mean time of IMPL's row in milliseconds.
bench_ms() { csv_col "$1" avg_us "$2" | head -n 1 | awk '{ printf "%.2f", $1 / 1000 }'; }

check_dev_chunks_default() {
  # Whether the default plans as chunks=0 is read from two runs given the same rates (a
  # device-direct link as the H100 calibrated it: 1600 Gbit/s, 16 us), each plan then
  # fixed; calibrated rates differ from run to run, and so may two calibrated plans. The
  # time is a third run's, as a user gets it: default chunks, rates calibrated.
  local c log csv plan=() i=0 ms M S
  local rates=2x2:bw=1600Gbps,1600Gbps:lat=16us,16us
  M=$(big 67108864 16777216) S=$(big 64M 16M)
  for c in default 0; do
    log=$LOGDIR/dev_chunks_plan_$c.log
    local opt=()
    [ "$c" = default ] || opt=(--mca coll_themis_chunks "$c")
    mpi 4 "$log" --mca coll_themis_dims "$rates" --mca coll_themis_verbose 5 "${opt[@]}" -- "$BENCH" \
      --mem device -m "$S:$S" -i 1 -x 1 -c --collective allreduce --impl themis --peers 2,2
    verdict "$log" '^# validation: passed' || { result FAIL "chunks $c: validation failed (log)"; return; }
    plan[i]=$(log_values "$log" plan chunks rank=0 coll=allreduce "bytes=$M" | head -n 1)
    i=$((i + 1))
  done
  progress "plans: default ${plan[0]:-?}, chunks 0 ${plan[1]:-?}"
  log=$LOGDIR/dev_chunks_default.log csv=$LOGDIR/dev_chunks_default.csv
  mpi 4 "$log" --mca coll_themis_dims 2x2 --mca coll_themis_verbose 5 -- "$BENCH" --mem device \
    -m "$S:$S" -i "$(big 10 2)" -x 2 -c --collective allreduce --impl themis --peers 2,2 --csv "$csv"
  verdict "$log" '^# validation: passed' || { result FAIL "calibrated run: validation failed (log)"; return; }
  ms=$(bench_ms "$csv" themis)
  local cal
  cal=$(log_values "$log" plan chunks rank=0 coll=allreduce "bytes=$M" | head -n 1)
  local fig="$S $ms ms (calibrated: ${cal:-?} chunks); given rates: default ${plan[0]:-?} = chunks 0 ${plan[1]:-?}"
  if [ -z "${plan[0]}" ] || [ "${plan[0]}" != "${plan[1]}" ]; then result FAIL "${fig/ = / != }"
  elif [ "$MODE" = short ]; then result RAN "$fig"
  elif awk -v t="$ms" 'BEGIN { exit !(t <= 4.8) }'; then result MET "$fig"
  else result MISS "$fig"; fi
}

check_dev_host_copies() {
  local log=$LOGDIR/dev_host_copies.log dev=$LOGDIR/dev_host_copies_device.csv host=$LOGDIR/dev_host_copies_host.csv
  local mem t_dev t_host pair S
  S=$(big 64M 16M)
  for mem in device host; do
    local csv=$dev; [ "$mem" = host ] && csv=$host
    mpi 4 "$log" --mca coll_themis_cuda_ipc off -- "$BENCH" --mem "$mem" -m "$S:$S" -i "$(big 5 2)" -x 2 -c \
      --collective allreduce --impl themis --csv "$csv"
    verdict "$log" '^# validation: passed' || { result FAIL "--mem $mem: validation failed (log)"; return; }
  done
  t_dev=$(bench_ms "$dev" themis) t_host=$(bench_ms "$host" themis)
  pair=$(sed -nE 's/.*# copy pair: .*: ([0-9.]+) us.*/\1/p' "$log" | tail -n 1 | awk '{ printf "%.2f", $1 / 1000 }')
  local ratio fig
  ratio=$(awk -v d="$t_dev" -v h="$t_host" -v p="${pair:-0}" 'BEGIN { printf "%.2f", d / (h + p) }')
  fig="$S $t_dev ms = ${ratio}x (host $t_host + pair ${pair:-?} ms)"
  if [ "$MODE" = short ]; then result RAN "$fig"
  elif awk -v r="$ratio" 'BEGIN { exit !(r <= 1.5) }'; then result MET "$fig"; else result MISS "$fig"; fi
}

check_dev_matrix() {
  local log=$LOGDIR/dev_matrix.log rc runs
  THEMIS_BUILDDIR=$BUILD timeout $((CHECK_LIMIT - 5)) bash "$ROOT/test/cuda/cuda_run.sh" gpu > "$log" 2>&1
  rc=$?
  runs=$(grep -c '^== ' "$log")
  mkdir -p "$LOGDIR/dev_matrix" && cp "$BUILD"/test/cuda/logs/cuda_gpu_*.log "$LOGDIR/dev_matrix/" 2> /dev/null
  case $rc in
    0) result PASS "$runs runs passed" ;;
    77) result SKIPPED "$(grep -m1 -o 'SKIPPED: .*' "$log")" ;;
    124 | 137) result TIMEOUT "$((runs - 1)) runs passed, cut in $(grep '^== ' "$log" | tail -n 1 | cut -d: -f1 | cut -c4-)" ;;
    *) result FAIL "$((runs - 1)) runs passed, then: $(grep -m1 -o 'FAILED: [^(]*' "$log")" ;;
  esac
}

# osu NAME... under check CHECK: each OSU benchmark found under OSU_DIR, 4 ranks 2x2,
# device buffers, validated; every size must say Pass.
osu_run() {
  local max=$1; shift
  local b exe log=$LOGDIR/$CHECK.log sizes=0 fails=0 figs=() r dev=(-d cuda) what=""
  if [ -n "${OSU_BUILDING:-}" ]; then   # built in the background since the build check
    progress "waiting for the OSU build"
    while [ ! -f "$STATE/osu_build.rc" ]; do sleep 1; done
    [ "$(cat "$STATE/osu_build.rc")" = 0 ] || { result FAIL "OSU build failed (logs/osu_build.log)"; return; }
  fi
  # --fake-gpu: the emulated driver's memory is not CUDA's: host buffers, plumbing only.
  [ "${DEVICE_RUN_FAKE_GPU:-0}" = 1 ] && dev=() what="host buffers (--fake-gpu): "
  for b in "$@"; do
    exe=$(find "$OSU_DIR" -type f -name "$b" -perm -u+x 2> /dev/null | head -n 1)
    [ -n "$exe" ] || { result FAIL "no $b under OSU_DIR=$OSU_DIR"; return; }
    local blog=$LOGDIR/${CHECK}_$b.log
    progress "$sizes sizes Pass, $fails failed so far; ${b#osu_} running"
    mpi 4 "$blog" --mca coll_themis_dims 2x2 -- "$exe" "${dev[@]}" -c -T mpi_float -m "4:$max" -i 10 -x 2
    r=$?
    cat "$blog" >> "$log"
    local n f
    n=$(grep -cE '^[0-9]+ .* Pass *$' "$blog") f=$(grep -cE '^[0-9]+ .* Fail' "$blog")
    sizes=$((sizes + n)) fails=$((fails + f))
    [ "$r" = 0 ] || fails=$((fails + 1))
    local slot=${b#osu_}; slot=${slot%_persistent}
    [[ $b == *_persistent ]] && slot=${slot}_init
    figs+=("${b#osu_} $(ran "$blog" "$slot" MPI_COMM_WORLD)")
  done
  if [ "$fails" = 0 ] && [ "$sizes" -gt 0 ]; then result PASS "$what$sizes sizes Pass; themis ran ${figs[*]}"
  else result FAIL "$what$fails failed of $((sizes + fails)); themis ran ${figs[*]}"; fi
}
check_osu_blocking() { osu_run 67108864 osu_allreduce osu_reduce_scatter osu_allgather; }
check_osu_nonblocking() { osu_run 16777216 osu_iallreduce osu_ireduce_scatter osu_iallgather; }
check_osu_persistent() { osu_run 16777216 osu_allgather_persistent osu_reduce_scatter_persistent; }

# build_osu SRC DEST LOG: the OSU collective benchmarks the osu_* checks run, built from an
# OSU 7.x source tree, with CUDA where nvcc is, as past GPU sessions built them: CUDA 13's
# cudaMemPrefetchAsync takes a location and flags (one call in OSU 7.4), and Open MPI 4.1
# names the persistent forms MPIX_*_init (a header included first maps them).
OSU_BENCHES=(blocking:osu_allreduce blocking:osu_reduce_scatter blocking:osu_allgather
  non_blocking:osu_iallreduce non_blocking:osu_ireduce_scatter non_blocking:osu_iallgather
  persistent:osu_allgather_persistent persistent:osu_reduce_scatter_persistent)
build_osu() {
  local src=$1 dest=$2 log=$3 jobs cuda=() shim b
  jobs=${DEVICE_RUN_JOBS:-$(nproc)}
  rm -rf "$dest" && mkdir -p "$dest" || return 1
  tar -C "$src" --exclude=./.git -cf - . | tar -C "$dest" -xf - || return 1
  (cd "$dest" && { [ ! -f Makefile ] || make distclean; }) >> "$log" 2>&1
  sed -i 's/^\( *\)CUDA_CHECK(cudaMemPrefetchAsync(buf, length, devid, um_stream));/#if CUDART_VERSION >= 13000\
\1CUDA_CHECK(cudaMemPrefetchAsync(buf, length, (struct cudaMemLocation){cudaMemLocationTypeDevice, devid}, 0, um_stream));\
#else\
&\
#endif/' "$dest/c/util/osu_util_mpi.c"
  shim=$dest/mpix_shim.h
  printf '%s\n' '#include <mpi.h>' '#include <mpi-ext.h>' '#define MPI_Allgather_init MPIX_Allgather_init' \
    '#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init' > "$shim"
  # CUDA where nvcc is, but not for --fake-gpu: such binaries need a real libcuda.so.1.
  if [ -x /usr/local/cuda/bin/nvcc ] && [ "${DEVICE_RUN_FAKE_GPU:-0}" != 1 ]; then
    cuda=(--enable-cuda --with-cuda=/usr/local/cuda)
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  (cd "$dest" && ./configure CC=mpicc CXX=mpicxx "${cuda[@]}") >> "$log" 2>&1 || return 1
  for b in "${OSU_BENCHES[@]}"; do
    make -C "$dest/c/mpi/collective/${b%%:*}" -j"$jobs" CFLAGS="-O2 -include $shim" "${b#*:}" >> "$log" 2>&1 || return 1
  done
  echo "osu: built in $dest${cuda:+ with CUDA}" >> "$log"
}

# ----------------------------------------------------------------- host checks
check_overlap_np8() {
  local log=$LOGDIR/overlap_np8.log csv=$LOGDIR/overlap_np8.csv np opts=() args=()
  if [ "$MODE" = short ]; then
    np=2 opts=(--mca coll_themis_dims 2 --mca coll_themis_single_dim 1)
    args=(-m 1M:1M -i 2 -x 1 --collective allreduce)
  else
    np=8 opts=(--mca coll_themis_dims 2x4)
    # A core per rank where there are enough (Open MPI refuses to bind more ranks).
    [ "$(nproc)" -ge 8 ] && opts+=(--bind-to core --map-by core)
    args=(-m 1M:16M -i 3 -x 1 --collective "allreduce,reduce_scatter_block,allgather")
  fi
  mpi "$np" "$log" "${opts[@]}" -- "$BENCH" --nonblocking overlap -c --impl "themis,tuned" --csv "$csv" "${args[@]}"
  verdict "$log" '^# validation: passed' || { result FAIL "validation failed or no verdict (log)"; return; }
  local th tu
  th=$(csv_col "$csv" overlap_pct themis | minmax %.1f) tu=$(csv_col "$csv" overlap_pct tuned | minmax %.1f)
  [ -n "$th" ] || { result FAIL "no themis rows in $csv"; return; }
  local fig
  fig="$np ranks on $(nproc) cores: themis ${th} %, libnbc ${tu} %"
  if [ "$MODE" = short ]; then result RAN "$fig"
  elif [ "$(nproc)" -lt "$np" ]; then result MISS "$fig (fewer cores than ranks)"
  elif awk -v lo="${th%%-*}" 'BEGIN { exit !(lo >= 90) }'; then result MET "$fig"
  else result MISS "$fig"; fi
}

check_shm_vs_tuned() {
  local log=$LOGDIR/shm_vs_tuned.log dir=$LOGDIR/shm rc
  local -a env=(OUT="$dir" BUILD="$BUILD" COMPONENT_DIR="$BUILD/component" STAT=median VALIDATE=1 WAIT_IDLE=0)
  if [ "$MODE" = short ]; then
    env+=(SIZES=1M:1M ITERS=1 WARMUP=1 "COLLS=allreduce,allgather" TIMEOUT=60)
  else
    env+=(SIZES=1M:64M ITERS=5 WARMUP=1 TIMEOUT=$((CHECK_LIMIT - 5)))
    [ "$(nproc)" -ge 8 ] && env+=(EXTRA_MCA="--bind-to core")
  fi
  [ -x "$BENCH" ] || { result FAIL "no $BENCH"; return; }   # the script would build it
  # Its own bound, a little inside the limit: the layouts done by then still count.
  env "${env[@]}" timeout $((CHECK_LIMIT - 8)) bash "$ROOT/bench/run_shm_compare.sh" node > "$log" 2>&1
  rc=$?
  local csvs=("$dir"/shm_node_np*.csv)
  [ -f "${csvs[0]}" ] || { result FAIL "no CSV written (exit status $rc, log)"; return; }
  local errs pts
  errs=$(for f in "${csvs[@]}"; do csv_col "$f" errors; done | awk '$1 > 0 { n += $1 } END { print n + 0 }')
  pts=$(for f in "${csvs[@]}"; do csv_col "$f" speedup_vs_tuned themis; done |
    awk '{ n++; if ($1 >= 1.0) ok++; if (n == 1 || $1 < lo) lo = $1 } END { printf "%d of %d points >= 1.0, lowest %.2f", ok, n, lo }')
  [ "$errs" = 0 ] || { result FAIL "$errs wrong elements; $pts"; return; }
  [ "$rc" = 124 ] && { result TIMEOUT "$pts, in ${#csvs[@]} of 3 layouts"; return; }
  [ "$rc" = 0 ] || { result FAIL "exit status $rc; $pts"; return; }
  if [ "$MODE" = short ]; then result RAN "$pts (1 MiB, 2 cores)"
  elif [ "$(nproc)" -lt 8 ]; then result MISS "$pts ($(nproc) cores: not a core per rank)"
  elif [[ $pts =~ ^([0-9]+)\ of\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then result MET "$pts"
  else result MISS "$pts"; fi
}

check_ctest_suite() {
  local dir=$LOGDIR/ctest log=$LOGDIR/ctest_suite.log rc sel=()
  [ -f "$BUILD/test/CTestTestfile.cmake" ] || { result FAIL "no $BUILD/test/CTestTestfile.cmake"; return; }
  # A copy of the test list (its paths are absolute): CTest's own files go under $OUT,
  # not into the build tree, where CTest may be running this very script.
  mkdir -p "$dir" && cp "$BUILD/test/CTestTestfile.cmake" "$dir/"
  # --short: two tests of seconds (one MPI run, one that may skip), enough to show that
  # CTest runs from here and its verdicts are read; the suite itself is make check's.
  if [ "$MODE" = short ]; then sel=(-R '^(mpi_coll_themis_alone|cuda_kernels)$')
  # Full: every test but cuda_gpu (dev_matrix ran it) and this script's own, 4 at once on
  # the 16 cores (the MPI tests run up to 8 ranks each; correctness, not timing).
  else sel=(-j"$(( $(nproc) / 4 > 1 ? $(nproc) / 4 : 1 ))" -E '^(cuda_gpu|device_run.*)$'); fi
  local total
  total=$(cd "$dir" && ctest -N "${sel[@]}" 2> /dev/null | sed -n 's/^Total Tests: //p')
  (cd "$dir" && timeout $((CHECK_LIMIT - 5)) ctest --output-on-failure --timeout 300 "${sel[@]}") > "$log" 2>&1
  rc=$?
  local p f s
  p=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$log")
  f=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Timeout|Exception|Not Run)' "$log")
  s=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped' "$log")
  local fig="$p passed, $f failed, $s skipped of ${total:-?}"
  [ "$MODE" = short ] && fig="$fig (short: 2 quick tests)"
  [ "$MODE" = short ] || fig="$fig (cuda_gpu: dev_matrix)"
  local cut=""
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && cut=", $(( ${total:-0} - p - f - s )) not reached"
  if [ "$f" -gt 0 ]; then
    result FAIL "$fig$cut; failed: $(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Timeout|Exception|Not Run)' "$log" |
      sed -E 's/.*#[0-9]+: ([^ ]+) .*/\1/' | head -n 3 | tr '\n' ' ')"
  elif [ -n "$cut" ]; then result TIMEOUT "$fig$cut"
  elif [ "$rc" = 0 ]; then result PASS "$fig"
  else result FAIL "$fig, ctest exit status $rc"; fi
}

# ----------------------------------------------------------------- running a check
# kill_leftovers ID: processes a check left (a timed-out mpirun's ranks; CTest's tests,
# each in a process group of its own): those whose environment carries
# DEVICE_RUN_CHECK=RUN:ID, i.e. started by that check of this run (RUN_TAG: another run
# of this script, CTest's say, may be going on beside it), and no other.
kill_leftovers() {
  local pids=()
  mapfile -t pids < <(grep -lxzF "DEVICE_RUN_CHECK=$RUN_TAG:$1" /proc/[0-9]*/environ 2> /dev/null | cut -d/ -f3)
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2> /dev/null; sleep 2; kill -KILL "${pids[@]}" 2> /dev/null
  return 0
}

record() { # record ID RESULT FIGURE SECONDS
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$STATE/results.tsv"
  printf 'device_run: %-20s %-8s %s (%s s)\n' "$1" "$2" "$3" "$4"
}

run_check() {
  local id=$1 cap limit left t0 rc res fig
  if [ "$MODE" = short ]; then cap=${CAP_SHORT[$id]}; else cap=${CAP_FULL[$id]}; fi
  cap=$((cap * ${DEVICE_RUN_SCALE:-1}))
  left=$((DEADLINE - RESERVE - $(now)))
  limit=$cap; [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then record "$id" SKIPPED "no time left in the ${BUDGET} s budget" 0; return; fi
  note "$id: started, limit $limit s"
  t0=$(now)
  rm -f "$STATE/result.$id" "$STATE/progress.$id"
  DEVICE_RUN_CHECK=$RUN_TAG:$id CHECK_LIMIT=$limit CHECK_DEADLINE=$((t0 + limit)) \
    timeout -k 5 "$limit" bash "$SELF" --internal "$id"
  rc=$?
  if [ -s "$STATE/result.$id" ]; then
    IFS=$'\t' read -r res fig < "$STATE/result.$id"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    res=TIMEOUT fig="limit $limit s reached$( [ -s "$STATE/progress.$id" ] && printf '; had: %s' "$(cat "$STATE/progress.$id")")"
  else
    res=FAIL fig="no result (exit status $rc)"
  fi
  kill_leftovers "$id"
  record "$id" "$res" "$fig" $(($(now) - t0))
}

# ----------------------------------------------------------------- summary
# commit_name: the tree's commit; the carried tree may have no .git: then DEVICE_RUN_GIT,
# else the commit --prepare saw.
commit_name() {
  local c
  c=$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null) && { echo "$c"; return; }
  [ -n "${DEVICE_RUN_GIT:-}" ] && { echo "$DEVICE_RUN_GIT"; return; }
  [ -s "$PREP/git_head" ] && { echo "$(cat "$PREP/git_head") (at --prepare)"; return; }
  echo '?'
}

rule() { printf '%*s' "$1" '' | tr ' ' -; }

summary() {
  local id res fig secs w1=5 w2=6 w3=6
  declare -A R F T
  while IFS=$'\t' read -r id res fig secs; do R[$id]=$res F[$id]=$fig T[$id]=$secs; done < "$STATE/results.tsv"
  for id in "${CHECKS[@]}"; do
    [ ${#id} -gt "$w1" ] && w1=${#id}
    [ ${#R[$id]} -gt "$w2" ] && w2=${#R[$id]}
    [ ${#F[$id]} -gt "$w3" ] && w3=${#F[$id]}
  done
  {
    printf '# bench/device_run.sh %s, %s, git %s, %s cores, GPU: %s\n' "$MODE" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      "$(commit_name)" \
      "$(nproc)" "$(cat "$STATE/gpu" 2> /dev/null || echo none)"
    printf '%-*s | %-*s | %-*s | %s\n' "$w1" check "$w2" result "$w3" figure goal
    printf '%s-+-%s-+-%s-+-%s\n' "$(rule "$w1")" "$(rule "$w2")" "$(rule "$w3")" "$(rule 40)"
    for id in "${CHECKS[@]}"; do
      printf '%-*s | %-*s | %-*s | %s\n' "$w1" "$id" "$w2" "${R[$id]:-MISSING}" "$w3" "${F[$id]:-}" "${GOAL[$id]}"
    done
    printf '# seconds:'
    for id in "${CHECKS[@]}"; do printf ' %s %s' "$id" "${T[$id]:-0}"; done
    printf '; total %s of %s\n' "$(($(now) - START))" "$BUDGET"
  } > "$OUT/summary.txt"
  {
    echo "| check | result | figure | goal |"
    echo "|---|---|---|---|"
    for id in "${CHECKS[@]}"; do
      printf '| %s | %s | %s | %s |\n' "$id" "${R[$id]:-MISSING}" "${F[$id]:-}" "${GOAL[$id]}"
    done
  } > "$OUT/summary.md"
  echo
  cat "$OUT/summary.txt"
}

# verify_summary FILE: every check has a row; no host check FAILED or TIMED OUT; no check
# FAILED. Reads the table back as a reader would, not the results this run recorded.
verify_summary() {
  local id row res bad=0 good=0
  for id in "${CHECKS[@]}"; do
    row=$(grep -E "^$id +\| " "$1" | head -n 1)
    if [ -z "$row" ]; then echo "verify: no row for $id"; bad=$((bad + 1)); continue; fi
    res=$(echo "$row" | awk -F' *\\| *' '{ print $2 }')
    case $res in
      PASS | MET | MISS | RAN | SKIPPED) good=$((good + 1)) ;;
      TIMEOUT)
        if [ "${KIND[$id]}" = host ]; then echo "verify: host check $id timed out"; bad=$((bad + 1))
        else good=$((good + 1)); fi ;;
      *) echo "verify: $id: $res"; bad=$((bad + 1)) ;;
    esac
  done
  echo "device_run verify: $good rows good of ${#CHECKS[@]} checks, $bad problems"
  [ $bad = 0 ]
}

# ----------------------------------------------------------------- main
# All of it in one function, read whole before it runs: a script edited while it runs
# (a long run, a checkout) must not go on with a shifted text.
main() {
  MODE=full ONLY='' SKIP='' VERIFY=0 NO_BUILD=0 BUDGET=''
  while [ $# -gt 0 ]; do
    case $1 in
      --short) MODE=short ;;
      --prepare) MODE=prepare ;;
      --checks) ONLY=$2; shift ;;
      --skip) SKIP=$2; shift ;;
      --budget) BUDGET=$2; shift ;;
      --no-build) NO_BUILD=1 ;;
      --fake-gpu) export DEVICE_RUN_FAKE_GPU=1 ;;
      --build-osu) build_osu "$2" "$3" /dev/stdout; exit $? ;;
      --verify) VERIFY=1 ;;
      --list) for id in "${CHECKS[@]}"; do printf '%-20s %-6s %6s %6s  %s\n' "$id" "${KIND[$id]}" "${CAP_FULL[$id]}" "${CAP_SHORT[$id]}" "${GOAL[$id]}"; done; exit 0 ;;
      --internal) INTERNAL=$2; shift ;;
      -h | --help) usage; exit 0 ;;
      *) echo "device_run: unknown option $1 (--help)" >&2; exit 2 ;;
    esac
    shift
  done

  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  MPIRUN=${MPIRUN:-mpirun}
  if [ -z "${OMPI_DEFAULT_COMPONENT_DIR:-}" ]; then
    libdir=$(pkg-config --variable=libdir ompi 2> /dev/null || echo /usr/lib/x86_64-linux-gnu/openmpi/lib)
    if [ -d "$libdir/openmpi3" ]; then OMPI_DEFAULT_COMPONENT_DIR=$libdir/openmpi3; else OMPI_DEFAULT_COMPONENT_DIR=$libdir/openmpi; fi
  fi
  export MPIRUN OMPI_DEFAULT_COMPONENT_DIR
  MPS_PIPE=$WORK/mps-pipe MPS_LOG=$WORK/mps-log

  if [ -n "${INTERNAL:-}" ]; then   # one check, in its own process (so that timeout ends it)
    CHECK=$INTERNAL MODE=$DEVICE_RUN_MODE
    CUDA_CHECK=$BUILD/test/cuda/themis-cuda-check STRESS=$BUILD/test/stress/themis-stress BENCH=$BUILD/bench/themis-bench
    "check_$CHECK"
    exit 0
  fi

  if [ "$MODE" = prepare ]; then prepare; exit $?; fi

  START=$(now) RUN_TAG=$$.$(now)
  [ -n "$BUDGET" ] || { [ "$MODE" = short ] && BUDGET=240 || BUDGET=540; }
  DEADLINE=$((START + BUDGET))
  OUT=${OUT:-$(mktemp -d /tmp/device_run.XXXXXX)}
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd -P)
  LOGDIR=$OUT/logs STATE=$OUT/.state
  # A run's logs replace the last run's (checks append to them), but only logs this script
  # wrote: OUT may be any folder.
  for d in "$LOGDIR" "$STATE"; do
    if [ -e "$d" ] && [ ! -f "$d/.device_run" ]; then
      echo "device_run: $d exists and was not written by device_run.sh: choose another OUT" >&2; exit 2
    fi
    rm -rf "$d" && mkdir -p "$d" && touch "$d/.device_run"
  done
  : > "$STATE/results.tsv"
  if [ "$MODE" = short ] || [ $NO_BUILD = 1 ]; then
    BUILD=${THEMIS_BUILDDIR:-$ROOT/build}
    [ -d "$BUILD" ] || { echo "device_run: no build directory $BUILD (THEMIS_BUILDDIR)" >&2; exit 2; }
  else
    BUILD=${THEMIS_BUILDDIR:-$WORK/build}
    mkdir -p "$BUILD"
  fi
  BUILD=$(cd "$BUILD" && pwd -P)
  if [ -z "${PYTHON:-}" ]; then
    if [ -x /opt/torch/.venv/bin/python3 ]; then PYTHON=/opt/torch/.venv/bin/python3; else PYTHON=python3; fi
  fi
  if [ -z "${DEVICE_RUN_INSTALL:-}" ]; then
    if [ "$MODE" = full ] && nvidia-smi -L > /dev/null 2>&1; then DEVICE_RUN_INSTALL=1; else DEVICE_RUN_INSTALL=0; fi
  fi
  DEVICE_RUN_MODE=$MODE
  export OUT LOGDIR STATE BUILD DEVICE_RUN_MODE PYTHON DEVICE_RUN_INSTALL WORK
  export OSU_DIR=${OSU_DIR:-}
  note "mode $MODE, budget $BUDGET s, OUT=$OUT, build $BUILD"

  # selected ID: whether --checks/--skip leave ID in (gpu_probe stays where a GPU check does).
  selected() {
    local id=$1 g
    in_list "$id" "$SKIP" && return 1
    [ -z "$ONLY" ] && return 0
    in_list "$id" "$ONLY" && return 0
    if [ "$id" = gpu_probe ]; then
      for g in "${CHECKS[@]}"; do [ "${KIND[$g]}" = gpu ] && in_list "$g" "$ONLY" && return 0; done
    fi
    if [ "$id" = build ] && [ $NO_BUILD = 0 ]; then return 0; fi
    return 1
  }

  stop_mps() {
    [ -f "$STATE/mps" ] || return 0
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE nvidia-cuda-mps-control > /dev/null 2>&1
    rm -f "$STATE/mps"
  }
  trap stop_mps EXIT

  # start_osu_build: where --prepare carried an OSU source and no OSU_DIR is given, build it
  # in the background (nice: the GPU checks meanwhile use 4 of the cores) once themis's
  # own build is done; the osu_* checks wait for it.
  OSU_BUILD_PID=''
  start_osu_build() {
    [ -z "$OSU_DIR" ] && [ "$MODE" = full ] && [ -d "$PREP/osu-src" ] || return 0
    # Only for a GPU (or --fake-gpu): the osu_* checks skip without one.
    [ "${DEVICE_RUN_FAKE_GPU:-0}" = 1 ] || nvidia-smi -L > /dev/null 2>&1 || return 0
    export OSU_DIR=$WORK/osu OSU_BUILDING=1
    (DEVICE_RUN_CHECK=$RUN_TAG:osu_build nice -n 10 bash "$SELF" --build-osu "$PREP/osu-src" "$WORK/osu" \
      > "$LOGDIR/osu_build.log" 2>&1; echo $? > "$STATE/osu_build.rc") &
    OSU_BUILD_PID=$!
    note "OSU: building $PREP/osu-src in the background (logs/osu_build.log)"
  }

  build_ok=1
  for id in "${CHECKS[@]}"; do
    # Once there is a build: OSU's, beside the checks that come first.
    [ "$id" = gpu_probe ] && [ $build_ok = 1 ] && start_osu_build
    if ! selected "$id"; then record "$id" SKIPPED "not selected (--checks/--skip)" 0; continue; fi
    case $id in
      build)
        if [ "$MODE" = short ] || [ $NO_BUILD = 1 ]; then
          record build SKIPPED "$MODE mode$([ $NO_BUILD = 1 ] && echo ', --no-build'): uses the build in $BUILD" 0
          continue
        fi ;;
      gpu_probe) ;;
      osu_*)
        if [ -z "$OSU_DIR" ]; then
          record "$id" SKIPPED "OSU not available (OSU_DIR, or OSU_SRC at --prepare)" 0; continue
        fi ;;
    esac
    if [ $build_ok = 0 ] && [ "$id" != build ]; then record "$id" SKIPPED "no build (see the build row)" 0; continue; fi
    if [ "${KIND[$id]}" = gpu ] && [ "$id" != gpu_probe ] && [ ! -f "$STATE/gpu" ]; then
      record "$id" SKIPPED "no usable GPU (gpu_probe)" 0; continue
    fi
    run_check "$id"
    if [ "$id" = build ] && ! grep -q $'^build\tPASS' "$STATE/results.tsv"; then build_ok=0; fi
    if [ "$id" = gpu_probe ] && [ -f "$STATE/mps" ]; then
      export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG
    fi
    # The emulated driver is loaded by its path by the component and the test programs alike.
    if [ "$id" = gpu_probe ] && [ "${DEVICE_RUN_FAKE_GPU:-0}" = 1 ] && [ -f "$STATE/gpu" ]; then
      export OMPI_MCA_coll_themis_cuda_driver=$BUILD/test/cuda/.libs/libcuda-fake.so
    fi
  done
  stop_mps
  if [ -n "$OSU_BUILD_PID" ] && [ ! -f "$STATE/osu_build.rc" ]; then kill_leftovers osu_build; fi

  summary
  status=0
  grep -q $'\tFAIL\t' "$STATE/results.tsv" && status=1
  if [ $VERIFY = 1 ]; then verify_summary "$OUT/summary.txt" || status=1; fi
  if [ "$MODE" = full ]; then   # only 8 files come back from the device tool's $OUT
    tar -C "$OUT" -czf "$OUT/device_run_logs.tar.gz" logs .state summary.txt && rm -rf "$LOGDIR" "$STATE"
    note "logs: $OUT/device_run_logs.tar.gz"
  else
    note "logs: $LOGDIR"
  fi
  exit $status
}

main "$@"
