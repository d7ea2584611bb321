"""Run by t_ctl_fair.py as an unprivileged user against the ctl socket.

    python3 ctl_hog.py SOCKET list N    N connections, each sending 16 LIST requests
                                        and never reading; prints "sent K" once they
                                        are written (K: those the daemon kept), then
                                        waits on stdin
    python3 ctl_hog.py SOCKET hold N    keeps N connections open, each reopened as soon
                                        as the daemon closes it; prints "started" once
                                        N are open, then goes on until stdin closes
"""
import select
import socket
import struct
import sys

MAGIC, VERSION, LIST = 0x43425152, 1, 5
HDR = struct.Struct("=IHHII")


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def main():
    path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "list":
        socks = [connect(path) for _ in range(n)]
        sent = 0
        for s in socks:
            try:
                s.sendall(b"".join(HDR.pack(MAGIC, VERSION, LIST, 0, i + 1)
                                   for i in range(16)))
                sent += 1
            except OSError:  # over the uid's share: closed at accept
                pass
        print(f"sent {sent}", flush=True)
        sys.stdin.read()
        return
    socks, first = [], True
    while True:
        while len(socks) < n:
            try:
                socks.append(connect(path))
            except OSError:
                break
        if first:
            print("started", flush=True)
            first = False
        r, _, _ = select.select(socks + [sys.stdin], [], [])
        if sys.stdin in r:
            return
        for s in r:
            try:
                data = s.recv(4096)
            except OSError:  # reset by the daemon's close
                data = b""
            if not data:  # closed by the daemon: open another
                s.close()
                socks.remove(s)


main()
