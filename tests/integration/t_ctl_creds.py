"""A ctl connection is judged on the credentials its peer had when the daemon took it,
as a real unprivileged user the test creates. The attack of issue #14: connect, fork,
exec a set-user-ID root program that waits for input (passwd) in the connecting
process, and send requests from the child on the inherited socket: +19 on root's and
on another user's process, -20 on the user's own, a reset of another user's value.
Each is refused, its connection closed, the refusal logged, and no value changes. A
child whose peer only waits is served with the user's own rights; one whose peer has
exited is refused. A user given CAP_SYS_NICE (setpriv --ambient-caps) may lower its
own value and change another user's task, on this machine too, where not even root
may resolve /proc/1/ns/user."""
import os
import resource
import shutil
import stat
import subprocess
import sys

import rqb_user
from rqb import (RQCTL, TOPO_2LLC, Daemon, check, main, private_copy, require, skip, tmpdir,
                 write_replay)
from rqb_user import NICE0

SET, RESET = 3, 6
ATTACK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctl_attack.py")
# The interpreter a test runs under may sit where the user cannot reach (/root).
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


class User(rqb_user.User):
    """The throwaway user, and setpriv(1) to act as it with CAP_SYS_NICE too."""

    def __init__(self):
        super().__init__("rqbc")

    def as_user(self, caps=False):
        pre = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        if caps:
            pre += ["--inh-caps=+sys_nice", "--ambient-caps=+sys_nice"]
        return pre + ["--", *NICE0]


def value(d, pid):
    p = subprocess.run([RQCTL, "-s", d.ctl, "get", "-p", str(pid)], capture_output=True,
                       text=True, timeout=30)
    if p.returncode != 0:
        return None
    return int(dict(l.split(" ", 1) for l in p.stdout.splitlines())["value"])


def attack(d, user, tmp, mode, typ, payload, prog=None):
    args = [PYTHON, os.path.join(tmp, "ctl_attack.py"), d.ctl, mode, str(typ), payload]
    p = subprocess.run(user.as_user() + args + ([prog] if prog else []), capture_output=True,
                       text=True, timeout=120)
    print(p.stdout + p.stderr)
    # In mode exec the exit status is the set-user-ID program's, which the peer became.
    check(mode == "exec" or p.returncode == 0, f"the {mode} script ran ({p.returncode})")
    return p.stdout


def refused(d, user, tmp, passwd, what, typ, payload, pid, before):
    out = attack(d, user, tmp, "exec", typ, payload, passwd)
    check(" with euid 0" in out, f"{what}: the connecting process now runs passwd as root")
    check("reply ERR" in out and "permission denied" in out,
          f"{what}: refused ({out.splitlines()[-2]!r})")
    check(out.rstrip().endswith("closed"), f"{what}: and the connection closed")
    check(value(d, pid) == before, f"{what}: the value is still {before}")


def test():
    require()
    for tool in ("useradd", "setpriv", "prlimit"):
        if not shutil.which(tool):
            skip(f"{tool} missing: no unprivileged user to test with")
    passwd = shutil.which("passwd")
    if not passwd or not os.stat(passwd).st_mode & stat.S_ISUID or os.stat(passwd).st_uid:
        skip("no set-user-ID root passwd to exec")
    resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
    with tmpdir() as tmp, User() as user:
        os.chmod(tmp, 0o755)  # the user must reach the socket and the scripts
        shutil.copy(ATTACK, os.path.join(tmp, "ctl_attack.py"))
        rqctl = os.path.join(tmp, "rqctl")
        shutil.copy(RQCTL, rqctl)
        os.chmod(rqctl, 0o755)
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        sleep = private_copy(tmp, "sleep")
        own = user.start(f"echo $$; exec {sleep} 120")
        roots = subprocess.Popen([sleep, "120"])
        others = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup",
                                   "--clear-groups", sleep, "120"])
        try:
            attacks(tmp, user, idle, passwd, rqctl, own, roots, others)
        finally:
            for p in (roots, others):
                p.kill()
                p.wait()


def attacks(tmp, user, idle, passwd, rqctl, own, roots, others):
    with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle]) as d:
        d.wait_for(r"running: sampler")
        r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", "5", "-p", str(others.pid)],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "root gives the other user's process 5")

        refused(d, user, tmp, passwd, "+19 on root's process", SET,
                f"pid {roots.pid}\\nvalue 19\\n", roots.pid, None)
        refused(d, user, tmp, passwd, "+19 on another user's process", SET,
                f"pid {others.pid}\\nvalue 19\\n", others.pid, 5)
        refused(d, user, tmp, passwd, "-20 on the user's own", SET,
                f"pid {own}\\nvalue -20\\n", own, None)
        refused(d, user, tmp, passwd, "a reset of another user's value", RESET,
                f"pid {others.pid}\\n", others.pid, 5)
        d.sync()
        log = d.text()
        n = log.count("connection closed: the process that connected has changed its "
                      "credentials or executed a privileged program since")
        check(n == 4, f"each refusal logged, with the connection closed ({n})")

        out = attack(d, user, tmp, "stay", SET, f"pid {own}\\nvalue 7\\n")
        check("reply OK" in out and out.rstrip().endswith("open"),
              "a child whose peer only waits is served, on the user's rights")
        check(value(d, own) == 7, "and its own process got 7")
        out = attack(d, user, tmp, "stay", SET, f"pid {roots.pid}\\nvalue 19\\n")
        check("reply ERR" in out and "not yours" in out, "but not root's process")
        out = attack(d, user, tmp, "exit", SET, f"pid {own}\\nvalue 9\\n")
        check("reply ERR" in out and "connected is gone" in out and
              out.rstrip().endswith("closed"),
              "a child whose peer has exited is refused and closed")
        check(value(d, own) == 7, "and the value is still 7")

        cap_sys_nice(d, user, rqctl, own, roots.pid)
        check(d.stop() == 0, "clean stop")


def cap_sys_nice(d, user, rqctl, own, root_pid):
    def run(caps, *args):
        return subprocess.run(user.as_user(caps) + [rqctl, "-s", d.ctl, *args],
                              capture_output=True, text=True, timeout=30)

    p = run(False, "set", "-l", "-20", "-p", str(own))
    check(p.returncode == 1 and "CAP_SYS_NICE" in p.stderr,
          f"without CAP_SYS_NICE the user may not lower its value ({p.stderr.strip()!r})")
    p = run(True, "set", "-l", "-20", "-p", str(own))
    check(p.returncode == 0, f"with CAP_SYS_NICE it may set -20 on its own ({p.stderr.strip()!r})")
    check(value(d, own) == -20, "get shows -20")
    p = run(True, "set", "-l", "-3", "-p", str(root_pid))
    check(p.returncode == 0, f"and -3 on root's process ({p.stderr.strip()!r})")
    check(value(d, root_pid) == -3, "get shows -3")
    p = run(True, "reset", "-p", str(root_pid))
    check(p.returncode == 0 and value(d, root_pid) is None, "and reset it")


main(test)
