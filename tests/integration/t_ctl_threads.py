"""A process target is judged on every thread, as the kernel judges each thread
(issue #14, finding 7): a process of root's whose main thread took a user's uid
(setresuid(2) as a raw system call changes only the calling thread) while another
thread stayed root is not that user's to set. `rqctl set -l 19 -p PID` by the user is
refused and the root thread keeps its policy; root may still set it, and the user may
set its own thread alone (`-t`)."""
import os
import subprocess
import sys

from rqb import Daemon, check, main, require, tmpdir, user_rqctl
from rqb_user import User

# Runs as root; prints the main thread's tid and the root thread's, then waits on stdin.
SPLIT = r"""
import ctypes, os, sys, threading
uid = int(sys.argv[1])
ready = threading.Event()
def stay_root():
    print(threading.get_native_id(), flush=True)
    ready.set()
    sys.stdin.read()
t = threading.Thread(target=stay_root, daemon=True)
t.start()
ready.wait()
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(117, uid, uid, uid) != 0:  # SYS_setresuid on x86_64: this thread only
    sys.exit("setresuid: %s" % os.strerror(ctypes.get_errno()))
print(os.getpid(), flush=True)
t.join()
"""


def test():
    require()
    if os.uname().machine != "x86_64":
        from rqb import skip
        skip("the raw setresuid number is x86_64's")
    with tmpdir() as tmp, User("rqbt") as user:
        prog = user_rqctl(tmp)
        split = subprocess.Popen([sys.executable, "-c", SPLIT, str(user.uid)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            root_tid = int(split.stdout.readline())
            pid = int(split.stdout.readline())
            with open(f"/proc/{pid}/task/{root_tid}/status") as f:
                uids = next(l for l in f if l.startswith("Uid:")).split()[1:3]
            with open(f"/proc/{pid}/status") as f:
                main_uids = next(l for l in f if l.startswith("Uid:")).split()[1:3]
            check(uids == ["0", "0"] and main_uids == [str(user.uid)] * 2,
                  f"the main thread is the user's ({main_uids}), the other root's ({uids})")
            with Daemon(tmp) as d:
                d.wait_for(r"running: sampler")

                def as_user(*args):
                    return subprocess.run(["runuser", "-u", user.name, "--", prog, "-s",
                                           d.ctl, *args], capture_output=True, text=True,
                                          timeout=30)
                r = as_user("set", "-l", "19", "-p", str(pid))
                check(r.returncode == 1 and "permission denied" in r.stderr,
                      f"the user may not set the process ({r.stderr.strip()!r})")
                d.sync()
                check(os.sched_getscheduler(root_tid) == os.SCHED_OTHER,
                      "the root thread keeps its policy")
                r = as_user("set", "-l", "19", "-t", str(pid))
                check(r.returncode == 0, f"the user may set its own thread ({r.stderr.strip()!r})")
                d.sync()
                check(os.sched_getscheduler(pid) == os.SCHED_BATCH
                      and os.sched_getscheduler(root_tid) == os.SCHED_OTHER,
                      "its own thread is SCHED_BATCH, the root thread is not")
                r = subprocess.run([prog, "-s", d.ctl, "set", "-l", "19", "-p", str(pid)],
                                   capture_output=True, text=True, timeout=30)
                check(r.returncode == 0, f"root may set the process ({r.stderr.strip()!r})")
                d.sync()
                check(os.sched_getscheduler(root_tid) == os.SCHED_BATCH,
                      "then the root thread is SCHED_BATCH too")
                check(d.stop() == 0, "clean stop")
            check(os.sched_getscheduler(root_tid) == os.SCHED_OTHER
                  and os.sched_getscheduler(pid) == os.SCHED_OTHER, "the stop gives both back")
        finally:
            split.kill()
            split.wait()


main(test)
