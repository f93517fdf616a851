#!/usr/bin/env python3
"""netem.py -- an emulated multi-dimensional network on one Linux box, for coll/themis.

Network namespaces, veth links, Linux bridges and tbf shaping; python3 stdlib only; root only.
No latency emulation (this kernel has no netem qdisc): bandwidth shaping only.

  netem.py check                                   kernel/tool support, one line per problem
  netem.py up --dims 2x4 --rates 200,100           build the network (mode 'ranks', the default)
  netem.py up --dims 2x4:bw=200Mbps,100Mbps --mode hosts [--ppn 2] [--intra net|shm]
  netem.py run [--themis] -- [mpirun args] prog args
  netem.py calibrate [--seconds 1] [--load]        pair bandwidth per dimension vs tc rate
  netem.py topo-file > net.topo                    hosts mode: coll_themis_topo_file of the network
  netem.py rate --dim 1 --rate 50                  change one dimension's links' rate, live
  netem.py status | down
  netem.py ompi [KEY]                              the Open MPI and build directory it uses

Open MPI: $THEMIS_OMPI=PREFIX (Open MPI 4.1 or 5.0 installed there), else the one coll/themis's
build directory was configured against; build directory $THEMIS_BUILD_DIR, default
<repo>/build-<basename PREFIX>, or <repo>/build (Debian's 4.1 on PATH).

Modes (see bench/netem/README.md):
  ranks  one namespace per rank, one shaped link per dimension into a per-(dimension, group)
         bridge, identity /32 address per rank routed dimension-order by the kernel. One mpirun
         in the root namespace; each rank goes through a wrapper that relays PMIx into its
         namespace. Open MPI sees ONE node (coll/han steps aside).
  hosts  namespaces <p>h<i> are Open MPI nodes (hostfile names), each running one daemon (4.1:
         orted, 5.0: prted) in its own UTS namespace, started by a generated launch agent;
         mpirun runs in <p>head; the daemons talk over an unshaped management bridge. Ranks per
         host = --ppn (the first dimensions).
         --intra net (default): every rank still has its own namespace and shaped links for
           EVERY dimension (data plane = ranks mode), the wrapper relays PMIx to its host's
           daemon. Every dimension shaped AND han sees ppn ranks per node.
         --intra shm: ranks live in their host's namespace and use shared memory (vader on
           4.1, sm on 5.0; unshaped) inside the host; the host has one shaped NIC per
           inter-host dimension, at ppn x the per-rank rate (the ranks of a host share it),
           with the same identity-address routing between hosts.
"""

import argparse
import json
import os
import shutil
import sys
import time

from nsutil import (DEFAULT_MTU, HERE, InNetns, NetemError, die, ip_batch, mpirun_flags, ompi,
                    run_cmd, write_sysctls)
from topo import (Topo, check_prefix, expand_list, goodput, load_state, names_of_other_networks,
                  need_root, ours_by_pattern, parse_bw_mbit, parse_dims, prod, state_dir, tbf_args,
                  teardown, verify)
from launch import build_mpirun, cmd_run, cmd_wrap, run_locked


# --------------------------------------------------------------------------- subcommands

def cmd_check(args, quiet=False):
    """Prints one line per problem (or OK); returns the list of problems."""
    problems = check_support(args.prefix)
    if not quiet:
        if problems:
            for p in problems:
                print("netem check: MISSING: " + p)
        else:
            print("netem check: OK (root; netns, veth, bridge, tbf, setns, unshare --uts; "
                  "ip, tc, timeout, unshare, hostname present; Open MPI %s: %s)"
                  % (mpirun_flags("series")[0], ompi()["mpirun"]))
    return problems


