"""A favour ends by state, not by record (issue 50's kind): what the kernel copied from a
task rqbalance changed is given back with it, whether or not the journal names it.

- Latency: a real unprivileged user's process at -10 and another at +10 (SCHED_BATCH
  and a long slice where the mapping says so); the daemon is SIGKILLed; each process
  starts a thread and forks a child that starts a thread of its own and forks a
  grandchild that execs sleep. After the restart every one of them has what its process
  had before the value (nice, policy, slice, the top cgroup) and the classes are gone.
  The same forks made just before a clean stop (SIGTERM) are given back by the stop.
- A grandchild that changed its nice itself keeps its sched knobs (only a task that
  still holds exactly what rqbalance wrote gets them back); it leaves the class.
- Affinity: a task pinned by the spread policy, SIGKILL; it starts a thread and forks a
  child that forks a grandchild; after the restart all three have the whole mask back.
"""
import os
import signal
import subprocess

from rqb import (CGROUP_ROOT, RQCTL, TOPO_2LLC, Daemon, allowed, check, class_mount,
                 cpu_cgroup, main, require, rqctl, skip, task_line, tmpdir, wait_until,
                 write_overload, write_replay)
from rqb import sched_field as sched
from rqb_user import User

# Says its pid, waits for a line; then starts a thread, forks a child that starts a
# thread and forks a grandchild that execs sleep (or, with the argument "self", renices
# itself to 3 first); says "THREAD CHILD CHILDTHREAD GRANDCHILD", waits for a line.
PROG = """
import os, sys, threading
def thread():
    got, ready, stop = [], threading.Event(), threading.Event()
    def run():
        got.append(threading.get_native_id())
        ready.set()
        stop.wait()
    threading.Thread(target=run, daemon=True).start()
    ready.wait()
    return got[0]
print(os.getpid(), flush=True)
sys.stdin.readline()
t = thread()
r, w = os.pipe()
held, hold = os.pipe()  # the child ends, and ends the grandchild, when this process does
child = os.fork()
if child == 0:
    os.close(r)
    os.close(hold)
    ct = thread()
    g = os.fork()
    if g == 0:
        if len(sys.argv) > 1:
            os.setpriority(os.PRIO_PROCESS, 0, 3)
        os.execvp("sleep", ["sleep", "600"])
    os.write(w, f"{ct} {g}\\n".encode())
    os.read(held, 1)
    os.kill(g, 9)
    os._exit(0)
os.close(w)
ct, g = os.read(r, 100).decode().split()
print(t, child, ct, g, flush=True)
sys.stdin.readline()
"""


def nice(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)


def knobs(tid):
    return (nice(tid), sched(tid, "policy"), sched(tid, "se.slice"), cpu_cgroup(tid))


