"""The daemon gives itself the nice and slice of [daemon] latency_nice (-10 by default),
with SCHED_RESET_ON_FORK, on every thread; probing the kernel's default slice at start
does not take its slice away; a reload sets the new value; a dry run does it too (the
daemon's own scheduling changes no task it manages)."""
import os
import re
import signal

from rqb import Daemon, check, main, require, sched_field, tmpdir, value_slice_ns


def has_slices():
    """Whether this kernel takes sched_runtime as a SCHED_OTHER task's slice (6.12+)."""
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 12)


def threads(pid):
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def nice_of(tid):
    with open(f"/proc/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def reset_on_fork(tid):
    """SCHED_RESET_ON_FORK shows as the 0x40000000 bit of the policy in sched_getscheduler."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.sched_getscheduler(tid) & 0x40000000 != 0


def test():
    require()
    with tmpdir() as tmp:
        with Daemon(tmp, ["--dry-run"]) as d:
            d.wait_for(r"running: sampler")
            m = d.wait_for(r"self: latency-nice (-?\d+): nice (-?\d+)")
            check(m.group(1) == "-10" and m.group(2) == "-10",
                  f"the log says the daemon's own value: {m.group(0)!r}")
            pid = d.proc.pid
            for tid in threads(pid):
                check(nice_of(tid) == -10, f"thread {tid} has nice -10")
                check(reset_on_fork(tid), f"thread {tid} has SCHED_RESET_ON_FORK")
                if has_slices():
                    slice_ns = sched_field(tid, "se.slice")
                    # The kernel's default x 2^(-10/5): 0.35 ms on 2 CPUs.
                    check(slice_ns == value_slice_ns(-10),
                          f"thread {tid} keeps its slice of -10 past the start-up probe "
                          f"of the default one: {slice_ns}")

            with open(d.conf) as f:
                text = f.read()
            with open(d.conf, "w") as f:
                f.write(text.replace("[daemon]\n", "[daemon]\nlatency_nice = 0\n", 1))
            d.proc.send_signal(signal.SIGHUP)
            d.wait_for(r"self: latency-nice 0: nice 0")
            for tid in threads(pid):
                check(nice_of(tid) == 0, f"after a reload to 0, thread {tid} has nice 0")
                if has_slices():
                    # 0 asks for no slice of its own: the kernel's default, this test's.
                    check(sched_field(tid, "se.slice") == sched_field(os.getpid(), "se.slice"),
                          "and the kernel's default slice")
            check(d.stop() == 0, "clean stop")
            check(not re.search(r"cannot give the daemon", d.text()), "no error on the way")


main(test)
