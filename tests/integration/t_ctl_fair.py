"""One user cannot freeze the daemon nor lock root out (issue #14, finding 4), run as a
real unprivileged user the test creates:
- 24 connections each sending 16 `list` requests and never reading their replies,
  while the daemon manages a process of 300 threads (each reply is long): root's
  `rqctl status` is answered and ticks go on (a sync returns), as replies are written
  without waiting and a connection whose replies are unread is not served further;
- 80 connections kept open and reopened by the user: root's `rqctl status` is answered
  every time, and the user never holds more than its share (16)."""
import os
import subprocess
import sys

from rqb import Daemon, check, main, private_copy, require, rqctl, tmpdir, user_rqctl
from rqb_user import User

HERE = os.path.dirname(os.path.abspath(__file__))
# The user's interpreter: one under root's home is not the user's to run.
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
THREADS = r"""
import threading, os, sys
ev = threading.Event()
for _ in range(300):
    threading.Thread(target=ev.wait, daemon=True).start()
print(os.getpid(), flush=True)
sys.stdin.read()
"""


def status_ok(d):
    r = rqctl(d, "status")
    return r.returncode == 0 and "ticks" in r.stdout, r


def field(text, key):
    return int(next(l.split()[1] for l in text.splitlines() if l.startswith(key + " ")))


def test():
    require()
    with tmpdir() as tmp, User("rqbf") as user:
        prog = user_rqctl(tmp)
        # Where the user may read it (tmp and tmp/bin 755).
        hog = private_copy(tmp, os.path.join(HERE, "ctl_hog.py"))
        with Daemon(tmp) as d:
            d.wait_for(r"running: sampler")
            many = user.popen([PYTHON, "-c", THREADS], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
            pid = int(many.stdout.readline())
            r = subprocess.run(["runuser", "-u", user.name, "--", prog, "-s", d.ctl, "set",
                                "-l", "5", "-p", str(pid)], capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 0, f"the user gives its 301 threads +5 ({r.stderr.strip()!r})")
            lst = rqctl(d, "list")
            check(len(lst.stdout) > 16384, f"a list reply is long ({len(lst.stdout)} bytes)")

            flood = user.popen([PYTHON, hog, d.ctl, "list", "24"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            sent = flood.stdout.readline().split()
            check(sent[:1] == ["sent"] and int(sent[1]) >= 8,
                  f"{' '.join(sent[1:])} connections of 24 sent 16 lists each, reading nothing")
            ok, r = status_ok(d)
            check(ok, f"root's status is answered meanwhile ({r.stderr.strip()!r})")
            t0 = field(r.stdout, "ticks")
            d.sync(3)
            ok, r = status_ok(d)
            check(ok and field(r.stdout, "ticks") >= t0 + 3, "and the ticks go on")
            flood.stdin.close()
            flood.wait()

            hold = user.popen([PYTHON, hog, d.ctl, "hold", "80"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            check(hold.stdout.readline().strip() == "started", "the user holds 80 connections")
            answered, most = 0, 0
            for _ in range(10):
                ok, r = status_ok(d)
                if ok:
                    answered += 1
                    most = max(most, field(r.stdout, "ctl_connections"))
            check(answered == 10, f"root's status answered {answered} times of 10")
            check(most <= 17, f"the user held no more than 16 (at most {most} with root's)")
            d.sync()
            hold.stdin.close()
            hold.wait()
            many.stdin.close()
            many.wait()
            check(d.stop() == 0, "clean stop")


main(test)
