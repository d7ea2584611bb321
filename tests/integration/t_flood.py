"""Floods (tests/integration/flood.py): the daemon's loop is never held by its clients or
by a fork storm.

The daemon runs with WATCHDOG_USEC = 2 s and a NOTIFY_SOCKET of the test's. Through
each flood the test records every WATCHDOG=1 and the ticks `rqctl status` counts: both
must go on during the flood, so the loop was not held by it. After it, once the daemon
has handled every event (rqctl sync), it must answer, hold no connection but the asker's,
and no more file descriptors than before. How long the longest gap between two
WATCHDOG=1 was, and how many ticks a second the daemon kept, are timings: bench/flood
prints them. That one read of the connector is bounded, so that a storm cannot hold the
loop, is test_procconn's.
"""
import sys

import churn
import flood
from rqb import Daemon, NotifySocket, check, main, require, tmpdir

FLOOD_S = 6


def checked(d, wd, name, fn):
    f = flood.run(d, wd, fn)
    print(f"{name} flood: {f['what']}; {f['watchdogs']} WATCHDOG=1 in {f['seconds']:.1f} s, "
          f"longest gap {f['longest_gap']:.2f} s; {f['ticks']} ticks")
    check(d.alive(), f"{name} flood: the daemon is alive")
    check(f["watchdogs"] >= 1 and f["ticks"] >= 1,
          f"{name} flood: it kept feeding the watchdog ({f['watchdogs']}) and ticking "
          f"({f['ticks']}) through it")
    check(f["conns_after"] == 1, f"{name} flood: no connection left but the asker's "
          f"({f['conns_after']})")
    check(f["fds_after"] <= f["fds_before"], f"{name} flood: no file descriptor left open "
          f"({f['fds_after']}, {f['fds_before']} before)")


def test():
    require()
    with tmpdir() as tmp:
        tools = churn.build(tmp)
        if not tools:
            print("needs a C compiler for bench/churn_child.c, the fork storm")
            sys.exit(77)
        child = tools[1]
        n = NotifySocket(tmp)
        env = {"NOTIFY_SOCKET": n.path, "WATCHDOG_USEC": str(flood.WATCHDOG_USEC)}
        with Daemon(tmp, env=env) as d:
            n.wait_for("READY=1")
            wd = flood.Watchdog(n)
            wd.start()
            try:
                checked(d, wd, "ctl", lambda d: flood.ctl_flood(d, FLOOD_S))
                checked(d, wd, "proc connector", lambda d: flood.fork_flood(d, child))
            finally:
                wd.stop()
            check(d.stop() == 0, "clean stop")


main(test)
