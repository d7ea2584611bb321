"""Run by t_ctl_stall.py as an unprivileged user.

    python3 ctl_stall.py threads N
        starts N threads blocked in pause() (small stacks, no interpreter in them),
        prints its pid, and waits on stdin
    python3 ctl_stall.py attack SOCKET CONNS TYPE PAYLOAD...
        opens CONNS connections to the ctl socket and writes on each one request per
        PAYLOAD ("\\n" for a newline), all at once; prints "sent K" (K: connections
        written to), then reads every reply and prints "reply CONN TYPE ERRNO" for
        each (ERRNO 0 for OK), "closed CONN" where the daemon closed a connection
        before answering all, and "done" at the end
    python3 ctl_stall.py late SOCKET
        opens connection A and has a status answered on it, then opens B (which sends
        nothing) and C (half a header) and prints "opened"; at "go" on stdin sends a
        second status on A and prints "sent"; at "read" reads what comes on A, B and C
        and prints "reply A TYPE" or "closed A" (and B, C), then "done"
"""
import ctypes
import os
import select
import socket
import struct
import sys

MAGIC, VERSION, OK = 0x43425152, 1, 100
HDR = struct.Struct("=IHHII")


def threads(n):
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(64)  # pthread_attr_t is 56 bytes on x86_64
    libc.pthread_attr_init(attr)
    libc.pthread_attr_setstacksize(attr, ctypes.c_size_t(65536))
    pause = ctypes.cast(libc.pause, ctypes.c_void_p)
    tid = ctypes.c_ulong()
    for _ in range(n):
        r = libc.pthread_create(ctypes.byref(tid), attr, pause, None)
        if r:
            sys.exit(f"pthread_create: {os.strerror(r)}")
    print(os.getpid(), flush=True)
    sys.stdin.read()


def attack(path, conns, typ, payloads):
    socks, sent = [], 0
    for _ in range(conns):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        msgs = [HDR.pack(MAGIC, VERSION, typ, len(p), i + 1) + p
                for i, p in enumerate(payloads)]
        try:
            s.sendall(b"".join(msgs))
            sent += 1
        except OSError:
            pass
        socks.append([s, b"", 0])
    print(f"sent {sent}", flush=True)
    live = list(range(len(socks)))
    while live:
        r, _, _ = select.select([socks[i][0] for i in live], [], [])
        for i in [i for i in live if socks[i][0] in r]:
            s = socks[i]
            try:
                chunk = s[0].recv(65536)
            except OSError:
                chunk = b""
            s[1] += chunk
            while len(s[1]) >= HDR.size:
                _, _, t, ln, _ = HDR.unpack(s[1][:HDR.size])
                if len(s[1]) < HDR.size + ln:
                    break
                body = s[1][HDR.size:HDR.size + ln].decode(errors="replace")
                s[1] = s[1][HDR.size + ln:]
                s[2] += 1
                err = 0 if t == OK else int(body.split()[1])
                print(f"reply {i} {t} {err} {body.splitlines()[-1] if err else ''}",
                      flush=True)
            if not chunk or s[2] == len(payloads):
                if s[2] < len(payloads):
                    print(f"closed {i}", flush=True)
                s[0].close()
                live.remove(i)
    print("done", flush=True)


def late(path):
    def status(s, seq):
        s.sendall(HDR.pack(MAGIC, VERSION, 1, 0, seq))

    def answer(name, s):
        s.settimeout(120)
        got = b""
        try:
            while len(got) < HDR.size:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        print(f"reply {name} {HDR.unpack(got[:HDR.size])[2]}" if len(got) >= HDR.size
              else f"closed {name}", flush=True)

    conns = {}
    for name in "ABC":
        conns[name] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conns[name].connect(path)
    status(conns["A"], 1)
    answer("first", conns["A"])
    conns["C"].sendall(HDR.pack(MAGIC, VERSION, 1, 0, 1)[:5])
    print("opened", flush=True)
    sys.stdin.readline()
    status(conns["A"], 2)
    print("sent", flush=True)
    sys.stdin.readline()
    for name in "ABC":
        answer(name, conns[name])
    print("done", flush=True)


def main():
    if sys.argv[1] == "threads":
        threads(int(sys.argv[2]))
    elif sys.argv[1] == "late":
        late(sys.argv[2])
    else:
        attack(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
               [p.replace("\\n", "\n").encode() for p in sys.argv[5:]])


main()
