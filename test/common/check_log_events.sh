#!/usr/bin/env bash
# check_log_events.sh -- the reader of the component's event lines (log_events.sh) on lines
# written as docs/log-events.md specifies: keys in any order, quoted values with escapes,
# other keys, Open MPI's "[host:pid] " prefix, human lines and other events beside them; and
# the spec's checker (log_check_spec) on lines as specified and on each kind of difference.
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

# The spec's checker (log_check_spec, check_event_spec.py against docs/log-events.md): true on
# lines as specified, false on each kind of difference.
spec_verdict() { # spec_verdict LINE: "ok" or "differs"
  printf '%s\n' "$1" >"$log"
  if log_check_spec "$log" >/dev/null; then echo ok; else echo differs; fi
}
expect "spec: as specified" "$(spec_verdict 'coll:themis:stats comm=c cid=1 rank=0 coll=bcast calls=3 themis=3')" ok
expect "spec: a key missing" "$(spec_verdict 'coll:themis:stats comm=c cid=1 rank=0 coll=bcast calls=3')" differs
expect "spec: comm missing" "$(spec_verdict 'coll:themis:stats cid=1 rank=0 coll=bcast calls=3 themis=3')" differs
expect "spec: a key not in it" "$(spec_verdict 'coll:themis:stats comm=c cid=1 rank=0 coll=bcast calls=3 themis=3 new_key=1')" differs
expect "spec: an event not in it" "$(spec_verdict 'coll:themis:statsx comm=c cid=1 rank=0')" differs
expect "spec: a numbered key" "$(spec_verdict 'coll:themis:node_transport comm=c cid=1 rank=0 cma=0 source=measured dim0=cma dim0_cma_ms=1 dim0_transport_ms=2 allreduce_mib=1')" ok
expect "spec: a bad numbered key" "$(spec_verdict 'coll:themis:node_transport comm=c cid=1 rank=0 cma=0 source=measured dimx_cma_ms=1')" differs
expect "spec: no comm where none is due" "$(spec_verdict 'coll:themis:staging budget=1 peak_bytes=1 loads=1 load_bytes=1 evictions=0 eviction_bytes=0 stored_bytes=0')" ok
expect "spec: comm where none is due" "$(spec_verdict 'coll:themis:staging comm=c cid=1 rank=0 budget=1 peak_bytes=1 loads=1 load_bytes=1 evictions=0 eviction_bytes=0 stored_bytes=0')" differs
expect "spec: a reason's key" "$(spec_verdict 'coll:themis:declined comm=c cid=1 rank=0 reason=nothing_below slots=allreduce')" ok
expect "spec: quoted values" "$(spec_verdict 'coll:themis:declined comm="a b=c" cid=1 rank=0 reason=layout why="x y=z \" w"')" ok
[ "$fails" = 0 ] || exit 1
echo "check_log_events: OK"
