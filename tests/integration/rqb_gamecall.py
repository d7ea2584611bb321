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
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rqb_buscall import IFACE, NAME, PATH, Bus, Caller, answer, message  # noqa: E402


class FdBus(Bus):
    """Bus, with UNIX fd passing negotiated."""

    def __init__(self, address):
        super().__init__(address, fds=True)

    def send_fd(self, member, fd):
        """A call of member (h) with fd: its serial."""
        self.serial += 1
        fields = [(1, "o", PATH), (2, "s", IFACE), (3, "s", member), (6, "s", NAME),
                  (8, "g", "h"), (9, "u", 1)]  # 9: UNIX_FDS, one
        body = struct.pack("<I", 0)  # the index of the one fd passed
        self.sock.sendmsg([message(self.serial, fields, body)],
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
        print(answer(typ, error, body), flush=True)


class GameCaller(Caller):
    """The user's client, started as the user (client() above)."""

    SCRIPT = os.path.abspath(__file__)

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
