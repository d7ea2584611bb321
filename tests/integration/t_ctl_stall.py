"""One user's large process cannot stall the daemon's one loop (issue #49, finding 1),
run as real unprivileged users the test creates: one holds a process of 10,000
sleeping threads and sends, on one connection, 16 `set`s of rising values on it; a
second sends 16 connections of 16 `explain`s on that process; root's `status` is sent
after both. The daemon is stopped (SIGSTOP) while they are all written, so that every
request waits in the kernel when it resumes:
- root's status is served before any of the users' requests (the daemon's log gives
  the order it served them in), and the users' work is all answered after;
- each set is refused, the process having more threads than ctl_max_threads, and
  never walked past that bound; each explain is answered;
- WATCHDOG=1 keeps coming: no gap between two is longer than WATCHDOG_USEC (the
  service manager's deadline) from start to end, and two more come after the attack.
Before the fix each set walked the 10,000 threads some times over with a read whose
cost grows with the process (N^2), a connection's 16 requests ran in one callback
(root waited 8-86 s), and explain walked them too."""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from rqb import Daemon, check, lines_until, main, private_copy, require, tmpdir
from rqb_user import User

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
NTHREADS = 10000
MAGIC, VERSION, STATUS, SET, EXPLAIN, OK = 0x43425152, 1, 1, 3, 9, 100
HDR = struct.Struct("=IHHII")
WATCHDOG_USEC = 10_000_000


class Watchdog:
    """The NOTIFY_SOCKET, every message kept with when it came."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)
        self.got = []

    def drain(self):
        while True:
            try:
                self.got.append((time.monotonic(), self.sock.recv(4096).decode()))
            except socket.timeout:
                return

    def pings(self):
        self.drain()
        return [t for t, m in self.got if "WATCHDOG=1" in m.split("\n")]

    def wait_pings(self, n, after, timeout=120.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len([t for t in self.pings() if t > after]) >= n:
                return True
        return False


def test():
    require()
    with tmpdir() as tmp, User("rqbs") as holder, User("rqbx") as asker:
        # Where the user may read it (tmp and tmp/bin 755).
        helper = private_copy(tmp, os.path.join(HERE, "ctl_stall.py"))
        wd = Watchdog(os.path.join(tmp, "notify.sock"))
        env = {"NOTIFY_SOCKET": wd.sock.getsockname(), "WATCHDOG_USEC": str(WATCHDOG_USEC)}
        many = holder.popen([PYTHON, helper, "threads", str(NTHREADS)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pid = int(many.stdout.readline())
        with open(f"/proc/{pid}/status") as f:
            have = int(next(l for l in f if l.startswith("Threads:")).split()[1])
        check(have == NTHREADS + 1, f"the user's process holds {have} threads")
        with Daemon(tmp, env=env) as d:
            d.wait_for(r"running: sampler")
            check(wd.wait_pings(1, 0), "WATCHDOG=1 comes")
            start = wd.pings()[0]

            d.proc.send_signal(signal.SIGSTOP)
            try:
                explains = asker.popen(
                    [PYTHON, helper, "attack", d.ctl, "16", str(EXPLAIN)] +
                    [f"pid {pid}\\n"] * 16, stdout=subprocess.PIPE, text=True)
                sent = lines_until(explains, "sent")
                sets = holder.popen(
                    [PYTHON, helper, "attack", d.ctl, "1", str(SET)] +
                    [f"pid {pid}\\nvalue {v}\\n" for v in range(4, 20)],
                    stdout=subprocess.PIPE, text=True)
                sent += lines_until(sets, "sent")
                check(sent == ["sent 16", "sent 1"],
                      f"the users wrote their requests while the daemon was stopped ({sent})")
                # In a thread: where the kernel's queue of connections is full (16
                # before the fix), connect waits for the daemon to take one.
                root = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                asked = threading.Thread(target=lambda: (
                    root.connect(d.ctl), root.sendall(HDR.pack(MAGIC, VERSION, STATUS, 0, 1))))
                asked.start()
                asked.join(timeout=20)
                queued = not asked.is_alive()
            finally:
                d.proc.send_signal(signal.SIGCONT)
            asked.join()
            root.settimeout(120)
            try:
                got = root.recv(HDR.size)
            except socket.timeout:
                got = b""
            check(len(got) == HDR.size and HDR.unpack(got)[2] == OK,
                  "root's status is answered (within 120 s)")
            root.close()

            set_out = lines_until(sets, "done")
            explain_out = lines_until(explains, "done")
            check(set_out[-1:] == ["done"] and explain_out[-1:] == ["done"],
                  "the users' requests are all answered in the end")
            # Its share may owe the loop more time than it may by the last ones: they
            # then wait, and the connection's deadline may close it first.
            refused = [l for l in set_out if l.startswith("reply")]
            closed = [l for l in set_out if l.startswith("closed")]
            check(refused and (len(refused) == 16 or closed) and
                  all(l.split()[3] == "7" and "ctl_max_threads" in l for l in refused),
                  f"each set answered is refused (E2BIG: more threads than "
                  f"ctl_max_threads): {len(refused)} answered, {refused[:1]}, {closed}")
            answered = [l for l in explain_out if l.startswith("reply")]
            closed = [l for l in explain_out if l.startswith("closed")]
            check(answered and (len(answered) == 256 or closed) and
                  all(l.split()[3] == "0" for l in answered),
                  f"each explain is answered, or waits for its share's time until the "
                  f"connection's deadline ({len(answered)} of 256 answered, "
                  f"{len(closed)} connections closed)")

            served = re.findall(r"ctl: (\w+) from uid (\d+)", d.text())
            first = next((i for i, (t, u) in enumerate(served) if u == "0"), None)
            users = [i for i, (t, u) in enumerate(served)
                     if u in (str(holder.uid), str(asker.uid))]
            check(queued, "root's status was written while the daemon was stopped")
            check(first is not None and users and first < min(users),
                  f"root's status is served before any of the users' {len(users)} requests")

            end = time.monotonic()
            check(wd.wait_pings(2, end), "WATCHDOG=1 keeps coming after the attack")
            pings = [t for t in wd.pings() if t >= start]
            gaps = [b - a for a, b in zip(pings, pings[1:])]
            check(max(gaps) * 1e6 < WATCHDOG_USEC,
                  f"no gap between WATCHDOG=1 reaches WATCHDOG_USEC "
                  f"(longest {max(gaps):.1f} s of {WATCHDOG_USEC / 1e6:.0f})")
        many.stdin.close()
        many.wait()


main(test)
