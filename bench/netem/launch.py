"""launch -- netem.py run: mpirun across the emulated network, and the per-rank wrapper
that enters a rank's namespace and relays PMIx there."""

import fcntl
import os
import re
import select
import shlex
import shutil
import socket
import subprocess
import sys
import time

from nsutil import (HERE, ID_SUBNET, InNetns, MGMT_SUBNET, NETNS_DIR, TCP_FLAGS, die,
                    kill_netns_procs, mpirun_flags, netns_pids, ompi)
from topo import check_prefix, load_state, need_root, state_dir


# --------------------------------------------------------------------------- run

# mpirun options that take a value (so the program is the first other non-option token)
_VAL_OPTS = {"-np", "--np", "-n", "-c", "-N", "--npernode", "-npernode", "--npersocket", "-x",
             "--map-by", "-map-by", "--rank-by", "-rank-by", "--bind-to", "-bind-to", "-H", "--host",
             "-host", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "--wdir", "-wdir",
             "--output-filename", "-output-filename", "--ppr", "-ppr", "--report-uri", "--prefix",
             "--path", "--preload-files", "--cpu-set", "--cpus-per-proc", "--timeout", "--am",
             "--tune", "--stdin", "-stdin", "--output", "--merge-stderr-to-stdout-x", "--default-hostfile",
             "--xml-file", "--cpu-list", "--rankfile", "-rf", "--personality", "--display-map-x"}
# options that set a parameter (KEY VALUE), by their canonical spelling: --prtemca and
# --pmixmca are Open MPI 5.0's, for PRRTE's daemons and PMIx
_MCA_OPTS = {"--mca": "--mca", "-mca": "--mca", "--gmca": "--gmca", "-gmca": "--gmca",
             "--prtemca": "--prtemca", "--pmixmca": "--pmixmca"}


def split_user_args(argv):
    """-> (parameter dict {(option, key): value} in order, other mpirun options, np or None,
    program argv)."""
    mca, opts, np_, i = {}, [], None, 0
    while i < len(argv):
        a = argv[i]
        if a in _MCA_OPTS:
            if i + 2 >= len(argv):
                die("%s needs KEY VALUE (and a program after it)" % a)
            mca[(_MCA_OPTS[a], argv[i + 1])] = argv[i + 2]
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
    build = ompi()["build"]
    so = os.path.join(build, "component", "mca_coll_themis.so")
    if not os.path.exists(so):
        print("netem: %s missing, building it" % so, file=sys.stderr)
        p = subprocess.run(["timeout", "900", "make", "-C", build, "component/mca_coll_themis.so"])
        if p.returncode != 0 or not os.path.exists(so):
            die("could not build %s (make -C %s component/mca_coll_themis.so)" % (so, build))
    return os.path.join(build, "component")


def add_flags(mca, opts, flags):
    """mpirun_flags() output: its parameters into mca (by (option, key), as split_user_args),
    everything else onto opts."""
    i = 0
    while i < len(flags):
        if flags[i] in _MCA_OPTS and i + 2 < len(flags):
            mca[(_MCA_OPTS[flags[i]], flags[i + 1])] = flags[i + 2]
            i += 3
        else:
            opts.append(flags[i])
            i += 1


def build_mpirun(st, args, user):
    umca, uopts, unp, prog = split_user_args(user)
    np_ = unp if unp is not None else st["nranks"]
    base, mca = [], {}
    add_flags(mca, base, mpirun_flags("base"))
    mca[("--mca", "pml")] = "ob1"
    add_flags(mca, base, mpirun_flags(
        "btl", "sm,tcp,self" if (st["mode"] == "hosts" and st["intra"] == "shm") else "tcp,self"))
    mca.update({("--mca", "btl_tcp_if_include"): ID_SUBNET,
                ("--mca", "btl_tcp_flags"): TCP_FLAGS,
                # all ranks share this box's few cores; in hosts mode the launcher sees ppn
                # ranks on ppn slots, does not consider them oversubscribed and lets idle ranks
                # spin without yielding, which cost the 200 Mbit links 5-10 % (measured, 4.1):
                # always yield
                ("--mca", "mpi_yield_when_idle"): "1"})
    if st["mode"] == "hosts":
        add_flags(mca, base, mpirun_flags("launch-agent", os.path.join(state_dir(st["prefix"]), "agent.sh")))
        add_flags(mca, base, mpirun_flags("oob-if", MGMT_SUBNET))
    if args.themis:
        add_flags(mca, base, mpirun_flags("component-path", ensure_component() + ":" + ompi()["components"]))
        mca[("--mca", "coll_themis_dims")] = st["themis_spec"]
        if not (st["mode"] == "hosts" and st["intra"] == "shm"):
            # every dimension is an emulated link here (shared memory is off for the same
            # reason): a single copy between the ranks of a host would bypass the node
            # level's link
            mca[("--mca", "coll_themis_node_transport")] = "transport"
    mca.update(umca)
    cmd = ["timeout", "-k", "10", str(args.timeout)]
    if st["mode"] == "hosts":
        cmd += ["ip", "netns", "exec", st["head"]]
    cmd += [ompi()["mpirun"]] + base + ["-np", str(np_)]
    if st["mode"] == "hosts":
        cmd += ["--hostfile", os.path.join(state_dir(st["prefix"]), "hostfile"), "--map-by", "slot"]
    for (opt, k), v in mca.items():
        cmd += [opt, k, v]
    cmd += uopts
    if st["mode"] == "ranks" or st["intra"] == "net":
        # per-rank wrapper: PMIx relay + ip netns exec <prefix><rank>
        prog0 = prog[0]
        if "/" not in prog0 and shutil.which(prog0):
            prog0 = shutil.which(prog0)
        elif "/" in prog0:
            prog0 = os.path.abspath(prog0)
        cmd += [sys.executable, os.path.join(HERE, "netem.py"), "_wrap", "--prefix", st["prefix"],
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
    # 4.1's orted daemonizes; relays exit within 0.5 s of their rank: give them a moment, then kill
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
    the namespace we were started in (where the PMIx server of mpirun or the host's daemon
    listens)."""
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
