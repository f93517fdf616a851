#!/usr/bin/env python3
"""within.py MEASURED RATES TOLERANCE -- exit 0 when every measured bandwidth (a spec list,
e.g. "98.92Mbps,49.6Mbps") lies within TOLERANCE (e.g. 0.15) of the TCP payload rate of a
link shaped at RATES Mbit/s (e.g. "100,50"), the figure `netem.py calibrate` expects
(MTU 9000, or $NETEM_MTU). Prints both."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topo import goodput, parse_bw_mbit  # noqa: E402  (netem.py's units and payload factor)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    measured = [parse_bw_mbit(r) for r in sys.argv[1].split(",")]
    factor = goodput(int(os.environ.get("NETEM_MTU", "9000")))
    payload = [float(r) * factor for r in sys.argv[2].split(",")]
    tolerance = float(sys.argv[3])
    print("measured %s Mbit/s, links' payload %s Mbit/s" %
          (", ".join("%.1f" % m for m in measured), ", ".join("%.1f" % p for p in payload)))
    ok = len(measured) == len(payload) and all(abs(m / p - 1) <= tolerance
                                               for m, p in zip(measured, payload))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
