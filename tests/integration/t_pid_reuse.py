"""A pid recycled to another process between decision and action is left untouched.

Pids are reused on purpose: after the first owner of pid P is reaped, the test writes
P - 1 to /proc/sys/kernel/ns_last_pid and starts the next process, which gets P
(retried when another fork on the machine takes it first).

- affinity: the replay sampler names P with the first owner's start time as the task to
  move; by the time the daemon acts, P is a new process. The pin must not happen
  ("task is gone") and the new owner keeps its affinity.
- latency: a managed process forks a child (and starts a thread) that exits, while the
  daemon is stopped (SIGSTOP, as a descheduled daemon would be); the pid is then given
  to an unrelated process. When the daemon reads the late fork event it must not give
  the parent's value to the pid's new owner, and the late exit event must not make it
  forget a task it manages."""
import os
import signal
import subprocess
import sys
import time

from rqb import (CGROUP_ROOT, RQCTL, TOPO_2LLC, Daemon, Hogs, allowed, check, main, require,
                 start_time, task_line, tmpdir, write_replay)

CPU_V1 = "/sys/fs/cgroup/cpu"
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"

# Forks a child that exits at once, or starts a thread that ends, on each line read;
# prints the child's pid (or the thread's tid) when it is reaped (or joined).
FORKER = """
import os, sys, threading
for line in sys.stdin:
    if line.startswith("fork"):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        print(pid, flush=True)
    elif line.startswith("thread"):
        tid = []
        t = threading.Thread(target=lambda: tid.append(threading.get_native_id()))
        t.start()
        t.join()
        print(tid[0], flush=True)
"""

# Blocks until killed; a process of its own name, which no test's rule names.
IDLER = [sys.executable, "-c", "import time; time.sleep(600)"]


def ticks_now():
    """The clock start times count in (/proc/PID/stat field 22): boot time, in clock
    ticks."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def wait_tick(t):
    """Waits until the start-time clock reads t or more: a task started then has a
    start time of t or more. A wait for the clock, not for the daemon."""
    while ticks_now() < t:
        time.sleep(0.002)


def reuse(pid, argv):
    """Starts argv as pid `pid` (a dead pid). Returns the Popen, or None after many tries."""
    for _ in range(200):
        with open(NS_LAST_PID, "w") as f:
            f.write(str(pid - 1))
        p = subprocess.Popen(argv)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


def sched_state(tid):
    with open(f"/proc/{tid}/sched") as f:
        vals = {line.split(":")[0].strip(): line.split(":")[1].strip() for line in f
                if ":" in line}
    with open(f"/proc/{tid}/cgroup") as f:
        cg = [line.rstrip("\n").split(":", 2)[2] for line in f
              if "cpu" in line.split(":")[1].split(",")]
    return vals.get("policy"), vals.get("se.slice", "").split(".")[0], cg[0] if cg else None


def affinity(tmp):
    with Hogs(1) as h:
        a = subprocess.Popen(IDLER)
        p, start = a.pid, start_time(a.pid)
        a.kill()
        a.wait()
        if p < h.pids[0]:
            print(f"pid {p} wrapped below the hog's {h.pids[0]}: cannot order them")
            sys.exit(77)
        wait_tick(start + 1)  # another start time: pid and start time name a task
        b = reuse(p, ["sh", "-c", "while :; do :; done"])
        if not b:
            print(f"could not get pid {p} back in 200 tries")
            sys.exit(77)
        try:
            before = allowed(b.pid)
            check(start_time(b.pid) != start, f"pid {p} now names another process")
            replay = os.path.join(tmp, "stale.replay")
            stale = f"task {p} {p} 0 {start} 0 0-1 sh /"
            write_replay(replay, [([(0, 2, 100), (1, 0, 0)], [task_line(h.pids[0], 0), stale])])
            with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay]) as d:
                d.wait_for(rf"pin tid={p} .*task is gone")
                # The snapshot stays, and so does the plan: two more ticks act on it.
                d.sync(2)
                check(allowed(b.pid) == before,
                      f"the pin planned for the first owner of {p} never reached the second")
                check(d.stop() == 0, "clean stop")
            check(allowed(b.pid) == before, "and after the stop it still has its own affinity")
        finally:
            b.kill()
            b.wait()


def latency(tmp, kind):
    forker = subprocess.Popen([sys.executable, "-c", FORKER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    other = None
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", "-5", "-p", str(forker.pid)],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"the forker {forker.pid} is given -5")
            ref = subprocess.Popen(IDLER)
            dflt = sched_state(ref.pid)
            ref.kill()
            ref.wait()
            d.proc.send_signal(signal.SIGSTOP)
            try:
                forker.stdin.write(f"{kind}\n")
                forker.stdin.flush()
                gone = int(forker.stdout.readline())
                # A pid and a start time (in clock ticks) name a task: the daemon takes a
                # task whose start is within a tick of the event's time for the one the
                # event is about, so a pid reused that soon is beyond anyone (real reuse
                # takes ~32,000 forks). The event came before the reply: the new owner
                # starts two ticks after it at least, and a third covers the rounding
                # between the event's clock and the start times'.
                wait_tick(ticks_now() + 3)
                other = reuse(gone, IDLER)
                if not other:
                    print(f"could not get pid {gone} back in 200 tries")
                    sys.exit(77)
            finally:
                d.proc.send_signal(signal.SIGCONT)
            # The fork, exit and exec events were all queued before the sync.
            d.sync()
            check(d.alive(), "the daemon runs on")
            got = sched_state(other.pid)
            check(got == dflt, f"the new owner of {kind} {gone}'s pid is untouched ({got}, "
                  f"default {dflt})")
            listed = subprocess.run([RQCTL, "-s", d.ctl, "list"], capture_output=True,
                                    text=True).stdout
            check(f"\n{other.pid} " not in "\n" + listed, "and not listed as managed")
            d.stop()
    finally:
        if other:
            other.kill()
            other.wait()
        forker.kill()
        forker.wait()


def test():
    require()
    if not os.access(NS_LAST_PID, os.W_OK):
        print(f"needs a writable {NS_LAST_PID} (CAP_SYS_ADMIN in the initial pid namespace)")
        sys.exit(77)
    with tmpdir() as tmp:
        affinity(tmp)
        if not os.path.exists(f"{CPU_V1}/cpu.shares"):
            print("latency part skipped: needs the v1 cpu controller at /sys/fs/cgroup/cpu")
            return
        latency(tmp, "fork")
        latency(tmp, "thread")


main(test)