def check_support(prefix):
    problems = []
    if os.geteuid() != 0:
        problems.append("not root: network namespaces, veth and tc need root (CAP_NET_ADMIN+CAP_SYS_ADMIN)")
        return problems
    for tool in ("ip", "tc", "timeout", "unshare", "hostname"):
        if not shutil.which(tool):
            problems.append("missing command %s (packages: iproute2, coreutils, util-linux, hostname)" % tool)
    o = ompi()
    for tool in ("mpirun", "mpicc"):    # those of the Open MPI netem runs
        if not shutil.which(o[tool]):
            problems.append("missing command %s (%s)" % (o[tool], "THEMIS_OMPI=" + o["prefix"] if o["prefix"]
                                                         else "packages openmpi-bin, libopenmpi-dev"))
    if not problems:
        try:
            mpirun_flags("series")
        except NetemError as e:
            problems.append(str(e))
    if problems:
        return problems
    ns = prefix + "chk"
    run_cmd(["ip", "netns", "del", ns], check=False)
    try:
        steps = [
            ("network namespaces (ip netns add)", ["ip", "netns", "add", ns]),
            ("veth pairs", ["ip", "-n", ns, "link", "add", "c0", "type", "veth", "peer", "name", "c1"]),
            ("Linux bridges", ["ip", "-n", ns, "link", "add", "cb", "type", "bridge"]),
            ("bridge ports", ["ip", "-n", ns, "link", "set", "c1", "master", "cb"]),
            ("tbf qdisc (CONFIG_NET_SCH_TBF)", ["tc", "-n", ns, "qdisc", "add", "dev", "c0", "root"]
             + tbf_args(100).split()),
            ("UTS namespaces (unshare --uts)", ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                                                "hostname netemchk && test $(hostname) = netemchk"]),
        ]
        for what, argv in steps:
            p = run_cmd(argv, check=False, timeout=20)
            if p.returncode != 0:
                problems.append("kernel/tool lacks %s: `%s` -> %s" % (what, " ".join(argv),
                                                                     (p.stderr or p.stdout).strip()))
                break
        if not problems:
            try:
                with InNetns(ns):
                    pass
            except OSError as e:
                problems.append("setns() into a network namespace failed: %s" % e)
    finally:
        run_cmd(["ip", "netns", "del", ns], check=False)
    return problems


def cmd_up(args):
    need_root()
    check_prefix(args.prefix)
    dims, spec_rates, fields = parse_dims(args.dims)
    if args.rates:
        rates = expand_list([parse_bw_mbit(x, "mbit") for x in args.rates.split(",")], len(dims), "--rates")
    elif spec_rates:
        rates = spec_rates
    else:
        die("give per-dimension rates: --rates 200,100 (Mbit/s) or --dims 2x4:bw=200Mbps,100Mbps")
    if "lat" in fields:
        print("netem: note: lat= is passed to themis only; this kernel has no netem qdisc, no latency is emulated")
    if not 576 <= args.mtu <= 65000:
        die("--mtu %d: give an MTU from 576 to 65000 bytes" % args.mtu)
    topo = Topo(args.prefix, dims, rates, args.mode, args.ppn, args.intra, fields, args.shm_bw,
                args.burst_ms, args.queue_ms, args.mtu)
    for r in topo.link_rates:
        if r > 10000:
            die("link rate %g Mbit/s is beyond what tbf on 2 cores can shape" % r)
    clash = set(topo.namespaces()) & names_of_other_networks(args.prefix)
    if clash:
        die("namespaces %s belong to another network; use another --prefix" % " ".join(sorted(clash)))
    t0 = time.monotonic()
    if load_state(args.prefix) or ours_by_pattern(args.prefix):
        teardown(args.prefix, quiet=True)
    t1 = time.monotonic()
    root, per_ns, tc = topo.plan()
    ncmd = len(root) + sum(map(len, per_ns.values())) + sum(map(len, tc.values()))
    try:
        ip_batch(None, [l for l in root if l.startswith("netns add")])
        for ns in topo.endpoints:   # before the devices exist, so that they inherit it
            write_sysctls(ns, {"ipv4/ip_forward": 1, "ipv4/conf/all/rp_filter": 0,
                               "ipv4/conf/default/rp_filter": 0})
        ip_batch(None, [l for l in root if not l.startswith("netns add")])
        ip_batch(topo.switch, per_ns.pop(topo.switch))
        for ns, lines in per_ns.items():
            ip_batch(ns, lines)
        for ns, lines in tc.items():
            ip_batch(ns, lines, what="tc")
        for ns in topo.endpoints:
            write_sysctls(ns, {}, per_dev={"rp_filter": 0})
        tcp_cc = set_congestion_control(topo.endpoints, args.tcp_cc)
        os.makedirs(state_dir(args.prefix), exist_ok=True)
        write_host_files(topo)
        with open(os.path.join(state_dir(args.prefix), "state.json"), "w") as f:
            json.dump(topo.to_json(), f, indent=1)
        t2 = time.monotonic()
        if not args.no_verify:
            verify(topo)
    except (NetemError, OSError) as e:
        print("netem up: failed: %s" % e, file=sys.stderr)
        print("netem up: tearing down what was created", file=sys.stderr)
        teardown(args.prefix, quiet=True)
        sys.exit(1)
    t3 = time.monotonic()
    print_summary(topo)
    print("  TCP congestion control: %s" % (tcp_cc or "the kernel's default"))
    print("netem up: %d ip/tc commands; teardown of old %.2f s, build %.2f s, reachability check %.2f s"
          % (ncmd, t1 - t0, t2 - t1, t3 - t2))


