"""The bpf sampler's per-CPU runnable counts agree with /proc. Two hogs pinned to
CPU 0 and one to CPU 1; a bpf daemon (dry run) records while the test reads, again
and again, what /proc says at the same moments: every task in state R by the CPU it
is on (/proc/PID/task/TID/stat, fields 3 and 39: what the proc sampler reads, but
the whole of /proc each time, so that a task that just became busy is not missed
until a later walk), and procs_running from /proc/stat. The test reads without
pause, so it is itself runnable nearly always: both counts include it.

Tolerance: per CPU, the median over the ticks of the bpf count is at least the
pinned load and within 1 of the median /proc count, or a quarter of it on a crowded
machine (other tasks come and go between the two reads, which are not at the same
instant); the median total is within 2, or a quarter, of the median procs_running
(which also counts the daemon while it runs, and since 6.12 delayed-dequeue
sleepers, which the bpf sampler leaves out)."""
import os
import statistics
import time

from rqb import Daemon, Hogs, check, main, require, tmpdir
from rqb_bpf import records, wait_bpf

SECONDS = 3.0


def procs_running():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running "):
                return int(line.split()[1])
    raise AssertionError("no procs_running in /proc/stat")


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
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rindex(")") + 2:].split()
            if fields[0] == "R":
                cpu = int(fields[39 - 3])
                out[cpu] = out.get(cpu, 0) + 1
    return out


def test():
    require()
    with tmpdir() as tmp, Hogs(2, cpus="0"), Hogs(1, cpus="1"):
        rec = os.path.join(tmp, "record")
        with Daemon(tmp, ["--dry-run", "--record", rec], conf="[daemon]\nsampler = bpf\n") as d:
            wait_bpf(d)
            scans, running = [], []
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                running.append(procs_running())
                scans.append(runnable_per_cpu({d.proc.pid}))
            check(d.stop() == 0, "the bpf daemon stops cleanly")
        snaps = records(rec)[2:]
        check(len(snaps) >= 10 and len(scans) >= 3,
              f"{len(snaps)} bpf snapshots and {len(scans)} reads of /proc")
        mb = {c: statistics.median(s.get(c, 0) for s, _ in snaps) for c in (0, 1)}
        mp = {c: statistics.median(s.get(c, 0) for s in scans) for c in (0, 1)}
        total_b = statistics.median(sum(s.values()) for s, _ in snaps)
        total_r = statistics.median(running)
        print(f"median runnable per CPU: bpf {mb}, /proc {mp}; total: bpf {total_b}, "
              f"procs_running {total_r}")
        check(mb[0] >= 2 and mb[1] >= 1, "bpf counts at least the pinned hogs on each CPU")
        for c in (0, 1):
            tol = max(1, mp[c] / 4)
            check(abs(mb[c] - mp[c]) <= tol, f"CPU {c}: bpf within {tol:g} of /proc")
        tol = max(2, total_r / 4)
        check(abs(total_b - total_r) <= tol, f"the bpf total is within {tol:g} of procs_running")


main(test)
