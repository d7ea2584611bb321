"""A read of another process's cmdline cannot hold up the daemon (issue #26). Linux
reads /proc/PID/cmdline from the process's memory under its mmap lock: a FUSE file
mapped over argv no longer holds the read (since 4.17 it reads anonymous memory only,
and stops there), nor does userfaultfd (a remote read gets no retry, so no wait), but
the lock can be held. A real unprivileged user serves a FUSE file whose reads are
never answered; one thread of its process faults a page of it in (the page stays
locked, waiting), another maps the file again, which for a direct-I/O file waits for
that page with the process's mmap lock held for writing, for good. A read of its
cmdline (ps, the daemon) then waits too. The user asks rqctl explain about that
process, which reads its identity, cmdline included, to say which condition of each
rule it fails (any rule will do; a rule with cmdline = reads it at each exec too). The
daemon must answer within the ctl timeout, name the read it gave up on in its log,
and keep ticking.

The mount is made as fusermount(1), setuid root on most desktops, makes it for any
user: by root, for that user (user_id=, no allow_other), the user's process serving
/dev/fuse. It is made in a mount namespace of the test's own, so no other process
sees it, and it goes with the test's processes. (A FUSE mount in the user's own user
namespace would not do: the kernel refuses it a request from root, whom that namespace
does not map, so a root reader would not wait.)"""
import os
import re
import shutil
import subprocess
import time

from rqb import Daemon, check, main, require, skip, tmpdir, user_rqctl, wait_until
from rqb_user import User

# Mounts a FUSE file system on argv[1] for the user (uid argv[2], gid argv[3], name
# argv[4]) as fusermount does, then runs SERVER (argv[5]) as that user on the
# /dev/fuse descriptor, with VICTIM (argv[6]).
MOUNTER = r"""
import ctypes, os, sys
mnt, uid, gid, user, server, victim = sys.argv[1:7]
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/dev/fuse", os.O_RDWR)
opts = f"fd={fd},rootmode=40000,user_id={uid},group_id={gid}".encode()
if libc.mount(b"rqbfuse", mnt.encode(), b"fuse", 6, opts) != 0:
    print("mount:", os.strerror(ctypes.get_errno()), file=sys.stderr, flush=True)
    sys.exit(3)
os.set_inheritable(fd, True)
os.execvp("runuser", ["runuser", "-u", user, "--", "python3", "-c", server, str(fd), mnt,
                      victim])
"""

# One file, "f", opened for direct I/O, whose reads are never answered; it runs the
# victim once serving, and says each read asked on stderr.
SERVER = r"""
import errno, os, struct, sys
fd, mnt, victim = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if os.fork() == 0:
    os.close(fd)
    os.execvp("python3", ["python3", "-c", victim, mnt + "/f"])
IN = struct.Struct("<IIQQIIIHH")
SIZE = 1 << 20
def attr(ino):
    mode, size, nlink = (0o040755, 0, 2) if ino == 1 else (0o100644, SIZE, 1)
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, size // 512, 0, 0, 0, 0, 0, 0, mode,
                       nlink, 0, 0, 0, 4096, 0)
def reply(unique, err=0, body=b""):
    os.write(fd, struct.pack("<IiQ", 16 + len(body), err, unique) + body)
while True:
    try:
        buf = os.read(fd, 1 << 17)
    except OSError as e:
        if e.errno in (errno.EINTR, errno.ENOENT):
            continue
        break
    ln, op, unique, node = IN.unpack_from(buf)[:4]
    body = buf[IN.size:ln]
    if op == 26:  # INIT
        readahead = struct.unpack_from("<IIII", body)[2]
        reply(unique, 0, struct.pack("<IIIIHHIIHHII", 7, 31, readahead, 0, 16, 12, 4096, 1,
                                     0, 0, 0, 0) + bytes(24))
    elif op == 1:  # LOOKUP
        if body.rstrip(b"\0") == b"f":
            reply(unique, 0, struct.pack("<QQQQII", 2, 0, 0, 0, 0, 0) + attr(2))
        else:
            reply(unique, -errno.ENOENT)
    elif op == 3:  # GETATTR
        reply(unique, 0, struct.pack("<QII", 0, 0, 0) + attr(node))
    elif op == 14:  # OPEN: FOPEN_DIRECT_IO
        reply(unique, 0, struct.pack("<QIi", 0, 1, 0))
    elif op == 15:  # READ: never answered
        print("read asked", file=sys.stderr, flush=True)
    elif op in (18, 25):  # RELEASE, FLUSH
        reply(unique)
    elif op in (2, 36, 42):  # FORGET, INTERRUPT, BATCH_FORGET: no reply
        pass
    elif op == 38:  # DESTROY
        reply(unique)
        break
    else:
        reply(unique, -errno.ENOSYS)
"""

