"""The bpf sampler through the real daemon: a busy task the test pinned to a CPU
shows up on that CPU, with its start time and allowed list; a queue longer than
one perf sample lists (32 tasks) is completed by the task iterator; the daemon
never lists itself; and once loaded it has dropped CAP_BPF, CAP_PERFMON and
CAP_SYS_ADMIN from its effective set, but kept CAP_SYS_NICE."""
import os
import time

from rqb import (Daemon, Hogs, allowed, check, main, require, start_time, tmpdir,
                 wait_until)
from rqb_bpf import CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_NICE, caps, records, wait_bpf

BPF = "[daemon]\nsampler = bpf\n"
LONG_QUEUE = 40  # more than RQS_MAX_TASKS (32) in daemon/sample/bpf/rqsample.bpf.h


def comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def pinned_task(tmp, cpu):
    with Hogs(1, cpus=str(cpu)) as hogs:
        (pid,) = hogs.pids
        record = os.path.join(tmp, f"record-{cpu}")
        with Daemon(tmp, ["--dry-run", "--record", record], conf=BPF) as d:
            path = wait_bpf(d)
            print(f"rq via {path}")
            eff, _ = caps(d.proc.pid)
            d.sync(5)  # 5 more ticks, each recorded
            check(d.stop() == 0, "clean stop")
        seen = [t for _, tasks in records(record) for t in tasks if t[1] == str(pid)]
        check(len(seen) >= 3, f"the busy task was seen in {len(seen)} snapshots")
        check(all(w[3] == str(cpu) for w in seen), f"always on CPU {cpu}")
        check(all(w[4] == str(start_time(pid)) for w in seen), "with its start time")
        check(all(w[6] == str(cpu) for w in seen), "and its allowed list")
        check(all(w[7] == "sh" for w in seen), "and its comm")
        mine = [t for _, tasks in records(record) for t in tasks if t[2] == str(d.proc.pid)]
        check(not mine, "the daemon never lists itself")
        return eff


def wait_record(d, path, cond, timeout=30.0):
    """Waits until the snapshots the daemon has recorded so far satisfy cond (the record
    is flushed each tick, and a snapshot counts once its "end" is written)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and cond(records(path)):
            return
        if not d.alive():
            break
        time.sleep(0.05)
    raise AssertionError(f"{path} never showed what was expected; log:\n{d.text()}")


def long_queue(tmp):
    with Hogs(LONG_QUEUE, cpus="1") as hogs:
        pids = {str(p) for p in hogs.pids}
        # taskset narrows each one, then execs the shell: wait for the test's own
        # children to be there, all on CPU 1.
        check(wait_until(lambda: all(allowed(p) == {1} and comm(p) == "sh" for p in hogs.pids),
                         timeout=30), f"{LONG_QUEUE} hogs run on CPU 1")

        def listed_of(snaps):
            return [len({t[1] for t in tasks if t[1] in pids and t[3] == "1"})
                    for _, tasks in snaps]

        record = os.path.join(tmp, "record-long")
        with Daemon(tmp, ["--dry-run", "--record", record], conf=BPF) as d:
            wait_bpf(d)
            # A task walk (at most once a second, when the counts show more than the
            # perf samples list) lists the whole queue: wait for the tick that did it,
            # then record some more ticks for the counts.
            wait_record(d, record, lambda snaps: LONG_QUEUE in listed_of(snaps))
            d.sync(10)
            check(d.stop() == 0, "clean stop")
        snaps = records(record)
        listed = listed_of(snaps)
        counted = [cpus.get(1, 0) for cpus, _ in snaps]
        print(f"{LONG_QUEUE} hogs on CPU 1: listed per tick {listed}, counted {counted}")
        check(max(listed) == LONG_QUEUE, f"a task walk listed all {LONG_QUEUE} hogs on CPU 1")
        check(sorted(counted)[len(counted) // 2] >= LONG_QUEUE,
              f"CPU 1's count is at least {LONG_QUEUE} in most ticks")


def test():
    require()
    with tmpdir() as tmp:
        for cpu in (1, 0):
            eff = pinned_task(tmp, cpu)
        for cap, name in ((CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON"),
                          (CAP_SYS_ADMIN, "CAP_SYS_ADMIN")):
            check(not eff & (1 << cap), f"{name} is no longer effective once running")
        check(eff & (1 << CAP_SYS_NICE), "CAP_SYS_NICE still is")
        long_queue(tmp)


main(test)
