"""The bpf sampler through the real daemon: a busy task the test pinned to a CPU
shows up on that CPU, with its start time and allowed list; a queue longer than
one perf sample lists (32 tasks) is completed by the task iterator; the daemon
never lists itself; and once loaded it has dropped CAP_BPF, CAP_PERFMON and
CAP_SYS_ADMIN from its effective set, but kept CAP_SYS_NICE."""
import os
import time

from rqb import Daemon, Hogs, check, main, require, start_time, tmpdir
from rqb_bpf import CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_NICE, caps, records, wait_bpf

BPF = "[daemon]\nsampler = bpf\n"
LONG_QUEUE = 40  # more than RQS_MAX_TASKS (32) in daemon/sample/bpf/rqsample.h


def pinned_task(tmp, cpu):
    with Hogs(1, cpus=str(cpu)) as hogs:
        (pid,) = hogs.pids
        record = os.path.join(tmp, f"record-{cpu}")
        with Daemon(tmp, ["--dry-run", "--record", record], conf=BPF) as d:
            path = wait_bpf(d)
            print(f"rq via {path}")
            eff, _ = caps(d.proc.pid)
            time.sleep(1.0)
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


def long_queue(tmp):
    with Hogs(LONG_QUEUE, cpus="1") as hogs:
        time.sleep(0.3)
        record = os.path.join(tmp, "record-long")
        with Daemon(tmp, ["--dry-run", "--record", record], conf=BPF) as d:
            wait_bpf(d)
            time.sleep(2.5)
            check(d.stop() == 0, "clean stop")
        pids = {str(p) for p in hogs.pids}
        snaps = records(record)
        listed = [len({t[1] for t in tasks if t[1] in pids and t[3] == "1"})
                  for _, tasks in snaps]
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
