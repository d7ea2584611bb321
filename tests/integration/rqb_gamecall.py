"""A test user's D-Bus connection that passes pidfds, for the tests of RegisterGame and
UnregisterGame (which name the game by a pidfd, D-Bus type h): the plain client of
rqb_buscall with UNIX fd passing negotiated. Run as a script (GameCaller starts it as
the user), it answers one line per line read:

  open PID               pidfd_open(PID) as the user: "fd N" (N names it below)
  close N                closes pidfd N: "closed"
  RegisterGame N         "ok VALUE" or "error NAME"
  UnregisterGame N       "ok" or "error NAME"
  RegisterGame pipe      the same with a pipe's fd, which is not a pidfd

End of input ends the connection (the process exits)."""
import array
import os
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rqb_buscall import IFACE, NAME, PATH, Bus, _pad, _str  # noqa: E402


class FdBus(Bus):
    """Bus, with NEGOTIATE_UNIX_FD between the EXTERNAL auth and BEGIN."""

    def __init__(self, address):
        path = address.split("unix:path=", 1)[1].split(",")[0]
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode()
                          + b"\r\n")
        if not self._line().startswith(b"OK "):
            raise RuntimeError("EXTERNAL auth refused")
        self.sock.sendall(b"NEGOTIATE_UNIX_FD\r\n")
        if not self._line().startswith(b"AGREE_UNIX_FD"):
            raise RuntimeError("the bus does not pass fds")
        self.sock.sendall(b"BEGIN\r\n")
        self.serial = 0
        self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                  "Hello", "", b"")

    def _line(self):
        line = b""
        while not line.endswith(b"\r\n"):
            line += self.sock.recv(1)
        return line

    def send_fd(self, member, fd):
        """A call of member (h) with fd: its serial."""
        self.serial += 1
        fields = [(1, "o", PATH), (2, "s", IFACE), (3, "s", member), (6, "s", NAME),
                  (8, "g", "h"), (9, "u", 1)]
        hdr = b""
        for code, t, v in fields:
            hdr = _pad(hdr, 8) if hdr else hdr
            hdr += bytes([code, 1]) + t.encode() + b"\0"
            if t == "g":
                hdr += bytes([len(v)]) + v.encode() + b"\0"
            elif t == "u":
                hdr += struct.pack("<I", v)
            else:
                hdr += _str(v, 16 + len(hdr))
        body = struct.pack("<I", 0)  # the index of the one fd passed
        msg = struct.pack("<cBBBIII", b"l", 1, 0, 1, len(body), self.serial, len(hdr)) + hdr
        self.sock.sendmsg([_pad(msg, 8) + body],
                          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
        return self.serial


def client(address):
    bus, fds = FdBus(address), {}
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "open":
            try:
                fd = os.pidfd_open(int(words[1]))
            except OSError as e:
                print("oserror", e.errno, flush=True)
                continue
            fds[fd] = True
            print("fd", fd, flush=True)
            continue
        if words[0] == "close":
            os.close(int(words[1]))
            print("closed", flush=True)
            continue
        if words[1] == "pipe":
            r, w = os.pipe()
            typ, error, body = bus.reply(bus.send_fd(words[0], r))
            os.close(r)
            os.close(w)
        else:
            typ, error, body = bus.reply(bus.send_fd(words[0], int(words[1])))
        if typ == 3:
            print("error", error, flush=True)
        else:
            print("ok", *struct.unpack(f"<{len(body) // 4}i", body[:len(body) // 4 * 4]),
                  flush=True)


class GameCaller:
    """The user's client, started as the user (client() above)."""

    def __init__(self, user, address):
        self.p = user.popen(["/usr/bin/python3", os.path.abspath(__file__), address],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            raise AssertionError(f"{user.name}'s bus client did not start: {line!r}")

    def ask(self, *words):
        self.p.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def pidfd(self, pid):
        r = self.ask("open", pid)
        if r[0] != "fd":
            raise AssertionError(f"pidfd_open({pid}) as the user: {r}")
        return int(r[1])

    def end(self):
        """Ends the connection: the client exits."""
        self.p.stdin.close()
        self.p.wait(60)


if __name__ == "__main__":
    client(sys.argv[1])
