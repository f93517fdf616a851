#!/usr/bin/env bash
# check_calibration.sh -- where a communicator's rates come from, end to end. themis-info
# (an exact, checked allreduce of 1 MiB) runs on 4 ranks as 2x2 on this machine, and the
# component's verbose lines must say, on every rank alike:
#   measured  a spec without bw=/lat= is calibrated (and the cost said), the file written;
#   cached    a second job with the same file reads it and measures nothing;
#   format 1  a file written before fill curves is measured again, silently, and rewritten;
#   given     bw= given wins, the latency is still measured; fill= given wins over the
#             fill curve's measurement;
#   default   coll_themis_calibration_seconds 0 measures nothing;
#   damaged   a calibration file that is not one is reported once and rewritten; a damaged
#             line in a good file is reported once, the good entries still used;
#   user cache coll_themis_calibration_file auto (the default) keeps the rates and the node
#             transport's measured choice in $XDG_CACHE_HOME/coll-themis/calibration: a
#             second job measures nothing; none keeps nothing;
#   bad value a negative budget gets the bad-param message and the default;
#   failed    a measurement that fails on some ranks (a test hook): all keep the
#             defaults, said once;
#   topo file an unreadable topology file is reported once, the job runs on.
# Environment: MPIRUN, THEMIS_BUILDDIR, OMPI_DEFAULT_COMPONENT_DIR.
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
# shellcheck source=../common/log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/log_events.sh"
OUT=$BUILDDIR/test/mpi/logs/calibration
rm -rf "$OUT" && mkdir -p "$OUT"
fail() { echo "check_calibration: FAIL: $*"; exit 1; }

# run NAME MCA-ARGS...: themis-info on 4 ranks (started through WRAP, a command prefix,
# when set); its results must be exact. What the component did: its events selected and
# calibration (coll_themis_verbose 1; test/common/log_events.sh). The node transport is fixed (cma): with auto each
# job measures its own choice, and a choice that differs keys other file entries.
WRAP=()
run() {
  local name=$1; shift
  mpirun_logged "$OUT/$name.log" 120 -np 4 \
    --mca coll_themis_verbose 1 -x OMPI_MCA_coll_themis_verbose=1 \
    --mca coll_themis_node_transport cma "$@" \
    -- "${WRAP[@]}" "$BUILDDIR/tools/themis-info" -v 1 -m 1M ||
    fail "$name: the run failed (log $OUT/$name.log)"
  grep -q 'results exact on every rank' "$OUT/$name.log" || fail "$name: results not exact"
}
# sources NAME BW LAT [FILL]: every rank's event selected names these sources (the fill
# curve's the latency's unless FILL is given), and all four ranks select the same
# dimensions (they plan with identical numbers, fill curves included).
sources() {
  local n fill=${4:-$3}
  n=$(log_count "$OUT/$1.log" selected "bw_source=$2" "lat_source=$3" "fill_source=$fill")
  [ "$n" = 4 ] ||
    fail "$1: $n of 4 ranks say bw_source=$2 lat_source=$3 fill_source=$fill (log $OUT/$1.log)"
  n=$(log_values "$OUT/$1.log" selected dims | sort -u | wc -l)
  [ "$n" = 1 ] || fail "$1: the ranks disagree on the dimensions (log $OUT/$1.log)"
}
measured_cost() { log_count "$OUT/$1.log" calibration 'seconds=[0-9.]+'; }

file=$OUT/calibration.txt
run measured --mca coll_themis_dims 2x2 --mca coll_themis_calibration_file "$file"
sources measured measured,measured measured,measured
[ "$(measured_cost measured)" = 4 ] || fail "measured: the calibration's cost is not said on every rank"
# Whether the dimensions share a resource is decided on agreed numbers: every rank says the same.
verdicts=$(log_values "$OUT/measured.log" calibration joint_slowdown,shared \
  'joint_slowdown=[0-9.]+' 'shared=(yes|no)')
[ "$(wc -l <<<"$verdicts")" = 4 ] && [ "$(sort -u <<<"$verdicts" | wc -l)" = 1 ] ||
  fail "measured: the ranks do not all say one joint_slowdown and shared verdict:" \
    "$verdicts (log $OUT/measured.log)"
head -n 1 "$file" | grep -qx 'themis-calibration 4' || fail "measured: $file has no header"
grep -Eq '^2x2-[0-9a-f]+-(cma[0-9,]+\+)?pml 2x2:bw=' "$file" || fail "measured: $file has no 2x2 entry"

run cached --mca coll_themis_dims 2x2 --mca coll_themis_calibration_file "$file"
sources cached cached,cached cached,cached
[ "$(measured_cost cached)" = 0 ] || fail "cached: measured although the file had the layout"
want=$(log_values "$OUT/measured.log" selected dims | head -n 1)
[ "$(log_values "$OUT/cached.log" selected dims | sort -u)" = "$want" ] ||
  fail "cached: other rates than the file's ($want)"

format1=$OUT/format1.txt
sed -e '1s/.*/themis-calibration 1/' "$file" >"$format1"
run format1 --mca coll_themis_dims 2x2 --mca coll_themis_calibration_file "$format1"
sources format1 measured,measured measured,measured
[ "$(measured_cost format1)" = 4 ] || fail "format1: a file of format 1 was used"
! grep -q 'cannot use the calibration file' "$OUT/format1.log" || fail "format1: reported as damaged"
head -n 1 "$format1" | grep -qx 'themis-calibration 4' || fail "format1: the file was not rewritten"

