#!/usr/bin/env python3
"""A peer the daemon cannot see (issue #14). The daemon runs in a pid namespace of its
own, as in a container; a process outside it connects, and SO_PEERCRED gives its pid
as 0. Before, such a connection was closed at accept, so even `rqctl status` failed.
Now it is served what anyone may ask (status, get, list, latency, sync) and refused,
with a reason, anything that changes a task, a cgroup or the daemon: with no process
to look at there is nothing to judge it on. Tried as root and as a user the test
makes."""
import os
import re
import shutil
import signal
import subprocess

from rqb import RQCTL, Daemon, check, main, require, skip, tmpdir, user_rqctl
from rqb_user import User


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def run():
    require()
    if not shutil.which("unshare"):
        skip("no unshare")
    with tmpdir() as tmp, User("rqbp") as user:
        prog = user_rqctl(tmp)
        wrap = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL"]
        with Daemon(tmp, wrap=wrap, conf="[daemon]\nsampler = proc\n") as d:
            d.wait_for("ctl: serving")
            (dpid,) = children(d.proc.pid)
            with open(f"/proc/{dpid}/status") as f:
                nspid = next(ln.split()[1:] for ln in f if ln.startswith("NSpid:"))
            print(f"the daemon is pid {dpid} here, {nspid[-1]} in its own namespace")
            check(nspid[-1] == "1", "the daemon runs in a pid namespace of its own")

            try:
                for who, runner, rq in (("root", subprocess.run, RQCTL),
                                        ("the user", user.run, prog)):
                    kw = {"capture_output": True} if runner is subprocess.run else {}
                    r = runner([rq, "-s", d.ctl, "status"], text=True, **kw)
                    check(r.returncode == 0 and "sampler" in r.stdout,
                          f"{who}: status is answered ({r.stderr.strip()!r})")
                    r = runner([rq, "-s", d.ctl, "list"], text=True, **kw)
                    check(r.returncode == 0, f"{who}: list is answered ({r.stderr.strip()!r})")
                    r = runner([rq, "-s", d.ctl, "set", "-l", "5", "-p", "1"], text=True, **kw)
                    check(r.returncode == 1 and "pid namespace" in r.stderr,
                          f"{who}: set is refused, saying why ({r.stderr.strip()!r})")
                    r = runner([rq, "-s", d.ctl, "reload"], text=True, **kw)
                    check(r.returncode == 1 and "pid namespace" in r.stderr,
                          f"{who}: reload is refused too ({r.stderr.strip()!r})")
                check(not re.search(r"ctl: uid \d+ gave", d.text()),
                      "no value was given to anything")
            finally:
                # unshare stands between: the daemon itself is told to stop.
                os.kill(dpid, signal.SIGTERM)
            check(d.proc.wait(60) == 0, "the daemon stops cleanly")


if __name__ == "__main__":
    main(run)
