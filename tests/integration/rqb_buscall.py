"""A D-Bus connection of a test user's that stays open, for the tests that call the
daemon's D-Bus API as a user with nothing exec'd between calls (dbus-send is a new
process each time, and an exec wakes the daemon, which then reads the fork and exit
events queued so far). Run as a script (Caller starts it as the user), it answers one
line per call; root_call makes one call as root, on a connection of its own."""
import os
import socket
import struct
import subprocess
import sys

NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"


def _pad(b, n):
    return b + b"\0" * (-len(b) % n)


def _str(s, off):
    b = s.encode()
    return b"\0" * (-off % 4) + struct.pack("<I", len(b)) + b + b"\0"


def message(serial, fields, body, sig=""):
    """A method call: fields is [(code, type, value)] (types o, s, g, u), body already
    marshalled in the signature sig."""
    if sig:
        fields = fields + [(8, "g", sig)]
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
    msg = struct.pack("<cBBBIII", b"l", 1, 0, 1, len(body), serial, len(hdr)) + hdr
    return _pad(msg, 8) + body


def header_fields(fields, flen):
    """{code: value} of a received message's header fields (a(yv), flen bytes): the
    string, object path, signature and uint32 ones."""
    out, i = {}, 0
    while i < flen:
        i += -i % 8
        code, slen = fields[i], fields[i + 1]
        t = fields[i + 2:i + 2 + slen].decode()
        i += 3 + slen
        if t == "u":
            i += -(16 + i) % 4
            out[code] = struct.unpack("<I", fields[i:i + 4])[0]
            i += 4
        elif t in ("s", "o"):
            i += -(16 + i) % 4
            n = struct.unpack("<I", fields[i:i + 4])[0]
            out[code] = fields[i + 4:i + 4 + n].decode()
            i += 4 + n + 1
        elif t == "g":
            out[code] = fields[i + 1:i + 1 + fields[i]].decode()
            i += 1 + fields[i] + 1
        else:
            raise RuntimeError(f"unexpected header field type {t!r}")
    return out


def answer(typ, error, body):
    """The line a client prints for a reply: "ok VALUE..." or "error NAME"."""
    if typ == 3:
        return f"error {error}"
    return " ".join(["ok", *map(str, struct.unpack(f"<{len(body) // 4}i",
                                                  body[:len(body) // 4 * 4]))])


class Bus:
    """A plain D-Bus client over the bus socket: EXTERNAL auth (with fds: and
    NEGOTIATE_UNIX_FD), Hello, method calls."""

    def __init__(self, address, fds=False):
        path = address.split("unix:path=", 1)[1].split(",")[0]
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode()
                          + b"\r\n")
        if not self._line().startswith(b"OK "):
            raise RuntimeError("EXTERNAL auth refused")
        if fds:
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

    def send(self, dest, path, iface, member, sig, body):
        self.serial += 1
        fields = [(1, "o", path), (2, "s", iface), (3, "s", member), (6, "s", dest)]
        self.sock.sendall(message(self.serial, fields, body, sig))
        return self.serial

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("the bus closed the connection")
            data += chunk
        return data

    def reply(self, serial):
        """(type, error name, body) of the reply to serial; signals are skipped."""
        while True:
            head = self._exact(16)
            _, typ, _, _, blen, _, flen = struct.unpack("<cBBBIII", head)
            fields = self._exact(flen + (-flen % 8))
            body = self._exact(blen)
            f = header_fields(fields, flen)
            if f.get(5) == serial:  # REPLY_SERIAL; 4 is ERROR_NAME
                return typ, f.get(4), body

    def call(self, dest, path, iface, member, sig, body):
        return self.reply(self.send(dest, path, iface, member, sig, body))


def client(address):
    """Run as the user: one line per call ("SetForeground PID", "SetProcess PID VALUE";
    "send ..." only sends, "wait" reads the oldest reply sent so), one line per answer:
    "ok VALUE" or "error NAME"."""
    bus, sent = Bus(address), []
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "wait":
            typ, error, body = bus.reply(sent.pop(0))
        else:
            send = words[0] == "send"
            member, args = (words[1], words[2:]) if send else (words[0], words[1:])
            sig = "u" + "i" * (len(args) - 1)
            body = struct.pack("<I", int(args[0])) + b"".join(struct.pack("<i", int(a))
                                                              for a in args[1:])
            serial = bus.send(NAME, PATH, IFACE, member, sig, body)
            if send:
                sent.append(serial)
                print("sent", flush=True)
                continue
            typ, error, body = bus.reply(serial)
        print(answer(typ, error, body), flush=True)


class Caller:
    """The user's client, started as the user (SCRIPT's client())."""

    SCRIPT = os.path.abspath(__file__)

    def __init__(self, user, address):
        self.p = user.popen(["/usr/bin/python3", self.SCRIPT, address],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            raise AssertionError(f"{user.name}'s bus client did not start: {line!r}")

    def ask(self, *words):
        self.p.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()


def root_call(address, member, *args):
    with_sig = "u" + "i" * (len(args) - 1)
    b = Bus(address)
    body = struct.pack("<I", int(args[0])) + b"".join(struct.pack("<i", int(a)) for a in args[1:])
    typ, error, body = b.call(NAME, PATH, IFACE, member, with_sig, body)
    b.sock.close()
    return ["error", error] if typ == 3 else ["ok", *map(str, struct.unpack("<i", body[:4]))]


if __name__ == "__main__":
    client(sys.argv[1])
