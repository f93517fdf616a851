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
  netem.py status | down

Modes (see bench/netem/README.md):
  ranks  one namespace per rank, one shaped link per dimension into a per-(dimension, group)
         bridge, identity /32 address per rank routed dimension-order by the kernel. One mpirun
         in the root namespace; each rank goes through a wrapper that relays PMIx into its
         namespace. Open MPI sees ONE node (coll/han steps aside).
  hosts  namespaces <p>h<i> are Open MPI nodes (hostfile names), each running one orted in its
         own UTS namespace, started by a generated launch agent; mpirun runs in <p>head; ORTE
         talks over an unshaped management bridge. Ranks per host = --ppn (the first dimensions).
         --intra net (default): every rank still has its own namespace and shaped links for
           EVERY dimension (data plane = ranks mode), the wrapper relays PMIx to its host's
           orted. Every dimension shaped AND han sees ppn ranks per node.
         --intra shm: ranks live in their host's namespace and use vader (shared memory,
           unshaped) inside the host; the host has one shaped NIC per inter-host dimension,
           at ppn x the per-rank rate (the ranks of a host share it), with the same
           identity-address routing between hosts.
"""

import argparse
import ctypes
import errno
import fcntl
import json
import os
import re
import select
import shlex
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("THEMIS_BUILD_DIR", os.path.join(REPO, "build"))
OMPI_COMPONENT_DIR = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
STATE_ROOT = "/run/themis-netem"
NETNS_DIR = "/run/netns"
ID_SUBNET = "10.200.0.0/16"          # identity /32 addresses, the only ones the TCP BTL uses
MGMT_SUBNET = "10.250.0.0/24"        # hosts mode: ORTE out-of-band, unshaped
MGMT_HEAD = "10.250.0.254"
MAX_ENDPOINTS = 250
CLONE_NEWNET = 0x40000000
TCP_FLAGS = "send,need-ack,need-csum"   # no 'put': it couples the links (netem-facts.md)
DEFAULT_MTU = 9000                      # jumbo frames, as HPC and DL fabrics run


def goodput(mtu):
    """TCP payload per byte tc counts: a frame of mtu + 14 (Ethernet) carries mtu - 52 (IPv4 20,
    TCP with timestamps 32); 1448 / 1514 = 0.956 at MTU 1500 (netem-facts.md)."""
    return (mtu - 52.0) / (mtu + 14.0)


class NetemError(Exception):
    pass


def die(msg, code=1):
    print("netem: error: " + msg, file=sys.stderr)
    sys.exit(code)


# --------------------------------------------------------------------------- namespaces

_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd, nstype=CLONE_NEWNET):
    if _libc.setns(fd, nstype) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


class InNetns:
    """Run a block of this (single) thread inside the named network namespace."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.orig = os.open("/proc/self/ns/net", os.O_RDONLY)
        tgt = os.open(os.path.join(NETNS_DIR, self.name), os.O_RDONLY)
        try:
            setns(tgt)
        finally:
            os.close(tgt)
        return self

    def __exit__(self, *exc):
        setns(self.orig)
        os.close(self.orig)
        return False


