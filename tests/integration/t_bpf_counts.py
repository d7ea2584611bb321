"""The bpf sampler's per-CPU runnable counts agree with /proc. Two hogs pinned to
CPU 0 and one to CPU 1; a bpf daemon (dry run) records while the test reads, again
and again, what /proc says at the same moments: every task in state R by the CPU it
is on (/proc/PID/task/TID/stat, fields 3 and 39: what the proc sampler reads, but
the whole of /proc each time, so that a task that just became busy is not missed
until a later walk), and procs_running from /proc/stat. The test reads without
pause, so it is itself runnable nearly always: both counts include it.

Each bpf snapshot is compared with the read of /proc under way at its tick (the
snapshot's time is the tick's CLOCK_MONOTONIC), never with reads at other moments: on
a shared machine the load changes from one moment to the next. Tolerance: per CPU,
the median over the ticks of the bpf count is at least the pinned load, and within 1
of that read's count, or a quarter of it on a crowded machine, once the tasks the walk
missed are allowed for (a walk takes tens to hundreds of ms and misses the tasks
started meanwhile; procs_running, read at its start, says how many in all); the
median total is within 2, or a quarter, of procs_running (which also counts the
daemon while it runs, and since 6.12 delayed-dequeue sleepers, which the bpf sampler
leaves out)."""
import os
import statistics
import time

from rqb import Daemon, Hogs, check, main, record_lines, require, tmpdir
from rqb_bpf import records, wait_bpf

TICKS = 30  # snapshots recorded while the test reads /proc


def procs_running():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running "):
                return int(line.split()[1])
    raise AssertionError("no procs_running in /proc/stat")


def recorded(path):
    """How many whole snapshots the record holds so far."""
    try:
        with open(path) as f:
            return sum(1 for line in f if line == "end\n")
    except FileNotFoundError:
        return 0


def runnable_per_cpu(skip_tgids):
    """Tasks in state R by their CPU, the whole of /proc, as the proc sampler parses it."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in skip_tgids:
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                # Bytes: a comm may be anything, not UTF-8 (t_ctl_escape's is not).
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rindex(b")") + 2:].split()
            if fields[0] == b"R":
                cpu = int(fields[39 - 3])
                out[cpu] = out.get(cpu, 0) + 1
    return out


def snapshot_times(path):
    """The NOW_NS (CLOCK_MONOTONIC, the tick's) of each whole snapshot in a record."""
    out, now = [], None
    for w in record_lines(path):
        if w and w[0] == "snapshot":
            now = int(w[2])
        elif w and w[0] == "end":
            out.append(now)
    return out


def test():
    require()
    with tmpdir() as tmp, Hogs(2, cpus="0"), Hogs(1, cpus="1"):
        rec = os.path.join(tmp, "record")
        with Daemon(tmp, ["--dry-run", "--record", rec], conf="[daemon]\nsampler = bpf\n") as d:
            wait_bpf(d)
            reads = []  # (start ns, end ns, procs_running, {cpu: runnable})
            # Reads until the daemon has recorded TICKS snapshots (it flushes each one),
            # however slowly the machine lets either side go.
            while recorded(rec) < TICKS:
                t0 = time.monotonic_ns()
                running = procs_running()
                scan = runnable_per_cpu({d.proc.pid})
                reads.append((t0, time.monotonic_ns(), running, scan))
                if not d.alive():
                    raise AssertionError(f"the daemon stopped; log:\n{d.text()}")
            check(d.stop() == 0, "the bpf daemon stops cleanly")
        # Each snapshot beside the read of /proc under way at its tick: the load of a
        # shared machine changes from moment to moment, so counts are compared only
        # with what /proc said at the same moment.
        pairs = []
        for (cpus, _), now in list(zip(records(rec), snapshot_times(rec)))[2:]:
            r = next((r for r in reads if r[0] <= now <= r[1]), None)
            if r:
                pairs.append((cpus, r[2], r[3]))
        check(len(pairs) >= 10, f"{len(pairs)} bpf snapshots taken during a read of /proc "
              f"({len(reads)} reads)")
        mb = {c: statistics.median(b.get(c, 0) for b, _, _ in pairs) for c in (0, 1)}
        mp = {c: statistics.median(p.get(c, 0) for _, _, p in pairs) for c in (0, 1)}
        # A walk of /proc is not one moment: it misses the tasks started while it runs
        # (on a shared machine, other work forks all the time), and procs_running, read
        # at its start, says how many it missed in all. A bpf count is off by what is
        # left once that shortfall is allowed for, on either CPU.
        def error(b, r, p, c):
            short = max(0, r - sum(p.values()))
            return max(0, p.get(c, 0) - b.get(c, 0), b.get(c, 0) - p.get(c, 0) - short)

        err = {c: statistics.median(error(b, r, p, c) for b, r, p in pairs) for c in (0, 1)}
        total_r = statistics.median(r for _, r, _ in pairs)
        total_diff = statistics.median(sum(b.values()) - r for b, r, _ in pairs)
        short = statistics.median(max(0, r - sum(p.values())) for _, r, p in pairs)
        print(f"median runnable per CPU: bpf {mb}, /proc {mp}, walk shortfall {short}, "
              f"bpf error {err}; total: bpf - procs_running {total_diff}, "
              f"procs_running {total_r}")
        check(mb[0] >= 2 and mb[1] >= 1, "bpf counts at least the pinned hogs on each CPU")
        for c in (0, 1):
            tol = max(1, mp[c] / 4)
            check(err[c] <= tol, f"CPU {c}: bpf within {tol:g} of /proc")
        tol = max(2, total_r / 4)
        check(abs(total_diff) <= tol, f"the bpf total is within {tol:g} of procs_running")


main(test)