def set_congestion_control(endpoints, name):
    """Gives the namespaces that hold the ranks' TCP sockets one congestion control. Why: the
    kernel's default may be BBR, which paces each connection at its own, re-probed estimate
    of the path's rate; with it one collective's time moved by up to 10 points from job to
    job (bench/netem/README.md, Pitfalls), with cubic by 3. A namespace may pick only what
    the root namespace allows, so `name` is added to net.ipv4.tcp_allowed_congestion_control
    if it is missing there.
    Returns the name set, or None where the namespaces keep the kernel's default."""
    if name == "keep":
        return None
    base = "/proc/sys/net/ipv4/"
    try:
        with open(base + "tcp_available_congestion_control") as f:
            if name not in f.read().split():
                raise OSError("not in this kernel")
        with open(base + "tcp_allowed_congestion_control") as f:
            allowed = f.read().split()
        if name not in allowed:
            with open(base + "tcp_allowed_congestion_control", "w") as f:
                f.write(" ".join(allowed + [name]))
            print("netem up: note: added %s to net.ipv4.tcp_allowed_congestion_control" % name)
        for ns in endpoints:
            write_sysctls(ns, {"ipv4/tcp_congestion_control": name})
        return name
    except (OSError, NetemError) as e:
        # Only the benchmarks' noise depends on it: the network works with any.
        print("netem up: note: TCP congestion control %s not set (%s); the namespaces keep "
              "the kernel's default" % (name, e))
        return None


def write_host_files(topo):
    if topo.mode != "hosts":
        return
    d = state_dir(topo.prefix)
    with open(os.path.join(d, "hostfile"), "w") as f:
        for h in topo.hosts:
            f.write("%s slots=%d\n" % (h, topo.ppn))
    agent = os.path.join(d, "agent.sh")
    with open(agent, "w") as f:
        f.write("""#!/bin/sh
# Generated by netem.py up: mpirun's launch agent (test/common/mpirun_flags.sh launch-agent:
# 4.1 --mca plm_rsh_agent, 5.0 --prtemca plm_ssh_agent %(agent)s).
# The launcher calls it like ssh: agent.sh HOST DAEMON args...; HOST is a namespace of this
# network, DAEMON orted (4.1) or prted (5.0), a whole command line in one or more words.
# The daemon runs in that namespace, in its own UTS namespace whose hostname is HOST (the
# shared-memory segments and the session directories are named after gethostname()).
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
case " %(hosts)s " in
  *" $host "*) ;;
  *) echo "netem agent: '$host' is not a host of network '%(prefix)s' (%(hosts)s)" >&2; exit 1 ;;
esac
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$1" && shift && exec sh -c "$*"' netem-agent "$host" "$@"
""" % {"agent": agent, "hosts": " ".join(topo.hosts), "prefix": topo.prefix})
    os.chmod(agent, 0o755)


