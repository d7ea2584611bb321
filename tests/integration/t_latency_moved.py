"""rqbalance moves a task only from where it put it (issue #14, finding 2). A real
unprivileged user the test creates raises its own process to 5, which puts it in the
class cgroup rqbalance-lat5; the administrator (the test, as root) then moves it into
a cgroup with a CPU quota. Its children made after stay in that cgroup, a reload and
another value leave it there, `rqctl get` and one log line say its cgroup is left to
whoever moved it, its nice is still rqbalance's, and the stop gives back the nice but
not the cgroup. A process already in a cgroup that holds its CPU back gets a value's nice
from root, and stays in that cgroup. Waits are for events (rqctl sync)."""
import os
import shutil
import signal
import subprocess

from rqb import (RQCTL, Daemon, OwnCgroup, check, cpu_cgroup, fields, main, require, rqctl, skip,
                 tmpdir)
from rqb_user import User

# Says its pid; at each SIGUSR1 forks a child that sleeps and says the child's pid.
FORKER = """
import os, signal, sys, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
print(os.getpid(), flush=True)
while True:
    signal.sigwait({signal.SIGUSR1})
    pid = os.fork()
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    print(pid, flush=True)
"""


def cpu_mount():
    """The v1 cpu hierarchy, else cgroup2 with cpu, as the daemon finds it; or None."""
    v2 = None
    with open("/proc/self/mounts") as f:
        for line in f:
            _, where, fs, opts = line.split()[:4]
            if fs == "cgroup" and "cpu" in opts.split(","):
                return where, False
            if fs == "cgroup2":
                v2 = where
    if v2 and "cpu" in open(os.path.join(v2, "cgroup.controllers")).read().split():
        return v2, True
    return None, False



class Limited(OwnCgroup):
    """A cgroup of the test's own with a CPU quota of 20 % of a CPU."""

    def __init__(self, mount, v2):
        super().__init__(mount, f"/rqbl-limited-{os.getpid()}",
                         "cpu.max" if v2 else "cpu.cfs_quota_us", "20000 100000" if v2 else "20000")
        self.v2 = v2


def forker(user):
    p = user.popen(["/usr/bin/python3", "-c", FORKER], stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def fork_child(p, pid):
    os.kill(pid, signal.SIGUSR1)
    return int(p.stdout.readline())


def as_user(d, user, prog, *args):
    return subprocess.run(["runuser", "-u", user.name, "--", prog, "-s", d.ctl, *args],
                          capture_output=True, text=True, timeout=30)


def test():
    require()
    mount, v2 = cpu_mount()
    if not mount:
        skip("no cpu controller: no class cgroups to leave")
    if not os.access("/usr/bin/python3", os.X_OK):
        skip("no /usr/bin/python3 for the user's program")
    with tmpdir() as tmp, User("rqbm") as user:
        os.chmod(tmp, 0o755)
        prog = os.path.join(tmp, "rqctl")
        shutil.copy(RQCTL, prog)
        os.chmod(prog, 0o755)
        lim = Limited(mount, v2)
        try:
            with Daemon(tmp, conf="[latency]\nclass_cgroups = yes\n") as d:
                d.wait_for("ctl: serving")
                if fields(rqctl(d, "status").stdout).get("latency_class_cgroups", "off") == "off":
                    skip("the daemon has no class cgroups here")
                p, pid = forker(user)
                home = cpu_cgroup(pid) if not v2 else None
                r = as_user(d, user, prog, "set", "-l", "5", "-p", str(pid))
                check(r.returncode == 0, f"the user raises its own process to 5 ({r.stderr.strip()!r})")
                klass = cpu_cgroup(pid) if not v2 else None
                check(v2 or klass.endswith("/rqbalance-lat5"), f"which puts it in the class ({klass})")
                lim.add(pid)
                check(v2 or cpu_cgroup(pid) == lim.rel, "the administrator moves it into a limited cgroup")
                child = fork_child(p, pid)
                d.sync()
                got = cpu_cgroup(child) if not v2 else open(f"/proc/{child}/cgroup").read()
                check(lim.rel in got, f"its child stays in the limited cgroup ({got.strip()!r})")
                check(os.getpriority(os.PRIO_PROCESS, child) == 5, "and has the value's nice")
                get = fields(rqctl(d, "get", "-p", str(pid)).stdout)
                check(get.get("value") == "5" and lim.rel in get.get("cgroup_left", ""),
                      f"rqctl get says its cgroup is left ({get})")
                check(rqctl(d, "reload").returncode == 0, "reload")
                d.sync()
                check(lim.rel in open(f"/proc/{pid}/cgroup").read()
                      and lim.rel in open(f"/proc/{child}/cgroup").read(),
                      "after the reload both are still in the limited cgroup")
                r = as_user(d, user, prog, "set", "-l", "7", "-p", str(pid))
                check(r.returncode == 0 and lim.rel in open(f"/proc/{pid}/cgroup").read(),
                      "another value leaves it there too")
                check(os.getpriority(os.PRIO_PROCESS, pid) == 7, "and gives it the new nice")
                check(d.text().count(f'task {pid} is in cgroup "{lim.rel}": moved there') == 1,
                      "one log line says it was moved by someone else")

                q, qpid = forker(user)
                lim.add(qpid)
                r = rqctl(d, "set", "-l", "-10", "-p", str(qpid))
                check(r.returncode == 0, f"root gives a process in the limited cgroup -10 ({r.stderr.strip()!r})")
                check(lim.rel in open(f"/proc/{qpid}/cgroup").read()
                      and os.getpriority(os.PRIO_PROCESS, qpid) == -10,
                      "it gets nice -10 and stays in the limited cgroup")
                get = fields(rqctl(d, "get", "-p", str(qpid)).stdout)
                check("someone else's cgroup" in get.get("cgroup_left", ""), f"rqctl get says why ({get})")
                check(d.stop() == 0, "clean stop")
            check(os.getpriority(os.PRIO_PROCESS, pid) == 0 and lim.rel in open(f"/proc/{pid}/cgroup").read(),
                  "the stop gives back its nice, not its cgroup")
            check(home is None or cpu_cgroup(pid) != home, "it is not moved back where it was")
        finally:
            for pr in list(user.procs):
                if pr.poll() is None:
                    os.killpg(pr.pid, signal.SIGKILL)
                pr.wait()
            lim.remove()


main(test)
