"""Latency-nice end to end on the real kernel: rqctl run gives a command, its threads
started later and its children the value; a rule applies at exec (to a copy of sleep
of the test's own) and a copy of the binary under another path (same comm) does not
match; stopping gives
every task back its slice, policy and cgroup; a SIGKILLed daemon's settings are given
back by the next start; a task that changes its own policy keeps its choice; a cgroup
target gets its weight back, and one removed while managed is no trouble."""
import os
import shutil
import signal
import subprocess
import sys

from rqb import (CGROUP_ROOT, CPU_V1, RQCTL, Daemon, check, cpu_cgroup, main, private_copy,
                 require, require_cpu_v1, rqctl, sched_field, tmpdir, value_slice_ns)


# A process that starts a thread and a child process once rqctl run has exec'd it (rqctl
# run has its value set before the exec), then says so on stdout.
LATE = """
import os, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
print("started", flush=True)
time.sleep(60)
"""


def threads(pid):
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def children(pid):
    out = []
    for t in threads(pid):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            pass
    return out


def state(tid):
    return (sched_field(tid, "policy"), os.getpriority(os.PRIO_PROCESS, tid),
            sched_field(tid, "se.slice"), cpu_cgroup(tid))


def cg_file(v, name):
    with open(f"{CPU_V1}{class_of(v)}/{name}") as f:
        return f.read().strip()


def class_of(v):
    return f"/{CGROUP_ROOT}/rqbalance-lat{v}"


def run_threads_children_and_stop(tmp, before):
    with Daemon(tmp) as d:
        d.wait_for("ctl: serving")
        p = subprocess.Popen([RQCTL, "-s", d.ctl, "run", "-l", "-8", "--", sys.executable, "-c",
                              LATE], stdout=subprocess.PIPE, text=True)
        try:
            check(p.stdout.readline() == "started\n" and len(threads(p.pid)) >= 2 and
                  children(p.pid), "the command started a thread and a child after rqctl run "
                  "exec'd it")
            tasks = threads(p.pid) + [c for c in children(p.pid)]
            # The kernel puts a new task in its parent's cgroup and gives it its slice
            # at once; the daemon records it when it reads the fork event: wait for that.
            d.sync()
            check(all(cpu_cgroup(t) == class_of(-8) for t in tasks),
                  f"every task, later ones too, is in {class_of(-8)}")
            slices = {sched_field(t, "se.slice") for t in tasks}
            check(slices == {value_slice_ns(-8)},
                  f"every task has the slice of -8, {value_slice_ns(-8)} ns ({slices})")
            nices = {os.getpriority(os.PRIO_PROCESS, t) for t in tasks}
            check(nices == {-8}, f"and nice -8, its weight beside its peers ({nices})")
            check(cg_file(-8, "cpu.shares") == "6100", "the class has the weight of nice -8")
            check(cg_file(-8, "cpu.cfs_quota_us") == "-1",
                  "and no CFS quota, which would stall a busy task")
            listed = rqctl(d, "list").stdout
            check(all(f"\n{t} " in "\n" + listed for t in tasks),
                  "rqctl list names every task")
            d.stop()
            check(all(state(t) == before for t in tasks),
                  "after stop every task has its policy, nice, slice and cgroup back")
            check(not os.path.exists(f"{CPU_V1}{class_of(-8)}"), "the class cgroup is gone")
            check(not os.path.exists(f"{CPU_V1}/{CGROUP_ROOT}"), "and the test's parent")
        finally:
            for c in children(p.pid):
                os.kill(c, signal.SIGKILL)
            p.kill()
            p.wait()


def rule_at_exec(tmp):
    # The rule names a copy of sleep of the test's own: it matches this test's sleepers,
    # never the machine's nor another run's. The spoof is another copy, another path.
    sleep = private_copy(tmp, "sleep")
    fake_dir = os.path.join(tmp, "fake")
    os.makedirs(fake_dir, exist_ok=True)
    fake = os.path.join(fake_dir, "sleep")
    shutil.copy(sleep, fake)
    conf = f"[rule napper]\nlatency_nice = -5\nexe = {sleep}\nuid = 0\n"
    with Daemon(tmp, conf=conf) as d:
        d.wait_for("ctl: serving")
        procs = []
        try:
            # Popen returns once the exec is done: its event is queued before the sync.
            for _ in range(20):
                procs.append(subprocess.Popen([sleep, "30"]))
            spoof = subprocess.Popen([fake, "30"])
            procs.append(spoof)
            d.sync()
            for p in procs[:-1]:
                check(cpu_cgroup(p.pid) == class_of(-5), f"the rule gave sleep {p.pid} its value")
            check(open(f"/proc/{spoof.pid}/comm").read().strip() == "sleep",
                  "the copy has the same comm")
            check(cpu_cgroup(spoof.pid) == "/", "a copy under another path does not match")
            out = rqctl(d, "get", "-p", str(procs[0].pid)).stdout
            check("source rule napper" in out, "get names the rule as the source")
        finally:
            for p in procs:
                p.kill()
                p.wait()


def idler(tmp):
    """A copy of sleep in a directory of its own: no rule of this test's daemons, nor
    another run's, names it."""
    return private_copy(os.path.join(tmp, "idle"), "sleep")


