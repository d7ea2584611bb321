"""Run by t_bus_fair.py and t_shared_limits.py as an unprivileged user: floods the
daemon's D-Bus interface from many connections of one user, as the security review
did (issue #26, finding 7). Written against the wire protocol (EXTERNAL auth, Hello,
method calls), so that no client library is needed and nothing waits on a reply.

    python3 bus_flood.py ADDRESS CONNECTIONS OUTSTANDING METHOD PID

opens CONNECTIONS connections and keeps OUTSTANDING calls of org.rqbalance1.Latency's
METHOD(u PID) in flight on each: a call is sent again as soon as its answer comes.
Prints "started" once every connection has sent its first calls, then "answered" once
one of them has an answer (never before "started", though an answer can come before
every connection is up), then, when its
input closes, one line: "answers N ok N limits N other N served_connections N", where
served_connections counts the connections that had at least one call answered with
something other than LimitsExceeded since the start.
"""
import os
import re
import select
import socket
import struct
import sys

from rqb_buscall import header_fields, message

LIMITS = "org.freedesktop.DBus.Error.LimitsExceeded"


def driver_call(serial, member):
    return message(serial, [(1, "o", "/org/freedesktop/DBus"), (2, "s", "org.freedesktop.DBus"),
                            (3, "s", member), (6, "s", "org.freedesktop.DBus")], b"")


def api_call(serial, method, pid):
    return message(serial, [(1, "o", "/org/rqbalance1"), (2, "s", "org.rqbalance1.Latency"),
                            (3, "s", method), (6, "s", "org.rqbalance1")],
                   struct.pack("<I", pid), "u")


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        uid = str(os.getuid()).encode().hex()
        self.sock.sendall(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\nBEGIN\r\n")
        line = b""
        while not line.endswith(b"\r\n"):
            line += self.sock.recv(1)
        if not line.startswith(b"OK "):
            raise AssertionError("the bus refused EXTERNAL auth")
        self.serial = 1
        self.sock.sendall(driver_call(1, "Hello"))
        self.buf = b""
        self.hello = False
        self.served = False
        self.sock.setblocking(False)

    def send(self, data):
        self.sock.setblocking(True)
        self.sock.sendall(data)
        self.sock.setblocking(False)

    def messages(self):
        """The whole messages received so far: (type, {field: value})."""
        try:
            chunk = self.sock.recv(65536)
        except BlockingIOError:
            chunk = None
        if chunk == b"":
            raise EOFError
        self.buf += chunk or b""
        out = []
        while len(self.buf) >= 16:
            _, typ, _, _, blen, _, flen = struct.unpack("<cBBBIII", self.buf[:16])
            total = 16 + flen + (-flen % 8) + blen
            if len(self.buf) < total:
                break
            out.append((typ, header_fields(self.buf[16:16 + flen], flen)))
            self.buf = self.buf[total:]
        return out


def main():
    address, nconn, outstanding = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    method, pid = sys.argv[4], int(sys.argv[5])
    path = re.search(r"unix:path=([^,;]+)", address).group(1)
    conns = [Conn(path) for _ in range(nconn)]
    counts = {"answers": 0, "ok": 0, "limits": 0, "other": 0}
    started = said = False

    def fire(c, n):
        data = b""
        for _ in range(n):
            c.serial += 1
            data += api_call(c.serial, method, pid)
        c.send(data)

    pending_hello = set(conns)
    while True:
        r, _, _ = select.select([c.sock for c in conns] + [sys.stdin], [], [])
        if sys.stdin in r:
            break
        for c in conns:
            if c.sock not in r:
                continue
            try:
                msgs = c.messages()
            except (EOFError, OSError):
                print("a connection was closed by the bus", file=sys.stderr)
                return 1
            again = 0
            for typ, f in msgs:
                if typ not in (2, 3):
                    continue  # NameAcquired and other signals
                if not c.hello:
                    c.hello = True
                    pending_hello.discard(c)
                    again += outstanding
                    continue
                counts["answers"] += 1
                if typ == 2:
                    counts["ok"] += 1
                elif f.get(4) == LIMITS:
                    counts["limits"] += 1
                else:
                    counts["other"] += 1
                if typ == 2 or f.get(4) != LIMITS:
                    c.served = True
                again += 1
            if again:
                fire(c, again)
        if not started and not pending_hello:
            started = True
            print("started", flush=True)
        if started and not said and counts["answers"]:
            said = True
            print("answered", flush=True)
    served = sum(c.served for c in conns)
    print(" ".join(f"{k} {v}" for k, v in counts.items()), f"served_connections {served}",
          flush=True)
    return 0


sys.exit(main())
