#!/usr/bin/env python3
"""device_nb_setup.py -- a communicator that only nonblocking calls use, on device buffers.

Run by bench/device_run.sh (check dev_setup_nb_only) on the lent GPU machine, under mpirun,
as an unmodified MPI+CUDA application would be: mpi4py passes CuPy device arrays through
__cuda_array_interface__.

    mpirun -np 4 --mca coll_themis_dims 2x2 --mca coll_themis_verbose 2 \\
        python3 bench/device_nb_setup.py [--mem device|host] [--rounds R] [--count N]

On a communicator of its own (named "nb_setup") that no blocking collective and no
barrier ever touches, as in a training loop, every round starts MPI_Iallreduce,
MPI_Ireduce_scatter_block and MPI_Iallgather together on fresh device buffers and waits
for all three. The first call sets the communicator up inside itself (77d0c76: set-up is a
task advanced from the progress loop; the calls issued meanwhile are held and then
started on themis), so themis should run every call, the first round's included. Every
result is checked here (integer-valued floats: exact sums); the caller reads themis's
stats lines (coll_themis_verbose 2) for "nb_setup" to see which module ran them.

--mem host runs the same with NumPy arrays (no GPU needed): a check of this program.
Output: "device_nb_setup: N passed, M failed"; exit status 1 on any failure.
"""
import argparse
import os
import sys

from mpi4py import MPI
import numpy as np


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mem", choices=("device", "host"), default="device")
    p.add_argument("--rounds", type=int, default=4, help="rounds of three calls (>= 2)")
    p.add_argument("--count", type=int, default=1 << 20,
                   help="float elements per allreduce (4 MiB; above coll_themis_min_bytes)")
    return p.parse_args()


def array_module(mem):
    """NumPy, or CuPy on this rank's GPU (local rank modulo the devices)."""
    if mem == "host":
        return np, lambda: None
    import cupy
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", MPI.COMM_WORLD.Get_rank()))
    cupy.cuda.Device(local % cupy.cuda.runtime.getDeviceCount()).use()
    # CuPy fills arrays asynchronously on its stream; MPI must see them filled.
    return cupy, lambda: cupy.cuda.get_current_stream().synchronize()


def to_host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def main():
    args = parse()
    world = MPI.COMM_WORLD
    xp, sync = array_module(args.mem)
    comm = world.Dup()
    comm.Set_name("nb_setup")
    rank, size = comm.Get_rank(), comm.Get_size()
    block = max(1, args.count // size)
    n = block * size
    base = (np.arange(n, dtype=np.int64) % 1021).astype(np.float32)
    passed = failed = 0

    def check(what, got, want):
        nonlocal passed, failed
        if np.array_equal(got, want):
            passed += 1
        else:
            failed += 1
            bad = int(np.flatnonzero(got != want)[0])
            print(f"device_nb_setup: rank {rank}: {what}: element {bad} is {got[bad]}, "
                  f"expected {want[bad]}", file=sys.stderr, flush=True)

    for r in range(args.rounds):
        send = xp.asarray(base + (rank + r))
        gsend = xp.asarray(base[:block] + (rank * 7 + r))
        ar = xp.zeros(n, dtype=xp.float32)
        rs = xp.zeros(block, dtype=xp.float32)
        ag = xp.zeros(n, dtype=xp.float32)
        sync()
        reqs = [comm.Iallreduce(send, ar, op=MPI.SUM),
                comm.Ireduce_scatter_block(send, rs, op=MPI.SUM),
                comm.Iallgather(gsend, ag)]
        MPI.Request.Waitall(reqs)
        total = base * size + (size * (size - 1) // 2 + size * r)
        check(f"round {r} Iallreduce", to_host(ar), total)
        check(f"round {r} Ireduce_scatter_block", to_host(rs),
              total[rank * block:(rank + 1) * block])
        gathered = np.concatenate([base[:block] + (k * 7 + r) for k in range(size)])
        check(f"round {r} Iallgather", to_host(ag), gathered)

    comm.Free()  # themis prints its stats for "nb_setup" here
    counts = world.allreduce(np.array([passed, failed]), op=MPI.SUM)
    if rank == 0:
        print(f"device_nb_setup: mem {args.mem}, {size} ranks, {args.rounds} rounds of "
              f"{n * 4} B", flush=True)
        print(f"device_nb_setup: {counts[0]} passed, {counts[1]} failed", flush=True)
    return 1 if counts[1] else 0


if __name__ == "__main__":
    sys.exit(main())
