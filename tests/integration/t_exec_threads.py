"""Threads a program makes at once after exec get its rule's class, as the program does.
A rule's value moves the process into its class cgroup after exec, off the event loop,
and on cgroup v1 every thread moves on its own; a thread made before that move has
landed is made where the process was, not moved there by anyone. The helper (C,
built here) makes THREADS threads from the first line of main(), says so and waits:
once the daemon has read every event (rqctl sync) and the process's own move has
landed (polled: the worker's end is the kernel's), every thread has the value's nice
and the class cgroup, and rqctl status has timed that one exec from the kernel's event
to the value written. The same with [latency] events = connector."""
import os
import shutil
import subprocess

import rqb
from rqb import Daemon, check, main, require, skip, tmpdir, wait_until

VALUE = 5
THREADS = 40
COMM = "rqbthreads"

HELPER = r"""
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *idle(void *arg)
{
	pause();
	return arg;
}

int main(void)
{
	pthread_t t;
	char c;

	for (int i = 0; i < %d; i++)
		if (pthread_create(&t, NULL, idle, NULL) != 0)
			return 1;
	printf("ready\n");
	fflush(stdout);
	return read(0, &c, 1) < 0;
}
""" % THREADS


def build(tmp):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        skip("no C compiler")
    src, exe = os.path.join(tmp, "threads.c"), os.path.join(tmp, COMM)
    with open(src, "w") as f:
        f.write(HELPER)
    subprocess.run([cc, "-O2", "-pthread", "-o", exe, src], check=True)
    return exe


def tasks(pid):
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def nice(tid):
    return int(rqb.stat_fields(tid)[16])


def run(tmp, exe, events):
    conf = (f"[latency]\nevents = {events}\n"
            f"[rule threads]\nlatency_nice = {VALUE}\ncomm = {COMM}\nspoofable = yes\n")
    with Daemon(tmp, conf=conf) as d:
        d.wait_for("ctl: serving")
        p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            check(p.stdout.readline().strip() == "ready", f"{events}: the helper made its threads")
            d.sync()
            home = rqb.cpu_cgroup(os.getpid())
            check(wait_until(lambda: rqb.cpu_cgroup(p.pid) != home, 30),
                  f"{events}: the process moved into its class ({rqb.cpu_cgroup(p.pid)})")
            cls = rqb.cpu_cgroup(p.pid)
            ts = tasks(p.pid)
            wrong_cg = [t for t in ts if rqb.cpu_cgroup(t) != cls]
            wrong_nice = [t for t in ts if nice(t) != VALUE]
            check(len(ts) == THREADS + 1 and not wrong_cg and not wrong_nice,
                  f"{events}: all {len(ts)} threads have nice {VALUE} and the class: "
                  f"{len(wrong_cg)} in another cgroup, {len(wrong_nice)} with another nice")
            timed = next((line.split() for line in rqb.rqctl(d, "status").stdout.splitlines()
                          if line.startswith("latency_exec_us ")), [])
            check(len(timed) == 9 and timed[2] == "1" and 0 < int(timed[4]) <= int(timed[8]),
                  f"{events}: rqctl status timed that exec, event to value: {' '.join(timed)}")
            p.stdin.close()
            p.wait(30)
            check(d.stop() == 0, f"{events}: clean stop")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


def test():
    require()
    if rqb.cpu_cgroup(os.getpid()) is None:
        skip("no v1 cpu hierarchy: on cgroup2 a process's threads move with it")
    with tmpdir() as tmp:
        exe = build(tmp)
        run(tmp, exe, "auto")
        run(tmp, exe, "connector")


if __name__ == "__main__":
    main(test)