class Proc:
    def __init__(self, user, *args):
        self.p = user.popen(["python3", "-c", PROG, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline())
        self.before = knobs(self.pid)
        self.made = []

    def spawn(self):
        self.p.stdin.write("\n")
        self.p.stdin.flush()
        self.made = [int(x) for x in self.p.stdout.readline().split()]
        return self.made

    def end(self):
        if self.p.poll() is None:
            self.p.stdin.write("\n")
            self.p.stdin.flush()
            self.p.wait()


def gave(d, procs, value):
    for pr, v in zip(procs, value):
        r = rqctl(d, "set", "-l", str(v), "-p", str(pr.pid))
        check(r.returncode == 0, f"root gives process {pr.pid} {v} ({r.stderr.strip()})")
        check(nice(pr.pid) == v and cpu_cgroup(pr.pid) == f"/{CGROUP_ROOT}/rqbalance-lat{v}",
              f"process {pr.pid} has nice {v} in its class")


def given_back(procs, names, when, own=None):
    for pr in procs:
        for tid, name in zip(pr.made, names):
            want = pr.before
            if own and tid == own[0]:
                want = own[1]
            check(knobs(tid) == want, f"{when}: the {name} of {pr.pid} ({tid}) has what the "
                  f"process had before: {knobs(tid)} (want {want})")


def latency(tmp, user):
    names = ["thread", "child", "child's thread", "grandchild"]
    with Daemon(tmp) as d:
        d.wait_for("ctl: serving")
        mount = class_mount(d)
        if not mount:
            skip("no class cgroups here")
        conf = rqctl(d, "status").stdout
    print(conf)
    # A crash: the forks are made while no daemon runs.
    neg, pos, own = Proc(user), Proc(user), Proc(user, "self")
    procs = [neg, pos, own]
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            gave(d, procs, [-10, 10, -10])
            own_slice = sched(own.pid, "se.slice")
            check(sched(pos.pid, "se.slice") > pos.before[2] and sched(pos.pid, "policy") == 3,
                  "+10 has a longer slice and SCHED_BATCH (batch_from = 10)")
            check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon is killed")
        for pr in procs:
            pr.spawn()
        check(nice(neg.made[3]) == -10 and nice(pos.made[3]) == 10,
              "the grandchildren copied the values while no daemon ran")
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            check(rqctl(d, "status").returncode == 0, "the daemon is up again")
            given_back(procs, names, "after the restart",
                       own=(own.made[3], (3, own.before[1], own_slice, "/")))
            for pr in procs:
                check(knobs(pr.pid) == pr.before, f"process {pr.pid} itself is given back")
            for v in (-10, 10):
                path = f"{mount}/{CGROUP_ROOT}/rqbalance-lat{v}"
                check(not os.path.exists(path), f"the killed run's class {v} is removed")
            check(d.stop() == 0, "clean stop")
    finally:
        for pr in procs:
            pr.end()
    # A clean stop: the forks are made just before it, the stop gives them back.
    neg, pos = Proc(user), Proc(user)
    procs = [neg, pos]
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            gave(d, procs, [-10, 10])
            for pr in procs:
                pr.spawn()
            check(d.stop() == 0, "clean stop")
        given_back(procs, names, "after the stop")
    finally:
        for pr in procs:
            pr.end()


def affinity(tmp):
    """A pin SIGKILL left, and what the pinned task made while no daemon ran."""
    journal = os.path.join(tmp, "aff")
    # The policy pins the later of the two (t_restore_crash): the test's process.
    other = subprocess.Popen(["sleep", "600"])
    pr = subprocess.Popen(["python3", "-c", PROG], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    try:
        b = int(pr.stdout.readline())
        a = other.pid
        overload = os.path.join(tmp, "overload.replay")
        balanced = os.path.join(tmp, "balanced.replay")
        write_overload(overload, a, b)
        write_replay(balanced, [([(0, 1, 100), (1, 1, 100)],
                                 [task_line(a, 0), task_line(b, 1, allowed_list="0-1")])])
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", overload], journal=journal) as d:
            m = d.wait_for(r"pin tid=(\d+) ")
            pinned = int(m.group(1))
            if pinned != b:
                skip(f"the policy pinned {pinned}, not the test's process {b}")
            check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon is killed")
        check(allowed(b) == {1}, "after SIGKILL the pin is still in place")
        pr.stdin.write("\n")
        pr.stdin.flush()
        made = [int(x) for x in pr.stdout.readline().split()]
        check(all(allowed(t) == {1} for t in made), "its thread, child, child's thread and "
              "grandchild copied the pin")
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", balanced], journal=journal) as d:
            d.wait_for(r"a previous run left changes")
            check(allowed(b) == {0, 1}, "the restart gives the pinned task its mask back")
            for t, name in zip(made, ["thread", "child", "child's thread", "grandchild"]):
                check(allowed(t) == {0, 1}, f"and its {name} ({t}), which had the pin "
                      f"exactly: {sorted(allowed(t))}")
            check(d.stop() == 0, "clean stop")
    finally:
        if pr.poll() is None:
            pr.stdin.write("\n")
            pr.stdin.flush()
            pr.wait()
        other.kill()
        other.wait()


def test():
    require()
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    with tmpdir() as tmp, User("rqbs") as user:
        latency(tmp, user)
        affinity(tmp)


main(test)