def print_summary(t):
    d = "x".join(map(str, t.dims))
    print("netem up: prefix %s, mode %s%s, dims %s (%d ranks), MTU %d" % (
        t.prefix, t.mode, (", intra %s, %d hosts x %d ranks" % (t.intra, len(t.hosts), t.ppn))
        if t.mode == "hosts" else "", d, t.nranks, t.mtu))
    for k, n in enumerate(t.dims):
        if n == 1:
            continue
        if t.mode == "hosts" and t.intra == "shm" and k < t.nhost_dims:
            print("  dim %d (%d peers): intra-host shared memory (vader/sm), unshaped" % (k, n))
        else:
            lk = k - t.grid_dim0
            shared = " per host NIC, shared by %d ranks" % t.ppn if t.intra == "shm" and t.mode == "hosts" else " per rank"
            print("  dim %d (%d peers): tbf %g Mbit/s each way%s (expect ~%.1f Mbit/s TCP payload)" % (
                k, n, t.link_rates[lk], shared, t.link_rates[lk] * goodput(t.mtu)))
    print("  namespaces: %s" % " ".join(t.namespaces()))
    print("  themis spec: --mca coll_themis_dims %s" % t.themis_spec())


def cmd_rate(args):
    """Changes the tbf rate of every link of one dimension while jobs run (tc qdisc replace on
    both ends), so that what a collective library does when a link slows down can be watched."""
    need_root()
    st = load_state(args.prefix)
    if not st:
        die("no network with prefix %s (netem.py up first)" % args.prefix)
    k = args.dim - st["grid_dim0"]
    if not 0 <= k < len(st["grid"]) or st["grid"][k] == 1:
        die("--dim %d: not a dimension with links (dimensions %d to %d)"
            % (args.dim, st["grid_dim0"], st["grid_dim0"] + len(st["grid"]) - 1))
    per_rank = parse_bw_mbit(args.rate, "mbit")
    rate = per_rank * st["link_rates"][k] / st["rates"][args.dim]  # a link's share of ranks
    q = tbf_args(rate, st["burst_ms"], st["queue_ms"])
    for e, ns in enumerate(st["endpoints"]):
        ip_batch(ns, ["qdisc replace dev d%d root %s" % (args.dim, q)], what="tc")
        ip_batch(st["switch"], ["qdisc replace dev e%dd%d root %s" % (e, k, q)], what="tc")
    st["link_rates"][k], st["rates"][args.dim] = rate, per_rank
    with open(os.path.join(state_dir(args.prefix), "state.json"), "w") as f:
        json.dump(st, f, indent=1)
    print("netem rate: dimension %d's links now tbf %g Mbit/s" % (args.dim, rate))


def cmd_down(args):
    need_root()
    check_prefix(args.prefix)
    t0 = time.monotonic()
    teardown(args.prefix)
    print("netem down: %.2f s" % (time.monotonic() - t0))


def cmd_status(args):
    st = load_state(args.prefix)
    if not st:
        print("netem: no network with prefix %s%s" % (args.prefix, (" (but namespaces %s exist)" % ours_by_pattern(args.prefix)) if ours_by_pattern(args.prefix) else ""))
        return 1
    print(json.dumps(st, indent=1))
    return 0


