"""The third review's kind 1, ownership by allow-list: a value moves a task into a class
only out of a cgroup rqbalance can show is its own to move from (the top, its classes,
or one [latency] move_from names). For each kind of cgroup a task can sit in, a real
unprivileged user the test creates (and root, and a comm rule such as import-ananicy
writes) gives the task a value; the daemon's move is compared with what the admin's
placement implies: a task root put somewhere stays there, whatever that cgroup's limits
look like (finding 1: a per-user group of default weight and no quota, which a user's
own `rqctl set -l 1` used to leave, tripling its share against another user).
Then the stop gives every moved task its cgroup back and leaves the others where they
were."""
import os
import shutil
import signal
import subprocess

from rqb import (CGROUP_ROOT, Daemon, check, cpu_cgroup, fields, main, private_copy, require,
                 rqctl, skip, tmpdir, user_rqctl, wait_until)
from rqb_user import User

CPU_V1 = "/sys/fs/cgroup/cpu"
TOP = f"/{CGROUP_ROOT}-own"   # the admin's groups, beside the daemon's classes' parent


class Group:
    """A v1 cpu cgroup the test makes (as an admin would), with knobs written."""

    def __init__(self, rel, knobs=(), owner=None):
        self.rel = rel
        self.path = CPU_V1 + rel
        os.makedirs(self.path, exist_ok=True)
        for knob, value in knobs:
            with open(os.path.join(self.path, knob), "w") as f:
                f.write(value)
        if owner is not None:
            for f in ("", "tasks", "cgroup.procs"):
                os.chown(os.path.join(self.path, f), owner, -1)

    def add(self, pid):
        with open(os.path.join(self.path, "tasks"), "w") as f:
            f.write(str(pid))


# Each kind of cgroup a task can sit in: (name, the cgroup's path below the test's top or
# None for the hierarchy's top, its knobs, whether the user owns it, whether a value may
# move a task out of it).
KINDS = [
    ("the top of the hierarchy", None, (), False, True),
    ("an admin's per-user group, default weight, no limit (finding 1)", "/users/u1", (),
     False, False),
    ("an admin's group with cpu.shares 2", "/low", (("cpu.shares", "2"),), False, False),
    ("an admin's group with a CFS quota", "/quota",
     (("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", "150000")), False, False),
    ("an admin's group with cpu.idle", "/idle", (("cpu.idle", "1"),), False, False),
    ("an admin's group named like a class, outside the classes' parent",
     "/rqbalance-lat1", (), False, False),
    ("a group delegated to the user, who moved its task there", "/deleg", (), True, False),
    ("an admin's group that move_from names", "/named", (), False, True),
]


def kinds_here():
    out = []
    for name, rel, knobs, owned, movable in KINDS:
        if any(not os.path.exists(os.path.join(CPU_V1, k)) for k, _ in knobs):
            print(f"(no {knobs[0][0]} in this kernel's v1 cpu controller: {name!r} not run)")
            continue
        out.append((name, rel, knobs, owned, movable))
    return out


def place(user, kind, sleep):
    """A sleeping process of the user's in the kind's cgroup; (pid, the Group or None)."""
    name, rel, knobs, owned, _ = kind
    g = Group(TOP + rel, knobs, user.uid if owned else None) if rel else None
    if g and owned:
        # The user moves its own task, as a delegated group lets it.
        p = user.popen(["sh", "-c", f'echo $$ > "{g.path}/tasks" && echo $$ && '
                        f'exec {sleep} 600'], stdout=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
    else:
        p = user.popen(["sh", "-c", f"echo $$ && exec {sleep} 600"], stdout=subprocess.PIPE,
                       text=True)
        pid = int(p.stdout.readline())
        if g:
            g.add(pid)
    want = g.rel if g else "/"
    check(wait_until(lambda: cpu_cgroup(pid) == want, 10), f"{name}: the task is in {want}")
    return pid, g


def as_user(d, user, prog, *args):
    return subprocess.run(["runuser", "-u", user.name, "--", prog, "-s", d.ctl, *args],
                          capture_output=True, text=True, timeout=60)


def differential(d, user, prog, sleep, who, value):
    """Each kind, given value by who ("user" or "root"): the move against the placement."""
    wrong, moved = [], []
    cls = f"/{CGROUP_ROOT}/rqbalance-lat{value}"
    for kind in kinds_here():
        name, rel, _, _, movable = kind
        pid, g = place(user, kind, sleep)
        before = cpu_cgroup(pid)
        if who == "user":
            r = as_user(d, user, prog, "set", "-l", str(value), "-p", str(pid))
        else:
            r = rqctl(d, "set", "-l", str(value), "-p", str(pid))
        check(r.returncode == 0, f"{name}: {who} gives the task {value} ({r.stderr.strip()!r})")
        now = cpu_cgroup(pid)
        want = cls if movable else before
        if now != want:
            wrong.append(f"{name}, {value} by {who}: in {now}, the placement implies {want}")
        check(os.getpriority(os.PRIO_PROCESS, pid) == value, f"{name}: with the value's nice")
        left = fields(rqctl(d, "get", "-p", str(pid)).stdout).get("cgroup_left", "")
        if not movable and "someone else's cgroup" not in left:
            wrong.append(f"{name}: rqctl get does not say why it was left ({left!r})")
        if movable:
            moved.append((pid, before))
    for w in wrong:
        print(f"  {w}")
    check(not wrong, f"{value} by {who}: every move is the one the placement implies "
          f"({len(wrong)} differ)")
    return moved


def comm_rule(d, user, tmp):
    """A positive rule on comm alone (what import-ananicy writes): a program the user
    names after it, in the admin's per-user group, stays there at exec."""
    named = os.path.join(tmp, "bin", "rqbown-make")
    shutil.copy2(shutil.which("sleep"), named)
    g = Group(TOP + "/users/u2")
    p = user.popen(["sh", "-c", f"echo $$ && read go && exec {named} 600"],
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    g.add(pid)
    p.stdin.write("go\n")
    p.stdin.flush()
    d.wait_for(rf"lat tid={pid} .*value=15")
    check(cpu_cgroup(pid) == g.rel, "a comm rule's value leaves the task in the admin's group")
    check(os.getpriority(os.PRIO_PROCESS, pid) == 15, "and gives it the rule's nice")


def test():
    require()
    if not os.path.exists(os.path.join(CPU_V1, "cpu.shares")):
        skip(f"needs the v1 cpu controller at {CPU_V1} (this machine's layout)")
    made = []
    with tmpdir() as tmp, User("rqbo") as user:
        prog = user_rqctl(tmp)
        sleep = private_copy(tmp, "sleep")
        conf = (f"[latency]\nmove_from = {TOP}/named\nbatch_from = 20\n"
                f"[rule make]\nlatency_nice = 15\ncomm = rqbown-make\n")
        try:
            with Daemon(tmp, conf=conf) as d:
                d.wait_for("ctl: serving")
                for who, value in (("user", 1), ("user", 19), ("root", -5)):
                    made += differential(d, user, prog, sleep, who, value)
                comm_rule(d, user, tmp)
                check(d.stop() == 0, "clean stop")
            for pid, before in made:
                check(cpu_cgroup(pid) == before, f"the stop gives {pid} its cgroup {before} back")
        finally:
            for p in user.procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            user.procs.clear()
            for dirpath, _, _ in sorted(os.walk(CPU_V1 + TOP), key=lambda w: -len(w[0])):
                wait_until(lambda: not open(os.path.join(dirpath, "tasks")).read().strip(), 30)
                os.rmdir(dirpath)


main(test)