run given --mca coll_themis_dims 2x2:bw=10Gbps,20Gbps
sources given given,given measured,measured
[ "$(log_count "$OUT/given.log" selected 'dims=2x2:bw=10Gbps,20Gbps:lat=.*')" = 4 ] ||
  fail "given: bw= not kept"

run fill_given --mca coll_themis_dims 2x2:fill=1,0.5/0.9
sources fill_given measured,measured measured,measured given,given
[ "$(log_count "$OUT/fill_given.log" selected 'dims=2x2:.*:fill=1,0.5/0.9')" = 4 ] ||
  fail "fill_given: fill= not kept"

run off --mca coll_themis_dims 2x2 --mca coll_themis_calibration_seconds 0
sources off default,default default,default
[ "$(measured_cost off)" = 0 ] || fail "off: measured with a budget of 0 s"

damaged=$OUT/damaged.txt
echo 'not a calibration file' >"$damaged"
run damaged --mca coll_themis_dims 2x2 --mca coll_themis_calibration_file "$damaged"
sources damaged measured,measured measured,measured
n=$(grep -c 'cannot use the calibration file' "$OUT/damaged.log")
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "damaged: said $n times (once per process at most)"
head -n 1 "$damaged" | grep -qx 'themis-calibration 4' || fail "damaged: the file was not rewritten"

# A damaged line among good ones: said once per process at most, the good entry still read.
damaged_line=$OUT/damaged_line.txt
cp "$file" "$damaged_line"
echo 'k2 2x2:bw=fast 2024-05-01T12:34:56Z' >>"$damaged_line"
run damaged_line --mca coll_themis_dims 2x2 --mca coll_themis_calibration_file "$damaged_line"
sources damaged_line cached,cached cached,cached
n=$(grep -c 'cannot use the calibration file' "$OUT/damaged_line.log")
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "damaged_line: said $n times (once per process at most)"
grep -q 'damaged_line.txt:[0-9]*: the spec does not parse' "$OUT/damaged_line.log" ||
  fail "damaged_line: the message does not name the line"

# The user's cache, by default: the first job measures the rates and the node transport's
# choice and keeps both there, the second measures nothing; none keeps nothing.
xdg=$OUT/xdg
cache_run() { # NAME MCA-ARGS...: with the node transport chosen by measurement (auto)
  local name=$1; shift
  mpirun_logged "$OUT/$name.log" 120 -np 4 -x XDG_CACHE_HOME="$xdg" \
    --mca coll_themis_verbose 1 --mca coll_themis_dims 2x2 --mca coll_themis_node_transport auto \
    "$@" -- "$BUILDDIR/tools/themis-info" -v 1 -m 1M || fail "$name: the run failed (log $OUT/$name.log)"
  grep -q 'results exact on every rank' "$OUT/$name.log" || fail "$name: results not exact"
}
cache_run cache_first --mca coll_themis_calibration_file auto
sources cache_first measured,measured measured,measured
[ "$(log_count "$OUT/cache_first.log" node_transport source=measured)" = 4 ] ||
  fail "cache_first: the node transport was not measured on every rank"
kept=$xdg/coll-themis/calibration
[ -f "$kept" ] || fail "cache_first: no $kept"
[ "$(stat -c %a "$xdg/coll-themis")" = 700 ] || fail "cache_first: $xdg/coll-themis is not the user's alone"
grep -Eq '^2x2-[0-9a-f]+-node-pml cma=' "$kept" || fail "cache_first: no node choice in $kept"
cache_run cache_second --mca coll_themis_calibration_file auto
sources cache_second cached,cached cached,cached
[ "$(measured_cost cache_second)" = 0 ] || fail "cache_second: measured although cached"
[ "$(log_count "$OUT/cache_second.log" node_transport source=remembered)" = 4 ] ||
  fail "cache_second: the node transport's choice was not taken from the cache"
rm -rf "$xdg"
cache_run cache_none --mca coll_themis_calibration_file none
sources cache_none measured,measured measured,measured
[ ! -e "$xdg/coll-themis" ] || fail "cache_none: something was kept in $xdg"

run bad_value --mca coll_themis_dims 2x2 --mca coll_themis_calibration_seconds -1
grep -q 'coll_themis_calibration_seconds has the value -1' "$OUT/bad_value.log" ||
  fail "bad_value: no bad-param message"
sources bad_value measured,measured measured,measured

# the odd ranks' measurement fails (a test hook): every rank must keep the defaults
WRAP=(bash -c '(( OMPI_COMM_WORLD_RANK % 2 )) && export THEMIS_TEST_CALIBRATION_FAILS=1; exec "$0" "$@"')
run failed --mca coll_themis_dims 2x2
WRAP=()
sources failed default,default default,default
n=$(grep -c 'could not measure the rates' "$OUT/failed.log")
[ "$n" = 1 ] || fail "failed: the failure was said $n times, not once"

run topo_missing --mca coll_themis_dims auto --mca coll_themis_single_dim 1 \
  --mca coll_themis_topo_file "$OUT/no-such-file"
n=$(grep -c 'cannot use the topology file' "$OUT/topo_missing.log")
[ "$n" = 1 ] || fail "topo_missing: said $n times, not once"

spec_diff=$(log_check_spec "$OUT"/*.log) || fail "event lines differ from docs/log-events.md: $spec_diff"
echo "check_calibration: OK: measured, cached, format 1, given, fill given, default, damaged file and line, the user's cache, none, bad value, failed measurement, topology file"
