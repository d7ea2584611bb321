"""Issue 50, finding 3: what the kernel copied while the daemon was down is given back.
Root gives a real unprivileged user's process -10; the daemon is SIGKILLed; the process
forks a child that execs sleep, and starts a thread; the daemon starts again. The child
and the thread, which the journal never named, are back at nice 0 out of the class (the
restart gives back by state, not by record), the class is gone, and `get` says they are
not managed, as they are."""
import os
import signal
import subprocess

from rqb import (CGROUP_ROOT, RQCTL, Daemon, check, class_mount, cpu_cgroup, main, require,
                 rqctl, skip, tmpdir)
from rqb import sched_field as sched
from rqb_user import User

# Says its pid, waits for a line; then forks a child that execs sleep and starts a
# thread, says "CHILD TID", and waits for a line.
PROG = """
import os, sys, threading
print(os.getpid(), flush=True)
sys.stdin.readline()
child = os.fork()
if child == 0:
    os.execvp("sleep", ["sleep", "600"])
got, stop = [], threading.Event()
ready = threading.Event()
def run():
    got.append(threading.get_native_id())
    ready.set()
    stop.wait()
t = threading.Thread(target=run)
t.start()
ready.wait()
print(child, got[0], flush=True)
sys.stdin.readline()
stop.set()
"""


def nice(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)


def test():
    require()
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    with tmpdir() as tmp, User("rqbc") as user:
        p = user.popen(["python3", "-c", PROG], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
        pid = int(p.stdout.readline())
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            mount = class_mount(d)
            if not mount:
                skip("no class cgroups here")
            cls = f"/{CGROUP_ROOT}/rqbalance-lat-10"
            r = rqctl(d, "set", "-l", "-10", "-p", str(pid))
            check(r.returncode == 0, f"root gives the user's process -10 ({r.stderr.strip()})")
            check(nice(pid) == -10 and cpu_cgroup(pid) == cls, f"it has nice -10 in {cls}")
            check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon is killed")
        p.stdin.write("\n")
        p.stdin.flush()
        child, tid = map(int, p.stdout.readline().split())
        for t, what in ((child, "the child"), (tid, "the thread")):
            check(nice(t) == -10 and cpu_cgroup(t) == cls,
                  f"{what} copied -10 and the class while no daemon ran")
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            check(rqctl(d, "status").returncode == 0, "the daemon is up again")
            check(nice(pid) == 0 and cpu_cgroup(pid) == "/", "the process is given back")
            for t, what, opt in ((child, "the child (sleep)", "-p"), (tid, "the thread", "-t")):
                check(nice(t) == 0, f"{what} is back at nice 0 (has {nice(t)})")
                check(cpu_cgroup(t) == "/", f"{what} is out of the class ({cpu_cgroup(t)})")
                check(sched(t, "policy") == 0, f"{what} has SCHED_OTHER")
                g = rqctl(d, "get", opt, str(t))
                check(g.returncode != 0 and "not managed" in g.stderr,
                      f"get on {what} says not managed, as it is: {g.stderr.strip()}")
            path = mount + cls
            check(not os.path.exists(path) or not open(f"{path}/tasks").read().strip(),
                  "the class the killed run left is gone or empty")
            check(d.stop() == 0, "clean stop")
        p.stdin.write("\n")
        p.stdin.flush()
        p.wait()
        os.kill(child, signal.SIGKILL)


main(test)
