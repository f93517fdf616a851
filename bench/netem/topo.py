"""topo -- netem.py's network: the dimension spec, the namespaces, links and shaping it
builds (Topo), the state files of a network that is up, and its reachability probe."""

import errno
import json
import os
import re
import select
import shutil
import socket
import time

from nsutil import (DEFAULT_MTU, InNetns, MAX_ENDPOINTS, MGMT_HEAD, NETNS_DIR, NetemError,
                    STATE_ROOT, die, ip_batch, kill_netns_procs, netns_list)


def goodput(mtu):
    """TCP payload per byte tc counts: a frame of mtu + 14 (Ethernet) carries mtu - 52 (IPv4 20,
    TCP with timestamps 32); 1448 / 1514 = 0.956 at MTU 1500 (netem-facts.md)."""
    return (mtu - 52.0) / (mtu + 14.0)



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
    """'2x4', '2,4', '2x2x2' or the component's full form
    '2x4:bw=200Mbps,100Mbps[:lat=..][:alg=..][:fill=..]' (lat=, alg= and fill= are for themis only).
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
            raise NetemError("bad field %r in %r (expected bw=, lat=, alg= or fill=)" % (f, spec))
        k, v = f.split("=", 1)
        if k not in ("bw", "lat", "alg", "fill"):
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
        for k in ("lat", "alg", "fill"):
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
