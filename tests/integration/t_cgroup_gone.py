"""Cgroups that rqbalance uses, removed under it (a cgroup target removed while managed
is in t_latency's cgroup_target):

- a class cgroup whose tasks have exited, removed by someone else: the next task given
  that value gets the class back (made anew), and the daemon logs it;
- a task's own cgroup, removed while the task sits in its class: the stop, and a restart
  after SIGKILL, give the task the rest of what it had and move it to the top of the
  hierarchy, with a warning; the daemon does not crash.
"""
import os
import signal
import subprocess
import sys

from rqb import (CGROUP_ROOT, CPU_V1, Daemon, check, cpu_cgroup, default_slice_ns, main, require,
                 require_cpu_v1, rqctl, tmpdir)
from rqb import sched_field as sched

IDLER = [sys.executable, "-c", "import time; time.sleep(600)"]


def class_removed(tmp):
    cls = f"/{CGROUP_ROOT}/rqbalance-lat-5"
    a = subprocess.Popen(IDLER)
    b = subprocess.Popen(IDLER)
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            check(rqctl(d, "set", "-l", "-5", "-p", str(a.pid)).returncode == 0, "set -l -5 on a")
            check(cpu_cgroup(a.pid) == cls, f"a is in {cls}")
            a.kill()
            a.wait()
            d.sync()  # a is reaped: its exit event is queued, and now handled
            check("latency_tasks 0" in rqctl(d, "status").stdout, "a's exit is seen")
            os.rmdir(CPU_V1 + cls)
            r = rqctl(d, "set", "-l", "-5", "-p", str(b.pid))
            check(r.returncode == 0, f"set -l -5 on b after the class was removed "
                  f"({r.stdout.strip()} {r.stderr.strip()})")
            check(cpu_cgroup(b.pid) == cls, f"b is in {cls}, made anew")
            check(sched(b.pid, "se.slice") < default_slice_ns(), "and has the shorter slice")
            check(d.alive(), "the daemon runs on")
            d.stop()
            check("class cgroup" in d.text() and "made anew" in d.text(),
                  "the removal is logged")
        check(cpu_cgroup(b.pid) == "/", "the stop gives b its cgroup back")
        check(not os.path.exists(CPU_V1 + cls), "and removes the class")
    finally:
        for p in (a, b):
            p.kill()
            p.wait()


def own_cgroup_removed(tmp, crash):
    own = f"{CPU_V1}/{CGROUP_ROOT}-own"
    journal = os.path.join(tmp, "crash" if crash else "run")
    os.mkdir(own)
    p = subprocess.Popen(IDLER)
    try:
        with open(f"{own}/tasks", "w") as f:
            f.write(str(p.pid))
        before = (sched(p.pid, "policy"), sched(p.pid, "se.slice"))
        # The test's own group, named as one a value may move a task out of.
        conf = f"[latency]\nmove_from = /{CGROUP_ROOT}-own\n"
        with Daemon(tmp, journal=journal, conf=conf) as d:
            d.wait_for("ctl: serving")
            check(rqctl(d, "set", "-l", "-5", "-p", str(p.pid)).returncode == 0,
                  f"set -l -5 on a task in /{CGROUP_ROOT}-own")
            check(cpu_cgroup(p.pid) == f"/{CGROUP_ROOT}/rqbalance-lat-5", "it is in its class")
            os.rmdir(own)
            if crash:
                check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon is killed")
            else:
                check(d.stop() == 0, "the daemon stops cleanly")
        if crash:
            with Daemon(tmp, journal=journal, conf=conf) as d:
                d.wait_for("a previous run left 1 tasks")
                check(d.stop() == 0, "the restart goes through and stops cleanly")
        check(f"cgroup \"/{CGROUP_ROOT}-own\" is gone; moved to /" in d.text(),
              "the daemon says the task's cgroup is gone")
        check(cpu_cgroup(p.pid) == "/", "the task is at the top of the hierarchy")
        check((sched(p.pid, "policy"), sched(p.pid, "se.slice")) == before,
              "with its policy and slice back")
    finally:
        p.kill()
        p.wait()
        if os.path.exists(own):
            os.rmdir(own)


def test():
    require()
    require_cpu_v1()
    with tmpdir() as tmp:
        class_removed(tmp)
        own_cgroup_removed(tmp, crash=False)
        own_cgroup_removed(tmp, crash=True)


main(test)
