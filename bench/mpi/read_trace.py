#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Read what the two-node bench's MPI part recorded in one phase (alone,
eevdf or rows): where a ring's round went on the two nodes.

    bench/mpi/read_trace.py RESULTS PHASE

RESULTS is a guest run's results folder (target/vm/latest after `cargo
xtask test --guest-only --filter two_nodes:: --baselines`), holding
mpi-trace-PHASE.txt (n1) and n2/mpi-trace-PHASE.txt, each node's ftrace
on the TAI clock, and mpi-threads-PHASE.txt (each job thread's cgroup, and
the network's counters around the phase). For each job: how long its rank
ran on each node and how much of it with its peer running; for each node:
how long the softirq thread waited from its wake-up to running, where the
network's receive work ran (inline after an interrupt, or in ksoftirqd),
the gaps between packets reaching a spinning rank, and the time from a
packet leaving one node to the next receive interrupt on the other (the
link, and the emulator behind it, with neither guest's scheduler in it);
then the TCP counters that moved.
"""

import collections
import os
import re
import sys

EVENT = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
SWITCH = re.compile(r"prev_pid=(\d+) .*==> next_comm=(.*?) next_pid=(\d+)")


def events(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = EVENT.match(line)
            if m:
                out.append((float(m.group(3)), m.group(1), m.group(4), m.group(5)))
    return out


def job_threads(path):
    """{node: {tid: (job, comm)}} from the thread samples."""
    info, node = collections.defaultdict(dict), None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line in ("n1", "n2"):
                node = line
                continue
            m = re.match(r"/proc/\d+/task/(\d+)/(\w+):(.*)", line)
            if m and node:
                info[(node, int(m.group(1)))][m.group(2)] = m.group(3)
    out = {"n1": {}, "n2": {}}
    for (node, tid), i in info.items():
        job = re.search(r"job_(\d+)", i.get("cgroup", ""))
        if job:
            out[node][tid] = (int(job.group(1)), i.get("comm", "?"))
    return out


def runs(evs, lo, hi):
    """{pid: [(start, end)]} from sched_switch, cut to [lo, hi]."""
    out, on = collections.defaultdict(list), {}
    for t, _, name, rest in evs:
        if name != "sched_switch":
            continue
        m = SWITCH.search(rest)
        prev, nxt = int(m.group(1)), int(m.group(3))
        if prev in on:
            a = max(on.pop(prev), lo)
            if min(t, hi) > a:
                out[prev].append((a, min(t, hi)))
        on[nxt] = t
    return out


def overlap(a, b):
    i = j = 0
    both = 0.0
    while i < len(a) and j < len(b):
        both += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return both


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def spread(xs):
    if not xs:
        return "not traced"
    return (
        f"p50 {pct(xs, .5):.2f} p90 {pct(xs, .9):.2f} p99 {pct(xs, .99):.2f} "
        f"max {max(xs, default=0):.2f} ms, {sum(xs):.0f} ms in all ({len(xs)})"
    )


def node_report(node, evs):
    waits, woke, spinning, last_rx, gaps = [], {}, False, None, []
    ctx = collections.Counter()
    for t, task, name, rest in evs:
        if name == "sched_waking" and "ksoftirqd" in rest:
            woke.setdefault(int(re.search(r"pid=(\d+)", rest).group(1)), t)
        elif name == "sched_switch":
            m = SWITCH.search(rest)
            if int(m.group(3)) in woke:
                waits.append((t - woke.pop(int(m.group(3)))) * 1e3)
            spinning = m.group(2) == "python3"
            if not spinning:
                last_rx = None
        elif name == "softirq_entry":
            ctx["ksoftirqd" if task.startswith("ksoftirqd") else "inline"] += 1
            if spinning:
                if last_rx is not None:
                    gaps.append((t - last_rx) * 1e3)
                last_rx = t
    print(f"  {node} ksoftirqd, wake-up to running: {spread(waits)}")
    print(f"  {node} receive softirq runs: {dict(ctx)}")
    print(f"  {node} between packets reaching a running rank: {spread(gaps)}")


def transit(sender, receiver, lo, hi):
    """From each receive interrupt in [lo, hi], back to the sender's last
    packet out: a bound on the packet's time between the nodes (the one
    that raised the interrupt left no later)."""
    sent = [t for t, _, name, _ in sender if name == "net_dev_xmit"]
    got = [
        t
        for t, _, name, rest in receiver
        if name == "irq_handler_entry" and "input" in rest and lo <= t <= hi
    ]
    out, i = [], 0
    for t in got:
        while i + 1 < len(sent) and sent[i + 1] <= t:
            i += 1
        if sent and sent[i] <= t:
            out.append((t - sent[i]) * 1e3)
    return out


def counters(path):
    """The TCP counters that moved in the phase, per node."""
    with open(path) as f:
        text = f.read()
    if "net before" not in text:
        return
    text = text[text.index("net before"):]
    names = re.findall(r"TcpExt: ([A-Za-z][A-Za-z ]*)", text)
    values = [list(map(int, v.split())) for v in re.findall(r"TcpExt: ([\d ]+)", text)]
    if len(values) < 4:
        return
    for node, before, after in (("n1", values[0], values[2]), ("n2", values[1], values[3])):
        moved = {n: a - b for n, b, a in zip(names[0].split(), before, after) if a != b}
        print(f"  {node} TCP: {moved}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    results, phase = sys.argv[1:]
    evs = {
        "n1": events(os.path.join(results, f"mpi-trace-{phase}.txt")),
        "n2": events(os.path.join(results, "n2", f"mpi-trace-{phase}.txt")),
    }
    lo = max(e[0][0] for e in evs.values())
    hi = min(e[-1][0] for e in evs.values())
    print(f"{phase}: {hi - lo:.2f} s traced on both nodes")
    threads = job_threads(os.path.join(results, f"mpi-threads-{phase}.txt"))
    ran = {n: runs(e, lo, hi) for n, e in evs.items()}
    ranks = collections.defaultdict(dict)
    for node in ("n1", "n2"):
        for tid, (job, comm) in threads[node].items():
            if comm == "python3" and ran[node].get(tid):
                best = ranks[job].get(node)
                if best is None or len(ran[node][tid]) > len(ran[node][best]):
                    ranks[job][node] = tid
    for job, rank in sorted(ranks.items()):
        if len(rank) < 2:
            continue
        a, b = ran["n1"][rank["n1"]], ran["n2"][rank["n2"]]
        ta, tb = sum(e - s for s, e in a), sum(e - s for s, e in b)
        both = overlap(a, b)
        print(
            f"  job {job}: its rank ran {ta:.2f} s on n1, {tb:.2f} s on n2, "
            f"both at once {both:.2f} s ({both / max(ta, 1e-9):.0%} / {both / max(tb, 1e-9):.0%})"
        )
    for node, e in evs.items():
        node_report(node, e)
    print(f"  n1 -> n2, a packet out to the next interrupt in: {spread(transit(evs['n1'], evs['n2'], lo, hi))}")
    print(f"  n2 -> n1: {spread(transit(evs['n2'], evs['n1'], lo, hi))}")
    counters(os.path.join(results, f"mpi-threads-{phase}.txt"))


if __name__ == "__main__":
    main()
