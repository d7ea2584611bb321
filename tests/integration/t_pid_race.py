"""The third review's finding 2 and its kind, "checked on one handle, acted on through a
number": every write that names a task by number is verified after the write and
undone where the task was not the one checked.

A real unprivileged user (the attacker) asks for a value on a process of its own; a
second real user runs a fork-per-connection server in a cgroup root put it in. The
test holds the daemon (ptrace) at the entry of the write that names the attacker's
process by number, after every check the daemon makes, and there kills and reaps that
process and has the server fork a worker that takes its pid (ns_last_pid): the race
the review won once in 190 tries, made every time. The kernel then writes the worker.
For each such write (sched_setattr of the value, the move into a class through the
tasks file, sched_setaffinity of a spread pin) the worker must end with what its
server gave it: its cgroup, nice, policy and affinity. The daemon says so in its log.

Then the review's untried case: the daemon SIGKILLed at that moment, the pid reused,
and a restart, whose restore must not write the worker either."""
import os
import signal
import subprocess
import sys

import ptrace_hold
from rqb import (CGROUP_ROOT, TOPO_2LLC, Daemon, allowed, check, cpu_cgroup, main,
                 private_copy, require, skip, task_line, tmpdir, user_rqctl, wait_until,
                 write_replay)
from rqb import sched_field as sched
from rqb_user import User

CPU_V1 = "/sys/fs/cgroup/cpu"
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"

# The victim: forks a sleeping worker per line read and prints its pid.
SERVER = ("import os, signal, sys, time\n"
          "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
          "print(os.getpid(), flush=True)\n"
          "for line in sys.stdin:\n"
          "    pid = os.fork()\n"
          "    if pid == 0:\n"
          "        time.sleep(600)\n"
          "        os._exit(0)\n"
          "    print(pid, flush=True)\n")