def hosts_grid(dims, nhost_dims, nhosts):
    """The network between hosts, as coll_themis_topo_file describes it: the sizes of the
    dimensions after the first nhost_dims (those the ranks of one host fill) and each host's
    coordinates in them. Host h holds ranks h*ppn .. h*ppn+ppn-1, so its coordinates are h's
    digits over those sizes, dimension 0 fastest. No dimension left (one host): one of size 1."""
    sizes = list(dims[nhost_dims:]) or [1]
    coords = []
    for h in range(nhosts):
        c = []
        for n in sizes:
            c.append(h % n)
            h //= n
        coords.append(c)
    return sizes, coords


def topo_file_text(st):
    sizes, coords = hosts_grid(st["dims"], st["nhost_dims"], len(st["hosts"]))
    lines = ["# netem network %s: dims %s, %d ranks per host; the network between hosts"
             % (st["prefix"], "x".join(map(str, st["dims"])), st["ppn"]),
             "dims " + "x".join(map(str, sizes))]
    lines += ["host %s %s" % (h, " ".join(map(str, c))) for h, c in zip(st["hosts"], coords)]
    return "\n".join(lines) + "\n"


def cmd_topo_file(args):
    check_prefix(args.prefix)
    st = load_state(args.prefix)
    if not st:
        die("no network with prefix %s: run `netem.py up --mode hosts` first" % args.prefix)
    if st["mode"] != "hosts":
        print("netem topo-file: network %s is in mode %s: one node, no hosts to place "
              "(use up --mode hosts)" % (args.prefix, st["mode"]), file=sys.stderr)
        return 1
    sys.stdout.write(topo_file_text(st))
    return 0


# --------------------------------------------------------------------------- calibrate

def compile_helper(name):
    """The helper program NAME, compiled with the mpicc of the Open MPI that runs it, into
    the build directory of that Open MPI (or a /tmp directory of its own)."""
    src = os.path.join(HERE, name + ".c")
    o = ompi()
    outdir = os.path.join(o["build"], "netem") if os.path.isdir(o["build"]) else (
        "/tmp/themis-netem" + ("-" + os.path.basename(o["prefix"]) if o["prefix"] else ""))
    os.makedirs(outdir, exist_ok=True)
    exe = os.path.join(outdir, name)
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        run_cmd([o["mpicc"], "-O2", "-Wall", "-o", exe, src], timeout=120)
    return exe


def cmd_build(args):
    for n in ("pairbw", "netcheck"):
        print(compile_helper(n))


def cmd_ompi(args):
    """Prints what netem runs with, KEY VALUE per line, or KEY's value alone: scripts ask here
    rather than repeat the rule of $THEMIS_OMPI and $THEMIS_BUILD_DIR."""
    keys = ("series", "prefix", "mpirun", "mpicc", "components", "build")
    if args.key and args.key not in keys:
        die("ompi: no key %r (%s)" % (args.key, ", ".join(keys)))
    for k in [args.key] if args.key else keys:
        # the series only when asked: it runs mpirun, which may be missing
        v = mpirun_flags("series")[0] if k == "series" else ompi()[k]
        print(v if args.key else "%-10s %s" % (k, v))
    return 0


