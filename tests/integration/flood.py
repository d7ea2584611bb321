"""Floods of the daemon's event loop, shared by t_flood (what must hold) and bench/flood
(how long the loop went without feeding the watchdog, and how many ticks it kept).

- ctl: CLIENTS clients connect at once, and again as soon as they are closed: a quarter
  say nothing, a quarter send half a header, a quarter garbage, a quarter status
  requests that they never read the replies to (the daemon serves 64 at a time, for
  2 s each, 16 requests at most).
- proc connector: two managed processes fork FORKS children each that exit at once,
  without pause: every fork is work for the daemon, and the connector socket refills
  as fast as the daemon reads it.
"""
import errno
import os
import random
import socket
import struct
import subprocess
import threading
import time

from rqb import CGROUP_ROOT, RQCTL, check

WATCHDOG_USEC = 2000000
CLIENTS = 1000
FORKS = 30000
CTL_MAGIC, CTL_STATUS, CTL_LIST = 0x43425152, 1, 5


def hdr(kind, seq):
    return struct.pack("<IHHII", CTL_MAGIC, 1, kind, 0, seq)


class Watchdog(threading.Thread):
    """Every WATCHDOG=1 the daemon sends to a NotifySocket, with its time of arrival."""

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

    def between(self, t0, t1):
        return [t for t in self.times if t0 <= t <= t1]

    def longest_gap(self, t0, t1):
        ts = [t0] + self.between(t0, t1) + [t1]
        return max(b - a for a, b in zip(ts, ts[1:]))

    def stop(self):
        self.stop_ev.set()
        self.join()


def status(d):
    """rqctl status as a dict of its single-valued lines."""
    r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"rqctl status failed: {r.stderr.strip()}")
    return dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)


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


def ctl_flood(d, seconds):
    rng = random.Random(1)
    socks = [None] * CLIENTS
    made = closed = 0
    end = time.monotonic() + seconds
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


def fork_flood(d, child, forks=FORKS):
    """Two of churn_child's fork storms at once (bench/churn_child.c): each waits for its
    class cgroup, so that every fork is a managed one, then forks `forks` children that
    exit at once. Two, so that they outrun the daemon on two CPUs."""
    cls = f"/{CGROUP_ROOT}/rqbalance-lat-5"
    procs = []
    rfd, wfd = os.pipe()
    try:
        for _ in range(2):
            p = subprocess.Popen([child, "burst", str(wfd), str(forks), cls, "0"],
                                 pass_fds=[wfd])
            procs.append(p)
            r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", "-5", "-p", str(p.pid)],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"the forker {p.pid} is given -5: its children are managed")
        for p in procs:
            p.wait(timeout=600)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        os.close(rfd)
        os.close(wfd)
    return f"2 x {forks} forks from managed processes"


def run(d, wd, fn):
    """Runs one flood; returns its figures. Before and after, d.sync() lets the daemon
    handle every event so far, so its status counts only what it holds for good."""
    d.sync()
    before = status(d)
    t0 = time.monotonic()
    what = fn(d)
    t1 = time.monotonic()
    after_flood = status(d)
    d.sync()
    after = status(d)
    return {
        "what": what,
        "seconds": t1 - t0,
        "watchdogs": len(wd.between(t0, t1)),
        "longest_gap": wd.longest_gap(t0, t1),
        "ticks": int(after_flood["ticks"]) - int(before["ticks"]),
        "fds_before": int(before["open_fds"]),
        "fds_after": int(after["open_fds"]),
        "conns_after": int(after["ctl_connections"]),
    }
