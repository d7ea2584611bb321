"""Run by t_ctl_creds.py as an unprivileged user: connects to the ctl socket, has a
status request answered (so the daemon has taken the connection), forks, and then
the connecting process either execs a set-user-ID program that waits on its input
(mode exec), waits itself (mode stay), or exits (mode exit). Once that has happened
the child sends one request on the inherited socket and prints what came back:
"reply OK|ERR <payload>", then "closed" if the daemon closed the connection after it,
or "open" if it did not.

    python3 ctl_attack.py SOCKET MODE TYPE PAYLOAD [SETUID-PROGRAM]
"""
import os
import select
import socket
import struct
import sys

MAGIC, VERSION, STATUS, OK, ERR = 0x43425152, 1, 1, 100, 101
HDR = struct.Struct("=IHHII")


def recv_msg(s):
    got = b""
    while len(got) < HDR.size or len(got) < HDR.size + HDR.unpack(got[:HDR.size])[3]:
        chunk = s.recv(65536)
        if not chunk:
            return None
        got += chunk
    _, _, typ, length, _ = HDR.unpack(got[:HDR.size])
    return typ, got[HDR.size:HDR.size + length].decode()


def euid_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("Uid:")).split()[2])


def main():
    path, mode, typ, payload = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    prog = sys.argv[5] if len(sys.argv) > 5 else None
    payload = payload.replace("\\n", "\n").encode()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(HDR.pack(MAGIC, VERSION, STATUS, 0, 1))
    r = recv_msg(s)
    if not r or r[0] != OK:
        print(f"status before the fork failed: {r}")
        sys.exit(1)
    stdin_r, stdin_w = os.pipe()    # the peer's input: nobody writes, so it waits
    out_r, out_w = os.pipe()        # its output: the child reads the prompt
    peer = os.getpid()
    if os.fork() != 0:
        # The process that connected.
        os.close(stdin_w)
        os.close(out_r)
        if mode == "exit":
            os._exit(0)
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        if mode == "exec":
            os.execv(prog, [prog])
        os.read(0, 1)   # stay: until the child is done
        os._exit(0)
    os.close(stdin_r)
    os.close(out_w)
    if mode == "exit":
        pidfd = os.pidfd_open(peer)
        select.select([pidfd], [], [])  # readable once the peer has exited
    elif mode == "exec":
        seen = b""
        while b"assword" not in seen:   # the program waits for its input
            chunk = os.read(out_r, 4096)
            if not chunk:
                print(f"{prog} ended before it asked for input: {seen!r}")
                sys.exit(1)
            seen += chunk
        print(f"peer {peer} runs {prog} with euid {euid_of(peer)}")
    s.sendall(HDR.pack(MAGIC, VERSION, typ, len(payload), 2) + payload)
    r = recv_msg(s)
    print("reply", "none" if r is None else "OK" if r[0] == OK else "ERR",
          "" if r is None else r[1].replace("\n", " | "))
    try:
        s.sendall(HDR.pack(MAGIC, VERSION, STATUS, 0, 3))
        print("open" if recv_msg(s) else "closed")
    except (BrokenPipeError, ConnectionResetError):
        print("closed")
    os.close(stdin_w)   # the peer's input ends: it exits
    sys.stdout.flush()


main()