def cmd_calibrate(args):
    need_root()
    st = load_state(args.prefix)
    if not st:
        die("no network with prefix %s: run `netem.py up` first" % args.prefix)
    exe = compile_helper("pairbw")
    dims, rates = st["dims"], st["rates"]
    load0 = open("/proc/loadavg").read().split()[0]
    shm = st["mode"] == "hosts" and st["intra"] == "shm"
    g = goodput(st.get("mtu", DEFAULT_MTU))
    prog, rows = [exe], []
    for k, n in enumerate(dims):
        if n == 1:
            continue
        stride = prod(dims[:k])
        if shm and k < st["nhost_dims"]:
            tc_rate, nbytes = None, 256 << 20
        else:
            tc_rate = st["link_rates"][k - st["grid_dim0"]]
            nbytes = max(4 << 20, int(tc_rate * 1e6 / 8 * g * args.seconds))
        nbytes = (nbytes + (1 << 20) - 1) >> 20 << 20
        prog += ["%d:%d:%d" % (0, stride, nbytes)] * args.repeat
        rows.append((k, 0, stride, tc_rate))
    if args.load:
        per = []
        for k, n in enumerate(dims):
            if shm and k < st["nhost_dims"]:
                per.append(256 << 20)
            else:
                per.append(max(4 << 20, int(rates[k] * 1e6 / 8 * g * args.seconds * 2)))
        prog.append("load=%s:%s" % ("x".join(map(str, dims)), ",".join(str(b) for b in per)))
    ns = argparse.Namespace(themis=False, timeout=args.timeout, prefix=args.prefix)
    cmd = build_mpirun(st, ns, prog)
    t0 = time.monotonic()
    _, p = run_locked(st, cmd, args.timeout, capture=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr, file=sys.stderr)
        die("calibration run failed (rc %d)" % p.returncode)
    res = {}
    load = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "PAIR":
            res.setdefault((int(f[1]), int(f[2])), []).append(float(f[5]))
        elif f and f[0] == "LOAD":
            load[int(f[2])] = (float(f[5]), float(f[6]), float(f[7]))
    print("netem calibrate: prefix %s mode %s%s dims %s, %.1f s, load average before/after %s/%s on %d CPUs" % (
        st["prefix"], st["mode"], (" intra " + st["intra"]) if st["mode"] == "hosts" else "",
        "x".join(map(str, dims)), time.monotonic() - t0, load0,
        open("/proc/loadavg").read().split()[0], os.cpu_count()))
    print("%-4s %-9s %12s %14s %14s %8s  %s" % ("dim", "pair", "tc Mbit/s", "payload", "best", "ratio", "all runs"))
    ok = True
    for k, a, b, tc_rate in rows:
        all_m = res.get((a, b))
        m = max(all_m) if all_m else None
        runs = " ".join("%.1f" % x for x in all_m or [])
        if m is None:
            print("%-4d %-9s missing result" % (k, "%d->%d" % (a, b)))
            ok = False
            continue
        if tc_rate is None:
            print("%-4d %-9s %12s %14s %14.1f %8s  %s" % (k, "%d->%d" % (a, b), "shm", "-", m, "-", runs))
        else:
            ratio = m / (g * tc_rate)
            ok &= abs(ratio - 1) <= 0.05
            print("%-4d %-9s %12g %14.1f %14.1f %8.3f  %s" % (k, "%d->%d" % (a, b), tc_rate, g * tc_rate, m, ratio, runs))
    if args.load:
        print("all links busy (every rank sends and receives on every dimension at once), per-rank Mbit/s:")
        print("%-4s %12s %14s %10s %10s %10s %8s" % ("dim", "rate/rank", "payload", "min", "mean", "max", "min/exp"))
        for k, n in enumerate(dims):
            if k not in load:
                continue
            mn, mean, mx = load[k]
            if shm and k < st["nhost_dims"]:
                print("%-4d %12s %14s %10.1f %10.1f %10.1f %8s" % (k, "shm", "-", mn, mean, mx, "-"))
            else:
                print("%-4d %12g %14.1f %10.1f %10.1f %10.1f %8.3f" % (k, rates[k], g * rates[k], mn, mean, mx, mn / (g * rates[k])))
    if not ok:
        print("netem calibrate: WARNING: a pair is more than 5 % off the payload rate TCP can carry "
              "(CPU contention? other jobs on the box?)")
    return 0 if ok else 2


# --------------------------------------------------------------------------- main

