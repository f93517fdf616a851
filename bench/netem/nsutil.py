"""nsutil -- netem.py's paths and constants, the Open MPI it runs, its error, and the
network-namespace and command helpers every part uses."""

import ctypes
import os
import subprocess
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEBIAN_COMPONENT_DIR = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"   # Debian's 4.1
MPIRUN_FLAGS = os.path.join(REPO, "test", "common", "mpirun_flags.sh")
STATE_ROOT = "/run/themis-netem"
NETNS_DIR = "/run/netns"
ID_SUBNET = "10.200.0.0/16"          # identity /32 addresses, the only ones the TCP BTL uses
MGMT_SUBNET = "10.250.0.0/24"        # hosts mode: the daemons' out-of-band traffic, unshaped
MGMT_HEAD = "10.250.0.254"
MAX_ENDPOINTS = 250
CLONE_NEWNET = 0x40000000
TCP_FLAGS = "send,need-ack,need-csum"   # no 'put': it couples the links (netem-facts.md)
DEFAULT_MTU = 9000                      # jumbo frames, as HPC and DL fabrics run


class NetemError(Exception):
    pass


def die(msg, code=1):
    print("netem: error: " + msg, file=sys.stderr)
    sys.exit(code)


# --------------------------------------------------------------------------- Open MPI

_ompi = None


def ompi():
    """The Open MPI netem builds and runs with, and coll/themis's build directory, as a dict:
    prefix ('' = Debian's 4.1 on PATH), mpirun, mpicc, components (Open MPI's own component
    directory), build. $THEMIS_OMPI=PREFIX chooses one (mpirun = PREFIX/bin/mpirun, build
    directory <repo>/build-<basename PREFIX>); unset or empty, the one the build directory
    ($THEMIS_BUILD_DIR, default <repo>/build) was configured against, so that the component
    and the helpers match the mpirun that loads them."""
    global _ompi
    if _ompi is None:
        prefix = os.environ.get("THEMIS_OMPI", "").rstrip("/")
        build = os.environ.get("THEMIS_BUILD_DIR") or os.path.join(
            REPO, "build-" + os.path.basename(prefix) if prefix else "build")
        configured = makefile_var(build, "OMPI_PREFIX")
        if configured == "/usr":      # Debian's, found by pkg-config
            configured = ""
        if prefix and configured is not None and (
                not configured or os.path.realpath(configured) != os.path.realpath(prefix)):
            die("THEMIS_OMPI=%s, but %s was configured against %s: configure it --with-ompi=%s, "
                "or set THEMIS_BUILD_DIR to a build of it" % (prefix, build, configured or "Debian's Open MPI",
                                                              prefix))
        prefix = prefix or configured or ""
        if prefix:
            _ompi = {"prefix": prefix, "mpirun": os.path.join(prefix, "bin", "mpirun"),
                     "mpicc": os.path.join(prefix, "bin", "mpicc"),
                     "components": os.path.join(prefix, "lib", "openmpi")}
        else:
            _ompi = {"prefix": "", "mpirun": "mpirun", "mpicc": "mpicc",
                     "components": DEBIAN_COMPONENT_DIR}
        _ompi["build"] = build
    return _ompi


def makefile_var(build, name):
    """NAME's value in BUILD/Makefile (configure's output), None without one."""
    try:
        with open(os.path.join(build, "Makefile")) as f:
            for line in f:
                if line.startswith(name + " = "):
                    return line.split("=", 1)[1].strip()
    except FileNotFoundError:
        pass
    return None


def mpirun_flags(concern, *args):
    """The mpirun options of one concern (base, launch-agent CMD, ...) for the Open MPI of
    ompi(), one list item per word: test/common/mpirun_flags.sh is the one place that knows
    how the series spell them."""
    p = run_cmd(["bash", MPIRUN_FLAGS, "--mpirun", ompi()["mpirun"], concern] + list(args), timeout=60)
    return p.stdout.splitlines()


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
