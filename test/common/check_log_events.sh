#!/usr/bin/env bash
# check_log_events.sh -- the reader of the component's event lines (log_events.sh) on lines
# written as coll_themis_log.h specifies: keys in any order, quoted values with escapes,
# other keys, Open MPI's "[host:pid] " prefix, human lines and other events beside them.
set -uo pipefail
# shellcheck source=log_events.sh
source "$(dirname "${BASH_SOURCE[0]}")/log_events.sh"
fails=0
expect() { # expect WHAT GOT WANT
  if [ "$2" != "$3" ]; then echo "check_log_events: FAIL: $1: got [$2], want [$3]"; fails=$((fails + 1)); fi
}
log=$(mktemp /tmp/check_log_events.XXXXXX)
trap 'rm -f "$log"' EXIT
cat >"$log" <<'LINES'
[host:00365] coll:themis:setup comm="MPI COMMUNICATOR 3 DUP FROM 0" cid=3 rank=0 buffers=host
coll:themis: comm MPI_COMM_WORLD (cid 0) rank 0: transport ucx (a human line)
coll:themis:transport comm=MPI_COMM_WORLD cid=0 rank=1 transport=pml asked=ucx asked_by=coll_themis_transport ucx_unusable="MPI_THREAD_MULTIPLE (a \"quoted\" word, a \\ and a\ttab)" parts=0:64512,1:64512
coll:themis:declined comm=chk_x cid=5 rank=2 reason=bad_dims dims=2x4:bw=fast why=""
coll:themis:stats rank=3 themis=0 coll=allreduce calls=12 cid=9 comm=chk_many_01 new_key=1
coll:themis:stats comm=chk_many_02 cid=10 rank=3 coll=allgather calls=7 themis=7
coll:themis:statsx comm=chk_many_03 cid=11 rank=0 coll=allreduce calls=1 themis=1
LINES
expect "quoted comm" "$(log_values "$log" setup comm,buffers)" "MPI COMMUNICATOR 3 DUP FROM 0|host"
expect "escapes" "$(log_values "$log" transport ucx_unusable)" \
  "MPI_THREAD_MULTIPLE (a \"quoted\" word, a \\ and a"$'\t'"tab)"
expect "value with = and :" "$(log_values "$log" declined dims,why,rank reason=bad_dims)" "2x4:bw=fast||2"
expect "keys in any order" "$(log_values "$log" stats comm,rank,coll,calls,themis themis=0)" \
  "chk_many_01|3|allreduce|12|0"
expect "a missing key" "$(log_values "$log" stats comm,no_such_key coll=allgather)" "chk_many_02|"
expect "whole value" "$(log_count "$log" stats coll=all)" 0
expect "ERE" "$(log_count "$log" stats 'comm=chk_many_.*' 'themis=[1-9][0-9]*')" 1
expect "an event, not its prefix" "$(log_count "$log" stats)" 2
expect "a human line is no event" "$(log_count "$log" transport transport=ucx)" 0
expect "spec" "$(log_spec_count "$log" "transport rank=1 ucx_unusable=MPI_THREAD_MULTIPLE[[:space:]].*")" 1
expect "stdin" "$(log_values - stats calls coll=allgather <"$log")" 7
expect "the whole list" "$(log_values "$log" declined '')" "comm=chk_x cid=5 rank=2 reason=bad_dims dims=2x4:bw=fast why="
[ "$fails" = 0 ] || exit 1
echo "check_log_events: OK"
