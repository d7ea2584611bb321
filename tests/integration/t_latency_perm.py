"""Who may set latency values through rqctl, run as a real unprivileged user the test
creates: their own task only upwards (a reset counts as going to none, so it is a
lowering unless the value was negative), not another user's task nor a cgroup whose
weight file they do not own; root may set any value, after which the user may raise
it but not lower it back. `rqctl run` with a lower value is refused before the
command runs. A reset, and the daemon's stop, give the task its policy, slice and
cgroup back."""
import os
import resource
import shutil
import subprocess

from rqb import (RQCTL, TOPO_2LLC, Daemon, check, class_mount, fields, main, private_copy,
                 require, skip, tmpdir, write_replay)
from rqb_user import NICE0, User


def rqctl(sock, *args, user=None, prog=RQCTL):
    pre = ["runuser", "-u", user, "--"] if user else []
    return subprocess.run(pre + [prog, "-s", sock, *args], capture_output=True, text=True,
                          timeout=30)



def sched_slice(pid):
    """se.slice from /proc/PID/sched, or None where the kernel does not show it."""
    try:
        with open(f"/proc/{pid}/sched") as f:
            for line in f:
                if line.startswith("se.slice"):
                    return int(line.split(":")[1])
    except FileNotFoundError:
        pass
    return None


def nice_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        return int(next(l for l in f if l.startswith("Max nice priority")).split()[3])


def knobs(pid):
    # Only the hierarchy rqbalance acts in: others (memory) are the machine's to change.
    with open(f"/proc/{pid}/cgroup") as f:
        text = f.read().splitlines()
    lines = [l for l in text if "cpu" in l.split(":")[1].split(",")]
    lines += [l for l in text if l.startswith("0::")]
    cgroup = lines[0] if lines else ""
    return {"policy": os.sched_getscheduler(pid), "slice": sched_slice(pid), "cgroup": cgroup}


class Ctl:
    """rqctl against one daemon, as root or as the test user."""

    def __init__(self, d, user, prog):
        self.d, self.user, self.prog = d, user, prog

    def root(self, *args):
        return rqctl(self.d.ctl, *args)

    def as_user(self, *args):
        return rqctl(self.d.ctl, *args, user=self.user.name, prog=self.prog)

    def value(self, target):
        p = self.root("get", *target)
        if p.returncode != 0:
            check("not managed" in p.stderr, f"get {target}: an error says not managed")
            return None
        return int(fields(p.stdout)["value"])

    def user_may(self, what, *args):
        p = self.as_user(*args)
        check(p.returncode == 0, f"the user may {what} ({p.stderr.strip()!r})")

    def user_may_not(self, what, *args):
        p = self.as_user(*args)
        check(p.returncode == 1 and "permission denied" in p.stderr,
              f"the user may not {what} ({p.returncode}, {p.stderr.strip()!r})")


def own_task(c, pid, orig):
    task = ("-p", str(pid))
    c.user_may("raise their own task to 5", "set", "-l", "5", *task)
    check(c.value(task) == 5, "get shows value 5")
    if orig["slice"] is not None:
        check(sched_slice(pid) != orig["slice"], "and the kernel gave the task another slice")
    c.user_may("raise it to 10", "set", "-l", "10", *task)
    check(os.sched_getscheduler(pid) == os.SCHED_BATCH, "10 runs SCHED_BATCH (batch_from)")
    c.user_may_not("lower it to 3", "set", "-l", "3", *task)
    c.user_may_not("lower it to -5", "set", "-l", "-5", *task)
    c.user_may_not("reset it (from 10 to none is a lowering)", "reset", *task)
    check(c.value(task) == 10, "the value is still 10")


def other_task(c, sleep):
    with subprocess.Popen([sleep, "60"]) as rp:
        before = knobs(rp.pid)
        c.user_may_not("set root's task", "set", "-l", "5", "-p", str(rp.pid))
        c.user_may_not("set root's thread", "set", "-l", "5", "-t", str(rp.pid))
        c.user_may_not("reset root's task", "reset", "-p", str(rp.pid))
        check(c.value(("-p", str(rp.pid))) is None, "root's task is not managed")
        after = knobs(rp.pid)
        check(after == before, f"and its policy, slice and cgroup are untouched ({before} / {after})")
        rp.kill()



