"""Where fork, exec and exit events come from, on the real kernel, for the test's own
processes: with BPF (the default where it loads), a managed process's child gets its
value at fork, an exe rule applies at exec, and an exit takes the task out of
`rqctl list`; the same with [latency] events = connector. Without CAP_SYS_PTRACE
(root with every other capability, under setpriv), an exe rule matches another
user's process from the device and inode BPF reports, and does not through the
connector, which must read /proc/PID/exe; through BPF it still does once the rule's
file was replaced by a new one (a new inode) while the daemon ran. Without CAP_BPF, CAP_PERFMON and
CAP_SYS_ADMIN the BPF programs are refused: one log line says why, and the connector
takes over; with events = bpf the daemon then refuses to start, saying why. Every
wait is for an event (rqctl sync), never a time."""
import contextlib
import os
import shutil
import subprocess
import sys
import time

import rqb
from rqb import RQCTL, Daemon, check, main, private_copy, require, rqctl, tmpdir, wait_until

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
VALUE = 15

# Once rqctl run has exec'd it (with the value set before), forks a child that sleeps,
# says the child's pid, and sleeps.
PARENT = """
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(60)
    os._exit(0)
print(pid, flush=True)
time.sleep(60)
"""


def policy(pid):
    return rqb.sched_field(pid, "policy")


def zombie(pid):
    try:
        return rqb.stat_fields(pid)[0] in ("Z", "X")
    except OSError:
        return True


def exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def wrapper(tmp, drop):
    """An executable that starts rqbalanced as root without the capabilities in drop."""
    path = os.path.join(tmp, f"rqbalanced-{'-'.join(drop) or 'all'}-{time.monotonic_ns()}")
    bset = ",".join(f"-{c}" for c in drop)
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec setpriv --bounding-set={bset} --inh-caps=-all "
                f"{os.path.join(rqb.ROOT, rqb.BUILD, 'rqbalanced')} \"$@\"\n")
    os.chmod(path, 0o755)
    return path


@contextlib.contextmanager
def daemon_without(tmp, drop):
    """Inside it, rqb.Daemon starts rqbalanced as root without the capabilities in drop."""
    real = rqb.DAEMON
    rqb.DAEMON = wrapper(tmp, drop)
    try:
        yield
    finally:
        rqb.DAEMON = real


def reap(procs):
    for p in procs:
        p.kill()
        p.wait()


def status(d):
    out = rqctl(d, "status").stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def listed(d):
    return {int(line.split()[0]) for line in rqctl(d, "list").stdout.splitlines()
            if line.split() and line.split()[0].isdigit()}


def start_sleeper(sleep, as_nobody):
    p = subprocess.Popen((NOBODY if as_nobody else []) + [sleep, "60"])
    # setpriv's exec of the sleeper is the test's own child's doing, read in /proc.
    check(wait_until(lambda: exe(p.pid) == sleep, 30), f"sleeper {p.pid} runs {sleep}")
    return p


def conf_for(sleep, events, uid="nobody"):
    return (f"[latency]\nclass_cgroups = no\nevents = {events}\n"
            f"[rule sleeper]\nlatency_nice = {VALUE}\nexe = {sleep}\nuid = {uid}\n")


