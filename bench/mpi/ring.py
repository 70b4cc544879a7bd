#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A parallel job as gang scheduling sees it, on a real MPI (OpenMPI,
through mpi4py): every round each rank computes for a while, then passes
a message to its right neighbour in a ring and waits for its left one's.
OpenMPI's shared-memory transport spins while a rank waits, so a rank
whose neighbour is not running burns its CPU for nothing: the case gangs
are for.

Run it with mpirun and Debian's Python, which has Debian's mpi4py
(`mpirun -np 2 /usr/bin/python3 bench/mpi/ring.py --rounds
400 --work 200`). Rank 0 prints one line of key=value pairs: wall_ms
(its own clock, from the first barrier to the last), cpu_ms (CPU time
of every rank, summed), rounds, ranks, and ring_start and ring_end (the
same span on CLOCK_MONOTONIC, in seconds, to cut a trace to it), and
with --progress N, progress: rank 0's time after every N rounds, in
seconds from the start (a job that stalls mid-run shows where).
With --go PATH, once every rank is up rank 0 writes PATH.ready.<job>
(the Slurm job id, else its pid) and the ring starts when PATH exists:
jobs whose start-up took different times then run their rings at once.
"""

import argparse
import os
import resource
import time

from mpi4py import MPI


def connect_in_order(comm) -> None:
    """Open the ring's connections one way at a time: each rank hears
    from its left neighbour before it speaks to its right one.

    OpenMPI's TCP transport opens a connection at a pair's first message.
    When two ranks open theirs to each other at once, the rank whose own
    attempt loses drops it and lowers its count of event-library users
    without having raised it; from then on it reads its sockets only at
    OpenMPI's event tick (every 10 ms) instead of at each turn of its
    progress loop, and every round of that job waits for the tick. Which
    job loses that race is down to chance, and the job's speed is with
    it: it made the same job's time swing twofold between runs of the
    two-node bench. Opened in order, no attempt loses.
    """
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        return
    token = bytearray(1)
    if rank == 0:
        comm.Send(token, dest=1)
        comm.Recv(token, source=size - 1)
    else:
        comm.Recv(token, source=rank - 1)
        comm.Send(token, dest=(rank + 1) % size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=400, help="exchanges per rank")
    ap.add_argument("--work", type=int, default=200, help="loop iterations of compute per round")
    ap.add_argument("--go", help="start the ring when this file exists")
    ap.add_argument("--progress", type=int, default=0, help="note the time every N rounds")
    args = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    out, into = bytearray(8), bytearray(8)

    connect_in_order(comm)
    comm.Barrier()
    if args.go:
        if rank == 0:
            job = os.environ.get("SLURM_JOB_ID", str(os.getpid()))
            open(f"{args.go}.ready.{job}", "w").close()
            while not os.path.exists(args.go):
                time.sleep(0.01)
        comm.Barrier()
    start = time.monotonic()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    acc = 0
    marks = []
    for r in range(args.rounds):
        if args.progress and r and r % args.progress == 0:
            marks.append(time.monotonic() - start)
        for i in range(args.work):
            acc += i ^ r
        out[0] = acc & 0xFF
        comm.Sendrecv(out, dest=right, recvbuf=into, source=left)
    comm.Barrier()
    end = time.monotonic()
    wall_ms = (end - start) * 1e3
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_ms = ((cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)) * 1e3
    total = comm.reduce(cpu_ms, op=MPI.SUM, root=0)
    if rank == 0:
        print(
            f"wall_ms={wall_ms:.0f} cpu_ms={total:.0f} rounds={args.rounds} ranks={size} "
            f"ring_start={start:.6f} ring_end={end:.6f}"
            + (f" progress={','.join(f'{m:.2f}' for m in marks)}" if marks else ""),
            flush=True,
        )


if __name__ == "__main__":
    main()
