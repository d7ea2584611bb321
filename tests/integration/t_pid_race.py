"""The third review's finding 2 and its kind, "checked on one handle, acted on through a
number": every write that names a task by number is verified after the write and
undone where the task was not the one checked.

A real unprivileged user (the attacker) asks for a value on a process of its own; a
second real user runs a fork-per-connection server in a cgroup root put it in. The
test holds the daemon (ptrace) at the entry of the write that names the attacker's
process by number, after every check the daemon makes, and there kills and reaps that
process, and a worker of the second user's, made as its server makes one, takes its
pid (clone3's set_tid): the race the review won once in 190 tries, made every time.
The kernel then writes the worker. For each such write (sched_setattr of the value,
the move into a class through the tasks file, sched_setaffinity of a spread pin) the
worker must end with what its server gave it: its cgroup, nice, policy and affinity.
The daemon says so in its log.

Then the review's untried case: the daemon SIGKILLed at that moment, the pid reused,
and a restart, whose restore must not write the worker either."""
import os
import shutil
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

# A stand-in for the server's fork: joins the cgroup whose tasks file is TASKS, takes
# NICE, and makes PROG's process at PID (clone3's set_tid, which takes CAP_SYS_ADMIN)
# as UID:GID with RLIMIT_NICE 0, so that it is made where and as the server makes its
# workers; prints PID once PROG is exec'd and stays, as its creator, until stdin ends.
PIDAT = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int join(const char *tasks)
{
	int fd = open(tasks, O_WRONLY);

	if (fd < 0 || dprintf(fd, "%d", (int)getpid()) < 0)
		return -1;
	return close(fd);
}

int main(int argc, char **argv)
{
	pid_t want;
	struct clone_args a;
	struct rlimit rl = { 0, 0 };
	int p[2], fd;
	long r;
	char c;

	if (argc < 7)
		return 2;
	want = (pid_t)atoi(argv[1]);
	memset(&a, 0, sizeof(a));
	a.exit_signal = SIGCHLD;
	a.set_tid = (uintptr_t)&want;
	a.set_tid_size = 1;
	if (join(argv[5]) < 0 || setpriority(PRIO_PROCESS, 0, atoi(argv[4])) < 0 ||
	    pipe2(p, O_CLOEXEC) < 0) {
		perror("pidat");
		return 1;
	}
	r = syscall(SYS_clone3, &a, sizeof(a));
	if (r < 0) {
		perror("pidat: clone3");
		return 1;
	}
	if (r == 0) {
		close(p[0]);
		fd = open("/dev/null", O_RDWR); /* not the pipes the test reads */
		if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
		    setrlimit(RLIMIT_NICE, &rl) < 0 || setgroups(0, NULL) < 0 ||
		    setgid((gid_t)atoi(argv[3])) < 0 || setuid((uid_t)atoi(argv[2])) < 0) {
			perror("pidat: worker");
			_exit(126);
		}
		dup2(fd, 2);
		execv(argv[6], argv + 6);
		_exit(127);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 0) /* end of file: it exec'd */
		return 1;
	printf("%ld\n", r);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
"""


def build_pidat(tmp):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        skip("no C compiler")
    src, exe = os.path.join(tmp, "pidat.c"), os.path.join(tmp, "pidat")
    with open(src, "w") as f:
        f.write(PIDAT)
    subprocess.run([cc, "-O2", "-o", exe, src], check=True)
    return exe


# The victim's server: its uid, cgroup, nice and limits are what its workers are made
# with (Server.fork_as); it prints its pid.
SERVER = ("import os, sys\n"
          "print(os.getpid(), flush=True)\n"
          "sys.stdin.read()\n")


class Server:
    """The victim user's fork-per-connection server, in a cgroup root put it in."""

    def __init__(self, user, tmp):
        self.group = f"/{CGROUP_ROOT}-victim"
        os.makedirs(CPU_V1 + self.group, exist_ok=True)
        self.p = user.popen(["/usr/bin/python3", "-c", SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline())
        with open(f"{CPU_V1}{self.group}/tasks", "w") as f:
            f.write(str(self.pid))
        self.workers = []
        self.makers = []
        self.user = user
        self.pidat = build_pidat(tmp)

    def fork_as(self, pid):
        """A worker of the victim's at pid, which must be free, made as the server makes
        one (the victim's uid, the server's cgroup, nice and limits) by PIDAT, which
        asks the kernel for that pid (clone3's set_tid) and answers once the worker has
        exec'd, so that it is whole before the daemon goes on. Handed out through
        ns_last_pid instead, the pid went to other forks 200 times in a row on a
        machine busy forking."""
        nice = os.getpriority(os.PRIO_PROCESS, self.pid)
        p = subprocess.Popen([self.pidat, str(pid), str(self.user.uid), str(self.user.gid),
                              str(nice), f"{CPU_V1}{self.group}/tasks", "/bin/sleep", "600"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.makers.append(p)
        line = p.stdout.readline().strip()
        if line != str(pid):
            raise AssertionError(f"no worker at pid {pid} (pidat said {line!r}, "
                                 f"exit {p.poll()})")
        self.workers.append(pid)
        return pid

    def remove(self):
        wait_until(lambda: not open(f"{CPU_V1}{self.group}/tasks").read().strip(), 30)
        os.rmdir(CPU_V1 + self.group)


def state(pid):
    return {"cgroup": cpu_cgroup(pid), "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "policy": sched(pid, "policy"), "cpus": allowed(pid)}


def reuse(pid, server):
    """What the holder runs at the write: the attacker's process dies and is reaped (by
    runuser, its parent), and a worker of the victim's takes its pid."""
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
    with tmpdir() as tmp, User("rqbra") as attacker, User("rqbrv") as victim_user:
        prog = user_rqctl(tmp)
        sleep = private_copy(tmp, "sleep")
        server = Server(victim_user, tmp)
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
            for p in server.makers:
                p.kill()
                p.wait()
            server.remove()


main(test)