def crash_then_restart(tmp, before):
    journal = os.path.join(tmp, "crash")
    p = subprocess.Popen([idler(tmp), "60"])
    try:
        with Daemon(tmp, journal=journal) as d:
            d.wait_for("ctl: serving")
            r = rqctl(d, "set", "-l", "-10", "-p", str(p.pid))
            check(r.returncode == 0, "set -l -10 on a sleeper")
            check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon was killed")
        check(cpu_cgroup(p.pid) == class_of(-10), "after SIGKILL the task is still in its class")
        with Daemon(tmp, journal=journal) as d:
            d.wait_for("a previous run left 1 tasks")
            check(state(p.pid) == before, "the restart gave the task back what it had")
            d.stop()
        check(not os.path.exists(f"{CPU_V1}{class_of(-10)}"),
              "the class the killed daemon made is gone after the next stop")
    finally:
        p.kill()
        p.wait()


def own_choice_stands(tmp):
    p = subprocess.Popen([idler(tmp), "60"])
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            check(rqctl(d, "set", "-l", "-10", "-p", str(p.pid)).returncode == 0, "set -l -10")
            subprocess.run(["chrt", "-b", "-p", "0", str(p.pid)], check=True)
            d.stop()
        check(sched_field(p.pid, "policy") == 3, "the task's own SCHED_BATCH stands")
        check(cpu_cgroup(p.pid) == "/", "its class cgroup, still rqbalance's, was given back")
    finally:
        p.kill()
        p.wait()


def reload_reapplies(tmp):
    p = subprocess.Popen([idler(tmp), "60"])
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            check(rqctl(d, "set", "-l", "15", "-p", str(p.pid)).returncode == 0, "set -l 15")
            check(sched_field(p.pid, "policy") == 3, "15 is SCHED_BATCH by default")
            check(cpu_cgroup(p.pid) == class_of(15) and cg_file(15, "cpu.shares") == "36",
                  "in the class of 15, with the weight of nice 15: its competitors gain")
            check(os.getpriority(os.PRIO_PROCESS, p.pid) == 15, "and nice 15")
            with open(d.conf, "a") as f:
                f.write("[latency]\nbatch_from = 20\n")
            check(rqctl(d, "reload").returncode == 0, "reload with batch_from = 20")
            check(sched_field(p.pid, "policy") == 0, "the managed task is SCHED_OTHER again")
            check(sched_field(p.pid, "se.slice") == value_slice_ns(15),
                  "and keeps the slice of 15")
            d.stop()
        check(sched_field(p.pid, "policy") == 0, "stop leaves it SCHED_OTHER, as it was")
        check(os.getpriority(os.PRIO_PROCESS, p.pid) == 0 and cpu_cgroup(p.pid) == "/",
              "with its nice and cgroup back")
    finally:
        p.kill()
        p.wait()


def real_time_in_class(tmp):
    """A task given -20 can still make itself real-time, as an audio server does: where
    the kernel schedules real-time tasks by group, the classes share the runtime free."""
    if not os.path.exists(f"{CPU_V1}/cpu.rt_runtime_us"):
        print("(no RT group scheduling here: a class needs no real-time runtime)")
        return
    with Daemon(tmp) as d:
        d.wait_for("ctl: serving")
        r = subprocess.run([RQCTL, "-s", d.ctl, "run", "-l", "-20", "--", "chrt", "-f", "10",
                            "sh", "-c", "chrt -p $$; cat /proc/self/cgroup"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "SCHED_FIFO" in r.stdout and class_of(-20) in r.stdout,
              f"in {class_of(-20)}, a task makes itself SCHED_FIFO ({r.stderr.strip()})")
        check(int(cg_file(-20, "cpu.rt_runtime_us")) > 0, "its class has real-time runtime")
        d.stop()


def cgroup_target(tmp):
    cg = f"{CPU_V1}/{CGROUP_ROOT}-target"
    gone = f"{CPU_V1}/{CGROUP_ROOT}-gone"
    os.mkdir(cg)
    os.mkdir(gone)
    try:
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            r = rqctl(d, "set", "-l", "-10", "-g", f"/{CGROUP_ROOT}-target")
            check(r.returncode == 0, "set -l -10 on a cgroup")
            check(open(f"{cg}/cpu.shares").read().strip() == "9548", "its shares are 9548")
            check(rqctl(d, "set", "-l", "-3", "-g", f"/{CGROUP_ROOT}-gone").returncode == 0,
                  "set on a second cgroup")
            os.rmdir(gone)
            check(rqctl(d, "status").returncode == 0, "the daemon serves after its removal")
            d.stop()
            check("is gone: nothing to give back" in d.text(), "the removal is logged at stop")
        check(open(f"{cg}/cpu.shares").read().strip() == "1024", "the weight is given back")
    finally:
        os.rmdir(cg)
        if os.path.exists(gone):
            os.rmdir(gone)


def test():
    require()
    require_cpu_v1()
    with tmpdir() as tmp:
        ref = subprocess.Popen([idler(tmp), "60"])
        before = state(ref.pid)
        ref.kill()
        ref.wait()
        run_threads_children_and_stop(tmp, before)
        rule_at_exec(tmp)
        crash_then_restart(tmp, before)
        own_choice_stands(tmp)
        reload_reapplies(tmp)
        real_time_in_class(tmp)
        cgroup_target(tmp)


main(test)
