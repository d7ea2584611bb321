"""What a user's values may do through the class cgroups, run as a real unprivileged user
against the daemon's classes below a parent of their own (the harness's cgroup_root,
of default weight), as rqbalance.conf(5) says:

- A raise never buys weight. A class below a parent competes with the parent's weight,
  nice 0's: the user's process that root reniced to 19 stays where it is when its user
  asks for 19 (in the class it would get a whole nice-0 share, measured: from a tenth
  to twice a nice-0 hog's CPU), with nice 19; one at nice 0 goes into the class, where
  it gains nothing.
- Where the kernel schedules real-time tasks by group (v1 cpu.rt_runtime_us), a class
  made later takes nothing from an older one: the user makes a class for every value it
  may ask, and root's process in its class keeps its real-time runtime and may still
  make itself SCHED_FIFO."""
import os
import subprocess
import sys

from rqb import Daemon, check, cpu_cgroup, fields, main, require, rqctl, skip, tmpdir, user_rqctl
from rqb_user import User

# Root's process: each line in makes it SCHED_FIFO and back, and prints what happened.
RT = r"""
import os, sys
for line in sys.stdin:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        print("ok", flush=True)
    except OSError as e:
        print(e.strerror, flush=True)
"""


def as_user(d, user, prog, *args):
    return subprocess.run(["runuser", "-u", user.name, "--", prog, "-s", d.ctl, *args],
                          capture_output=True, text=True, timeout=30)


def nice(pid):
    return os.getpriority(os.PRIO_PROCESS, pid)


def parent_of(d):
    """The classes' parent, as /proc/PID/cgroup names it, and its directory."""
    path = fields(rqctl(d, "status").stdout).get("latency_class_cgroups", "off")
    if path == "off" or not path.startswith("/sys/fs/cgroup/cpu/"):
        skip(f"no v1 cpu class cgroups here ({path})")
    return path[len("/sys/fs/cgroup/cpu"):], path


def raise_buys_nothing(d, user, prog, parent):
    reniced = user.start("echo $$; exec sleep 300")
    plain = user.start("echo $$; exec sleep 300")
    os.setpriority(os.PRIO_PROCESS, reniced, 19)  # the administrator's renice
    for pid in (reniced, plain):
        r = as_user(d, user, prog, "set", "-l", "19", "-p", str(pid))
        check(r.returncode == 0, f"the user may ask 19 for its process {pid} ({r.stderr.strip()!r})")
    d.sync()
    check(nice(reniced) == 19 and cpu_cgroup(reniced) == "/",
          f"the reniced process stays where it was, at nice 19 ({cpu_cgroup(reniced)}, "
          f"nice {nice(reniced)}), not in a class of the parent's weight")
    check(nice(plain) == 19 and cpu_cgroup(plain) == f"{parent}/rqbalance-lat19",
          f"one at nice 0 goes into the class ({cpu_cgroup(plain)}, nice {nice(plain)})")
    r = as_user(d, user, prog, "get", "-p", str(reniced))
    check(r.returncode == 0 and fields(r.stdout).get("value") == "19",
          f"and the value is the user's all the same ({r.stdout.strip()!r})")
    r = as_user(d, user, prog, "explain", "-p", str(reniced))
    check(r.returncode == 0 and "more than its nice did" in r.stdout,
          f"explain says why it stays ({r.stdout.strip()!r})")


def rt_runtime(path):
    with open(f"{path}/cpu.rt_runtime_us") as f:
        return int(f.read())


def new_classes_take_nothing(d, user, prog, parent, pdir):
    if not os.path.exists(f"{pdir}/cpu.rt_runtime_us"):
        print("(no RT group scheduling in this kernel: that half was not run)")
        return
    with subprocess.Popen([sys.executable, "-c", RT], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as p:
        try:
            r = rqctl(d, "set", "-l", "-10", "-p", str(p.pid))
            check(r.returncode == 0, f"root gives its process -10 ({r.stderr.strip()!r})")
            d.sync()
            cls = f"{pdir}/rqbalance-lat-10"
            check(cpu_cgroup(p.pid) == f"{parent}/rqbalance-lat-10", "in the class of -10")
            before = rt_runtime(cls)
            if before > 0:
                p.stdin.write("go\n")
                p.stdin.flush()
                check(p.stdout.readline().strip() == "ok",
                      f"there it may make itself SCHED_FIFO ({before} us a period)")
            pids = [user.start("echo $$; exec sleep 300") for _ in range(19)]
            for v, pid in zip(range(1, 20), pids):
                r = as_user(d, user, prog, "set", "-l", str(v), "-p", str(pid))
                check(r.returncode == 0, f"the user asks {v} ({r.stderr.strip()!r})")
            d.sync()
            made = [n for n in os.listdir(pdir) if n.startswith("rqbalance-lat")]
            check(len(made) >= 20, f"the user made a class for each value it asked: {made}")
            check(rt_runtime(cls) == before,
                  f"the class of -10 keeps its real-time runtime: {before} us, "
                  f"now {rt_runtime(cls)}")
            check(all(rt_runtime(f"{pdir}/{n}") == before for n in made),
                  "every class has the same part")
            if before > 0:
                p.stdin.write("go\n")
                p.stdin.flush()
                check(p.stdout.readline().strip() == "ok", "and root's may still be SCHED_FIFO")
        finally:
            p.stdin.close()
            p.kill()


def test():
    require()
    with tmpdir() as tmp, User("rqbc") as user:
        prog = user_rqctl(tmp)
        with Daemon(tmp) as d:
            d.wait_for("running: sampler")
            parent, pdir = parent_of(d)
            raise_buys_nothing(d, user, prog, parent)
            new_classes_take_nothing(d, user, prog, parent, pdir)
            check(d.stop() == 0, "clean stop")


main(test)
