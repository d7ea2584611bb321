"""The bpf sampler's per-CPU runnable counts agree with /proc. Two hogs pinned to
CPU 0 and one to CPU 1; a bpf and a proc daemon (dry run, each with its own
journal and socket) record the same seconds side by side, and the test samples
procs_running from /proc/stat meanwhile.

Tolerance: per CPU, the median over the ticks of the bpf count is at least the
pinned load and within 1 of the proc sampler's median, or a quarter of it on a
crowded machine (other tasks come and go between the two samplers' reads, and the
proc sampler sees a new busy task only at its next walk); the median total is
within 2, or a quarter, of the median procs_running less the test's own reader
(procs_running also counts the daemons while they run, and since 6.12
delayed-dequeue sleepers, which the bpf sampler leaves out)."""
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


def medians(snaps, cpus=(0, 1)):
    return {c: statistics.median(s.get(c, 0) for s, _ in snaps) for c in cpus}


def test():
    require()
    with tmpdir() as tb, tmpdir() as tp, Hogs(2, cpus="0") as h0, Hogs(1, cpus="1") as h1:
        rb, rp = os.path.join(tb, "record"), os.path.join(tp, "record")
        with Daemon(tb, ["--dry-run", "--record", rb], conf="[daemon]\nsampler = bpf\n") as db:
            wait_bpf(db)
            with Daemon(tp, ["--dry-run", "--record", rp],
                        conf="[daemon]\nsampler = proc\n") as dp:
                dp.wait_for(r"running: sampler proc")
                running = []
                deadline = time.monotonic() + SECONDS
                while time.monotonic() < deadline:
                    running.append(procs_running() - 1)  # less this reader
                    time.sleep(0.05)
                check(dp.stop() == 0, "the proc daemon stops cleanly")
            check(db.stop() == 0, "the bpf daemon stops cleanly")
        sb, sp = records(rb), records(rp)
        check(len(sb) >= 10 and len(sp) >= 10, f"{len(sb)} bpf and {len(sp)} proc snapshots")
        mb, mp = medians(sb[2:]), medians(sp[2:])
        total_b = statistics.median(sum(s.values()) for s, _ in sb[2:])
        total_r = statistics.median(running)
        print(f"median runnable per CPU: bpf {mb}, proc {mp}; total: bpf {total_b}, "
              f"procs_running {total_r}")
        check(mb[0] >= 2 and mb[1] >= 1, "bpf counts at least the pinned hogs on each CPU")
        for c in (0, 1):
            tol = max(1, mp[c] / 4)
            check(abs(mb[c] - mp[c]) <= tol, f"CPU {c}: bpf within {tol:g} of the proc sampler")
        tol = max(2, total_r / 4)
        check(abs(total_b - total_r) <= tol, f"the bpf total is within {tol:g} of procs_running")


main(test)
