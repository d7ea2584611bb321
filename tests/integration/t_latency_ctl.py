"""The latency requests on the ctl socket: each malformed or impossible one (no target,
two, no value or a bad one, tasks and cgroups that do not exist or may not be named,
the daemon itself, a kernel thread, a request over the size limit) gets an error and
changes nothing, while the daemon keeps serving. Then round trips through rqctl: set,
get, list (text and JSON) and reset of a process; a lone thread; and rqctl run, whose
command's threads and children, started after it, are all given the value."""
import json
import os
import select
import signal
import subprocess

from rqb import (CTL_HDR, RQCTL, TOPO_2LLC, Daemon, check, ctl_raw, fields, main, private_copy,
                 require, skip, tmpdir, write_replay)

MAGIC, VERSION = 0x43425152, 1
STATUS, SET, GET, LIST, RESET, OK, ERR = 1, 3, 4, 5, 6, 100, 101
HDR = CTL_HDR
EPERM, ENOENT, ESRCH, EINVAL, EMSGSIZE = 1, 2, 3, 22, 90
MAX_REQUEST = 4096

# Threads that say their tids once they run; the third starts a while after the rest,
# and then a child process.
THREADS = """
import subprocess, sys, threading, time
tids, stop = [], threading.Event()
def run():
    tids.append(threading.get_native_id())
    stop.wait()
def start():
    t = threading.Thread(target=run, daemon=True)
    t.start()
    while len(tids) < n + 1:
        time.sleep(0.01)
n = 0
for n in range({early}):
    start()
time.sleep({late_after})
for n in range({early}, {early} + {late}):
    start()
child = subprocess.Popen([{sleep!r}, "60"]) if {child} else None
sys.stdout.write(" ".join(map(str, tids)) + "\\n")
sys.stdout.write(f"child {{child.pid if child else 0}}\\n")
sys.stdout.flush()
stop.wait()
"""


def threads_script(early, late=0, late_after=0.0, child=False, sleep="sleep"):
    return THREADS.format(early=early, late=late, late_after=late_after, child=child,
                          sleep=sleep)


def rqctl(sock, *args):
    return subprocess.run([RQCTL, "-s", sock, *args], capture_output=True, text=True,
                          timeout=30)


def raw(sock, typ, payload, length=None):
    """Sends one request; returns (type, payload) of the reply, or None if the daemon
    closed the connection without one."""
    data = payload.encode()
    return ctl_raw(sock, HDR.pack(MAGIC, VERSION, typ, len(data) if length is None else length, 9)
                   + data)


def errno_of(reply):
    """The errno of an error reply, or None for anything else."""
    if not reply or reply[0] != ERR:
        return None
    lines = dict(l.split(" ", 1) for l in reply[1].splitlines() if " " in l)
    return int(lines.get("errno", "0"))



def listed(sock):
    p = rqctl(sock, "--json", "list")
    check(p.returncode == 0, "rqctl --json list answers")
    return json.loads(p.stdout)


def kernel_thread():
    """A kernel thread's pid (kthreadd where this pid namespace shows it), or None."""
    for pid in [2] + sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:  # a comm may be anything
                data = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        flags = int(data[data.rindex(b")") + 2:].split()[9 - 3])
        if flags & 0x00200000:  # PF_KTHREAD
            return pid
    return None


def refused(d, what, typ, payload, errnos, text=None, length=None):
    r = raw(d.ctl, typ, payload, length)
    e = errno_of(r)
    check(e in errnos and (text is None or text in r[1]),
          f"{what}: an error ({r[1].strip() if r else 'closed'!r})")
    check(rqctl(d.ctl, "status").returncode == 0, f"after {what} the daemon still serves")


