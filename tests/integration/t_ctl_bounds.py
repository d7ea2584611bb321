#!/usr/bin/env python3
"""Two bounds of the ctl socket (issue #14).
- `rqctl list` stays one reply rqctl can read however long its lines are: 100 managed
  cgroups whose names are 200 \\x01 bytes each (each escaped as \\x01, some 850 bytes a
  line) are listed as far as they fit, with the rest said to be cut short. Before, the
  daemon checked only for 512 bytes of room before each line, sent more than the
  protocol's 64 KiB, and rqctl refused the whole reply.
- One user's refused requests do not flood the log: of 60 refusals in a row at most
  CTL_REQ_LOG_BURST (20) are logged, and one line counts the rest once the window
  ends."""
import os
import re
import subprocess

from rqb import RQCTL, Daemon, check, main, require, skip, tmpdir, user_rqctl
from rqb_user import User

CPU_V1 = "/sys/fs/cgroup/cpu"
GROUPS = 100
REFUSALS = 60
BURST = 20


def long_list():
    top = os.path.join(CPU_V1, f"rqb-itl-{os.getpid()}")
    names = [os.path.join(top, "\x01" * 200 + str(i)) for i in range(GROUPS)]
    os.makedirs(top)
    try:
        for n in names:
            os.mkdir(n)
        with tmpdir() as tmp, Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            for n in names:
                r = subprocess.run([RQCTL, "-s", d.ctl, "set",
                                    "-l", "5", "-g", n[len(CPU_V1):]],
                                   capture_output=True, text=True, timeout=60)
                if r.returncode != 0:
                    raise AssertionError(f"rqctl set -g: {r.stderr}")
            r = subprocess.run([RQCTL, "-s", d.ctl, "list"], capture_output=True,
                               text=True, timeout=60)
            rows = [ln for ln in r.stdout.splitlines() if "\\x01" * 200 in ln]
            print(f"rqctl list: exit {r.returncode}, {len(rows)} cgroup rows, "
                  f"stderr {r.stderr.strip()!r}")
            check(r.returncode == 0, "rqctl reads the list of 100 long cgroup lines")
            check(50 <= len(rows) < GROUPS, "as many rows as fit in one reply, not all")
            check("cut short" in r.stderr, "and says the list was cut short")
            check(d.stop() == 0, "clean stop")
    finally:
        for n in names:
            if os.path.isdir(n):
                os.rmdir(n)
        os.rmdir(top)


def log_flood():
    with tmpdir() as tmp, User("rqbk") as user:
        prog = user_rqctl(tmp)
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            # The user asks a value below 0 for its own shell, which it may not: refused.
            script = (f"for i in $(seq {REFUSALS}); do {prog} -s {d.ctl} set -l -5 -p $$ "
                      f">/dev/null 2>&1 && echo granted; done; echo done")
            r = user.run(["sh", "-c", script], text=True)
            check(r.stdout.strip() == "done", f"each of {REFUSALS} requests refused")
            m = d.wait_for(r"ctl: (\d+) more refusals in the last \d+ s not logged")
            logged = len(re.findall(rf"ctl: set on process \d+ refused to uid {user.uid} ", d.text()))
            print(f"{logged} refusals logged, {m.group(1)} counted")
            check(logged <= BURST, f"at most {BURST} refusals logged in one window")
            check(logged + int(m.group(1)) == REFUSALS, "and the rest counted in one line")
            check(d.stop() == 0, "clean stop")


def run():
    require()
    if not os.path.isdir(CPU_V1):
        skip(f"no v1 cpu hierarchy at {CPU_V1}")
    long_list()
    log_flood()


if __name__ == "__main__":
    main(run)