# Says its pid; a thread faults in a page of the FUSE file (which never comes); then it
# maps the file again, which waits for that page under its mmap lock. Both through
# ctypes, which lets go of Python's lock for the call: a fault under it would stop
# every thread.
VICTIM = r"""
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
fd = os.open(sys.argv[1], os.O_RDONLY)
print(os.getpid(), flush=True)
addr = libc.mmap(None, 4096, 1, 0x02, fd, 0)  # PROT_READ, MAP_PRIVATE
dst = ctypes.create_string_buffer(1)
threading.Thread(target=libc.memcpy, args=(dst, addr, 1), daemon=True).start()
time.sleep(1)
libc.mmap(None, 4096, 1, 0x02, fd, 0)
time.sleep(3600)
"""


def ticks(text):
    m = re.search(r"^ticks (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def held(pid):
    """Whether a read of pid's cmdline is held: it does not end within a second."""
    try:
        subprocess.run(["head", "-c", "100", f"/proc/{pid}/cmdline"], capture_output=True,
                       timeout=1)
        return False
    except subprocess.TimeoutExpired:
        return True


def user_procs(uid):
    """The pids of uid's processes."""
    out = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/status") as f:
                if any(l.split()[1:2] == [str(uid)] for l in f if l.startswith("Uid:")):
                    out.append(int(p))
        except (OSError, ValueError):
            pass
    return out


def start_victim(tmp, user, err):
    """The user's FUSE server and its victim; the victim's pid once its lock is held."""
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    os.chown(mnt, user.uid, user.gid)
    server = user.adopt(subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "python3", "-c", MOUNTER, mnt,
         str(user.uid), str(user.gid), user.name, SERVER, VICTIM],
        start_new_session=True, stdout=subprocess.PIPE, stderr=err, text=True))
    line = server.stdout.readline()
    err.seek(0)
    if not line.strip().isdigit():
        why = err.read().strip()
        if "mount:" in why:
            skip(f"no FUSE mount here ({why})")
        raise AssertionError(f"the victim did not start: {line!r} {why!r}")
    pid = int(line)
    check(wait_until(lambda: held(pid), 20), "a read of the victim's cmdline is held")
    err.seek(0)
    check("read asked" in err.read(), "by the FUSE read that is never answered")
    return server, pid


def held_read(d, user, prog, pid):
    def status():
        return user.run([prog, "-s", d.ctl, "status"])

    t0 = time.monotonic()
    r = user.run([prog, "-s", d.ctl, "explain", "-p", str(pid)])
    took = time.monotonic() - t0
    print(r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"))
    check(r.returncode == 0 and took < 8,
          f"rqctl explain answers ({took:.1f} s, exit {r.returncode}: {r.stderr!r})")
    check(re.search(rf"ident: .*/{pid}/cmdline did not come within", d.text()),
          "the log names the read given up on")
    # sync ends a whole tick begun after it (waking an idle tick): the loop still runs.
    n1 = ticks(status().stdout.decode())
    n2 = ticks(user.run([prog, "-s", d.ctl, "sync"]).stdout.decode())
    check(n1 is not None and n2 is not None and n2 > n1,
          f"the daemon keeps ticking ({n1} then {n2})")
    r = user.run([prog, "-s", d.ctl, "explain", "-p", str(pid)])
    check(r.returncode == 0, "a second explain, the first read still held, answered")


def test():
    require()
    if not shutil.which("unshare") or not os.path.exists("/dev/fuse"):
        skip("no unshare or no /dev/fuse: no FUSE file for a user to serve")
    with tmpdir() as tmp, User("rqbh") as user:
        prog = user_rqctl(tmp)
        err = open(os.path.join(tmp, "server.err"), "w+")
        # Any rule: explain then reads the identity of the caller's own process.
        rule = "[rule other]\ncomm = rqb-none\nlatency_nice = 5\n"
        with Daemon(tmp, conf=rule) as d:
            d.wait_for("ctl: serving")
            server, pid = start_victim(tmp, user, err)
            try:
                held_read(d, user, prog, pid)
            finally:
                # The server gone, the FUSE read fails, the lock is let go, and any
                # read held (a daemon that did not bound it) ends; the victim, in the
                # kernel until then, ends after it, before the user is removed.
                os.killpg(server.pid, 9)
                server.wait()
                wait_until(lambda: not user_procs(user.uid), 30)
            check(d.alive(), "the daemon still runs")
        err.close()


main(test)
