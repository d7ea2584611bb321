"""What an unprivileged user can make of its own user and mount namespace against the
daemon's view of its /proc (t_peer_view, bench/peerview). Run as that user:

  peer_flood.py forge -- ARGV...
      a user and mount namespace of its own, and a pid namespace below the caller's
      whose proc (no hidepid) is mounted over /proc; ARGV then runs in it, while it
      stays itself in the caller's pid namespace. Its /proc lists only the child
      namespace's processes: nothing of the daemon's.

  peer_flood.py mounts N DIR RQCTL SOCKET BUS PID COUNT WORKERS
      a user and mount namespace of its own with N bind mounts of long paths on a
      tmpfs at DIR (some 17 MB of mountinfo at 20,000); prints "ready N", then, with
      WORKERS at a time, COUNT new ctl connections (rqctl -s SOCKET status) and COUNT
      new bus connections (dbus-send GetProcess PID on BUS), each its own process, and
      prints "done CTL_OK BUS_OK SECONDS"."""
import concurrent.futures
import ctypes
import os
import subprocess
import sys
import time

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x10000000, 0x20000000
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
LONG = "x" * 200 + "/" + "y" * 200
libc = ctypes.CDLL(None, use_errno=True)


def fail(what):
    e = ctypes.get_errno()
    raise OSError(e, f"{what}: {os.strerror(e)}")


def mount(src, dst, fstype, flags):
    if libc.mount(src.encode() if src else None, dst.encode(),
                  fstype.encode() if fstype else None, flags, None) < 0:
        fail(f"mount {dst}")


def own_namespaces(extra=0):
    """A user namespace that maps only the caller's own ids, and a mount namespace."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | extra) < 0:
        fail("unshare")
    for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    mount(None, "/", None, MS_REC | MS_PRIVATE)


def forge(argv):
    own_namespaces(CLONE_NEWPID)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        # Pid 1 of the new namespace: the proc it mounts lists that namespace. It holds
        # the namespace until ARGV ends, and none of ARGV's output.
        os.close(r)
        libc.prctl(PR_SET_PDEATHSIG, 9)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        mount("proc", "/proc", "proc", 0)
        os.write(w, b"1")
        os.close(w)
        while True:
            time.sleep(3600)
    os.close(w)
    if os.read(r, 1) != b"1":
        sys.exit("forge: the child namespace's proc was not mounted")
    os.execvp(argv[0], argv)


def mounts(n, where, rqctl, sock, bus, pid, count, workers):
    own_namespaces()
    mount("tmpfs", where, "tmpfs", 0)
    src = f"{where}/{LONG}src"
    os.makedirs(src)
    for i in range(n):
        os.makedirs(f"{where}/{LONG}{i}")
        mount(src, f"{where}/{LONG}{i}", None, MS_BIND)
    print(f"ready {n}", flush=True)

    def one(argv):
        """Whether the daemon answered: a reply, or an error of its own."""
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=600)
        return p.returncode == 0 or "org.rqbalance1." in p.stderr

    ctl = [rqctl, "-s", sock, "status"]
    get = ["dbus-send", f"--bus={bus}", "--print-reply", "--dest=org.rqbalance1",
           "/org/rqbalance1", "org.rqbalance1.Latency.GetProcess", f"uint32:{pid}"]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        done = list(ex.map(one, [ctl, get] * count))
    print(f"done {sum(done[0::2])} {sum(done[1::2])} {time.monotonic() - t0:.1f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "forge":
        forge(sys.argv[sys.argv.index("--") + 1:])
    else:
        a = sys.argv[2:]
        mounts(int(a[0]), a[1], a[2], a[3], a[4], int(a[5]), int(a[6]), int(a[7]))
