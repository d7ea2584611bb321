"""A task that changes its own setting after rqbalance set it keeps its change: it is not
restored over, while what it left alone is given back. t_latency's own_choice_stands
covers a policy change and t_restore_crash an affinity change seen by a restart; here:

- affinity, while the daemon runs: the next tick sees the change and forgets the pin,
  and the stop leaves the task's own mask;
- a slice the task set itself, and a cgroup it moved itself to, after a latency value:
  at the stop, and at a restart after SIGKILL, the slice (or the cgroup) stands and the
  other knob is given back.
"""
import ctypes
import os
import platform
import re
import signal
import subprocess
import sys

from rqb import (CGROUP_ROOT, TOPO_2LLC, Daemon, Hogs, allowed, check, cpu_cgroup, main,
                 require, rqctl, task_line, tmpdir, value_slice_ns, write_replay)
from rqb import sched_field as sched

CPU_V1 = "/sys/fs/cgroup/cpu"
IDLER = [sys.executable, "-c", "import time; time.sleep(600)"]
OWN_SLICE = 3000000


class SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64),
                ("util_min", ctypes.c_uint32), ("util_max", ctypes.c_uint32)]


def set_slice(pid, ns):
    """sched_setattr(2) with SCHED_OTHER and this slice, as the task itself would."""
    libc = ctypes.CDLL(None, use_errno=True)
    a = SchedAttr(size=ctypes.sizeof(SchedAttr), policy=0, runtime=ns)
    if libc.syscall(314, pid, ctypes.byref(a), 0) != 0:
        raise OSError(ctypes.get_errno(), "sched_setattr")


def affinity_live(tmp):
    with Hogs(2) as hogs:
        a, b = sorted(hogs.pids)
        replay = os.path.join(tmp, "own.replay")
        # Ticks 1 and 2 overload CPU 0 (an overload of one task counts the second time);
        # from tick 3 on, b is seen with the mask it will choose: the replay sampler shows
        # what it is given, not what the task has. a is excluded by its comm in the replay
        # ("keep"), so b is the only task the policy may move: once b is forgotten, LLC 0
        # is still overloaded in every snapshot and would otherwise rightly pin a.
        over = ([(0, 2, 100), (1, 0, 0)], [task_line(a, 0, comm="keep"), task_line(b, 0)])
        write_replay(replay, [over, over, ([(0, 2, 100), (1, 0, 0)],
                                           [task_line(a, 0, comm="keep"),
                                            task_line(b, 0, allowed_list="0")])])
        # max_pin_ms: the pin must stand until the test changes b's mask, however slow.
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay],
                    conf="[exclude]\ncomms = keep\n[balance]\nmax_pin_ms = 86400000\n") as d:
            d.wait_for(rf"pin tid={b} ")
            check(allowed(b) == {1}, f"{b} is pinned to CPU 1")
            subprocess.run(["taskset", "-pc", "0", str(b)], check=True, stdout=subprocess.DEVNULL)
            d.wait_for(rf"tid {b} changed its own affinity \(now 0\): left as it chose")
            # Some ticks on: the forgotten pin is not made again, nothing else is pinned.
            d.sync(3)
            check(rqctl(d, "status").stdout.count("\nmanaged 0\n") == 1,
                  "the daemon no longer manages it")
            check(allowed(b) == {0}, "and left it the mask it chose")
            check(d.stop() == 0, "clean stop")
            check(f"restored tid {b}" not in d.text(), "the stop did not restore it")
            check(len(re.findall(r" pin tid=", d.text())) == 1, "the daemon pinned b only")
        check(allowed(b) == {0}, "the task's own mask stands after the stop")
        check(allowed(a) == {0, 1}, "the other task was never touched")


def latency(tmp, crash):
    own = f"{CPU_V1}/{CGROUP_ROOT}-own"
    cls = f"/{CGROUP_ROOT}/rqbalance-lat-8"
    journal = os.path.join(tmp, "crash" if crash else "run")
    os.mkdir(own)
    p, q = subprocess.Popen(IDLER), subprocess.Popen(IDLER)
    try:
        default_slice = sched(p.pid, "se.slice")
        with Daemon(tmp, journal=journal) as d:
            d.wait_for("ctl: serving")
            for t in (p, q):
                check(rqctl(d, "set", "-l", "-8", "-p", str(t.pid)).returncode == 0,
                      f"set -l -8 on {t.pid}")
                check(cpu_cgroup(t.pid) == cls and sched(t.pid, "se.slice") == value_slice_ns(-8),
                      f"{t.pid} is in {cls} with the slice of -8")
            set_slice(p.pid, OWN_SLICE)
            with open(f"{own}/tasks", "w") as f:
                f.write(str(q.pid))
            # The daemon gets no event for either change: a tick with both in place is
            # all there is to wait for before the stop (or the kill) judges them.
            d.sync()
            if crash:
                check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon is killed")
            else:
                check(d.stop() == 0, "clean stop")
        if crash:
            with Daemon(tmp, journal=journal) as d:
                d.wait_for("a previous run left 2 tasks")
                check(d.stop() == 0, "the restart gives back and stops cleanly")
        how = "the restart" if crash else "the stop"
        check(sched(p.pid, "se.slice") == OWN_SLICE,
              f"after {how} the slice the task set itself stands")
        check(cpu_cgroup(p.pid) == "/", "and its class cgroup was given back")
        check(cpu_cgroup(q.pid) == f"/{CGROUP_ROOT}-own",
              f"after {how} the cgroup the task moved to stands")
        check(sched(q.pid, "se.slice") == default_slice, "and its slice was given back")
    finally:
        for t in (p, q):
            t.kill()
            t.wait()
        os.rmdir(own)


def test():
    require()
    with tmpdir() as tmp:
        affinity_live(tmp)
        if not os.path.exists(f"{CPU_V1}/cpu.shares"):
            print("latency part skipped: needs the v1 cpu controller at /sys/fs/cgroup/cpu")
            return
        if platform.machine() != "x86_64":
            print("latency part skipped: sched_setattr's number is x86_64's here")
            return
        latency(tmp, crash=False)
        latency(tmp, crash=True)


main(test)