class Server:
    """The victim user's fork-per-connection server, in a cgroup root put it in."""

    def __init__(self, user):
        self.group = f"/{CGROUP_ROOT}-victim"
        os.makedirs(CPU_V1 + self.group, exist_ok=True)
        self.p = user.popen(["/usr/bin/python3", "-c", SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline())
        with open(f"{CPU_V1}{self.group}/tasks", "w") as f:
            f.write(str(self.pid))
        self.workers = []

    def fork_as(self, pid):
        """A worker that takes pid, which must be free: the next pid the kernel hands
        out is set (ns_last_pid) just before the server forks. A fork elsewhere on the
        machine in between takes it first: the worker is then dropped and made again."""
        for _ in range(50):
            with open(NS_LAST_PID, "w") as f:
                f.write(str(pid - 1))
            self.p.stdin.write("fork\n")
            self.p.stdin.flush()
            w = int(self.p.stdout.readline())
            if w == pid:
                self.workers.append(w)
                return w
            os.kill(w, signal.SIGKILL)
        raise AssertionError(f"no worker took pid {pid} in 50 forks")

    def remove(self):
        wait_until(lambda: not open(f"{CPU_V1}{self.group}/tasks").read().strip(), 30)
        os.rmdir(CPU_V1 + self.group)


def state(pid):
    return {"cgroup": cpu_cgroup(pid), "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "policy": sched(pid, "policy"), "cpus": allowed(pid)}


def reuse(pid, server):
    """What the holder runs at the write: the attacker's process dies and is reaped (by
    runuser, its parent), and the server's next worker takes its pid."""
    os.kill(pid, signal.SIGKILL)
    check(wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 10),
          f"the attacker's process {pid} is reaped")
    server.fork_as(pid)


def held_write(d, pid, server, match):
    h = ptrace_hold.Holder(d.proc.pid, match, lambda: reuse(pid, server))
    h.start()
    h.ready.wait(30)
    return h


def match_sched(pid):
    return lambda tid, nr, a: nr == ptrace_hold.NR_SCHED_SETATTR and a[0] == pid


def match_affinity(pid):
    return lambda tid, nr, a: nr == ptrace_hold.NR_SCHED_SETAFFINITY and a[0] == pid


def match_move(daemon_pid, pid):
    def m(tid, nr, a):
        if nr != ptrace_hold.NR_WRITE or "/rqbalance-lat" not in ptrace_hold.fd_path(
                daemon_pid, a[0]):
            return False
        path = ptrace_hold.fd_path(daemon_pid, a[0])
        return path.endswith(("/tasks", "/cgroup.procs")) and \
            ptrace_hold.read_mem(tid, a[1], a[2]).strip() == str(pid).encode()
    return m


def attacker_proc(attacker, sleep):
    """A process of the attacker's: its pid."""
    pid = attacker.start(f"echo $$ && exec {sleep} 600")
    check(wait_until(lambda: os.readlink(f"/proc/{pid}/exe") == sleep, 10),
          f"the attacker's process {pid} runs")
    return pid


def latency_case(tmp, attacker, server, prog, sleep, what, crash=False):
    """The attacker asks 19 for its process; the write `what` lands after the reuse."""
    pid = attacker_proc(attacker, sleep)
    journal = os.path.join(tmp, f"j-{what}-{crash}")
    with Daemon(tmp, journal=journal) as d:
        d.wait_for("ctl: serving")
        match = match_sched(pid) if what == "sched" else match_move(d.proc.pid, pid)
        action = (lambda: (os.kill(d.proc.pid, signal.SIGKILL), reuse(pid, server))) \
            if crash else (lambda: reuse(pid, server))
        h = ptrace_hold.Holder(d.proc.pid, match, action)
        h.start()
        h.ready.wait(30)
        before = state(server.pid)
        r = subprocess.run(["runuser", "-u", attacker.name, "--", prog, "-s", d.ctl, "set",
                            "-l", "19", "-p", str(pid)], capture_output=True, text=True,
                           timeout=120)
        h.fired.wait(60)
        if h.error:
            raise h.error
        h.stop()
        if h.error:
            raise h.error
        check(h.fired.is_set(), f"{what}: the daemon was held at its write to {pid}")
        worker = pid
        if crash:
            d.proc.wait()
        else:
            check(r.returncode != 0, f"{what}: the attacker is told its process is gone "
                  f"({r.stderr.strip()!r})")
            check(wait_until(lambda: "took its number" in d.text(), 10),
                  f"{what}: the daemon logs the task that took the number")
            check(state(worker) == before,
                  f"{what}: the worker has what its server gave it: {state(worker)} "
                  f"(server: {before})")
            check(d.stop() == 0, f"{what}: clean stop")
    if crash:
        with Daemon(tmp, journal=journal) as d:
            d.wait_for("ctl: serving")
            check(d.stop() == 0, "the restart after SIGKILL stops cleanly")
            check("a previous run left 1 tasks" in d.text(),
                  "the restart read the killed run's record of the attacker's process")
    check(state(worker) == state(server.pid),
          f"{what}{' after the crash and restart' if crash else ' after the stop'}: the "
          f"worker still has its server's state: {state(worker)}")


def affinity_case(tmp, server, attacker, sleep):
    """A spread pin of the attacker's process (the replay sampler overloads CPU 0 with it
    and one of the test's own, which is excluded), written after the reuse."""
    pid = attacker_proc(attacker, sleep)
    keep = subprocess.Popen([sleep, "600"])
    try:
        replay = os.path.join(tmp, "race.replay")
        over = ([(0, 2, 100), (1, 0, 0)], [task_line(keep.pid, 0, comm="keep"),
                                           task_line(pid, 0)])
        write_replay(replay, [over] * 4)
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay],
                    conf="[exclude]\ncomms = keep\n") as d:
            h = held_write(d, pid, server, match_affinity(pid))
            before = state(server.pid)
            h.fired.wait(120)
            if h.error:
                raise h.error
            # Not d.wait_for: the daemon is the test's child, and a waitpid from any
            # thread of the test (Popen.poll) would take the ptrace stops that are the
            # holder's, leaving the daemon stopped for good.
            check(wait_until(lambda: f"pin tid={pid} " in d.text(), 60),
                  "affinity: the daemon logs its pin")
            h.stop()
            if h.error:
                raise h.error
            check(h.fired.is_set(), f"affinity: the daemon was held at its pin of {pid}")
            check(wait_until(lambda: "took its number" in d.text(), 10),
                  "affinity: the daemon logs the task that took the number")
            check(state(pid) == before, f"affinity: the worker has its server's cpus: "
                  f"{state(pid)} (server: {before})")
            check(d.stop() == 0, "affinity: clean stop")
        check(allowed(pid) == allowed(server.pid), "and still after the stop")
    finally:
        keep.kill()
        keep.wait()


def test():
    require()
    if not ptrace_hold.supported():
        skip("the ptrace holder reads x86_64's syscall numbers")
    if not os.path.exists(os.path.join(CPU_V1, "cpu.shares")):
        skip(f"needs the v1 cpu controller at {CPU_V1} (this machine's layout)")
    if not os.access(NS_LAST_PID, os.W_OK):
        skip(f"{NS_LAST_PID} is not writable: no way to hand a pid to a new task")
    with tmpdir() as tmp, User("rqbra") as attacker, User("rqbrv") as victim_user:
        prog = user_rqctl(tmp)
        sleep = private_copy(tmp, "sleep")
        server = Server(victim_user)
        try:
            latency_case(tmp, attacker, server, prog, sleep, "sched")
            latency_case(tmp, attacker, server, prog, sleep, "move")
            affinity_case(tmp, server, attacker, sleep)
            latency_case(tmp, attacker, server, prog, sleep, "move", crash=True)
        finally:
            for u in (attacker, victim_user):
                for p in u.procs:
                    if p.poll() is None:
                        os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                u.procs.clear()
            for w in server.workers:
                try:
                    os.kill(w, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            server.remove()


main(test)
