#!/usr/bin/env bash
# mpirun_flags.sh -- the one place that knows how mpirun's options differ between the
# Open MPI series themis supports (4.1: ORTE's mpirun; 5.0: PRRTE's prterun under the same
# name). Every script that starts mpirun (test/, bench/, bench/netem) asks here instead of
# spelling a series' options itself.
#
# Sourced:   . test/common/mpirun_flags.sh; mapfile -t opts < <(mpirun_flags CONCERN [ARG])
# Executed:  mpirun_flags.sh [--mpirun PATH] CONCERN [ARG]   (for Python: bench/netem)
# Prints the options of one concern for the mpirun in $MPIRUN (default: mpirun on PATH),
# one per line:
#   series              the series, "4.1" or "5.0" (from mpirun --version)
#   base                what every test run needs on this box: run as root when root,
#                       more ranks than cores, no binding (ranks share two cores)
#   rank-log DIR        the words to put before the program so that each rank writes its
#                       stdout and stderr itself into DIR/rank.N.log (N: its MPI_COMM_WORLD
#                       rank; DIR must exist), past the launcher's output forwarding;
#                       rank_logs DIR (below) prints them, rank 0's first
#   component-path DIRS where coll/themis and Open MPI's own components are loaded from
#   launch-agent CMD    start the remote daemons with CMD instead of ssh, one level deep
#   oob-if SUBNET       the daemons' own (out-of-band) traffic on SUBNET only
#   btl LIST            the BTLs in LIST (comma-separated, as --mca btl takes them), shared
#                       memory's named sm as on 5.0
#   han-by-request      coll/han only on communicators that ask for it by the info key
#                       ompi_comm_coll_preference, below tuned otherwise, as 4.1 has it
# An mpirun of another series, or an unknown concern, is an error (exit 2).

# mpirun_series: 4.1 or 5.0 for $MPIRUN, remembered per path.
mpirun_series() {
  local mpirun=${MPIRUN:-mpirun} version
  if [ "${_MPIRUN_SERIES_OF:-}" != "$mpirun" ]; then
    version=$("$mpirun" --version 2>/dev/null | sed -n 's/^mpirun (Open MPI) \([0-9]*\.[0-9]*\).*/\1/p')
    case $version in
      4.1|5.0) ;;
      *) echo "mpirun_flags: $mpirun is not Open MPI 4.1 or 5.0 (mpirun --version: '${version:-?}')" >&2
         return 2 ;;
    esac
    _MPIRUN_SERIES_OF=$mpirun _MPIRUN_SERIES=$version
  fi
  echo "$_MPIRUN_SERIES"
}

# Daemon (not MPI) parameters: ORTE reads them as --mca, PRRTE only as --prtemca, with
# plm's ssh component named "ssh" instead of "rsh".
_daemon_param() {  # _daemon_param SERIES NAME VALUE
  if [ "$1" = 5.0 ]; then printf '%s\n' --prtemca "${2/plm_rsh_/plm_ssh_}" "$3"
  else printf '%s\n' --mca "$2" "$3"; fi
}

mpirun_flags() {
  local series
  series=$(mpirun_series) || return
  case ${1:-} in
    series) echo "$series" ;;
    base)
      # Both series accept --allow-run-as-root and --oversubscribe (5.0 maps the latter to
      # --map-by :OVERSUBSCRIBE); only root needs the former.
      [ "$(id -u)" != 0 ] || echo --allow-run-as-root
      printf '%s\n' --oversubscribe --bind-to none ;;
    rank-log)
      # The same on both series, and no mpirun option: the launchers' own per-rank files
      # cut lines. 5.0.9's --output dir= (stderr merged into stdout) joined a rank's two
      # pipes by whatever it read from each, and put another rank's line inside a line cut
      # at a 4 KiB read (CI: a stats event read without its value); on the console, lines
      # of different ranks interleave alike. A rank writing its own file keeps every line
      # whole: it writes each line at once (opal_output; line-buffered stdout).
      printf '%s\n' /bin/sh -c 'exec "$@" >"$0/rank.$OMPI_COMM_WORLD_RANK.log" 2>&1' \
        "${2:?rank-log needs DIR}" ;;
    component-path)
      # The MCA name itself: 5.0's synonym mca_component_path given with --mca does not
      # reach the ranks (the environment form does); mca_base_component_path does, on both.
      printf '%s\n' --mca mca_base_component_path "${2:?component-path needs DIRS}" ;;
    launch-agent)
      _daemon_param "$series" plm_rsh_agent "${2:?launch-agent needs CMD}"
      _daemon_param "$series" plm_rsh_no_tree_spawn 1 ;;
    oob-if)
      _daemon_param "$series" oob_tcp_if_include "${2:?oob-if needs SUBNET}" ;;
    btl)
      # Shared memory's BTL is vader on 4.1; 5.0 renamed it sm (4.1 has no BTL of that name).
      local list=${2:?btl needs LIST}
      # shellcheck disable=SC2001  # \b: whole names only (not smcuda)
      [ "$series" = 5.0 ] || list=$(sed 's/\bsm\b/vader/g' <<<"$list")
      printf '%s\n' --mca btl "$list" ;;
    han-by-request)
      # 5.0 gives han priority 35, above tuned's 30, so a communicator that only excludes
      # themis ("^themis") runs han, not tuned; 4.1's han has priority 0 already. A
      # communicator that names han ("han,^themis") gets it at any priority.
      [ "$series" != 5.0 ] || printf '%s\n' --mca coll_han_priority 0 ;;
    *) echo "mpirun_flags: unknown concern '${1:-}'" >&2; return 2 ;;
  esac
}

# rank_logs DIR: what the ranks of a job started with `mpirun_flags rank-log DIR` printed,
# rank 0's file first.
rank_logs() {
  find "${1:?rank_logs needs DIR}" -type f -name 'rank.*.log' | sort -V | xargs -r cat
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  if [ "${1:-}" = --mpirun ]; then MPIRUN=$2; shift 2; fi
  mpirun_flags "$@"
fi