def follow(tmp, sleep, events, expect):
    """fork, exec and exit with events = events: the source is expect."""
    procs = []
    with Daemon(tmp, conf=conf_for(sleep, events, uid="0")) as d:
        d.wait_for("ctl: serving")
        try:
            check(status(d).get("latency_events") == expect,
                  f"events = {events}: they come from {expect}")
            # exec: a rule on the test's own copy of sleep.
            s = start_sleeper(sleep, False)
            procs.append(s)
            d.sync()
            check(policy(s.pid) == 3, f"{expect}: the exe rule applied at exec (SCHED_BATCH)")
            # fork: a child started after rqctl run exec'd its parent.
            p = subprocess.Popen([RQCTL, "-s", d.ctl, "run", "-l", str(VALUE), "--",
                                  sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
            procs.append(p)
            child = int(p.stdout.readline())
            d.sync()
            check(policy(child) == 3 and child in listed(d),
                  f"{expect}: the managed process's child {child} got its value at fork")
            # exit: the killed child stays a zombie (its parent sleeps on): its exit
            # event comes before it is one. The sleeper is reaped by us.
            os.kill(child, 9)
            check(wait_until(lambda: zombie(child), 30), f"the child {child} has exited")
            s.kill()
            s.wait()
            d.sync()
            left = listed(d)
            check(child not in left and s.pid not in left,
                  f"{expect}: their exits took them out of rqctl list")
            check(d.stop() == 0, "clean stop")
        finally:
            reap(procs)


def other_user(tmp, sleep, events):
    """Without CAP_SYS_PTRACE: whether the rule matches another user's sleeper, one that
    ran before the start and one exec'd after."""
    procs = [start_sleeper(sleep, True)]
    try:
        with daemon_without(tmp, ["sys_ptrace"]), Daemon(tmp, conf=conf_for(sleep, events)) as d:
            d.wait_for("ctl: serving")
            procs.append(start_sleeper(sleep, True))
            d.sync()
            got = [policy(p.pid) == 3 for p in procs]
            src = status(d).get("latency_events")
            check(d.stop() == 0, "clean stop")
    finally:
        reap(procs)
    print(f"events = {events} ({src}), no CAP_SYS_PTRACE: before start {got[0]}, "
          f"exec'd after {got[1]}")
    return src, got


def replaced(tmp, sleep):
    """Without CAP_SYS_PTRACE, a rule's file replaced while the daemon runs (a new inode
    at the same path, as an upgrade leaves it): another user's process exec'd after that
    still matches, as the daemon watched the folder and looked the file up again."""
    procs = []
    try:
        with daemon_without(tmp, ["sys_ptrace"]), Daemon(tmp, conf=conf_for(sleep, "auto")) as d:
            d.wait_for("ctl: serving")
            before = os.stat(sleep).st_ino
            new = sleep + ".new"
            shutil.copy2(sleep, new)
            os.rename(new, sleep)
            check(os.stat(sleep).st_ino != before, "the rule's file has a new inode")
            d.sync()
            procs.append(start_sleeper(sleep, True))
            d.sync()
            check(policy(procs[0].pid) == 3,
                  "without CAP_SYS_PTRACE, another user's process of the replaced file "
                  "matches the exe rule at once")
            check(d.stop() == 0, "clean stop")
    finally:
        reap(procs)


def refused(tmp, sleep):
    with daemon_without(tmp, ["bpf", "perfmon", "sys_admin"]):
        with Daemon(tmp, conf=conf_for(sleep, "auto", uid="0")) as d:
            d.wait_for("ctl: serving")
            m = d.wait_for(r"latency: no BPF events \(([^)]*\)?)\): using the proc connector")
            check("CAP_BPF" in m.group(1), f"BPF refused: one line says why: {m.group(1)}")
            check(status(d).get("latency_events") == "connector", "the connector took over")
            s = start_sleeper(sleep, False)
            try:
                d.sync()
                check(policy(s.pid) == 3, "and an exe rule applies at exec through it")
            finally:
                s.kill()
                s.wait()
            check(d.stop() == 0, "clean stop")
        with Daemon(tmp, conf=conf_for(sleep, "bpf", uid="0")) as d:
            rc = d.proc.wait(120)
            check(rc != 0, f"events = bpf without BPF: the daemon does not start ({rc})")
            check("latency: [latency] events = bpf: BPF does not load:" in d.text(),
                  "and says why")


def test():
    require()
    out = subprocess.run([rqb.DAEMON, "--features"], capture_output=True, text=True).stdout
    if "task-events    used     bpf:" not in out:
        rqb.skip(f"the BPF events do not load here: {out.strip().splitlines()[-1]}")
    with tmpdir() as tmp:
        os.chmod(tmp, 0o755)
        sleep = private_copy(tmp, "sleep")
        follow(tmp, sleep, "auto", "bpf")
        follow(tmp, sleep, "connector", "connector")
        src, got = other_user(tmp, sleep, "auto")
        check(src == "bpf" and all(got), "without CAP_SYS_PTRACE an exe rule matches another "
              "user's processes, running before the start and exec'd after, through BPF")
        src, got = other_user(tmp, sleep, "connector")
        check(src == "connector" and not any(got),
              "and not through the connector, which must read their /proc/PID/exe")
        replaced(tmp, sleep)
        refused(tmp, sleep)


main(test)