def main():
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def pre(p):
        p.add_argument("--prefix", default=os.environ.get("NETEM_PREFIX", "tm"),
                       help="namespace name prefix, <= 6 chars (default tm, or $NETEM_PREFIX)")

    p = sub.add_parser("check", help="verify kernel and tool support")
    pre(p)
    p = sub.add_parser("up", help="build the network (tears down an old one of the same prefix first)")
    pre(p)
    p.add_argument("--dims", required=True, help="2x4, 2x2x2, or 2x4:bw=200Mbps,100Mbps")
    p.add_argument("--rates", help="per-dimension per-rank rates in Mbit/s, e.g. 200,100")
    p.add_argument("--mode", choices=("ranks", "hosts"), default="ranks")
    p.add_argument("--ppn", type=int, help="hosts mode: ranks per host (default dims[0])")
    p.add_argument("--intra", choices=("net", "shm"), default="net",
                   help="hosts mode: intra-host dimensions over shaped links (net) or shared memory (shm)")
    p.add_argument("--shm-bw", default="5Gbps", help="themis bw of shared-memory dimensions (intra shm)")
    p.add_argument("--burst-ms", type=float, default=1.0,
                   help="tbf burst = max(128 KiB, rate x this many ms) (default 1)")
    p.add_argument("--queue-ms", type=float, default=20.0,
                   help="tbf latency: how long a packet may queue on a link, its buffer (default 20)")
    p.add_argument("--mtu", type=int, default=DEFAULT_MTU,
                   help="MTU of the shaped links; TCP carries (mtu-52)/(mtu+14) of the rate (default %d)" % DEFAULT_MTU)
    p.add_argument("--tcp-cc", default="cubic",
                   help="TCP congestion control of the ranks' sockets, or keep: the kernel's "
                        "default (default cubic: with BBR the benchmarks' times wandered)")
    p.add_argument("--no-verify", action="store_true", help="skip the all-pairs reachability probe")
    p = sub.add_parser("down", help="tear the network down")
    pre(p)
    p = sub.add_parser("rate", help="change one dimension's links' rate while jobs run")
    pre(p)
    p.add_argument("--dim", type=int, required=True, help="the dimension (as in --dims)")
    p.add_argument("--rate", required=True, help="its new per-rank rate, Mbit/s")
    p = sub.add_parser("status", help="print the network's state")
    pre(p)
    p = sub.add_parser("run", help="mpirun a program across the network: run [opts] -- [mpirun args] prog args")
    pre(p)
    p.add_argument("--mode", choices=("ranks", "hosts"), help="assert the network's mode")
    p.add_argument("--themis", action="store_true",
                   help="load coll/themis from the build tree and set coll_themis_dims to the network's spec")
    p.add_argument("--timeout", type=int, default=600, help="seconds (default 600)")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p = sub.add_parser("calibrate", help="measure pair bandwidth per dimension")
    pre(p)
    p.add_argument("--seconds", type=float, default=1.0, help="target seconds per pair")
    p.add_argument("--load", action="store_true", help="also all links busy at once")
    p.add_argument("--repeat", type=int, default=2, help="measure each pair N times, report the best (default 2)")
    p.add_argument("--timeout", type=int, default=120)
    p = sub.add_parser("topo-file", help="print the coll_themis_topo_file of the hosts-mode network "
                       "that is up (host coordinates between hosts, no rates)")
    pre(p)
    p = sub.add_parser("build", help="compile the helper MPI programs, print their paths")
    pre(p)
    p = sub.add_parser("ompi", help="print the Open MPI (series, mpirun, mpicc, its component "
                       "directory) and the build directory netem uses ($THEMIS_OMPI, $THEMIS_BUILD_DIR)")
    pre(p)
    p.add_argument("key", nargs="?", help="print only this one's value")
    p = sub.add_parser("_wrap")
    pre(p)
    p.add_argument("--max-s", type=float, default=3600)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    try:
        if args.cmd == "check":
            return 1 if cmd_check(args) else 0
        return {"up": cmd_up, "down": cmd_down, "rate": cmd_rate, "status": cmd_status, "run": cmd_run,
                "calibrate": cmd_calibrate, "build": cmd_build, "topo-file": cmd_topo_file,
                "ompi": cmd_ompi,
                "_wrap": cmd_wrap}[args.cmd](args) or 0
    except NetemError as e:
        die(str(e))


if __name__ == "__main__":
    sys.exit(main())