def cgroup_target(c, d):
    mount = class_mount(d)
    if not mount:
        c.user_may_not("set the root cgroup", "set", "-l", "5", "-g", "/")
        print("(no cpu hierarchy in use: the owned-cgroup checks were not run)")
        return
    rel = f"/rqbl-{os.getpid()}"
    path = mount + rel
    os.mkdir(path)
    try:
        wfile = next(os.path.join(path, f) for f in ("cpu.weight", "cpu.shares")
                     if os.path.exists(os.path.join(path, f)))
        weight = open(wfile).read()
        c.user_may_not("set a cgroup root owns", "set", "-l", "5", "-g", rel)
        check(open(wfile).read() == weight, "its weight is untouched")
        os.chown(wfile, c.user.uid, -1)
        c.user_may("raise a cgroup whose weight file they own", "set", "-l", "5", "-g", rel)
        check(open(wfile).read() != weight, "its weight changed")
        c.user_may_not("lower it", "set", "-l", "2", "-g", rel)
        c.user_may_not("reset it (a lowering)", "reset", "-g", rel)
        check(c.root("reset", "-g", rel).returncode == 0, "root may reset it")
        check(open(wfile).read() == weight, "and its weight is given back")
    finally:
        os.rmdir(path)


def root_then_user(c, pid, orig):
    task = ("-p", str(pid))
    check(c.root("set", "-l", "-10", *task).returncode == 0, "root may set -10 on it")
    check(c.value(task) == -10, "get shows -10")
    check(os.sched_getscheduler(pid) == os.SCHED_OTHER, "a negative value runs SCHED_OTHER")
    c.user_may("raise it to -5", "set", "-l", "-5", *task)
    c.user_may_not("lower it back to -10", "set", "-l", "-10", *task)
    check(c.value(task) == -5, "the value is still -5")
    c.user_may("reset it (from -5 to none goes up)", "reset", *task)
    check(c.value(task) is None, "then it is not managed")
    check(knobs(pid) == orig, "and has its policy, slice and cgroup back")
    check(c.root("set", "-l", "-10", *task).returncode == 0, "root sets -10 again")
    if class_mount(c.d):
        check(knobs(pid)["cgroup"] != orig["cgroup"], "which moves it to a class cgroup")
    check(c.root("reset", *task).returncode == 0, "root may reset it")
    check(c.value(task) is None, "then it is not managed")
    check(knobs(pid) == orig, "and has its policy, slice and cgroup back")


def run_cmd(c, tmp, orig):
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    os.chown(home, c.user.uid, c.user.gid)
    low, high = os.path.join(home, "low"), os.path.join(home, "high")
    p = subprocess.run(["runuser", "-u", c.user.name, "--", *NICE0, c.prog, "-s", c.d.ctl, "run",
                        "-l", "-5", "--", "sh", "-c", f"touch {low}"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 1 and "permission denied" in p.stderr,
          f"the user may not run a command at -5 ({p.returncode}, {p.stderr.strip()!r})")
    check(not os.path.exists(low), "and the command did not run")
    p = subprocess.run(["runuser", "-u", c.user.name, "--", *NICE0, c.prog, "-s", c.d.ctl, "run",
                        "-l", "5", "--", "sh", "-c", f"cat /proc/$$/sched > {high}"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and os.path.exists(high),
          f"the user may run a command at 5, and it runs ({p.stderr.strip()!r})")
    ran = [l for l in open(high) if l.startswith("se.slice")]
    if orig["slice"] is not None and ran:
        check(int(ran[0].split(":")[1]) != orig["slice"], "with the slice of value 5")


def test():
    require()
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    if not shutil.which("useradd") or not shutil.which("runuser"):
        skip("useradd or runuser missing: no unprivileged user to test with")
    resource.setrlimit(resource.RLIMIT_NICE, (0, 0))  # and none inherited from here
    with tmpdir() as tmp, User() as user:
        os.chmod(tmp, 0o755)  # the user must reach the socket
        # The checkout may sit where the user cannot reach: run a copy from the test's dir.
        prog = os.path.join(tmp, "rqctl")
        shutil.copy(RQCTL, prog)
        os.chmod(prog, 0o755)
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        # A sleep of the test's own (the user may run it): no rule of another run's
        # daemon names it, so nobody but this daemon changes these sleepers.
        sleep = private_copy(tmp, "sleep")
        upid = user.start(f"echo $$; exec {sleep} 60")
        if nice_limit(upid) != 0:
            skip(f"the user's task has RLIMIT_NICE {nice_limit(upid)}, and no prlimit to lower it")
        orig = knobs(upid)
        check(orig["policy"] == os.SCHED_OTHER, "the user's task starts SCHED_OTHER")
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle],
                    conf="[latency]\nbatch_from = 10\n") as d:
            d.wait_for(r"running: sampler")
            c = Ctl(d, user, prog)
            own_task(c, upid, orig)
            other_task(c, sleep)
            cgroup_target(c, d)
            root_then_user(c, upid, orig)
            run_cmd(c, tmp, orig)
            c.user_may("set their task to 5 once more", "set", "-l", "5", "-p", str(upid))
            check(orig["slice"] is None or sched_slice(upid) != orig["slice"],
                  "which changes its slice again")
            check(d.stop() == 0, "clean stop")
        check(knobs(upid) == orig,
              "after the stop the user's task has its policy, slice and cgroup back")


main(test)