def run_cmd(argv, input_text=None, timeout=60, check=True):
    try:
        p = subprocess.run(argv, input=input_text, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NetemError("timed out after %ss: %s" % (timeout, " ".join(argv)))
    except FileNotFoundError:
        raise NetemError("command not found: %s" % argv[0])
    if check and p.returncode != 0:
        raise NetemError("%s failed (rc %d): %s" % (" ".join(argv[:4]) + " ...", p.returncode,
                                                    (p.stderr or p.stdout).strip()))
    return p


def ip_batch(ns, lines, what="ip"):
    """One `ip`/`tc` process per namespace; stops at and reports the first failing line."""
    if not lines:
        return
    argv = [what] + (["-n", ns] if ns else []) + ["-batch", "-"]
    run_cmd(argv, "\n".join(lines) + "\n", timeout=120)


def netns_list():
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def netns_pids(ns):
    p = run_cmd(["ip", "netns", "pids", ns], check=False, timeout=20)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def kill_netns_procs(names, grace=2.0):
    """Kill the processes left inside our namespaces (by pid, as listed by `ip netns pids`)."""
    victims = {}
    for ns in names:
        if os.path.exists(os.path.join(NETNS_DIR, ns)):
            for pid in netns_pids(ns):
                victims[pid] = ns
    if not victims:
        return 0
    for pid in victims:
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
    end = time.monotonic() + grace
    while time.monotonic() < end:
        alive = [p for p in victims if os.path.exists("/proc/%d" % p)]
        if not alive:
            break
        time.sleep(0.1)
    for pid in victims:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    return len(victims)


def write_sysctls(ns, values, per_dev=None):
    """Write /proc/sys/net entries inside `ns` (they resolve in the opener's netns)."""
    with InNetns(ns):
        for key, val in values.items():
            with open("/proc/sys/net/" + key, "w") as f:
                f.write(str(val))
        if per_dev:
            for dev in os.listdir("/proc/sys/net/ipv4/conf"):
                for key, val in per_dev.items():
                    with open("/proc/sys/net/ipv4/conf/%s/%s" % (dev, key), "w") as f:
                        f.write(str(val))


# --------------------------------------------------------------------------- topology spec

_BW_UNITS = {  # -> Mbit/s, same units as the component's parse_bandwidth
    "bps": 1e-6, "kbps": 1e-3, "mbps": 1.0, "gbps": 1e3, "tbps": 1e6,
    "mbit": 1.0, "gbit": 1e3, "b/s": 8e-6, "kb/s": 8e-3, "mb/s": 8.0, "gb/s": 8e3, "tb/s": 8e6,
}


def parse_bw_mbit(text, default_unit="gbps"):
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*", text)
    if not m:
        raise NetemError("bad bandwidth %r" % text)
    unit = (m.group(2) or default_unit).lower()
    if unit not in _BW_UNITS:
        raise NetemError("bad bandwidth unit %r in %r (use %s)" % (unit, text, ", ".join(_BW_UNITS)))
    return float(m.group(1)) * _BW_UNITS[unit]


def parse_dims(spec):
    """'2x4', '2,4', '2x2x2' or the component's full form '2x4:bw=200Mbps,100Mbps[:lat=..][:alg=..]'.
    Returns (dims, rates_mbit or None, spec_fields dict)."""
    parts = spec.strip().split(":")
    head = parts[0]
    if head == "auto":
        raise NetemError("--dims auto cannot be emulated: give the sizes, e.g. 2x4")
    try:
        dims = [int(x) for x in re.split(r"[x,]", head)]
    except ValueError:
        raise NetemError("bad --dims %r: expected e.g. 2x4, 2x2x2 or 2x4:bw=200Mbps,100Mbps" % spec)
    if not dims or any(d < 1 for d in dims):
        raise NetemError("bad --dims %r: sizes must be >= 1" % spec)
    fields = {}
    for f in parts[1:]:
        if "=" not in f:
            raise NetemError("bad field %r in %r (expected bw=, lat= or alg=)" % (f, spec))
        k, v = f.split("=", 1)
        if k not in ("bw", "lat", "alg"):
            raise NetemError("unknown field %r in %r" % (k, spec))
        fields[k] = v.split(",")
    rates = None
    if "bw" in fields:
        rates = expand_list([parse_bw_mbit(x) for x in fields["bw"]], len(dims), "bw")
    return dims, rates, fields


def expand_list(vals, n, what):
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise NetemError("%s has %d values for %d dimensions" % (what, len(vals), n))
    return vals


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def fmt_rate(mbit):
    return ("%g" % mbit) + "Mbps"


def tbf_args(mbit, burst_ms=1.0, queue_ms=20.0):
    kbit = max(1, int(round(mbit * 1000)))
    burst = max(131072, int(mbit * 1e6 / 8 / 1000 * burst_ms))   # max(128 KiB, rate x 1 ms): netem-facts.md
    # tbf's "latency": the longest a packet may wait in the queue, i.e. the link's buffer.
    return "tbf rate %dkbit burst %d latency %gms" % (kbit, burst, queue_ms)


class Topo:
    """Everything `up` creates, computed from the arguments (and stored as JSON for run/down)."""

    def __init__(self, prefix, dims, rates, mode, ppn=None, intra="net", spec_fields=None,
                 shm_bw="5Gbps", burst_ms=1.0, queue_ms=20.0, mtu=DEFAULT_MTU):
        self.prefix, self.dims, self.rates, self.mode, self.intra = prefix, dims, rates, mode, intra
        self.nranks = prod(dims)
        self.spec_fields = spec_fields or {}
        self.shm_bw = shm_bw
        self.burst_ms = burst_ms
        self.queue_ms = queue_ms
        self.mtu = mtu
        p = prefix
        self.switch = p + "sw"
        if mode == "ranks":
            self.ppn, self.nhost_dims = self.nranks, len(dims)
            self.head, self.hosts = None, []
        else:
            self.ppn = dims[0] if ppn is None else ppn
            k = next((i for i in range(len(dims) + 1) if prod(dims[:i]) == self.ppn), None)
            if k is None or self.nranks % self.ppn:
                raise NetemError("--ppn %d must be the product of the first dimensions of %s "
                                 "(a host holds whole groups of the first dimensions)"
                                 % (self.ppn, "x".join(map(str, dims))))
            self.nhost_dims = k
            self.head = p + "head"
            self.hosts = ["%sh%d" % (p, i) for i in range(self.nranks // self.ppn)]
        # endpoints: namespaces with data links + identity address
        if mode == "hosts" and intra == "shm":
            self.grid = dims[self.nhost_dims:]
            self.grid_dim0 = self.nhost_dims          # component dimension of grid dim 0
            self.link_rates = [r * self.ppn for r in rates[self.nhost_dims:]]
            self.endpoints = list(self.hosts)
        else:
            self.grid, self.grid_dim0, self.link_rates = dims, 0, list(rates)
            self.endpoints = ["%s%d" % (p, r) for r in range(self.nranks)]
        if len(self.endpoints) > MAX_ENDPOINTS:
            raise NetemError("at most %d endpoints" % MAX_ENDPOINTS)

    # coordinates over the grid, dimension 0 fastest
    def coords(self, e):
        c = []
        for n in self.grid:
            c.append(e % n)
            e //= n
        return c

    def index(self, c):
        e, s = 0, 1
        for ck, n in zip(c, self.grid):
            e += ck * s
            s *= n
        return e

    def group(self, e, k):
        c = self.coords(e)
        g, s = 0, 1
        for j, n in enumerate(self.grid):
            if j != k:
                g += c[j] * s
                s *= n
        return g

    def id_addr(self, e):
        return "10.200.0.%d" % (e + 1)

    def link_addr(self, e, k):
        return "10.%d.%d.%d" % (10 + self.grid_dim0 + k, self.group(e, k), self.coords(e)[k] + 1)

    def namespaces(self):
        ns = [self.switch] + ([self.head] if self.head else []) + list(self.hosts)
        return ns + [e for e in self.endpoints if e not in ns]

    def themis_spec(self):
        if "bw" in self.spec_fields:
            bw = ",".join(self.spec_fields["bw"])
        else:
            bw = ",".join(fmt_rate(r) for r in self.rates)
            if self.mode == "hosts" and self.intra == "shm":
                bw = ",".join([self.shm_bw] * self.nhost_dims +
                              [fmt_rate(r) for r in self.rates[self.nhost_dims:]])
        s = "x".join(map(str, self.dims)) + ":bw=" + bw
        for k in ("lat", "alg"):
            if k in self.spec_fields:
                s += ":%s=%s" % (k, ",".join(self.spec_fields[k]))
        return s

    # ------------------------------------------------------------------ command lists
    def plan(self):
        root, per_ns, tc = [], {}, {}
        add = lambda ns, line: per_ns.setdefault(ns, []).append(line)
        sw = self.switch
        for ns in self.namespaces():
            root.append("netns add " + ns)
        add(sw, "link set lo up")
        bridges = set()
        for e, ns in enumerate(self.endpoints):
            c = self.coords(e)
            add(ns, "link set lo up")
            root.append("link add id0 netns %s type veth peer name id0p netns %s" % (ns, ns))
            add(ns, "link set id0 up")
            add(ns, "link set id0p up")
            add(ns, "addr add %s/32 dev id0" % self.id_addr(e))
            for k, n in enumerate(self.grid):
                if n == 1:
                    continue
                dev, port, br = "d%d" % (self.grid_dim0 + k), "e%dd%d" % (e, k), "b%dg%d" % (k, self.group(e, k))
                root.append("link add %s netns %s mtu %d type veth peer name %s netns %s mtu %d" % (
                    dev, ns, self.mtu, port, sw, self.mtu))
                if br not in bridges:
                    bridges.add(br)
                    add(sw, "link add %s type bridge" % br)
                    add(sw, "link set %s up" % br)
                add(sw, "link set %s master %s" % (port, br))
                add(sw, "link set %s up" % port)
                add(ns, "link set %s up" % dev)
                add(ns, "addr add %s/24 dev %s" % (self.link_addr(e, k), dev))
                q = tbf_args(self.link_rates[k], self.burst_ms, self.queue_ms)
                tc.setdefault(ns, []).append("qdisc replace dev %s root %s" % (dev, q))
                tc.setdefault(sw, []).append("qdisc replace dev %s root %s" % (port, q))
        # dimension-order routes: lowest differing dimension first
        for s, ns in enumerate(self.endpoints):
            cs = self.coords(s)
            for t in range(len(self.endpoints)):
                if t == s:
                    continue
                ct = self.coords(t)
                k = next(j for j in range(len(self.grid)) if cs[j] != ct[j])
                nh = list(cs)
                nh[k] = ct[k]
                add(ns, "route add %s/32 via %s dev d%d src %s" % (
                    self.id_addr(t), self.link_addr(self.index(nh), k), self.grid_dim0 + k,
                    self.id_addr(s)))
        # management network (hosts mode): head + hosts on bridge bm, never shaped
        if self.mode == "hosts":
            add(sw, "link add bm type bridge")
            add(sw, "link set bm up")
            mg = [(self.head, "mhead", MGMT_HEAD)] + [
                (h, "mh%d" % i, "10.250.0.%d" % (i + 1)) for i, h in enumerate(self.hosts)]
            for ns, port, addr in mg:
                root.append("link add m0 netns %s type veth peer name %s netns %s" % (ns, port, sw))
                add(sw, "link set %s master bm" % port)
                add(sw, "link set %s up" % port)
                if ns not in self.endpoints:
                    add(ns, "link set lo up")
                add(ns, "link set m0 up")
                add(ns, "addr add %s/24 dev m0" % addr)
        return root, per_ns, tc

    def to_json(self):
        d = {k: getattr(self, k) for k in (
            "prefix", "dims", "rates", "mode", "intra", "ppn", "nranks", "nhost_dims", "switch",
            "head", "hosts", "endpoints", "grid", "grid_dim0", "link_rates", "spec_fields",
            "shm_bw", "burst_ms", "queue_ms", "mtu")}
        d["themis_spec"] = self.themis_spec()
        d["namespaces"] = self.namespaces()
        return d


# --------------------------------------------------------------------------- state files

def state_dir(prefix):
    return os.path.join(STATE_ROOT, prefix)


def load_state(prefix):
    try:
        with open(os.path.join(state_dir(prefix), "state.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def check_prefix(prefix):
    if not re.fullmatch(r"[a-z][a-z0-9]{0,5}", prefix):
        die("--prefix must be 1-6 characters [a-z0-9], starting with a letter (got %r)" % prefix)


def need_root():
    if os.geteuid() != 0:
        die("must run as root (network namespaces, veth, tc)")


def ours_by_pattern(prefix):
    pat = re.compile(r"%s(\d+|sw|head|h\d+)" % re.escape(prefix))
    return [n for n in netns_list() if pat.fullmatch(n)]


def names_of_other_networks(prefix):
    names = set()
    try:
        others = [d for d in os.listdir(STATE_ROOT) if d != prefix]
    except FileNotFoundError:
        return names
    for o in others:
        st = load_state(o)
        if st:
            names |= set(st["namespaces"])
    return names


def teardown(prefix, quiet=False):
    st = load_state(prefix)
    if st:
        names = set(st["namespaces"])
    else:   # no state file: our naming scheme, minus what another network (e.g. prefix tmh) owns
        names = set(ours_by_pattern(prefix)) - names_of_other_networks(prefix)
    names = sorted(n for n in names if os.path.exists(os.path.join(NETNS_DIR, n)))
    killed = kill_netns_procs(names) if names else 0
    if names:
        ip_batch(None, ["netns del " + n for n in names])
    shutil.rmtree(state_dir(prefix), ignore_errors=True)
    if not quiet:
        print("netem down: prefix %s: deleted %d namespaces%s" % (
            prefix, len(names), (", killed %d leftover processes" % killed) if killed else ""))
    return len(names)


# --------------------------------------------------------------------------- reachability

def probe(src_ns, src_addr, targets, timeout=3.0):
    """TCP connect from src_ns to port 9 of every target address; a RST (refused) means the
    packet got there and back. Returns the list of unreachable targets."""
    socks = {}
    with InNetns(src_ns):
        for t in targets:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            if src_addr:
                s.bind((src_addr, 0))
            rc = s.connect_ex((t, 9))
            socks[s] = (t, rc)
    bad, pending = [], {}
    for s, (t, rc) in socks.items():
        if rc in (errno.EINPROGRESS, 0, errno.ECONNREFUSED):
            pending[s] = t
        else:
            bad.append("%s (%s)" % (t, os.strerror(rc)))
    end = time.monotonic() + timeout
    while pending and time.monotonic() < end:
        _, w, _ = select.select([], list(pending), [], max(0.0, end - time.monotonic()))
        for s in w:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err not in (errno.ECONNREFUSED, 0):
                bad.append("%s (%s)" % (pending[s], os.strerror(err)))
            del pending[s]
    bad += ["%s (timeout)" % t for t in pending.values()]
    for s in socks:
        s.close()
    return bad


def verify(topo):
    bad = []
    for e, ns in enumerate(topo.endpoints):
        others = [topo.id_addr(t) for t in range(len(topo.endpoints)) if t != e]
        bad += ["%s -> %s" % (ns, b) for b in probe(ns, topo.id_addr(e), others)]
    if topo.mode == "hosts":
        hosts = ["10.250.0.%d" % (i + 1) for i in range(len(topo.hosts))]
        bad += ["%s -> %s" % (topo.head, b) for b in probe(topo.head, MGMT_HEAD, hosts)]
    if bad:
        raise NetemError("unreachable after up: " + ", ".join(bad[:8]))


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
                  "ip, tc, timeout, unshare, hostname, mpirun present)")
    return problems


def check_support(prefix):
    problems = []
    if os.geteuid() != 0:
        problems.append("not root: network namespaces, veth and tc need root (CAP_NET_ADMIN+CAP_SYS_ADMIN)")
        return problems
    for tool in ("ip", "tc", "timeout", "unshare", "hostname", "mpirun"):
        if not shutil.which(tool):
            problems.append("missing command %s (packages: iproute2, coreutils, util-linux, hostname, openmpi-bin)" % tool)
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
    print("netem up: %d ip/tc commands; teardown of old %.2f s, build %.2f s, reachability check %.2f s"
          % (ncmd, t1 - t0, t2 - t1, t3 - t2))


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
# Generated by netem.py up: launch agent for `mpirun --mca plm_rsh_agent %(agent)s`.
# ORTE calls it like ssh: agent.sh HOST orted args...; HOST is a namespace of this network.
# orted runs in that namespace, in its own UTS namespace whose hostname is HOST (vader and
# the session directories are named after gethostname()).
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
            print("  dim %d (%d peers): intra-host shared memory (vader), unshaped" % (k, n))
        else:
            lk = k - t.grid_dim0
            shared = " per host NIC, shared by %d ranks" % t.ppn if t.intra == "shm" and t.mode == "hosts" else " per rank"
            print("  dim %d (%d peers): tbf %g Mbit/s each way%s (expect ~%.1f Mbit/s TCP payload)" % (
                k, n, t.link_rates[lk], shared, t.link_rates[lk] * goodput(t.mtu)))
    print("  namespaces: %s" % " ".join(t.namespaces()))
    print("  themis spec: --mca coll_themis_dims %s" % t.themis_spec())


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


# --------------------------------------------------------------------------- run

# mpirun options that take a value (so the program is the first other non-option token)
_VAL_OPTS = {"-np", "--np", "-n", "-c", "-N", "--npernode", "-npernode", "--npersocket", "-x",
             "--map-by", "-map-by", "--rank-by", "-rank-by", "--bind-to", "-bind-to", "-H", "--host",
             "-host", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "--wdir", "-wdir",
             "--output-filename", "-output-filename", "--ppr", "-ppr", "--report-uri", "--prefix",
             "--path", "--preload-files", "--cpu-set", "--cpus-per-proc", "--timeout", "--am",
             "--tune", "--stdin", "-stdin", "--merge-stderr-to-stdout-x", "--default-hostfile",
             "--xml-file", "--cpu-list", "--rankfile", "-rf", "--personality", "--display-map-x"}
_MCA_OPTS = {"--mca", "-mca", "--gmca", "-gmca"}


def split_user_args(argv):
    """-> (mca dict in order, other mpirun options, np or None, program argv)."""
    mca, opts, np_, i = {}, [], None, 0
    while i < len(argv):
        a = argv[i]
        if a in _MCA_OPTS:
            if i + 2 >= len(argv):
                die("%s needs KEY VALUE (and a program after it)" % a)
            mca[argv[i + 1]] = argv[i + 2]
            i += 3
        elif a in ("-np", "--np", "-n"):
            np_ = int(argv[i + 1])
            i += 2
        elif a in _VAL_OPTS:
            opts += argv[i:i + 2]
            i += 2
        elif a.startswith("-"):
            opts.append(a)
            i += 1
        else:
            return mca, opts, np_, argv[i:]
    die("no program given after the mpirun options")


def ensure_component():
    so = os.path.join(BUILD, "component", "mca_coll_themis.so")
    if not os.path.exists(so):
        print("netem: %s missing, building it" % so, file=sys.stderr)
        p = subprocess.run(["timeout", "900", "make", "-C", BUILD, "component/mca_coll_themis.so"])
        if p.returncode != 0 or not os.path.exists(so):
            die("could not build %s (make -C %s component/mca_coll_themis.so)" % (so, BUILD))
    return os.path.join(BUILD, "component")


def build_mpirun(st, args, user):
    umca, uopts, unp, prog = split_user_args(user)
    np_ = unp if unp is not None else st["nranks"]
    mca = {"pml": "ob1",
           "btl": "vader,tcp,self" if (st["mode"] == "hosts" and st["intra"] == "shm") else "tcp,self",
           "btl_tcp_if_include": ID_SUBNET,
           "btl_tcp_flags": TCP_FLAGS,
           # all ranks share this box's few cores; in hosts mode ORTE sees ppn ranks on ppn
           # slots, does not consider them oversubscribed and lets idle ranks spin without
           # yielding, which cost the 200 Mbit links 5-10 % (measured): always yield
           "mpi_yield_when_idle": "1"}
    if st["mode"] == "hosts":
        mca.update({"plm_rsh_agent": os.path.join(state_dir(st["prefix"]), "agent.sh"),
                    "plm_rsh_no_tree_spawn": "1",
                    "oob_tcp_if_include": MGMT_SUBNET})
    if args.themis:
        mca["mca_base_component_path"] = ensure_component() + ":" + OMPI_COMPONENT_DIR
        mca["coll_themis_dims"] = st["themis_spec"]
        if not (st["mode"] == "hosts" and st["intra"] == "shm"):
            # every dimension is an emulated link here (vader is off for the same reason):
            # a single copy between the ranks of a host would bypass the node level's link
            mca["coll_themis_node_transport"] = "transport"
    mca.update(umca)
    cmd = ["timeout", "-k", "10", str(args.timeout)]
    if st["mode"] == "hosts":
        cmd += ["ip", "netns", "exec", st["head"]]
    cmd += ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(np_)]
    if st["mode"] == "hosts":
        cmd += ["--hostfile", os.path.join(state_dir(st["prefix"]), "hostfile"), "--map-by", "slot"]
    for k, v in mca.items():
        cmd += ["--mca", k, v]
    cmd += uopts
    if st["mode"] == "ranks" or st["intra"] == "net":
        # per-rank wrapper: PMIx relay + ip netns exec <prefix><rank>
        prog0 = prog[0]
        if "/" not in prog0 and shutil.which(prog0):
            prog0 = shutil.which(prog0)
        elif "/" in prog0:
            prog0 = os.path.abspath(prog0)
        cmd += [sys.executable, os.path.abspath(__file__), "_wrap", "--prefix", st["prefix"],
                "--max-s", str(args.timeout + 30), "--", prog0] + prog[1:]
    else:
        cmd += prog
    return cmd


def leftovers(st):
    names = [n for n in st["namespaces"] if os.path.exists(os.path.join(NETNS_DIR, n))]
    return names


def cmd_run(args):
    need_root()
    check_prefix(args.prefix)
    st = load_state(args.prefix)
    if not st:
        die("no network with prefix %s: run `netem.py up` first" % args.prefix)
    if args.mode and args.mode != st["mode"]:
        die("network %s is in mode %s, not %s (run up --mode %s)" % (args.prefix, st["mode"], args.mode, args.mode))
    user = args.rest[1:] if args.rest and args.rest[0] == "--" else args.rest
    if not user:
        die("usage: netem.py run [options] -- [mpirun args] program args")
    cmd = build_mpirun(st, args, user)
    if args.dry_run or args.verbose:
        print("netem run: " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    if args.dry_run:
        return 0
    rc, _ = run_locked(st, cmd, args.timeout)
    return rc


def run_locked(st, cmd, timeout, capture=False):
    """Run an mpirun command line (stdin /dev/null) holding the network's run lock, then reap
    what it left in the namespaces. Returns (rc, CompletedProcess or None)."""
    lock = open(os.path.join(state_dir(st["prefix"]), "run.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        die("another `netem.py run`/`calibrate` is using network %s" % st["prefix"])
    with open(os.devnull) as devnull:
        p = subprocess.run(cmd, stdin=devnull, capture_output=capture, text=capture)
    # orted daemonizes; relays exit within 0.5 s of their rank: give them a moment, then kill
    names = leftovers(st)
    end = time.monotonic() + (3.0 if p.returncode == 0 else 1.0)
    while time.monotonic() < end and any(netns_pids(n) for n in names):
        time.sleep(0.2)
    n = kill_netns_procs(names)
    if n:
        print("netem run: killed %d leftover processes in the namespaces" % n, file=sys.stderr)
    if p.returncode in (124, 137):
        print("netem run: timed out after %d s (--timeout)" % timeout, file=sys.stderr)
    lock.close()
    return p.returncode, p


# --------------------------------------------------------------------------- per-rank wrapper + PMIx relay

def relay(ns, ports, ready_w, parent, max_s):
    """Listen on 127.0.0.1:<port> inside `ns`, forward every connection to 127.0.0.1:<port> in
    the namespace we were started in (where the PMIx server of mpirun/orted listens)."""
    listeners = {}
    with InNetns(ns):
        for port in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen(64)
            listeners[s] = port
    os.write(ready_w, b"1")
    os.close(ready_w)
    peer = {}
    end = time.monotonic() + max_s
    while os.getppid() == parent and time.monotonic() < end:
        r, _, _ = select.select(list(listeners) + list(peer), [], [], 0.5)
        for s in r:
            if s in listeners:
                c, _ = s.accept()
                try:
                    u = socket.create_connection(("127.0.0.1", listeners[s]), timeout=10)
                    u.settimeout(None)
                except OSError:
                    c.close()
                    continue
                peer[c], peer[u] = u, c
            elif s in peer:
                try:
                    data = s.recv(262144)
                    if data:
                        peer[s].sendall(data)
                        continue
                except OSError:
                    pass
                o = peer.pop(s)
                peer.pop(o, None)
                s.close()
                o.close()


def cmd_wrap(args):
    cmd = args.rest[1:] if args.rest and args.rest[0] == "--" else args.rest
    rank = os.environ.get("OMPI_COMM_WORLD_RANK")
    if rank is None or not cmd:
        die("_wrap runs under mpirun: _wrap --prefix P -- program args")
    ns = "%s%s" % (args.prefix, rank)
    if not os.path.exists(os.path.join(NETNS_DIR, ns)):
        die("rank %s: namespace %s does not exist (more ranks than the network has?)" % (rank, ns))
    ports = set()
    for k, v in os.environ.items():
        if k.startswith("PMIX_SERVER_URI"):
            ports.update(int(p) for p in re.findall(r"tcp4?://127\.0\.0\.1:(\d+)", v))
    if ports:
        r, w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                fd = os.open(os.devnull, os.O_RDWR)
                for i in (0, 1, 2):
                    os.dup2(fd, i)
                relay(ns, sorted(ports), w, parent, args.max_s)
            except BaseException as e:   # report through the pipe
                try:
                    os.write(w, ("relay: %s" % e).encode())
                except OSError:
                    pass
                os._exit(1)
            os._exit(0)
        os.close(w)
        ready, _, _ = select.select([r], [], [], 20)
        msg = os.read(r, 4096) if ready else b"timeout"
        os.close(r)
        if msg != b"1":
            die("rank %s: PMIx relay into %s failed: %s" % (rank, ns, msg.decode(errors="replace")))
    os.execvp("ip", ["ip", "netns", "exec", ns] + cmd)


# --------------------------------------------------------------------------- calibrate

def compile_helper(name):
    src = os.path.join(HERE, name + ".c")
    outdir = os.path.join(BUILD, "netem") if os.path.isdir(BUILD) else "/tmp/themis-netem"
    os.makedirs(outdir, exist_ok=True)
    exe = os.path.join(outdir, name)
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        run_cmd(["mpicc", "-O2", "-Wall", "-o", exe, src], timeout=120)
    return exe


def cmd_build(args):
    for n in ("pairbw", "netcheck"):
        print(compile_helper(n))


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
                   help="hosts mode: intra-host dimensions over shaped links (net) or vader (shm)")
    p.add_argument("--shm-bw", default="5Gbps", help="themis bw of vader dimensions (intra shm)")
    p.add_argument("--burst-ms", type=float, default=1.0,
                   help="tbf burst = max(128 KiB, rate x this many ms) (default 1)")
    p.add_argument("--queue-ms", type=float, default=20.0,
                   help="tbf latency: how long a packet may queue on a link, its buffer (default 20)")
    p.add_argument("--mtu", type=int, default=DEFAULT_MTU,
                   help="MTU of the shaped links; TCP carries (mtu-52)/(mtu+14) of the rate (default %d)" % DEFAULT_MTU)
    p.add_argument("--no-verify", action="store_true", help="skip the all-pairs reachability probe")
    p = sub.add_parser("down", help="tear the network down")
    pre(p)
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
    p = sub.add_parser("_wrap")
    pre(p)
    p.add_argument("--max-s", type=float, default=3600)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    try:
        if args.cmd == "check":
            return 1 if cmd_check(args) else 0
        return {"up": cmd_up, "down": cmd_down, "status": cmd_status, "run": cmd_run,
                "calibrate": cmd_calibrate, "build": cmd_build, "topo-file": cmd_topo_file,
                "_wrap": cmd_wrap}[args.cmd](args) or 0
    except NetemError as e:
        die(str(e))


if __name__ == "__main__":
    sys.exit(main())
