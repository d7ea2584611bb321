"""Floods: the daemon's loop keeps ticking and feeding the watchdog.

The daemon runs with WATCHDOG_USEC = 2 s and a NOTIFY_SOCKET of the test's, so it
sends WATCHDOG=1 about every second; the service manager would kill it after 2 s
without one. Each flood lasts FLOOD_S seconds; through it the test records every
WATCHDOG=1 and, after it, checks the longest gap between two stayed under 2 s and
that `rqctl status` counts ticks on (at least a third of the ticks the time allows:
the machine the tests run on is shared and loaded).

- ctl: 1,000 clients connect at once, and again as soon as they are closed: a quarter
  say nothing, a quarter send half a header, a quarter garbage, a quarter status
  requests that they never read the replies to (the daemon serves 64 at a time, for
  2 s each, 16 requests at most). After it the daemon answers at once and has no
  more file descriptors than before.
- proc connector: two managed processes fork 30,000 children each that exit at once,
  without pause: every fork is work for the daemon, and the connector socket refills
  as fast as the daemon reads it. A handler that read until the socket was empty never
  returned: here 16 ticks in 11 s, and no WATCHDOG=1 for 5.4 s.
"""
import errno
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

import churn
from rqb import CGROUP_ROOT, RQCTL, Daemon, NotifySocket, check, main, require, tmpdir

WATCHDOG_USEC = 2000000
FLOOD_S = 6
CLIENTS = 1000
CTL_MAGIC, CTL_STATUS, CTL_LIST = 0x43425152, 1, 5

FORKS = 30000


def hdr(kind, seq):
    return struct.pack("<IHHII", CTL_MAGIC, 1, kind, 0, seq)


class Watchdog(threading.Thread):
    """Every WATCHDOG=1 the daemon sends, with its time of arrival."""

    def __init__(self, n):
        super().__init__(daemon=True)
        self.n = n
        self.times = []
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                m = self.n.sock.recv(4096).decode()
            except socket.timeout:
                continue
            if "WATCHDOG=1" in m.split("\n"):
                self.times.append(time.monotonic())

    def longest_gap(self, t0, t1):
        ts = [t0] + [t for t in self.times if t0 <= t <= t1] + [t1]
        return max(b - a for a, b in zip(ts, ts[1:]))

    def stop(self):
        self.stop_ev.set()
        self.join()


def ticks(d, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                           timeout=30)
        for line in r.stdout.splitlines():
            if line.startswith("ticks "):
                return int(line.split()[1])
        time.sleep(0.1)
    raise AssertionError("rqctl status never answered")


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def client(path, kind, rng):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(path)
    except BlockingIOError:
        pass  # the backlog is full: this one waits its turn, or is retried
    except OSError as e:
        s.close()
        if e.errno in (errno.EAGAIN, errno.ECONNREFUSED):
            return None
        raise
    try:
        if kind == 1:
            s.send(hdr(CTL_STATUS, 1)[:7])
        elif kind == 2:
            s.send(rng.randbytes(64))
        elif kind == 3:
            s.send(b"".join(hdr(rng.choice((CTL_STATUS, CTL_LIST)), i) for i in range(16)))
    except OSError:
        pass
    return s


def ctl_flood(d):
    rng = random.Random(1)
    socks = [None] * CLIENTS
    made = closed = 0
    end = time.monotonic() + FLOOD_S
    while time.monotonic() < end:
        for i in range(CLIENTS):
            s = socks[i]
            if s is not None:
                try:
                    if s.recv(65536, socket.MSG_DONTWAIT) == b"":
                        s.close()
                        socks[i] = s = None
                        closed += 1
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    socks[i] = s = None
                    closed += 1
            if s is None:
                socks[i] = client(d.ctl, i % 4, rng)
                made += socks[i] is not None
        time.sleep(0.05)
    for s in socks:
        if s is not None:
            s.close()
    return f"{made} connections made, {closed} closed by the daemon"


def fork_flood(d, child):
    """Two of churn_child's fork storms at once (bench/churn_child.c): each waits for its
    class cgroup, so that every fork is a managed one, then forks FORKS children that
    exit at once. Two, so that they outrun the daemon on two CPUs."""
    cls = f"/{CGROUP_ROOT}/rqbalance-lat-5"
    procs = []
    rfd, wfd = os.pipe()
    try:
        for _ in range(2):
            p = subprocess.Popen([child, "burst", str(wfd), str(FORKS), cls, "0"],
                                 pass_fds=[wfd])
            procs.append(p)
            r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", "-5", "-p", str(p.pid)],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"the forker {p.pid} is given -5: its children are managed")
        for p in procs:
            p.wait(timeout=300)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        os.close(rfd)
        os.close(wfd)
    return f"2 x {FORKS} forks from managed processes"


def flood(d, wd, name, fn):
    fds = nfds(d.proc.pid)
    t_before = ticks(d)
    t0 = time.monotonic()
    what = fn(d)
    t1 = time.monotonic()
    t_after = ticks(d)
    t2 = time.monotonic()
    gap = wd.longest_gap(t0, t1)
    n = sum(1 for t in wd.times if t0 <= t <= t1)
    print(f"{name} flood: {what}; {n} WATCHDOG=1 in {t1 - t0:.1f} s, longest gap {gap:.2f} s; "
          f"{t_after - t_before} ticks in {t2 - t0:.1f} s")
    check(d.alive(), f"{name} flood: the daemon is alive")
    check(gap < WATCHDOG_USEC / 1e6, f"{name} flood: the watchdog was fed at least every "
          f"{WATCHDOG_USEC / 1e6:.0f} s (longest gap {gap:.2f} s)")
    check(t_after - t_before >= (t2 - t0) / 0.1 / 3,
          f"{name} flood: it kept ticking ({t_after - t_before} ticks in {t2 - t0:.1f} s)")
    check(t2 - t1 < 5, f"{name} flood: it answered rqctl status {t2 - t1:.1f} s after")
    time.sleep(2.5)  # the daemon's 2 s limit on a connection
    check(nfds(d.proc.pid) <= fds, f"{name} flood: no file descriptor left open "
          f"({nfds(d.proc.pid)}, {fds} before)")


def test():
    require()
    with tmpdir() as tmp:
        tools = churn.build(tmp)
        if not tools:
            print("needs a C compiler for bench/churn_child.c, the fork storm")
            sys.exit(77)
        child = tools[1]
        n = NotifySocket(tmp)
        env = {"NOTIFY_SOCKET": n.path, "WATCHDOG_USEC": str(WATCHDOG_USEC)}
        with Daemon(tmp, env=env) as d:
            n.wait_for("READY=1")
            wd = Watchdog(n)
            wd.start()
            try:
                flood(d, wd, "ctl", ctl_flood)
                flood(d, wd, "proc connector", lambda d: fork_flood(d, child))
            finally:
                wd.stop()
            check(d.stop() == 0, "clean stop")


main(test)
