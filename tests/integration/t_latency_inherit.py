"""Inheritance follows the task that created a process, as the kernel's own does, and a
rule's value reaches only processes that match the rule (issue #14, finding 3). A rule
gives -10 to a service (a copy of python, run as root, a child subreaper); the service
starts a child that becomes a real unprivileged user the test creates and runs the
user's own program. That program, no longer the rule's, is given back; it then makes
a process with clone(CLONE_PARENT), whose parent of record is the service: the new
process must not get the service's value, from BPF events (which name the creator) nor
from the proc connector (which names only the parent: the daemon checks what the kernel
gave the child). A process of the user's orphaned to the service must not get its value
at a rescan (a reload) either. The service's own child still inherits at fork. Waits
are for events (rqctl sync); only the kernel's re-parenting is polled."""
import os
import signal
import subprocess

from rqb import Daemon, check, main, private_copy, require, rqctl, skip, tmpdir, wait_until
from rqb_user import User

VALUE = -10

# The service: a child subreaper that reads commands. "fork": a child of its own that
# sleeps (its pid printed); "user MODE": a child that becomes the user and execs the
# user's program with MODE (which prints its own pid).
SERVICE = """
import ctypes, os, sys, time
uid, gid, user_prog = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
SYS_PY = "/usr/bin/python3"
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
print(os.getpid(), flush=True)
for line in iter(sys.stdin.readline, ""):
    cmd = line.split()
    pid = os.fork()
    if pid == 0:
        if cmd[0] == "fork":
            time.sleep(120)
            os._exit(0)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        os.execv(SYS_PY, ["python3", "-c", user_prog, cmd[1]])
    if cmd[0] == "fork":
        print(pid, flush=True)
"""

# The user's program: says its pid, waits for SIGUSR1, then makes a process that
# sleeps (clone: with CLONE_PARENT; orphan: a plain fork, then exits) and says its pid.
USER_PROG = """
import ctypes, os, signal, sys, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
print(os.getpid(), flush=True)
signal.sigwait({signal.SIGUSR1})
if sys.argv[1] == "clone":
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    pid = libc.syscall(56, 0x00008000 | signal.SIGCHLD, 0, 0, 0, 0)  # CLONE_PARENT
else:
    pid = os.fork()
if pid == 0:
    time.sleep(120)
    os._exit(0)
print(pid, flush=True)
if sys.argv[1] == "orphan":
    os._exit(0)
time.sleep(120)
"""


def nice(pid):
    return os.getpriority(os.PRIO_PROCESS, pid)


def ppid(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def managed(d, pid):
    return rqctl(d, "get", "-p", str(pid)).returncode == 0


def status(d):
    return dict(l.split(" ", 1) for l in rqctl(d, "status").stdout.splitlines() if " " in l)


def user_child(d, svc, mode):
    """The service's child as the user, once the daemon has seen its exec."""
    svc.stdin.write(f"user {mode}\n")
    svc.stdin.flush()
    c = int(svc.stdout.readline())
    d.sync()
    check(not managed(d, c) and nice(c) == 0,
          f"the user's program {c} ({mode}) is given back at exec (nice {nice(c)})")
    os.kill(c, signal.SIGUSR1)
    return c, int(svc.stdout.readline())


def run(tmp, user, py, events):
    conf = (f"[latency]\nevents = {events}\n"
            f"[rule svc]\nlatency_nice = {VALUE}\nexe = {py}\nuid = 0\n")
    with Daemon(tmp, conf=conf) as d:
        d.wait_for("ctl: serving")
        src = status(d).get("latency_events")
        if src != events:
            print(f"(events = {events}: the daemon uses {src}; not run)")
            check(d.stop() == 0, "clean stop")
            return False
        svc = user.adopt(subprocess.Popen(
            [py, "-c", SERVICE, str(user.uid), str(user.gid), USER_PROG],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True))
        spid = int(svc.stdout.readline())
        d.sync()
        check(nice(spid) == VALUE and managed(d, spid), f"{events}: the rule gives the service {VALUE}")
        svc.stdin.write("fork\n")
        svc.stdin.flush()
        own = int(svc.stdout.readline())
        d.sync()
        check(nice(own) == VALUE and managed(d, own),
              f"{events}: the service's own child {own} inherits {VALUE} at fork")

        c, g = user_child(d, svc, "clone")
        d.sync()
        check(ppid(g) == spid and os.stat(f"/proc/{g}").st_uid == user.uid,
              f"the user's clone(CLONE_PARENT) process {g} has the service as its parent")
        check(not managed(d, g) and nice(g) == 0,
              f"{events}: it does not get the service's value (nice {nice(g)}, "
              f"managed {managed(d, g)})")

        c, g = user_child(d, svc, "orphan")
        check(wait_until(lambda: ppid(g) == spid, 30),
              f"the user's process {g} is orphaned to the service")
        d.sync()
        check(rqctl(d, "reload").returncode == 0, "reload (a rescan of /proc)")
        d.sync()
        check(not managed(d, g) and nice(g) == 0,
              f"{events}: a rescan does not give the orphan the service's value "
              f"(nice {nice(g)}, managed {managed(d, g)})")
        check(nice(own) == VALUE and managed(d, own), f"{events}: the service's own child keeps it")
        os.killpg(svc.pid, signal.SIGKILL)
        svc.wait()
        check(d.stop() == 0, "clean stop")
    return True


def test():
    require()
    if not os.access("/usr/bin/python3", os.X_OK):
        skip("no /usr/bin/python3 for the service and the user's program")
    with tmpdir() as tmp, User("rqbi") as user:
        os.chmod(tmp, 0o755)
        py = private_copy(tmp, "/usr/bin/python3")
        ran = [run(tmp, user, py, ev) for ev in ("bpf", "connector")]
        if not any(ran):
            skip("neither BPF events nor the proc connector here")


main(test)
