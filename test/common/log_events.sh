# log_events.sh -- sourced (bash) by the scripts that read coll/themis's output: its event
# lines, "coll:themis:<event> key=value key=value ..." (the interface:
# docs/log-events.md). Keys are looked up by name
# (their order and other keys do not matter); quoted values ("a b", with \" \\ \n \t) are
# read unquoted. Nothing here reads the component's human lines.
#
#   log_values FILE EVENT KEYS [KEY=ERE]...
#       one line per EVENT line of FILE (- = standard input) for which every KEY=ERE
#       holds (the key is there and its whole value matches the extended regular
#       expression ERE): the values of KEYS (comma-separated names) joined by '|', a
#       missing key's empty; KEYS "" prints the event's whole key=value list instead
#   log_count FILE EVENT [KEY=ERE]...
#       how many such lines there are
#   log_spec_count FILE SPEC
#       the same for SPEC = "EVENT KEY=ERE ..." in one word list (an ERE that needs a
#       blank writes it [[:space:]]), as run_mpi_check.sh's --expect-event and cuda_run.sh's
#       --event take it
#
# E.g. log_values rank.log stats comm,themis coll=allreduce rank=0
#      log_count all.log transport transport=ucx 'comm=chk_info_.*'

# The event lines' reader: EVENT, the conditions (THEMIS_LOG_WHERE, one KEY=ERE a line)
# and the keys to print (THEMIS_LOG_KEYS) come through the environment, so that awk does
# not unescape them.
_themis_log_awk='
function parse(s,    n, i, c, k, v) {
  split("", F); n = length(s); i = 1
  while (i <= n) {
    while (i <= n && substr(s, i, 1) ~ /[ \t]/) i++
    if (i > n) break
    k = ""
    while (i <= n && (c = substr(s, i, 1)) != "=" && c !~ /[ \t]/) { k = k c; i++ }
    if (c != "=") continue
    i++; v = ""
    if (substr(s, i, 1) == "\"") {
      i++
      while (i <= n && (c = substr(s, i, 1)) != "\"") {
        if (c == "\\" && i < n) {
          i++; c = substr(s, i, 1)
          if (c == "n") c = "\n"; else if (c == "t") c = "\t"
        }
        v = v c; i++
      }
      i++
    } else {
      while (i <= n && (c = substr(s, i, 1)) !~ /[ \t]/) { v = v c; i++ }
    }
    F[k] = v; order[++nk] = k
  }
}
BEGIN {
  ev = ENVIRON["THEMIS_LOG_EVENT"]
  nw = split(ENVIRON["THEMIS_LOG_WHERE"], where, "\n")
  for (w = 1; w <= nw; w++) {
    p = index(where[w], "="); wk[w] = substr(where[w], 1, p - 1); wre[w] = "^(" substr(where[w], p + 1) ")$"
  }
  nkeys = split(ENVIRON["THEMIS_LOG_KEYS"], keys, ",")
  head = "coll:themis:" ev
}
{
  p = index($0, head " ")
  if (p == 0) { if (substr($0, length($0) - length(head) + 1) != head) next; p = length($0) - length(head) + 1 }
  nk = 0; parse(substr($0, p + length(head)))
  for (w = 1; w <= nw; w++) if (!(wk[w] in F) || F[wk[w]] !~ wre[w]) next
  out = ""
  if (nkeys == 0) { for (j = 1; j <= nk; j++) out = out (j > 1 ? " " : "") order[j] "=" F[order[j]] }
  else for (j = 1; j <= nkeys; j++) out = out (j > 1 ? "|" : "") F[keys[j]]
  print out
}'

log_values() {
  local file=$1 event=$2 keys=$3 where=''
  shift 3
  [ $# -eq 0 ] || where=$(printf '%s\n' "$@")
  [ "$file" = - ] && file=/dev/stdin
  THEMIS_LOG_EVENT=$event THEMIS_LOG_KEYS=$keys THEMIS_LOG_WHERE=$where awk "$_themis_log_awk" "$file"
}

log_count() {
  local file=$1 event=$2
  shift 2
  log_values "$file" "$event" '' "$@" | wc -l
}

log_spec_count() {
  local words
  read -ra words <<<"$2"
  log_count "$1" "${words[@]}"
}

# log_check_spec FILE...
#     every event line of the FILEs as docs/log-events.md specifies it (check_event_spec.py):
#     silent and true when they are, else the differences on stdout and false. Every test
#     that reads events calls it on its logs, so the code and the spec cannot drift apart.
log_check_spec() {
  local here out
  here=$(dirname "${BASH_SOURCE[0]}")
  out=$(python3 "$here/check_event_spec.py" "$here/../../docs/log-events.md" "$@") && return 0
  printf '%s\n' "$out" | head -20
  return 1
}