def malformed(d, child):
    gone = int(open("/proc/sys/kernel/pid_max").read())  # pids stay below it
    cg = f"/rqbl-none-{os.getpid()}"
    refused(d, "SET with no target", SET, "value 5\n", {EINVAL})
    refused(d, "SET with two targets", SET, f"pid {child}\ntid {child}\nvalue 5\n", {EINVAL})
    refused(d, "SET with two pids", SET, f"pid {child}\npid {os.getpid()}\nvalue 5\n",
            {EINVAL})
    refused(d, "SET with no value", SET, f"pid {child}\n", {EINVAL})
    refused(d, "SET with two values", SET, f"pid {child}\nvalue 5\nvalue 6\n", {EINVAL})
    for v in ("abc", "-21", "20", "", "5x", "0x5"):
        refused(d, f"SET with value {v!r}", SET, f"pid {child}\nvalue {v}\n", {EINVAL})
    for p in ("0", "-1", "abc", "1x"):
        refused(d, f"SET of pid {p!r}", SET, f"pid {p}\nvalue 5\n", {EINVAL})
    refused(d, "SET of a pid that does not exist", SET, f"pid {gone}\nvalue 5\n", {ESRCH})
    refused(d, "SET of a tid that does not exist", SET, f"tid {gone}\nvalue 5\n", {ESRCH})
    for path in ("../../etc", "relative/path", "/../../../../etc", cg):
        refused(d, f"SET of cgroup {path!r}", SET, f"cgroup {path}\nvalue 5\n",
                {EINVAL, ENOENT, EPERM})
    refused(d, "SET of a cgroup path longer than a path may be", SET,
            "cgroup /" + "a" * 3000 + "\nvalue 5\n", {EINVAL})
    refused(d, "GET of an unmanaged pid", GET, f"pid {child}\n", {ENOENT}, "not managed")
    refused(d, "GET of an unmanaged tid", GET, f"tid {child}\n", {ENOENT}, "not managed")
    refused(d, "GET of an unmanaged cgroup", GET, "cgroup /\n", {ENOENT}, "not managed")
    refused(d, "RESET of an unmanaged pid", RESET, f"pid {child}\n", {ENOENT})
    refused(d, "RESET of an unmanaged tid", RESET, f"tid {child}\n", {ENOENT})
    r = raw(d.ctl, SET, "pid " + "1" * (MAX_REQUEST + 100) + "\nvalue 5\n")
    check(r is None or errno_of(r) == EMSGSIZE,
          f"a line longer than a request may be: EMSGSIZE or a close ({r!r})"[:200])
    check(rqctl(d.ctl, "status").returncode == 0, "and the daemon still serves")
    r = raw(d.ctl, SET, "pid 1\n", length=MAX_REQUEST + 1)
    check(r is None or errno_of(r) == EMSGSIZE,
          f"a header promising more than a request may be: EMSGSIZE or a close ({r!r})")
    check(rqctl(d.ctl, "status").returncode == 0, "and the daemon still serves")
    refused(d, "SET of the daemon itself", SET, f"pid {d.proc.pid}\nvalue 5\n", {EPERM})
    refused(d, "SET of the daemon's thread", SET, f"tid {d.proc.pid}\nvalue -5\n", {EPERM})
    kthread = kernel_thread()
    if kthread:
        refused(d, f"SET of kernel thread {kthread}", SET, f"pid {kthread}\nvalue 5\n",
                {EPERM}, "kernel thread")
        refused(d, f"SET of kernel thread {kthread} by tid", SET,
                f"tid {kthread}\nvalue 5\n", {EPERM}, "kernel thread")
    else:
        print("(no kernel thread in this pid namespace: that case was not run)")
    check(listed(d.ctl) == [], "after all of them no task or cgroup is managed")


def process_round_trip(d, child):
    task = ("-p", str(child))
    p = rqctl(d.ctl, "set", "-l", "7", *task)
    check(p.returncode == 0 and p.stdout == "tasks 1\n", f"set -l 7 -p: {p.stdout!r}")
    g = fields(rqctl(d.ctl, "get", *task).stdout)
    check(g.get("value") == "7" and g.get("source") == "ctl uid 0" and
          g.get("scope") == "process" and g.get("tasks") == "1", f"get as text: {g}")
    j = json.loads(rqctl(d.ctl, "--json", "get", *task).stdout)
    check(j["value"] == 7 and j["source"] == "ctl uid 0" and j["scope"] == "process" and
          j["tasks"] == 1, f"get as JSON: {j}")
    text = rqctl(d.ctl, "list").stdout.splitlines()
    row = [l.split() for l in text[1:] if l.split()[0] == str(child)]
    check(len(text) == 2 and len(row) == 1 and row[0][1:3] == [str(child), "7"],
          f"list as text has the child with its value: {text}")
    check([(e["tid"], e["pid"], e["value"], e["source"], e["scope"])
           for e in listed(d.ctl)] == [(child, child, 7, "ctl uid 0", "process")],
          "list as JSON has the child alone, with its value")
    p = rqctl(d.ctl, "reset", *task)
    check(p.returncode == 0 and p.stdout == "tasks 1\n", f"reset: {p.stdout!r}")
    p = rqctl(d.ctl, "get", *task)
    check(p.returncode == 1 and "not managed" in p.stderr, "then get says not managed")
    check(listed(d.ctl) == [], "and list is empty")


