"""A user whose share owes the loop time waits at the bus door as at the socket, and is
not refused (issue #49's cost rule, both doors), run as a real unprivileged user the
test creates on a private bus: it holds a process of 1,000 threads (under
ctl_max_threads) and sends, on one ctl connection, 8 `set`s of rising values on it, each
charged to its share what walking those threads took; once two are served, it calls
SetProcess over the bus on another process of its own. The call must be answered, late
if need be, never refused with LimitsExceeded for the time its user owes: a desktop
shell's SetForeground right after some other work of its user's is a call to answer.
Before, the bus door refused every call while the share owed more than 100 ms."""
import os
import re
import subprocess
import sys
import time

from rqb import Daemon, check, lines_until, main, private_copy, require, tmpdir
from rqb_dbus import SystemBus, call
from rqb_user import User

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
NTHREADS = 1000
SET = 3
NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"


def test():
    require()
    with tmpdir() as tmp, SystemBus() as bus, User("rqbo") as user:
        # Where the user may read it (tmp and tmp/bin 755).
        helper = private_copy(tmp, os.path.join(HERE, "ctl_stall.py"))
        sleep = private_copy(tmp, "sleep")
        many = user.popen([PYTHON, helper, "threads", str(NTHREADS)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pid = int(many.stdout.readline())
        other = user.start(f"echo $$; exec {sleep} 300")
        with Daemon(tmp, env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
            d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
            d.wait_for(r"running: sampler")
            sets = user.popen([PYTHON, helper, "attack", d.ctl, "1", str(SET)] +
                              [f"pid {pid}\\nvalue {v}\\n" for v in range(4, 12)],
                              stdout=subprocess.PIPE, text=True)
            check(lines_until(sets, "sent") == ["sent 1"], "the user sent its 8 sets")
            served = rf"ctl: set from uid {user.uid}\b"
            deadline = time.monotonic() + 120
            while (len(re.findall(served, d.text())) < 2 and time.monotonic() < deadline):
                time.sleep(0.01)
            check(len(re.findall(served, d.text())) >= 2,
                  "two of its sets were served (each walked its 1,000 threads)")
            r = call(bus.address, NAME, PATH, f"{IFACE}.SetProcess", f"uint32:{other}",
                     "int32:10", user=user)
            check(r.ok, f"its bus call right after is answered, not refused ({r!r})")
            check("over its share of the daemon's time" not in d.text(),
                  "the daemon refused no call of its for the time its share owed")
            out = lines_until(sets, "done")
            check(out[-1:] == ["done"], "its sets are all answered or closed in the end")
        many.stdin.close()
        many.wait()


main(test)
