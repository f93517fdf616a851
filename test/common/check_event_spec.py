#!/usr/bin/env python3
"""check_event_spec.py -- the event lines a run wrote against their one spec, docs/log-events.md.

    check_event_spec.py SPEC.md LOG...     exit 0: every event line of the LOGs is as specified;
                                           1: some differ (each one named); 2: bad spec or usage

The spec is the tables of docs/log-events.md's "## Events" section: a row per event, its
first column the event's name, its second the keys, written `key=VALUE`; the keys after the
word "optional" may be absent, those before it must be there. An upper-case letter in a key
stands for a number (`dimD_cma_ms`: dim0_cma_ms, dim1_cma_ms, ...). The "reason" table's keys
are declined's, optional. Every event carries comm, cid and rank unless its row says it has
"no `comm`". A line differs from the spec when its event is not in it, a key it must have is
missing, or it has a key the spec does not name: the code and the documentation then disagree.
"""
import re
import sys

EVENT_LINE = re.compile(r"coll:themis:([a-z0-9_]+)(?: (.*))?$")
KEY = re.compile(r"(?<![A-Za-z0-9_])([a-z][A-Za-z0-9_]*)=")
COMMON = ("comm", "cid", "rank")


def key_pattern(key):
    """A key as the spec writes it, as a regular expression (capitals: a number)."""
    return re.compile("^" + re.sub(r"[A-Z]+", "[0-9]+", key) + "$")


def keys_of(cell):
    """(required, optional) key patterns of a table cell."""
    required, _, optional = cell.partition("optional")
    return ([key_pattern(k) for k in KEY.findall(required)],
            [key_pattern(k) for k in KEY.findall(optional)])


def read_spec(path):
    """{event: (required, optional, has_comm)} from the spec's tables."""
    spec, reason_keys, table, in_events = {}, [], None, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            in_events = line.strip() == "## Events"
            continue
        if not in_events or not line.startswith("|"):
            table = None if not line.startswith("|") else table
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if table is None:  # a header row
            table = cells[0].strip("`")
            continue
        name = cells[0].strip("`")
        if len(cells) < 2 or not re.fullmatch(r"[a-z0-9_]+", name):
            continue  # the separator row, or a row of several reasons
        if table == "event":
            required, optional = keys_of(cells[1])
            spec[name] = (required, optional, "no `comm`" not in line)
        elif table == "reason":
            reason_keys += [p for group in keys_of(cells[1]) for p in group]
    if "declined" not in spec or len(spec) < 10:
        sys.exit(f"check_event_spec: no event tables found in {path}")
    spec["declined"][1].extend(reason_keys)
    return spec


def read_keys(text):
    """The keys of an event line's key=value list (values may be quoted, with escapes)."""
    keys, i, n = [], 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        start = i
        while i < n and text[i] not in "= \t":
            i += 1
        if i >= n or text[i] != "=":
            continue
        keys.append(text[start:i])
        i += 1
        if i < n and text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        while i < n and text[i] not in " \t":
            i += 1
    return keys


def problems_of(spec, event, keys):
    if event not in spec:
        return [f"event {event} is not in the spec"]
    required, optional, has_comm = spec[event]
    named = required + optional + ([key_pattern(k) for k in COMMON] if has_comm else [])
    out = [f"{event}: key {k} is not in the spec" for k in keys
           if not any(p.match(k) for p in named)]
    musts = required + ([key_pattern(k) for k in COMMON] if has_comm else [])
    out += [f"{event}: key {p.pattern[1:-1]} is missing" for p in musts
            if not any(p.match(k) for k in keys)]
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    spec = read_spec(argv[1])
    failures, lines = 0, 0
    for path in argv[2:]:
        for number, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            at = line.find("coll:themis:")
            match = EVENT_LINE.match(line[at:].rstrip("\n")) if at >= 0 else None
            if not match:
                continue
            lines += 1
            for problem in problems_of(spec, match.group(1), read_keys(match.group(2) or "")):
                failures += 1
                print(f"check_event_spec: {path}:{number}: {problem}")
    if failures:
        print(f"check_event_spec: FAIL: {failures} differences from {argv[1]} in {lines} event lines")
        return 1
    print(f"check_event_spec: {lines} event lines as {argv[1]} says")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