def start_threads(script):
    p = subprocess.Popen(["python3", "-c", script], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    tids = [int(t) for t in p.stdout.readline().split()]
    child = int(p.stdout.readline().split()[1])
    return p, tids, child


def stop(p):
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def thread_round_trip(d):
    p, (tid,), _ = start_threads(threads_script(1))
    try:
        pr = rqctl(d.ctl, "set", "-l", "7", "-p", str(tid))
        check(pr.returncode == 1, f"a thread named as a process is refused ({pr.stderr!r})")
        check(listed(d.ctl) == [], "and nothing is managed")
        pr = rqctl(d.ctl, "set", "-l", "7", "-t", str(tid))
        check(pr.returncode == 0 and pr.stdout == "tasks 1\n", f"set -l 7 -t: {pr.stdout!r}")
        check([(e["tid"], e["pid"], e["value"], e["scope"]) for e in listed(d.ctl)] ==
              [(tid, p.pid, 7, "thread")], "list has that thread alone, not its process")
        g = json.loads(rqctl(d.ctl, "--json", "get", "-t", str(tid)).stdout)
        check(g["value"] == 7 and g["scope"] == "thread", f"get -t says so: {g}")
        check(rqctl(d.ctl, "get", "-p", str(p.pid)).returncode == 1,
              "its process is not managed")
        check(rqctl(d.ctl, "reset", "-t", str(tid)).returncode == 0, "reset -t")
        check(listed(d.ctl) == [], "then list is empty")
    finally:
        stop(p)


def exited(pid):
    """A pidfd of pid, to wait for its exit (whoever reaps it)."""
    return os.pidfd_open(pid)


def wait_exit(pidfd, what):
    """Waits for the exit behind a pidfd: the proc connector's exit event is queued
    before the pidfd says so. The bound only keeps a stuck test from hanging."""
    ready, _, _ = select.select([pidfd], [], [], 60)
    os.close(pidfd)
    check(bool(ready), f"{what} has exited")


def run_round_trip(d, sleep):
    script = threads_script(2, late=1, late_after=0.3, child=True, sleep=sleep)
    p = subprocess.Popen([RQCTL, "-s", d.ctl, "run", "-l", "-3", "--", "python3", "-c", script],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    child_fd = None
    try:
        tids = [int(t) for t in p.stdout.readline().split()]
        child = int(p.stdout.readline().split()[1])
        want = {p.pid, *tids, child}
        check(len(want) == 5, f"the command runs: process {p.pid}, threads {tids}, child {child}")
        child_fd = exited(child)
        # Each thread and the child are given the value when the daemon reads their
        # fork events: wait for that, then look.
        d.sync()
        got = {e["tid"]: e for e in listed(d.ctl)}
        check(all(t in got and got[t]["value"] == -3 and got[t]["source"] == "ctl uid 0"
                  for t in want), f"every thread and the child have -3 from ctl uid 0: {got}")
        check(got[child]["pid"] == child and all(got[t]["pid"] == p.pid for t in tids),
              "each under its own process")
    finally:
        stop(p)
    if child_fd is not None:
        wait_exit(child_fd, f"the child {child}")
    # Every exit event is queued now (the process was reaped, the child has exited).
    d.sync()
    check(listed(d.ctl) == [], "once they exit, none is listed")


def test():
    require()
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    with tmpdir() as tmp:
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        # A sleep of the test's own: no other run's rule names it.
        sleep = private_copy(tmp, "sleep")
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle]) as d, \
                subprocess.Popen([sleep, "60"]) as sleeper:
            d.wait_for(r"running: sampler")
            try:
                malformed(d, sleeper.pid)
                process_round_trip(d, sleeper.pid)
                thread_round_trip(d)
                run_round_trip(d, sleep)
            finally:
                sleeper.kill()
            check(d.stop() == 0, "clean stop")


main(test)
